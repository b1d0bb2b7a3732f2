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

// TestAccNodeDataSourceInventory: baremetal_node's inventory is null
// until the node is inspected, then holds what the deploy agent reported
// (stored here as the inspect job stores it: the agent itself is proven
// on a real VM in internal/app); a member's provider reads the node
// with a null inventory instead of failing, as inventories are for admins.
func TestAccNodeDataSourceInventory(t *testing.T) {
	env := accEnv(t, testenv.Options{Systems: 1})
	node := enrollNode(t, env, "inv-0", "gpu", 0)
	const addr = "data.baremetal_node.n"
	read := `
data "baremetal_node" "n" {
  name = "inv-0"
}
`
	inspected := time.Date(2026, 12, 3, 10, 4, 5, 0, time.UTC)
	inv := api.AgentInventory{CPUs: 2, MemoryBytes: 512 << 20,
		Disks: []api.AgentDisk{
			{Name: "vda", Path: "/dev/vda", SizeBytes: 4 << 30, Serial: "bm-disk-0", Rotational: true},
			{Name: "nvme0n1", Path: "/dev/nvme0n1", SizeBytes: 100 << 30, Model: "Fast NVMe", Serial: "S1", WWN: "eui.0025388b91b1c2d3"},
		},
		NICs: []api.AgentNIC{{Name: "eth0", MAC: "52:54:00:12:34:56", LinkUp: true}}}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: providerConfig(env, env.AdminToken) + read,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", node.ID),
					resource.TestCheckNoResourceAttr(addr, "inventory.cpus"),
					resource.TestCheckNoResourceAttr(addr, "inventory.disks.#"),
				),
			},
			{
				PreConfig: func() {
					data, err := json.Marshal(inv)
					if err != nil {
						t.Fatal(err)
					}
					ctx := context.Background()
					if err := env.App.Store.InTx(ctx, func(tx store.Tx) error {
						return tx.SetInventory(ctx, &baremetal.Inventory{NodeID: node.ID, Data: string(data), InspectedAt: inspected})
					}); err != nil {
						t.Fatal(err)
					}
				},
				Config: providerConfig(env, env.AdminToken) + read,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "inventory.inspected_at", "2026-12-03T10:04:05Z"),
					resource.TestCheckResourceAttr(addr, "inventory.cpus", "2"),
					resource.TestCheckResourceAttr(addr, "inventory.memory_bytes", "536870912"),
					resource.TestCheckResourceAttr(addr, "inventory.disks.#", "2"),
					resource.TestCheckResourceAttr(addr, "inventory.disks.0.name", "vda"),
					resource.TestCheckResourceAttr(addr, "inventory.disks.0.size_bytes", "4294967296"),
					resource.TestCheckResourceAttr(addr, "inventory.disks.0.serial", "bm-disk-0"),
					resource.TestCheckResourceAttr(addr, "inventory.disks.0.model", ""),
					resource.TestCheckResourceAttr(addr, "inventory.disks.0.rotational", "true"),
					resource.TestCheckResourceAttr(addr, "inventory.disks.1.model", "Fast NVMe"),
					resource.TestCheckResourceAttr(addr, "inventory.disks.1.wwn", "eui.0025388b91b1c2d3"),
					resource.TestCheckResourceAttr(addr, "inventory.disks.1.rotational", "false"),
					resource.TestCheckResourceAttr(addr, "inventory.nics.#", "1"),
					resource.TestCheckResourceAttr(addr, "inventory.nics.0.name", "eth0"),
					resource.TestCheckResourceAttr(addr, "inventory.nics.0.mac", "52:54:00:12:34:56"),
				),
			},
			{
				Config: providerConfig(env, env.MemberToken(t, "p1")) + read,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "provision_state", "available"),
					resource.TestCheckNoResourceAttr(addr, "inventory.cpus"),
				),
			},
		},
	})
}

// TestAccNodeInventoryOnResourceAndList: the baremetal_node resource and
// the baremetal_nodes data source carry the same read-only inventory as
// the baremetal_node data source: null until the node is inspected, then
// read on refresh without a diff, and kept (known) in the plan of an
// update, which never changes it.
func TestAccNodeInventoryOnResourceAndList(t *testing.T) {
	env := accEnv(t, testenv.Options{Systems: 2})
	c := accClient(t, env, env.AdminToken)
	enrollNode(t, env, "inv-listed", "inv", 1)
	const addr, list = "baremetal_node.test", "data.baremetal_nodes.inv"
	cfg := func(extra string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "test", "inv-managed", "inv", 0, extra) + `
data "baremetal_nodes" "inv" {
  resource_class = "inv"
  depends_on     = [baremetal_node.test]
}
`
	}
	inv := tfjsonpath.New("inventory")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config: cfg(""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, inv, knownvalue.Null()),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(list, "nodes.#", "2"),
					resource.TestCheckNoResourceAttr(list, "nodes.0.inventory.cpus"),
					resource.TestCheckNoResourceAttr(list, "nodes.1.inventory.cpus"),
				),
			},
			{
				PreConfig: func() {
					inspectNode(t, env, "inv-managed", 4, 8192, 100)
					inspectNode(t, env, "inv-listed", 2, 512, 4)
				},
				Config: cfg(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, inv.AtMapKey("cpus"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(addr, inv.AtMapKey("memory_bytes"), knownvalue.Int64Exact(8192<<20)),
					statecheck.ExpectKnownValue(addr, inv.AtMapKey("disks").AtSliceIndex(0).AtMapKey("size_bytes"), knownvalue.Int64Exact(100<<30)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("properties").AtMapKey("local_gb"), knownvalue.Int64Exact(100)),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckTypeSetElemNestedAttrs(list, "nodes.*", map[string]string{
						"name": "inv-listed", "inventory.cpus": "2", "inventory.disks.0.name": "vda", "inventory.disks.0.size_bytes": "4294967296"}),
					resource.TestCheckTypeSetElemNestedAttrs(list, "nodes.*", map[string]string{
						"name": "inv-managed", "inventory.cpus": "4", "inventory.memory_bytes": "8589934592"}),
				),
			},
			{
				// An update plans the inventory as it is.
				Config: cfg(`
  maintenance        = true
  maintenance_reason = "inventory test"
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, inv.AtMapKey("cpus"), knownvalue.Int64Exact(4)),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, inv.AtMapKey("cpus"), knownvalue.Int64Exact(4)),
				},
			},
		},
	})
}
