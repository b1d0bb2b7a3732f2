package provider

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestAccCapacityCheckExample runs examples/capacity-check as its README
// says, with the real terraform binary and a member token (whose
// capacity is its own project's), against a fleet of three nodes: two
// with an A100, one without owned by another project. A rollout that fits
// with room to spare plans cleanly; one that fits exactly plans with the
// check block's warning only; one that does not fit fails the plan in the
// data source's postcondition, with the controller's per-requirement
// explanation. The data-source example of the docs plans too, failing
// on this small fleet with the same explanation.
func TestAccCapacityCheckExample(t *testing.T) {
	t.Parallel()
	requireAcc(t)
	env := accEnv(t, testenv.Options{Systems: 3})
	c := accClient(t, env, env.AdminToken)
	ctx := context.Background()
	for i, n := range []struct {
		name   string
		traits []string
		owner  string
	}{
		{"gpu-1", []string{"CUSTOM_GPU_A100"}, ""},
		{"gpu-2", []string{"CUSTOM_GPU_A100", "rack:r12"}, "ml"},
		{"cpu-1", nil, "web"},
	} {
		enrollNode(t, env, n.name, "general", i)
		traits, owner := append([]string{}, n.traits...), n.owner
		if _, err := c.PatchNode(ctx, n.name, api.NodePatch{Traits: &traits, Owner: &owner}, ""); err != nil {
			t.Fatal(err)
		}
	}
	tf := newTFCLI(t, "BAREMETAL_ENDPOINT="+env.URL, "BAREMETAL_TOKEN="+env.MemberToken(t, "ml"))
	copyExampleDir(t, "../examples/capacity-check", tf.work)
	shape := `-var=shape={ required_traits = ["CUSTOM_GPU_A100"] }`

	// Room for two; one asked, one to spare.
	out := tf.run(0, "plan", "-var=instances=1", shape)
	if f := flat(out); !strings.Contains(f, `+ placeable = 2`) || !strings.Contains(f, `+ project = "ml"`) || strings.Contains(f, "Check block assertion failed") {
		t.Fatalf("a rollout with room to spare: want placeable 2 in project ml, no warning:\n%s", out)
	}

	// Two asked: it fits, without the spare node asked for.
	out = tf.run(0, "plan", "-var=instances=2", shape)
	if f := flat(out); !strings.Contains(f, `Warning: Check block assertion failed`) ||
		!strings.Contains(f, `After 2 instances, room for 0 more, not 1.`) {
		t.Fatalf("a rollout that fits exactly: want the check block's warning:\n%s", out)
	}

	// Three asked: the plan fails, saying why.
	out = tf.run(1, "plan", "-var=instances=3", shape)
	want := regexp.MustCompile(regexp.QuoteMeta(`Error: Resource postcondition failed`) + `.*` +
		regexp.QuoteMeta(`Room for 2 of the 3 instances in project ml, 0 more freeing up: `+
			`2 of 3 nodes fit the instance's requirements and 2 can take it now; the others: `+
			`1 is owned by another project, 1 lacks trait CUSTOM_GPU_A100`))
	if !want.MatchString(flat(out)) {
		t.Fatalf("a rollout that does not fit: want the postcondition's error matching %s:\n%s", want, out)
	}

	// The docs' example (an admin's, naming project ml-team) asks for 4
	// GPU instances of 256 GiB: none fits.
	docs := newTFCLI(t, "BAREMETAL_ENDPOINT="+env.URL, "BAREMETAL_TOKEN="+env.AdminToken)
	copyExampleDir(t, "../examples/data-sources/baremetal_capacity", docs.work)
	if err := os.WriteFile(filepath.Join(docs.work, "versions.tf"), []byte(requiredProviders), 0o600); err != nil {
		t.Fatal(err)
	}
	out = docs.run(1, "plan")
	want = regexp.MustCompile(regexp.QuoteMeta(`Error: Resource postcondition failed`) + `.*` +
		regexp.QuoteMeta(`Room for 0 of the 4 GPU instances: no node fits the instance's requirements: of 3 nodes, `+
			`3 have less than 262144 MB memory (or unknown), `) + `.*` + regexp.QuoteMeta(`1 lacks trait CUSTOM_GPU_A100`))
	if !want.MatchString(flat(out)) {
		t.Fatalf("the docs' example: want the postcondition's error matching %s:\n%s", want, out)
	}
}

// copyExampleDir copies the .tf files of an example directory into dir.
func copyExampleDir(t *testing.T, example, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(example, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .tf files in %s: %v", example, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
