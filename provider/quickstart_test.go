package provider

import (
	"os"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

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
	tf := newTFCLI(t, "BAREMETAL_ENDPOINT="+env.URL, "BAREMETAL_TOKEN="+env.AdminToken, "TF_VAR_sim_address="+env.Sim.URL())
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
