package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// checkNodesGone is a CheckDestroy: every node in the state is gone or
// being retired.
func checkNodesGone(c *apiclient.Client) func(*terraform.State) error {
	return func(s *terraform.State) error {
		for _, rs := range s.RootModule().Resources {
			if rs.Type != "baremetal_node" {
				continue
			}
			n, err := c.GetNode(context.Background(), rs.Primary.ID)
			if errors.Is(err, apiclient.ErrNotFound) || err == nil && n.ProvisionState == api.StateDeleting {
				continue
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("node %s still exists in %s", rs.Primary.ID, n.ProvisionState)
		}
		return nil
	}
}

// TestAccNode covers create (waiting for available, properties from the
// inventory), in-place updates of every kind, import by id and by name,
// a BMC change that makes the controller re-verify, and destroy; and that
// the BMC password is only ever in bmc.password.
func TestAccNode(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 2})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_node.test"
	cfg := func(name, class string, system int, extra string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "test", name, class, system, extra)
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config: cfg("acc-node", "rc1", 0, `properties = { cpu_arch = "x86_64" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
						plancheck.ExpectSensitiveValue(addr, tfjsonpath.New("bmc").AtMapKey("password")),
						secretOnlyInSensitive{bmcPassword},
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("provision_state"), knownvalue.StringExact("available")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("fault"), knownvalue.StringExact("")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("maintenance"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("bmc").AtMapKey("password"), knownvalue.StringExact(bmcPassword)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("properties").AtMapKey("cpu_arch"), knownvalue.StringExact("x86_64")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("power_state"), knownvalue.StringRegexp(regexp.MustCompile(`^(on|off)$`))),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrSet(addr, "id"),
					// Filled from the simulated BMC's inventory.
					resource.TestCheckResourceAttrWith(addr, "properties.cpus", positive),
					resource.TestCheckResourceAttrWith(addr, "properties.memory_mb", positive),
					checkSecretOnlyIn(bmcPassword, addr+".bmc.password"),
				),
			},
			{
				// Everything an operator changes in place.
				Config: cfg("acc-node-renamed", "rc2", 0, `
  properties = {
    cpu_arch = "x86_64"
    cpus     = 128
  }
  maintenance        = true
  maintenance_reason = "acceptance test"
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						secretOnlyInSensitive{bmcPassword},
					},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "name", "acc-node-renamed"),
					resource.TestCheckResourceAttr(addr, "resource_class", "rc2"),
					resource.TestCheckResourceAttr(addr, "properties.cpus", "128"),
					resource.TestCheckResourceAttr(addr, "maintenance", "true"),
					resource.TestCheckResourceAttr(addr, "maintenance_reason", "acceptance test"),
					checkAPI(c, addr, func(n *api.Node) error {
						if !n.Maintenance || n.MaintenanceReason != "acceptance test" || n.Properties.CPUs != 128 || n.Name != "acc-node-renamed" {
							return fmt.Errorf("API disagrees: %+v", n)
						}
						return nil
					}),
				),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"bmc.password"},
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           "acc-node-renamed", // by name
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"bmc.password"},
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if len(states) != 1 {
						return fmt.Errorf("want 1 imported node, got %d", len(states))
					}
					if _, ok := states[0].Attributes["bmc.password"]; ok && states[0].Attributes["bmc.password"] != "" {
						return errors.New("imported node has a password: the API must never return it")
					}
					return nil
				},
			},
			{
				// A new BMC (another system): updated in place, re-verified.
				// (Leaving maintenance out would leave it on: see
				// TestAccNodeMaintenanceUnsetIsTheOperators.)
				Config: cfg("acc-node-renamed", "rc2", 1, `
  properties = {
    cpu_arch = "x86_64"
    cpus     = 128
  }
  maintenance = false
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "bmc.system_id", env.Sim.SystemIDs()[1]),
					resource.TestCheckResourceAttr(addr, "maintenance", "false"),
					resource.TestCheckNoResourceAttr(addr, "maintenance_reason"),
					resource.TestCheckResourceAttr(addr, "provision_state", "available"),
					checkSecretOnlyIn(bmcPassword, addr+".bmc.password"),
				),
			},
		},
	})
}

// checkAPI reads the node of addr through the API and hands it to f.
func checkAPI(c *apiclient.Client, addr string, f func(*api.Node) error) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		id, err := stateAttr(s, addr, "id")
		if err != nil {
			return err
		}
		n, err := c.GetNode(context.Background(), id)
		if err != nil {
			return err
		}
		return f(n)
	}
}

func positive(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return fmt.Errorf("want a positive number, got %q", v)
	}
	return nil
}

// TestAccNodeDrift changes the node outside Terraform and expects plan to
// see it: maintenance toggled by an operator (where the configuration
// manages it), resource class and properties changed, the node deleted.
func TestAccNodeDrift(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	config := providerConfig(env, env.AdminToken) + nodeHCL(env, "test", "drift", "rc1", 0, `
  properties  = { cpus = 16 }
  maintenance = false`)
	patch := func(p api.NodePatch) func() {
		return func() {
			if _, err := c.PatchNode(context.Background(), "drift", p, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	yes, reason, class := true, "operator took it out", "rc-other"

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig:          patch(api.NodePatch{Maintenance: &yes, MaintenanceReason: &reason}),
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Apply puts it back as configured.
				Config: config,
				Check: checkAPI(c, "baremetal_node.test", func(n *api.Node) error {
					if n.Maintenance {
						return errors.New("maintenance not cleared by apply")
					}
					return nil
				}),
			},
			{
				PreConfig:          patch(api.NodePatch{ResourceClass: &class}),
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{Config: config},
			{
				PreConfig: func() {
					if _, err := c.PatchNode(context.Background(), "drift", map[string]any{"properties": map[string]any{"cpus": 2}}, ""); err != nil {
						t.Fatal(err)
					}
				},
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{Config: config, Check: resource.TestCheckResourceAttr("baremetal_node.test", "properties.cpus", "16")},
			{
				// Deleted outside Terraform: the plan creates it again.
				PreConfig: func() {
					if _, err := c.DeleteNode(context.Background(), "drift", true); err != nil {
						t.Fatal(err)
					}
				},
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
		},
	})
}

// TestAccNodeEnrollFault: a node whose BMC is down stays in enroll with a
// fault; create waits until its timeout and reports the fault. Once the
// BMC is back, the tainted node is replaced (the new one waits for the old
// one's name to be released) and becomes available. With
// wait_for_available = false, create returns at once.
func TestAccNodeEnrollFault(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 2})
	c := accClient(t, env, env.AdminToken)
	sys0, sys1 := env.Sim.SystemIDs()[0], env.Sim.SystemIDs()[1]
	setFault(t, env, sys0, sim.FaultDown)
	setFault(t, env, sys1, sim.FaultDown)
	faulty := providerConfig(env, env.AdminToken) +
		nodeHCL(env, "test", "faulty", "rc1", 0, `
  timeouts {
    create = "8s"
  }`)
	nowait := providerConfig(env, env.AdminToken) + nodeHCL(env, "nowait", "nowait", "rc1", 1, `wait_for_available = false`)

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config:      faulty,
				ExpectError: regexp.MustCompile(`(?s)did not become available.*still in\s+provision_state\s+"enroll"\s+with\s+fault\s+"bmc_unreachable".*Last error:`),
			},
			{
				PreConfig: func() {
					setFault(t, env, sys0, sim.FaultNone)
				},
				Config: faulty,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("baremetal_node.test", plancheck.ResourceActionReplace)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("baremetal_node.test", "provision_state", "available"),
					resource.TestCheckResourceAttr("baremetal_node.test", "fault", ""),
				),
			},
			{
				Config: nowait,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("baremetal_node.nowait", "provision_state", "enroll"),
				),
			},
			{
				// The BMC comes back: the controller verifies the node by
				// itself and a refresh shows it, without any diff.
				PreConfig: func() {
					setFault(t, env, sys1, sim.FaultNone)
					waitNodeHealthy(t, c, "nowait", "available", 30*time.Second)
				},
				Config:   nowait,
				PlanOnly: true,
			},
		},
	})
}

// TestAccNodeAPIErrors: refusals that only the controller can decide come
// back with its explanation, on the attribute it names.
func TestAccNodeAPIErrors(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 2})
	c := accClient(t, env, env.AdminToken)
	one := providerConfig(env, env.AdminToken) + nodeHCL(env, "a", "dup", "rc1", 0, "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				// A port only the controller checks. (Terraform 1.5 cannot
				// quote a key inside an object value, so the detail names
				// bmc.address itself.)
				Config: providerConfig(env, env.AdminToken) + `
resource "baremetal_node" "bad" {
  name           = "bad"
  driver         = "redfish"
  resource_class = "rc1"
  bmc = {
    address  = "https://10.0.0.9:99999"
    username = "admin"
    password = "x"
  }
}
`,
				ExpectError: regexp.MustCompile(`(?s)Could not create node bad.*bmc\.address port "99999" is not between 1\s+and 65535`),
			},
			{Config: one},
			{
				// A second node of the same name: terraform quotes the name
				// line, as the problem names that field.
				Config:      one + nodeHCL(env, "b", "dup", "rc1", 1, ""),
				ExpectError: regexp.MustCompile(`(?s)Could not create node dup.*name\s+=\s+"dup".*a node named "dup" already\s+exists`),
			},
		},
	})
}

// TestAccNodeForceDestroy: with force_destroy a node whose BMC is dead
// for good is removed at once; without it the record stays deleting until
// the machine could be powered off.
func TestAccNodeForceDestroy(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 2})
	c := accClient(t, env, env.AdminToken)
	cfg := providerConfig(env, env.AdminToken) +
		nodeHCL(env, "gone", "gone-for-good", "rc", 0, "  force_destroy = true") +
		nodeHCL(env, "kept", "kept-until-off", "rc", 1, "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if _, err := c.GetNode(context.Background(), "gone-for-good"); !errors.Is(err, apiclient.ErrNotFound) {
				return fmt.Errorf("force_destroy node still there: %v", err)
			}
			n, err := c.GetNode(context.Background(), "kept-until-off")
			if err != nil || n.ProvisionState != api.StateDeleting {
				return fmt.Errorf("node without force_destroy: %+v, %v; want it deleting while its BMC hangs", n, err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check:  resource.TestCheckResourceAttr("baremetal_node.gone", "force_destroy", "true"),
			},
			{
				// Both BMCs die; destroy must still succeed at once.
				PreConfig: func() {
					setFault(t, env, env.Sim.SystemIDs()[0], sim.FaultHang)
					setFault(t, env, env.Sim.SystemIDs()[1], sim.FaultHang)
				},
				Config:  cfg,
				Destroy: true,
			},
		},
	})
}
