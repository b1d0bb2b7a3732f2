package provider

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestAccNodePorts: baremetal_node (resource and data source) and each
// node of baremetal_nodes show the ports of the last inspection, a NIC's
// lldp null where the agent heard no switch; the refresh after an
// inspection reads them without a diff, an update plans them as they
// are, and a member's provider reads them too (unlike the inventory).
func TestAccNodePorts(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 2})
	c := accClient(t, env, env.AdminToken)
	enrollNode(t, env, "ports-listed", "ports", 1)
	const addr, one, list = "baremetal_node.test", "data.baremetal_node.managed", "data.baremetal_nodes.ports"
	reads := `
data "baremetal_node" "managed" {
  name       = "ports-managed"
  depends_on = [baremetal_node.test]
}
data "baremetal_nodes" "ports" {
  resource_class = "ports"
  depends_on     = [baremetal_node.test]
}
`
	cfg := func(extra string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "test", "ports-managed", "ports", 0, extra) + reads
	}
	ports := tfjsonpath.New("ports")
	withLLDP := map[string]knownvalue.Check{
		"name": knownvalue.StringExact("eno1"), "mac": knownvalue.StringExact("02:5a:00:00:00:01"),
		"link_up": knownvalue.Bool(true), "speed_mbps": knownvalue.Int64Exact(25000),
		"lldp": knownvalue.ObjectExact(map[string]knownvalue.Check{
			"switch_chassis_id": knownvalue.StringExact("44:4c:a8:12:34:56"), "switch_system_name": knownvalue.StringExact("leaf-r12-a"),
			"switch_port_id": knownvalue.StringExact("Ethernet7"), "switch_port_description": knownvalue.StringExact("db-07 eth0"),
			"vlan_id": knownvalue.Int64Exact(100),
		}),
	}
	withoutLLDP := map[string]knownvalue.Check{
		"name": knownvalue.StringExact("eno2"), "mac": knownvalue.StringExact("02:5a:01:00:00:01"),
		"link_up": knownvalue.Bool(false), "speed_mbps": knownvalue.Int64Exact(0), "lldp": knownvalue.Null(),
	}
	wantPorts := knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectExact(withLLDP), knownvalue.ObjectExact(withoutLLDP)})
	inspected := time.Now().Add(-time.Hour).Truncate(time.Second)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				// Never inspected: no ports, an empty list (not null).
				Config: cfg(""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, ports, knownvalue.ListSizeExact(0)),
					statecheck.ExpectKnownValue(one, ports, knownvalue.ListSizeExact(0)),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(list, "nodes.#", "2"),
					resource.TestCheckResourceAttr(list, "nodes.0.ports.#", "0"),
					resource.TestCheckResourceAttr(list, "nodes.1.ports.#", "0"),
				),
			},
			{
				// Inspected: the refresh reads the ports, the plan is empty.
				PreConfig: func() {
					storePorts(t, env, "ports-managed", inspected)
					storePorts(t, env, "ports-listed", inspected)
				},
				Config: cfg(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, ports, wantPorts),
					statecheck.ExpectKnownValue(one, ports, wantPorts),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckTypeSetElemNestedAttrs(list, "nodes.*", map[string]string{
						"name": "ports-listed", "ports.#": "2", "ports.0.mac": "02:5a:00:00:00:01",
						"ports.0.lldp.switch_port_id": "Ethernet7", "ports.0.lldp.vlan_id": "100", "ports.1.name": "eno2"}),
					resource.TestCheckNoResourceAttr(list, "nodes.0.ports.1.lldp.switch_port_id"),
				),
			},
			{
				// And stays so on the next plan: nothing to do.
				Config:   cfg(""),
				PlanOnly: true,
			},
			{
				// An update plans the ports as they are, known.
				Config: cfg(`
  maintenance        = true
  maintenance_reason = "ports test"
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						expectUpdate{addr: addr, changed: []string{"maintenance", "maintenance_reason"}},
						plancheck.ExpectKnownValue(addr, ports, wantPorts),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, ports, wantPorts),
				},
			},
		},
	})
	// A member's provider reads the ports (members write networks by
	// MAC); the inventory stays the admins'.
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: providerConfig(env, env.MemberToken(t, "p1")) + `
data "baremetal_node" "as_member" {
  name = "ports-listed"
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.baremetal_node.as_member", ports, wantPorts),
				statecheck.ExpectKnownValue("data.baremetal_node.as_member", tfjsonpath.New("inventory"), knownvalue.Null()),
			},
		}},
	})
}

// storePorts stores an inventory of two NICs for the node, as the
// inspect job does: one that heard its switch by LLDP, one whose link was
// down.
func storePorts(t *testing.T, env *testenv.Env, name string, at time.Time) {
	t.Helper()
	inv := api.AgentInventory{CPUs: 2, MemoryBytes: 512 << 20, NICs: []api.AgentNIC{
		{Name: "eno1", MAC: "02:5a:00:00:00:01", LinkUp: true, SpeedMbps: 25000, IPv4: []string{"10.9.0.7/24"},
			LLDP: &api.AgentLLDP{ChassisID: "44:4c:a8:12:34:56", SystemName: "leaf-r12-a", PortID: "Ethernet7",
				PortDescription: "db-07 eth0", VLANID: 100, MgmtAddress: "10.255.0.1"}},
		{Name: "eno2", MAC: "02:5a:01:00:00:01"},
	}}
	data, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := env.App.Store.InTx(ctx, func(tx store.Tx) error {
		n, err := tx.GetNode(ctx, name)
		if err != nil {
			return err
		}
		return tx.SetInventory(ctx, &baremetal.Inventory{NodeID: n.ID, Data: string(data), InspectedAt: at})
	}); err != nil {
		t.Fatal(err)
	}
}

// TestAccNodePortsFromInspection: a node enrolled with inspect_on_enroll
// on a simulated machine is inspected by the deploy agent's own code,
// which hears the machine's switches by LLDP: the node's ports, once it
// is available, name the switch and port each NIC is cabled to.
func TestAccNodePortsFromInspection(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1, SimAgent: true, AgentTimeout: time.Minute})
	c := accClient(t, env, env.AdminToken)
	desc, err := env.Sim.Machine(env.Sim.SystemIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	const addr = "baremetal_node.test"
	cfg := providerConfig(env, env.AdminToken) + nodeHCL(env, "test", "ports-inspected", "ports", 0, `
  inspect_on_enroll = true
`)
	var nics []knownvalue.Check
	for _, nic := range desc.NICs {
		nics = append(nics, knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"name": knownvalue.StringExact(nic.Name), "mac": knownvalue.StringExact(nic.MAC), "link_up": knownvalue.Bool(true),
			"lldp": knownvalue.ObjectPartial(map[string]knownvalue.Check{
				"switch_system_name": knownvalue.StringExact(nic.Switch), "switch_port_id": knownvalue.StringExact(nic.SwitchPort),
				"vlan_id": knownvalue.NotNull(),
			}),
		}))
	}
	if len(nics) == 0 {
		t.Fatal("the simulated machine has no NIC")
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				// Create waits for the BMC's verification only; the
				// inspection runs on.
				Config: cfg,
			},
			{
				// Once inspected, the refresh reads the ports, quietly.
				PreConfig: func() {
					poll(t, "the node to be inspected", time.Minute, func() (bool, error) {
						n, err := c.GetNode(context.Background(), "ports-inspected")
						return err == nil && n.ProvisionState == api.StateAvailable && n.InspectedAt != nil, err
					})
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("provision_state"), knownvalue.StringExact("available")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ports"), knownvalue.ListExact(nics)),
				},
			},
		},
	})
}
