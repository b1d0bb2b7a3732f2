package provider

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// quickstartEnv is what examples/quickstart reads from the environment:
// TestAccQuickstart sets only these, and TestREADMEWalkthroughs checks
// that the walkthroughs export them all.
var quickstartEnv = []string{"BAREMETAL_ENDPOINT", "BAREMETAL_TOKEN", "TF_VAR_sim_address"}

// TestAccQuickstart runs examples/quickstart as the README tells a new user
// to: the provider binary through dev_overrides, the real terraform CLI,
// and only the environment (BAREMETAL_ENDPOINT, BAREMETAL_TOKEN,
// TF_VAR_sim_address) pointing at the controller and the simulator, which
// listen on random ports here. So an example that hard-codes 8080/8000,
// or an image URL the controller's image check refuses, fails this test.
func TestAccQuickstart(t *testing.T) {
	t.Parallel()
	requireAcc(t)
	env := testenv.Start(t, testenv.Options{Systems: 8, ImageCheck: true})
	// Only what the README exports; nothing inherited that could point the
	// provider elsewhere.
	vals := map[string]string{"BAREMETAL_ENDPOINT": env.URL, "BAREMETAL_TOKEN": env.AdminToken, "TF_VAR_sim_address": env.Sim.URL()}
	var exports []string
	for _, name := range quickstartEnv {
		exports = append(exports, name+"="+vals[name])
	}
	tf := newTFCLI(t, exports...)
	src, err := os.ReadFile("../examples/quickstart/main.tf")
	if err != nil {
		t.Fatal(err)
	}
	tf.write(string(src))

	out := tf.run(0, "apply", "-auto-approve")
	if !strings.Contains(out, "Apply complete! Resources: 5 added") {
		t.Fatalf("apply did not create the 4 nodes and the instance:\n%s", out)
	}
	// A second plan is empty: nothing in the example drifts by itself.
	tf.run(0, "plan", "-detailed-exitcode")
	out = tf.run(0, "destroy", "-auto-approve")
	if !strings.Contains(out, "Destroy complete! Resources: 5 destroyed") {
		t.Fatalf("destroy:\n%s", out)
	}
}

// The walkthroughs that take a newcomer from make run to terraform apply
// (README.md's "Develop against the local controller", the quick start
// example's README) work as written in a second shell: that shell exports
// everything the example reads (TestAccQuickstart proves that it is
// enough) and the CLI configuration, and the make targets it runs build
// nothing the walkthrough does not use (make tools also builds OpenTofu,
// tfplugindocs and sqlc: half an hour on 2 cores, for terraform alone).
func TestREADMEWalkthroughs(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("make is not installed")
		}
		t.Skip("make is not installed")
	}
	for _, doc := range []struct{ file, after string }{
		{"../README.md", "Develop against the local controller"},
		{"../examples/quickstart/README.md", "# Quick start"},
	} {
		src, err := os.ReadFile(doc.file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(src)
		i := strings.Index(text, doc.after)
		if i < 0 {
			t.Fatalf("%s: no %q", doc.file, doc.after)
		}
		block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(text[i:])
		if block == nil {
			t.Fatalf("%s: no sh block after %q", doc.file, doc.after)
		}
		// The second shell is everything after make run.
		_, shell2, ok := strings.Cut(block[1], "make run")
		if !ok {
			t.Fatalf("%s: the walkthrough does not start with make run:\n%s", doc.file, block[1])
		}
		for _, name := range append(quickstartEnv, "TF_CLI_CONFIG_FILE") {
			if !regexp.MustCompile(`(?m)^export ` + name + `=`).MatchString(shell2) {
				t.Errorf("%s: the second shell does not export %s:\n%s", doc.file, name, shell2)
			}
		}
		for _, m := range regexp.MustCompile(`(?m)^make ([a-z-]+)`).FindAllStringSubmatch(shell2, -1) {
			// -B: what the target runs when nothing is built yet.
			out, err := exec.Command(mk, "-n", "-B", "--no-print-directory", "-C", "..", m[1]).CombinedOutput()
			if err != nil {
				t.Errorf("%s: make -n %s: %v\n%s", doc.file, m[1], err, out)
				continue
			}
			for _, other := range []string{"opentofu", "tfplugindocs", "sqlc", "golangci-lint", "goreleaser"} {
				if strings.Contains(string(out), other) {
					t.Errorf("%s: make %s builds %s, which the walkthrough does not use:\n%s", doc.file, m[1], other, out)
				}
			}
		}
	}
}
