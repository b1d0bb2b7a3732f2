package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestAccNodeCleanInspectSettings: clean_erase and inspect_on_enroll are
// null in the state while unset (plans stay empty), set and change in
// place, show in the data sources, and unsetting them makes the node
// follow the controller again (API "" and null) with an empty plan
// after. A bad clean_erase fails the plan with a diagnostic naming the
// attribute.
func TestAccNodeCleanInspectSettings(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	const addr, data = "baremetal_node.test", "data.baremetal_node.test"
	cfg := func(settings string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "test", "settings", "rc1", 0, settings) + `
data "baremetal_node" "test" {
  name       = baremetal_node.test.name
  depends_on = [baremetal_node.test]
}
data "baremetal_nodes" "all" {
  depends_on = [baremetal_node.test]
}
`
	}
	apiSettings := func(erase api.CleanErase, inspect *bool) resource.TestCheckFunc {
		return checkAPI(c, addr, func(n *api.Node) error {
			if n.CleanErase != erase || (n.InspectOnEnroll == nil) != (inspect == nil) ||
				(inspect != nil && *n.InspectOnEnroll != *inspect) {
				return fmt.Errorf("API clean_erase %q, inspect_on_enroll %v; want %q, %v", n.CleanErase, n.InspectOnEnroll, erase, inspect)
			}
			return nil
		})
	}
	state := func(erase, inspect knownvalue.Check, dataErase, dataInspect knownvalue.Check) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("clean_erase"), erase),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("inspect_on_enroll"), inspect),
			statecheck.ExpectKnownValue(data, tfjsonpath.New("clean_erase"), dataErase),
			statecheck.ExpectKnownValue(data, tfjsonpath.New("inspect_on_enroll"), dataInspect),
			statecheck.ExpectKnownValue("data.baremetal_nodes.all", tfjsonpath.New("nodes").AtSliceIndex(0).AtMapKey("clean_erase"), dataErase),
			statecheck.ExpectKnownValue("data.baremetal_nodes.all", tfjsonpath.New("nodes").AtSliceIndex(0).AtMapKey("inspect_on_enroll"), dataInspect),
		}
	}
	yes, no := true, false
	update := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)}}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				// Refused at plan time, naming the attribute (first: the
				// destroy after the last step runs its configuration).
				Config:      cfg(`clean_erase = "wipe"`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)clean_erase.*must be one of.*"metadata".*"full".*"off"`),
			},
			{
				// Unset: null in the state, the controller's in the API; the
				// framework's plan after the apply must be empty.
				Config:            cfg(""),
				ConfigStateChecks: state(knownvalue.Null(), knownvalue.Null(), knownvalue.StringExact(""), knownvalue.Null()),
				Check:             apiSettings(api.CleanEraseDefault, nil),
			},
			{
				Config:            cfg("clean_erase = \"full\"\ninspect_on_enroll = false"),
				ConfigPlanChecks:  update,
				ConfigStateChecks: state(knownvalue.StringExact("full"), knownvalue.Bool(false), knownvalue.StringExact("full"), knownvalue.Bool(false)),
				Check:             apiSettings(api.CleanEraseFull, &no),
			},
			{
				Config:            cfg("clean_erase = \"off\"\ninspect_on_enroll = true"),
				ConfigPlanChecks:  update,
				ConfigStateChecks: state(knownvalue.StringExact("off"), knownvalue.Bool(true), knownvalue.StringExact("off"), knownvalue.Bool(true)),
				Check:             apiSettings(api.CleanEraseOff, &yes),
			},
			{
				// Unset again: the node follows the controller.
				Config:            cfg(""),
				ConfigPlanChecks:  update,
				ConfigStateChecks: state(knownvalue.Null(), knownvalue.Null(), knownvalue.StringExact(""), knownvalue.Null()),
				Check:             apiSettings(api.CleanEraseDefault, nil),
			},
			{
				Config: cfg(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
		},
	})
}

// Created with both settings: the node enrolls with them (no update
// after), and an import reads them back.
func TestAccNodeCreatedWithSettings(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_node.test"
	no := false
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config: providerConfig(env, env.AdminToken) + nodeHCL(env, "test", "created", "rc1", 0, "clean_erase = \"metadata\"\ninspect_on_enroll = false"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("clean_erase"), knownvalue.StringExact("metadata")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("inspect_on_enroll"), knownvalue.Bool(false)),
				},
				Check: checkAPI(c, addr, func(n *api.Node) error {
					if n.CleanErase != api.CleanEraseMetadata || n.InspectOnEnroll == nil || *n.InspectOnEnroll != no {
						return fmt.Errorf("API clean_erase %q, inspect_on_enroll %v; want metadata, false", n.CleanErase, n.InspectOnEnroll)
					}
					return nil
				}),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"bmc.password"},
			},
		},
	})
}
