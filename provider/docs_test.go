package provider

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// tfpluginDocsVersion is the generator docs/ is made with.
const tfpluginDocsVersion = "v0.25.0"

// regenerateHint is how to bring docs/ up to date.
const regenerateHint = "regenerate with: PATH=$PWD/.tools/bin:$PATH tfplugindocs generate --provider-name baremetal " +
	"(install it with: GOBIN=$PWD/.tools/bin go install github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs@" + tfpluginDocsVersion + ")"

// TestDocsAreUpToDate renders the documentation from the provider's schema,
// templates/ and examples/ into a temporary directory and fails when docs/
// differs, then runs tfplugindocs validate. Nothing is downloaded but Go
// modules: terraform is the one of TF_ACC_TERRAFORM_PATH and the provider
// is installed from a local plugin directory.
func TestDocsAreUpToDate(t *testing.T) {
	requireAcc(t)
	root := repoRoot(t)
	tf := terraformBinary(t)

	out := t.TempDir()
	rel, err := filepath.Rel(root, out) // tfplugindocs joins it to --provider-dir
	if err != nil {
		t.Fatal(err)
	}
	runDocs(t, root, tf, "generate", "--provider-dir", root, "--provider-name", "baremetal", "--rendered-website-dir", rel)

	want := readTree(t, out)
	got := readTree(t, filepath.Join(root, "docs"))
	var stale []string
	for name, content := range want {
		if g, ok := got[name]; !ok {
			stale = append(stale, "missing docs/"+name)
		} else if !bytes.Equal(g, content) {
			stale = append(stale, "outdated docs/"+name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			stale = append(stale, "extra docs/"+name)
		}
	}
	slices.Sort(stale)
	if len(stale) > 0 {
		t.Fatalf("docs/ is stale:\n  %s\n%s", strings.Join(stale, "\n  "), regenerateHint)
	}

	runDocs(t, root, tf, "validate", "--provider-dir", root, "--provider-name", "baremetal")
}

// TestExamplesAreFormatted runs terraform fmt -check on examples/.
func TestExamplesAreFormatted(t *testing.T) {
	requireAcc(t)
	root := repoRoot(t)
	cmd := exec.Command(terraformBinary(t), "fmt", "-check", "-recursive", "-diff", "examples")
	cmd.Dir = root
	cmd.Env = toolEnv(t, "")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("terraform fmt -check failed (%v); run terraform fmt -recursive examples:\n%s", err, out)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	return root
}

// terraformBinary is the terraform the acceptance tests use.
func terraformBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TF_ACC_TERRAFORM_PATH"); p != "" {
		return p
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal("no terraform: set TF_ACC_TERRAFORM_PATH (make tools builds one into .tools/bin)")
	}
	return p
}

// toolEnv puts terraform's directory first on PATH, so tfplugindocs finds
// it instead of downloading one, and keeps terraform from phoning home.
func toolEnv(t *testing.T, tf string) []string {
	t.Helper()
	env := append(os.Environ(), "CHECKPOINT_DISABLE=1")
	if tf != "" {
		env = append(env, "PATH="+filepath.Dir(tf)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	if os.Getenv("TF_CLI_CONFIG_FILE") == "" {
		rc := filepath.Join(t.TempDir(), "terraformrc")
		if err := os.WriteFile(rc, []byte("disable_checkpoint = true\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, "TF_CLI_CONFIG_FILE="+rc)
	}
	return env
}

// runDocs runs tfplugindocs: the one in .tools/bin or on PATH, else the
// pinned version through the Go module proxy.
func runDocs(t *testing.T, root, tf string, args ...string) {
	t.Helper()
	var cmd *exec.Cmd
	local := filepath.Join(root, ".tools", "bin", "tfplugindocs")
	if _, err := os.Stat(local); err == nil {
		cmd = exec.Command(local, args...)
	} else if p, err := exec.LookPath("tfplugindocs"); err == nil {
		cmd = exec.Command(p, args...)
	} else {
		cmd = exec.Command("go", append([]string{"run", "github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs@" + tfpluginDocsVersion}, args...)...)
	}
	cmd.Dir = root
	cmd.Env = toolEnv(t, tf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tfplugindocs %s: %v\n%s", args[0], err, out)
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestReadmeQuotesTheAPITexts: README.md quotes the texts of internal/api
// that describe an instance's settings (the provider's schema and
// openapi.json say them with the same words) whole, so the manual cannot
// say otherwise than the documentation. Line breaks and block-quote
// markers do not count.
func TestReadmeQuotesTheAPITexts(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	flat := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n>", "\n")), " ") }
	readme := flat(string(b))
	for name, text := range map[string]string{"DocRootDevice": api.DocRootDevice, "DocDeployMethod": api.DocDeployMethod, "DocUserData": api.DocUserData} {
		if !strings.Contains(readme, flat(text)) {
			t.Errorf("README.md does not quote api.%s; quote it (as a block quote) where it says what the setting does:\n%s", name, text)
		}
	}
}
