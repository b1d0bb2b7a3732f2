package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestAccNodeMaintenanceUnsetIsTheOperators: a configuration that leaves
// maintenance out does not manage it. An operator puts the node in
// maintenance through the API (as `controller node maintenance` does):
// the next plan is empty, and neither an apply of that configuration nor
// one that changes something else ends the maintenance; the state shows
// it. A configuration that sets maintenance = false manages it: the plan
// shows the drift and the apply ends it. Removing maintenance (and its
// reason) from a configuration stops managing it without changing it,
// and an import plans nothing either.
func TestAccNodeMaintenanceUnsetIsTheOperators(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_node.test"
	cfg := func(class, extra string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "test", "held", class, 0, extra)
	}
	setMaintenance := func(on bool, reason string) func() {
		return func() {
			p := api.NodePatch{Maintenance: &on}
			if on {
				p.MaintenanceReason = &reason
			}
			if _, err := c.PatchNode(context.Background(), "held", p, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	inAPI := func(want bool, reason string) resource.TestCheckFunc {
		return checkAPI(c, addr, func(n *api.Node) error {
			if n.Maintenance != want || n.MaintenanceReason != reason {
				return fmt.Errorf("the controller has maintenance %v (%q); want %v (%q)", n.Maintenance, n.MaintenanceReason, want, reason)
			}
			return nil
		})
	}
	inState := func(want bool, reason string) []statecheck.StateCheck {
		var r knownvalue.Check = knownvalue.Null()
		if reason != "" {
			r = knownvalue.StringExact(reason)
		}
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("maintenance"), knownvalue.Bool(want)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("maintenance_reason"), r),
		}
	}
	unset := cfg("rc1", "")

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				// Created without maintenance: planned false, not
				// "(known after apply)".
				Config: unset,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("maintenance"), knownvalue.Bool(false)),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("maintenance_reason"), knownvalue.Null()),
				}},
				ConfigStateChecks: inState(false, ""),
			},
			{
				// The operator's maintenance: no plan touches it.
				PreConfig: setMaintenance(true, "swap PSU"),
				Config:    unset,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: inState(true, "swap PSU"),
				Check:             inAPI(true, "swap PSU"),
			},
			{
				// An update of something else leaves it as it is, planned
				// as read.
				Config: cfg("rc2", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("maintenance"), knownvalue.Bool(true)),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("maintenance_reason"), knownvalue.StringExact("swap PSU")),
				}},
				ConfigStateChecks: inState(true, "swap PSU"),
				Check:             inAPI(true, "swap PSU"),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"bmc.password"},
			},
			{
				// Managed: maintenance = false is drift, and the apply
				// ends it.
				Config: cfg("rc2", "  maintenance = false"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("maintenance"), knownvalue.Bool(false)),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("maintenance_reason"), knownvalue.Null()),
				}},
				ConfigStateChecks: inState(false, ""),
				Check:             resource.ComposeAggregateTestCheckFunc(inAPI(false, ""), maintenanceEventsVia(c)),
			},
			{
				Config: cfg("rc2", "  maintenance = true\n  maintenance_reason = \"firmware\""),
				Check:  inAPI(true, "firmware"),
			},
			{
				// No longer managed: nothing changes.
				Config: cfg("rc2", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: inState(true, "firmware"),
				Check:             inAPI(true, "firmware"),
			},
			{
				// The operator ends it: the refresh shows it, no diff.
				PreConfig: setMaintenance(false, ""),
				Config:    cfg("rc2", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: inState(false, ""),
			},
		},
	})
}

// maintenanceEventsVia checks the node's maintenance events name what they
// came through: the operator's through the API (this test's client sends
// no product of ours), the apply's through Terraform, with the provider's
// and the CLI's versions.
func maintenanceEventsVia(c *apiclient.Client) resource.TestCheckFunc {
	return func(*terraform.State) error {
		evs, err := c.ListNodeEvents(context.Background(), "held")
		if err != nil {
			return err
		}
		var via []string
		for _, ev := range evs {
			if ev.Type == "maintenance" {
				_, client, _ := strings.Cut(ev.Actor, ") via ")
				via = append(via, ev.New+" via "+client)
			}
		}
		if len(via) != 2 || !strings.HasPrefix(via[0], "true via the API (") ||
			!strings.HasPrefix(via[1], "false via Terraform ("+api.ClientProvider+"/test terraform/") {
			return fmt.Errorf("maintenance events: %q; want it set through the API, then cleared through Terraform", via)
		}
		return nil
	}
}

// TestAccMaintenanceSetBetweenPlanAndApply: an operator puts a node in
// maintenance after the plan was made and before it is applied, and the
// plan changes something else of the node. The configuration
// leaves maintenance to operators, so the apply succeeds (no "inconsistent
// result": the plan said false, the controller says true), keeps the
// maintenance, and the next plan is empty.
func TestAccMaintenanceSetBetweenPlanAndApply(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	tf := newTFCLI(t, "BAREMETAL_ENDPOINT="+env.URL, "BAREMETAL_TOKEN="+env.AdminToken)
	config := func(class string) string {
		return requiredProviders + `provider "baremetal" {}` + nodeHCL(env, "busy", "busy", class, 0, "")
	}
	tf.write(config("rc1"))
	tf.run(0, "apply", "-auto-approve")

	// The plan without a refresh is the one made before the operator
	// acted. (A saved plan does the same; the helper puts its flags after
	// the arguments, where terraform wants the plan file.)
	on, reason := true, "swap PSU"
	if _, err := c.PatchNode(context.Background(), "busy", api.NodePatch{Maintenance: &on, MaintenanceReason: &reason}, ""); err != nil {
		t.Fatal(err)
	}
	tf.write(config("rc2"))
	if out := flat(tf.run(0, "apply", "-auto-approve", "-refresh=false")); strings.Contains(out, "inconsistent result") {
		t.Fatalf("apply of a plan made before the operator's maintenance:\n%s", out)
	}
	n, err := c.GetNode(context.Background(), "busy")
	if err != nil || !n.Maintenance || n.ResourceClass != "rc2" {
		t.Fatalf("after the apply: %+v, %v; want the operator's maintenance kept and the new class", n, err)
	}
	if out := flat(tf.run(0, "plan", "-detailed-exitcode")); !strings.Contains(out, "No changes") {
		t.Fatalf("plan after the apply:\n%s", out)
	}
}
