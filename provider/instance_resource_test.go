package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// checkInstancesGone is a CheckDestroy: every instance in the state is gone.
func checkInstancesGone(c *apiclient.Client) func(*terraform.State) error {
	return func(s *terraform.State) error {
		for _, rs := range s.RootModule().Resources {
			if rs.Type != "baremetal_instance" {
				continue
			}
			_, err := c.GetInstance(context.Background(), rs.Primary.ID)
			if errors.Is(err, apiclient.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("instance %s still exists", rs.Primary.ID)
		}
		return nil
	}
}

// twoNodes enrolls two simulated systems as nodes of class "gpu".
func twoNodes(env *testenv.Env) string {
	return nodeHCL(env, "a", "node-a", "gpu", 0, "") + nodeHCL(env, "b", "node-b", "gpu", 1, "")
}

func instanceHCL(label, name, body string) string {
	return fmt.Sprintf(`
resource "baremetal_instance" %q {
  name    = %q
  project = "acc"
%s
  depends_on = [baremetal_node.a, baremetal_node.b]
}
`, label, name, body)
}

// simPower reads the simulated power of the node an instance of the state
// runs on.
func simPower(t *testing.T, env *testenv.Env, c *apiclient.Client, s *terraform.State, addr string) (string, error) {
	nodeID, err := stateAttr(s, addr, "node_id")
	if err != nil {
		return "", err
	}
	return env.Sim.Power(systemOf(t, c, nodeID))
}

// TestAccInstance covers scheduling by resource class, waiting for active,
// desired power (set on create, changed in place, drift when the node is
// powered outside Terraform and convergence on apply), metadata updates in
// place, import by id and by name, a rebuild in place on an image change, pinning
// to a node, an instance deleted outside Terraform, and destroy.
func TestAccInstance(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 2, PowerSyncInterval: 500 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_instance.web"
	base := providerConfig(env, env.AdminToken) + twoNodes(env)
	web := func(image, power string, metadata string) string {
		return base + instanceHCL("web", "web", fmt.Sprintf(`
  resource_class = "gpu"
  image = {
    url      = %q
    checksum = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
  }
  user_data   = "#cloud-config\n"
  power_state = %q
  metadata    = %s
`, image, power, metadata))
	}
	var firstID, firstNode string

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkInstancesGone(c), checkNodesGone(c)),
		Steps: []resource.TestStep{
			{
				Config: web("https://images.example.com/one.img", "on", `{ role = "web" }`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("active")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("power_state"), knownvalue.StringExact("on")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("resource_class"), knownvalue.StringExact("gpu")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("project"), knownvalue.StringExact("acc")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("last_error"), knownvalue.StringExact("")),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrSet(addr, "node_id"),
					func(s *terraform.State) error {
						firstID, _ = stateAttr(s, addr, "id")
						p, err := simPower(t, env, c, s, addr)
						if err == nil && p != "On" {
							err = fmt.Errorf("simulated node power is %q", p)
						}
						return err
					},
				),
			},
			{
				// Power and metadata change in place; apply waits for the
				// node's power to be observed off.
				Config: web("https://images.example.com/one.img", "off", `{ role = "web", tier = "1" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "power_state", "off"),
					resource.TestCheckResourceAttr(addr, "metadata.tier", "1"),
					resource.TestCheckResourceAttrPtr(addr, "id", &firstID),
					func(s *terraform.State) error {
						p, err := simPower(t, env, c, s, addr)
						if err == nil && p != "Off" {
							err = fmt.Errorf("simulated node power is %q", p)
						}
						return err
					},
				),
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     "web",
				ImportStateVerify: true,
			},
			{
				// Someone powers the node on behind Terraform's back.
				PreConfig: func() {
					in, err := c.GetInstance(context.Background(), "web")
					if err != nil {
						t.Fatal(err)
					}
					if err := env.Sim.SetPower(systemOf(t, c, in.NodeID), true); err != nil {
						t.Fatal(err)
					}
					poll(t, "power sync to observe the node on", 20*time.Second, func() (bool, error) {
						in, err := c.GetInstance(context.Background(), "web")
						return err == nil && in.ObservedPowerState == "on", err
					})
				},
				Config:             web("https://images.example.com/one.img", "off", `{ role = "web", tier = "1" }`),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Apply converges it.
				Config: web("https://images.example.com/one.img", "off", `{ role = "web", tier = "1" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("power_state"), knownvalue.StringExact("off")),
					},
				},
				Check: func(s *terraform.State) error {
					p, err := simPower(t, env, c, s, addr)
					if err == nil && p != "Off" {
						err = fmt.Errorf("simulated node power is %q after apply", p)
					}
					return err
				},
			},
			{
				// A new image rebuilds the instance in place: same id, same
				// node, and the node's power wish holds after the rebuild.
				PreConfig: func() {
					inst, err := c.GetInstance(context.Background(), firstID)
					if err != nil {
						t.Fatal(err)
					}
					firstNode = inst.NodeID
				},
				Config: web("https://images.example.com/two.img", "on", `{ role = "web" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectUnknownValue(addr, tfjsonpath.New("rebuilds")),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("active")),
					},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "image.url", "https://images.example.com/two.img"),
					resource.TestCheckResourceAttr(addr, "state", "active"),
					resource.TestCheckResourceAttr(addr, "rebuilds", "1"),
					resource.TestCheckResourceAttrPtr(addr, "id", &firstID),
					resource.TestCheckResourceAttrPtr(addr, "node_id", &firstNode),
					func(s *terraform.State) error {
						p, err := simPower(t, env, c, s, addr)
						if err == nil && p != "On" {
							err = fmt.Errorf("simulated node power is %q after the rebuild", p)
						}
						return err
					},
				),
			},
			{
				// The rebuild leaves nothing to do.
				Config:   web("https://images.example.com/two.img", "on", `{ role = "web" }`),
				PlanOnly: true,
			},
			{
				// Deleted outside Terraform: the plan creates it again.
				PreConfig: func() {
					if _, err := c.DeleteInstance(context.Background(), "web"); err != nil {
						t.Fatal(err)
					}
				},
				Config:             web("https://images.example.com/two.img", "on", `{ role = "web" }`),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Pinned to node b and wanted off: create deploys (which
				// powers on), then powers it off. The node shows the instance.
				Config: base + instanceHCL("pinned", "pinned", `
  node_id     = baremetal_node.b.id
  power_state = "off"
  image = {
    url = "https://images.example.com/one.img"
  }
`) + `
data "baremetal_node" "b" {
  id         = baremetal_node.b.id
  depends_on = [baremetal_instance.pinned]
}
`,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrPair("baremetal_instance.pinned", "node_id", "baremetal_node.b", "id"),
					resource.TestCheckResourceAttr("baremetal_instance.pinned", "resource_class", "gpu"),
					resource.TestCheckResourceAttr("baremetal_instance.pinned", "power_state", "off"),
					resource.TestCheckNoResourceAttr("baremetal_instance.pinned", "metadata.%"),
					func(s *terraform.State) error {
						p, err := simPower(t, env, c, s, "baremetal_instance.pinned")
						if err == nil && p != "Off" {
							err = fmt.Errorf("simulated node power is %q", p)
						}
						return err
					},
					resource.TestCheckResourceAttrPair("data.baremetal_node.b", "instance_id", "baremetal_instance.pinned", "id"),
					resource.TestCheckResourceAttr("data.baremetal_node.b", "provision_state", "active"),
				),
			},
		},
	})
}

// TestAccInstanceNoCapacity: the controller's explanation of why nothing
// can be scheduled reaches the user, on the resource_class attribute.
func TestAccInstanceNoCapacity(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkInstancesGone(c),
		Steps: []resource.TestStep{{
			Config: providerConfig(env, env.AdminToken) + nodeHCL(env, "a", "node-a", "gpu", 0, `
  maintenance        = true
  maintenance_reason = "firmware upgrade"
`) + `
resource "baremetal_instance" "web" {
  name           = "web"
  project        = "acc"
  resource_class = "gpu"
  image = {
    url = "https://images.example.com/one.img"
  }
  depends_on = [baremetal_node.a]
}
resource "baremetal_instance" "nowhere" {
  name           = "nowhere"
  project        = "acc"
  resource_class = "tpu"
  image = {
    url = "https://images.example.com/one.img"
  }
}
`,
			ExpectError: regexp.MustCompile(`(?s)(no node of class "gpu" is available: 1 in maintenance.*no node of class "tpu".*no node has that resource class|no node of class "tpu".*no node has that resource class.*no node of class "gpu" is available: 1 in maintenance)`),
		}},
	})
}

// TestAccInstanceMember: a member token manages its project's instances on
// nodes an admin enrolled; project defaults to the token's.
func TestAccInstanceMember(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	enrollNode(t, env, "member-node", "small", 0)
	token := env.MemberToken(t, "team-a")
	c := accClient(t, env, token)
	config := providerConfig(env, token) + `
resource "baremetal_instance" "app" {
  name           = "app"
  resource_class = "small"
  image = {
    url = "https://images.example.com/app.img"
  }
}
data "baremetal_nodes" "small" {
  resource_class = "small"
  depends_on     = [baremetal_instance.app]
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkInstancesGone(c),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("baremetal_instance.app", "project", "team-a"),
					resource.TestCheckResourceAttr("baremetal_instance.app", "state", "active"),
					resource.TestCheckResourceAttr("data.baremetal_nodes.small", "nodes.#", "1"),
					resource.TestCheckResourceAttrPair("data.baremetal_nodes.small", "nodes.0.instance_id", "baremetal_instance.app", "id"),
				),
			},
			{
				ResourceName:      "baremetal_instance.app",
				ImportState:       true,
				ImportStateId:     "app",
				ImportStateVerify: true,
			},
			{
				// A member may not enroll nodes: the API's refusal is shown.
				Config:      config + nodeHCL(env, "x", "x", "small", 0, ""),
				ExpectError: regexp.MustCompile(`(?s)Could not create node x.*only an admin may enroll nodes.*admin\s+token`),
			},
		},
	})
}

