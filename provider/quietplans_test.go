package provider

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// expectUpdate is a plan check that addr is updated in place, that
// exactly the attributes changed differ between the prior and the planned
// values, and that exactly those in unknown are "(known after apply)":
// what a reviewer reads in `terraform plan`. Paths are dotted
// ("bmc.address", "metadata.tier").
type expectUpdate struct {
	addr             string
	changed, unknown []string
}

var _ plancheck.PlanCheck = expectUpdate{}

func (c expectUpdate) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != c.addr {
			continue
		}
		if rc.Change == nil || !rc.Change.Actions.Update() {
			resp.Error = fmt.Errorf("%s: want an update in place, got %v", c.addr, rc.Change.Actions)
			return
		}
		unknown := map[string]any{}
		flattenValue("", rc.Change.AfterUnknown, unknown)
		var gotUnknown []string
		for p, v := range unknown {
			if v == true {
				gotUnknown = append(gotUnknown, p)
			}
		}
		before, after := map[string]any{}, map[string]any{}
		flattenValue("", rc.Change.Before, before)
		flattenValue("", rc.Change.After, after)
		var gotChanged []string
		// An object whose members are all unknown is {} in the planned
		// values: it is not a change of its own; nor are the elements a
		// list had before it became unknown.
		holdsUnknown := func(p string) bool {
			return slices.ContainsFunc(gotUnknown, func(u string) bool {
				return u == p || strings.HasPrefix(u, p+".") || strings.HasPrefix(p, u+".")
			})
		}
		for p := range union(before, after) {
			if !holdsUnknown(p) && !reflect.DeepEqual(before[p], after[p]) {
				gotChanged = append(gotChanged, p)
			}
		}
		var errs []string
		if d := setDiff(gotChanged, c.changed); d != "" {
			errs = append(errs, "changed attributes: "+d)
		}
		if d := setDiff(gotUnknown, c.unknown); d != "" {
			errs = append(errs, "unknown (known after apply) attributes: "+d)
		}
		if len(errs) > 0 {
			resp.Error = fmt.Errorf("%s: %s", c.addr, strings.Join(errs, "; "))
		}
		return
	}
	resp.Error = fmt.Errorf("%s: not in the plan", c.addr)
}

// flattenValue maps every leaf of a JSON plan value to its dotted path;
// empty objects and lists are leaves too, so null and {} differ.
func flattenValue(prefix string, v any, out map[string]any) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 && prefix != "" {
			out[prefix] = t
		}
		for k, e := range t {
			flattenValue(join(k), e, out)
		}
	case []any:
		if len(t) == 0 && prefix != "" {
			out[prefix] = t
		}
		for i, e := range t {
			flattenValue(join(fmt.Sprint(i)), e, out)
		}
	default:
		if prefix != "" {
			out[prefix] = t
		}
	}
}

func union(a, b map[string]any) map[string]bool {
	u := map[string]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

// setDiff describes how got differs from want as sets, or "".
func setDiff(got, want []string) string {
	var extra, missing []string
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return ""
	}
	sort.Strings(extra)
	sort.Strings(missing)
	return fmt.Sprintf("unexpected %v, missing %v", extra, missing)
}

// reverified is what a re-verification of a node's BMC may change (the
// traits derived from the BMC among them), with the properties that are
// still empty (it fills them from the inventory).
func reverified(emptyProperties ...string) []string {
	out := []string{"power_state", "provision_state", "fault", "last_error", "derived_traits"}
	for _, p := range emptyProperties {
		out = append(out, "properties."+p)
	}
	return out
}

