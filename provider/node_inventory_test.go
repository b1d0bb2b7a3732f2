package provider

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

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