// TestAccInstanceDestroyWithBrokenBMC: destroying an instance succeeds at
// once whether its node's BMC is down or hangs; the controller finishes
// the cleanup when the BMC is back and the node becomes available again.
// While the BMC is down, the unobservable power is not reported as drift.
func TestAccInstanceDestroyWithBrokenBMC(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 2})
	c := accClient(t, env, env.AdminToken)
	base := providerConfig(env, env.AdminToken) + twoNodes(env)
	withInstance := func(name string) string {
		return base + instanceHCL("app", name, `
  resource_class = "gpu"
  power_state    = "on"
  image = {
    url = "https://images.example.com/app.img"
  }
`)
	}
	var nodeID string
	breakBMC := func(f sim.Fault) func() {
		return func() {
			in, err := c.GetInstance(context.Background(), "app")
			if err != nil {
				t.Fatal(err)
			}
			nodeID = in.NodeID
			setFault(t, env, systemOf(t, c, nodeID), f)
		}
	}
	healAndWait := func(s *terraform.State) error {
		setFault(t, env, systemOf(t, c, nodeID), sim.FaultNone)
		waitNodeHealthy(t, c, nodeID, "available", 60*time.Second)
		return nil
	}
	gone := func(s *terraform.State) error {
		if _, ok := s.RootModule().Resources["baremetal_instance.app"]; ok {
			return errors.New("instance still in state")
		}
		_, err := c.GetInstance(context.Background(), "app")
		if !errors.Is(err, apiclient.ErrNotFound) {
			return fmt.Errorf("instance still visible in the API: %v", err)
		}
		return nil
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkInstancesGone(c), checkNodesGone(c)),
		Steps: []resource.TestStep{
			{Config: withInstance("app")},
			{
				// The power is not observable while the BMC is down: that
				// is a fault of the node, not drift of the instance.
				PreConfig: func() {
					breakBMC(sim.FaultDown)()
					poll(t, "power sync to lose the node's power", 30*time.Second, func() (bool, error) {
						in, err := c.GetInstance(context.Background(), "app")
						return err == nil && in.ObservedPowerState == "unknown", err
					})
				},
				Config:   withInstance("app"),
				PlanOnly: true,
			},
			{
				Config: base,
				Check:  resource.ComposeTestCheckFunc(gone, healAndWait),
			},
			{Config: withInstance("app")},
			{
				PreConfig: breakBMC(sim.FaultHang),
				Config:    base,
				Check:     resource.ComposeTestCheckFunc(gone, healAndWait),
			},
		},
	})
}