// TestAccQuietPlans asserts what a reviewer reads in plans: maintenance on
// and off and an instance's metadata change show that change alone, with
// the observed attributes planned as they are; a new BMC address, which
// makes the controller re-verify the node, leaves exactly what the
// re-verification may change unknown. After each apply the plan is empty.
func TestAccQuietPlans(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 2, PowerSyncInterval: 500 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	// The same simulated BMCs on a second loopback address: a new
	// bmc.address the node still works with.
	otherAddr, err := env.Sim.ServeAlso("127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	const node, busy, inst = "baremetal_node.quiet", "baremetal_node.busy", "baremetal_instance.web"
	// cfg is node quiet (at bmcAddr, with extra), node busy of class
	// busyClass and an instance on busy with metadata.
	cfg := func(bmcAddr, extra, busyClass, metadata string) string {
		quiet := nodeHCL(env, "quiet", "quiet", "rc", 0, extra)
		if bmcAddr != env.Sim.URL() {
			quiet = strings.Replace(quiet, fmt.Sprintf("%q", env.Sim.URL()), fmt.Sprintf("%q", bmcAddr), 1)
		}
		return providerConfig(env, env.AdminToken) + quiet + nodeHCL(env, "busy", "busy", busyClass, 1, "") + fmt.Sprintf(`
resource "baremetal_instance" "web" {
  name     = "web"
  project  = "acc"
  node_id  = baremetal_node.busy.id
  image    = { url = "https://images.example.com/one.img" }
  metadata = %s
}
`, metadata)
	}
	simAddr := env.Sim.URL()
	const maintenance = `
  maintenance        = true
  maintenance_reason = "disk swap"
`
	observedAsBefore := func(addr string) []plancheck.PlanCheck {
		return []plancheck.PlanCheck{
			plancheck.ExpectKnownValue(addr, tfjsonpath.New("provision_state"), knownvalue.StringExact("available")),
			plancheck.ExpectKnownValue(addr, tfjsonpath.New("fault"), knownvalue.StringExact("")),
		}
	}
	empty := []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkInstancesGone(c), checkNodesGone(c)),
		Steps: []resource.TestStep{
			{
				Config:           cfg(simAddr, "", "gpu", `{ role = "web" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: empty},
				Check:            resource.TestCheckResourceAttr(inst, "state", "active"),
			},
			{
				// Maintenance on: that alone.
				Config: cfg(simAddr, maintenance, "gpu", `{ role = "web" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: append(observedAsBefore(node),
						expectUpdate{addr: node, changed: []string{"maintenance", "maintenance_reason"}},
						plancheck.ExpectResourceAction(busy, plancheck.ResourceActionNoop),
						plancheck.ExpectResourceAction(inst, plancheck.ResourceActionNoop)),
					PostApplyPostRefresh: empty,
				},
				Check: checkAPI(c, node, func(n *api.Node) error {
					if !n.Maintenance {
						return fmt.Errorf("maintenance not set: %+v", n)
					}
					return nil
				}),
			},
			{
				// Maintenance off: that alone too. (Left out, it would stay
				// on: see TestAccNodeMaintenanceUnsetIsTheOperators.)
				Config: cfg(simAddr, "  maintenance = false", "gpu", `{ role = "web" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: append(observedAsBefore(node),
						expectUpdate{addr: node, changed: []string{"maintenance", "maintenance_reason"}},
						plancheck.ExpectResourceAction(inst, plancheck.ResourceActionNoop)),
					PostApplyPostRefresh: empty,
				},
			},
			{
				// An instance's metadata: neither its state, ready,
				// last_error nor its node's instance_id become unknown.
				Config: cfg(simAddr, "", "gpu", `{ role = "web", tier = "1" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						expectUpdate{addr: inst, changed: []string{"metadata.tier"}},
						plancheck.ExpectKnownValue(inst, tfjsonpath.New("state"), knownvalue.StringExact("active")),
						plancheck.ExpectResourceAction(node, plancheck.ResourceActionNoop),
						plancheck.ExpectResourceAction(busy, plancheck.ResourceActionNoop),
					},
					PostApplyPostRefresh: empty,
				},
				Check: resource.TestCheckResourceAttr(inst, "metadata.tier", "1"),
			},
			{
				// A node with an instance, changed in place: instance_id
				// stays known.
				Config: cfg(simAddr, "", "gpu-big", `{ role = "web", tier = "1" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						expectUpdate{addr: busy, changed: []string{"resource_class"}},
						plancheck.ExpectKnownValue(busy, tfjsonpath.New("provision_state"), knownvalue.StringExact("active")),
					},
					PostApplyPostRefresh: empty,
				},
			},
			{
				// A new BMC address: the controller re-verifies the node,
				// so what that may change is unknown, and only that.
				Config: cfg(otherAddr, "", "gpu-big", `{ role = "web", tier = "1" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						// The simulated BMCs report no disks: local_gb is still 0.
						expectUpdate{addr: node, changed: []string{"bmc.address"}, unknown: reverified("local_gb")},
						plancheck.ExpectResourceAction(busy, plancheck.ResourceActionNoop),
						plancheck.ExpectResourceAction(inst, plancheck.ResourceActionNoop),
					},
					PostApplyPostRefresh: empty,
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(node, "bmc.address", otherAddr),
					resource.TestCheckResourceAttr(node, "provision_state", "available"),
					resource.TestCheckResourceAttr(node, "fault", ""),
				),
			},
		},
	})
}
