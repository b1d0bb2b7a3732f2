package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tfCLI runs the real terraform binary the way a user does: the provider
// built from this tree through dev_overrides, in a working directory of its
// own, with nothing in the environment but PATH and what the test passes.
// It is for what terraform-plugin-testing cannot see, such as warnings.
type tfCLI struct {
	t        *testing.T
	tf, work string
	env      []string
}

// newTFCLI builds the provider and prepares a CLI config and a working
// directory; env is added to terraform's environment (KEY=value).
func newTFCLI(t *testing.T, env ...string) *tfCLI {
	t.Helper()
	requireAcc(t)
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		tf = "terraform"
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "terraform-provider-baremetal"), "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the provider: %v\n%s", err, out)
	}
	rc := filepath.Join(dir, "dev.tfrc")
	if err := os.WriteFile(rc, fmt.Appendf(nil, `disable_checkpoint = true
provider_installation {
  dev_overrides {
    "baremetal-tf/baremetal" = %q
  }
  direct {}
}
`, bin), 0o600); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "CHECKPOINT_DISABLE=1", "TF_CLI_CONFIG_FILE=" + rc}
	return &tfCLI{t: t, tf: tf, work: work, env: append(base, env...)}
}

// write replaces the working directory's main.tf.
func (c *tfCLI) write(config string) {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.work, "main.tf"), []byte(config), 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// run runs terraform with args (plus -no-color, and -input=false where it
// applies), fails the
// test unless it exits with want, and returns its combined output.
func (c *tfCLI) run(want int, args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 3*time.Minute)
	defer cancel()
	args = append(args, "-no-color")
	switch args[0] {
	case "apply", "destroy", "plan", "refresh", "import":
		args = append(args, "-input=false")
	}
	cmd := exec.CommandContext(ctx, c.tf, args...)
	cmd.Dir = c.work
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		c.t.Fatalf("terraform %s: %v", args[0], err)
	}
	if code != want {
		c.t.Fatalf("terraform %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, want, out.String())
	}
	return out.String()
}

// flat is terraform's output with its diagnostic frames (│ ╷ ╵) removed and
// all white space collapsed, so a message can be matched however terraform
// wrapped it.
func flat(out string) string {
	out = strings.NewReplacer("│", " ", "╷", " ", "╵", " ").Replace(out)
	return strings.Join(strings.Fields(out), " ")
}

// requiredProviders names this provider's source, which the real terraform
// needs (terraform-plugin-testing adds it by itself).
const requiredProviders = `
terraform {
  required_providers {
    baremetal = {
      source = "baremetal-tf/baremetal"
    }
  }
}
`