// TestAccInstanceDeployFails: a node that never powers on fails the deploy;
// create reports the controller's reason (the instance's last_error) and
// the instance is tainted. Once the node behaves, apply replaces it.
func TestAccInstanceDeployFails(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	system := env.Sim.SystemIDs()[0]
	config := providerConfig(env, env.AdminToken) + nodeHCL(env, "a", "stuck", "gpu", 0, "") + `
resource "baremetal_instance" "app" {
  name           = "app"
  project        = "acc"
  resource_class = "gpu"
  image = {
    url = "https://images.example.com/app.img"
  }
  depends_on = [baremetal_node.a]
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkInstancesGone(c), checkNodesGone(c)),
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					if err := env.Sim.SetIgnorePower(system, true); err != nil {
						t.Fatal(err)
					}
				},
				Config:      config,
				ExpectError: regexp.MustCompile(`(?s)Instance app did not become active.*instance app failed to deploy:.*power`),
			},
			{
				PreConfig: func() {
					if err := env.Sim.SetIgnorePower(system, false); err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("baremetal_instance.app", plancheck.ResourceActionReplace)},
				},
				Check: resource.TestCheckResourceAttr("baremetal_instance.app", "state", "active"),
			},
		},
	})
}

// TestAccInstanceReadiness: user data travels on a config drive the
// simulated BMC fetches from the controller, the simulated OS calls back,
// and apply returns once the instance is ready; a second plan is empty.
func TestAccInstanceReadiness(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_instance.app"
	config := providerConfig(env, env.AdminToken) + nodeHCL(env, "a", "ready-0", "gpu", 0, "") + `
resource "baremetal_instance" "app" {
  name           = "app"
  project        = "acc"
  resource_class = "gpu"
  deploy_timeout = "5m"
  user_data      = <<-EOT
    #cloud-config
    hostname: app
  EOT
  image = {
    url = "https://images.example.com/app.img"
  }
  depends_on = [baremetal_node.a]
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkInstancesGone(c), checkNodesGone(c)),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("active")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ready"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("deploy_timeout"), knownvalue.StringExact("5m")),
				},
			},
			{
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: false,
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})
}

