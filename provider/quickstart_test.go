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

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestAccQuickstart runs examples/quickstart as the README tells a new user
// to: the provider binary through dev_overrides, the real terraform CLI,
// and only the environment (BAREMETAL_ENDPOINT, BAREMETAL_TOKEN,
// TF_VAR_sim_address) pointing at the controller and the simulator, which
// listen on random ports here. So an example that hard-codes 8080/8000,
// or an image URL the controller's image check refuses, fails this test.
func TestAccQuickstart(t *testing.T) {
	requireAcc(t)
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		tf = "terraform"
	}
	env := testenv.Start(t, testenv.Options{Systems: 8, ImageCheck: true})

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
	work := filepath.Join(dir, "quickstart")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../examples/quickstart/main.tf")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "main.tf"), src, 0o600); err != nil {
		t.Fatal(err)
	}

	run := func(want int, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, tf, append(args, "-input=false", "-no-color")...)
		cmd.Dir = work
		// Only what the README exports; nothing inherited that could point
		// the provider elsewhere.
		cmd.Env = []string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
			"CHECKPOINT_DISABLE=1", "TF_CLI_CONFIG_FILE=" + rc,
			"BAREMETAL_ENDPOINT=" + env.URL, "BAREMETAL_TOKEN=" + env.AdminToken,
			"TF_VAR_sim_address=" + env.Sim.URL(),
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("terraform %s: %v", args[0], err)
		}
		if code != want {
			t.Fatalf("terraform %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, want, out.String())
		}
		return out.String()
	}

	out := run(0, "apply", "-auto-approve")
	if !strings.Contains(out, "Apply complete! Resources: 5 added") {
		t.Fatalf("apply did not create the 4 nodes and the instance:\n%s", out)
	}
	// A second plan is empty: nothing in the example drifts by itself.
	run(0, "plan", "-detailed-exitcode")
	out = run(0, "destroy", "-auto-approve")
	if !strings.Contains(out, "Destroy complete! Resources: 5 destroyed") {
		t.Fatalf("destroy:\n%s", out)
	}
}