// TestAccInstanceRebuildFailsAndRetries: a rebuild whose node never powers
// on (off, its BMC ignoring power requests) fails the apply with the controller's reason and leaves the instance
// in error on its node (not tainted); the next plan is an update in place
// that brings it back to active, and apply rebuilds it on the same node.
func TestAccInstanceRebuildFailsAndRetries(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	system := env.Sim.SystemIDs()[0]
	const addr = "baremetal_instance.app"
	config := func(image string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "a", "rb", "gpu", 0, "") + fmt.Sprintf(`
resource "baremetal_instance" "app" {
  name           = "app"
  project        = "acc"
  resource_class = "gpu"
  image = {
    url = %q
  }
  depends_on = [baremetal_node.a]
}
`, image)
	}
	var id, node string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkInstancesGone(c), checkNodesGone(c)),
		Steps: []resource.TestStep{
			{
				Config: config("https://images.example.com/one.iso"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "state", "active"),
					func(s *terraform.State) error {
						id, _ = stateAttr(s, addr, "id")
						node, _ = stateAttr(s, addr, "node_id")
						return nil
					},
				),
			},
			{
				// The node is off (someone pulled its power) and its BMC
				// ignores power requests: the rebuild's boot never lands.
				PreConfig: func() {
					if err := env.Sim.SetPower(system, false); err != nil {
						t.Fatal(err)
					}
					if err := env.Sim.SetIgnorePower(system, true); err != nil {
						t.Fatal(err)
					}
				},
				Config:      config("https://images.example.com/two.iso"),
				ExpectError: regexp.MustCompile(`(?s)Instance app was not rebuilt.*instance app failed to deploy:.*power`),
			},
			{
				PreConfig: func() {
					if err := env.Sim.SetIgnorePower(system, false); err != nil {
						t.Fatal(err)
					}
				},
				Config: config("https://images.example.com/two.iso"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("active")),
					},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "state", "active"),
					resource.TestCheckResourceAttr(addr, "last_error", ""),
					resource.TestCheckResourceAttr(addr, "rebuilds", "2"),
					resource.TestCheckResourceAttr(addr, "image.url", "https://images.example.com/two.iso"),
					resource.TestCheckResourceAttrPtr(addr, "id", &id),
					resource.TestCheckResourceAttrPtr(addr, "node_id", &node),
				),
			},
			{
				Config:   config("https://images.example.com/two.iso"),
				PlanOnly: true,
			},
		},
	})
}
