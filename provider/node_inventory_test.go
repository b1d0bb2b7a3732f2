package provider

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

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
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	node := enrollNode(t, env, "inv-0", "gpu", 0)
	const addr = "data.baremetal_node.n"
	read := `
data "baremetal_node" "n" {
  name = "inv-0"
}
`
	inspected := time.Date(2026, 12, 3, 10, 4, 5, 0, time.UTC)
	inv := api.AgentInventory{CPUs: 2, MemoryBytes: 480 << 20, InstalledMemoryBytes: 512 << 20,
		Disks: []api.AgentDisk{
			{Name: "vda", Path: "/dev/vda", SizeBytes: 4 << 30, Serial: "bm-disk-0", Rotational: true},
			{Name: "nvme0n1", Path: "/dev/nvme0n1", SizeBytes: 100 << 30, Model: "Fast NVMe", Serial: "S1", WWN: "eui.0025388b91b1c2d3"},
		},
		NICs: []api.AgentNIC{{Name: "eth0", MAC: "52:54:00:12:34:56", LinkUp: true, SpeedMbps: 25000}},
		System: api.AgentSystem{Vendor: "QEMU", Product: "Standard PC (Q35 + ICH9, 2009)", Serial: "S123",
			UUID: "5b1c3e5e-0d2a-4c55-9d7e-1f0e2a3b4c5d", BootMode: api.BootModeUEFI, SecureBoot: new(true)}}
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
					resource.TestCheckResourceAttr(addr, "inventory.memory_bytes", "503316480"),
					resource.TestCheckResourceAttr(addr, "inventory.installed_memory_bytes", "536870912"),
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
					resource.TestCheckResourceAttr(addr, "inventory.nics.0.speed_mbps", "25000"),
					resource.TestCheckResourceAttr(addr, "inventory.system.vendor", "QEMU"),
					resource.TestCheckResourceAttr(addr, "inventory.system.product", "Standard PC (Q35 + ICH9, 2009)"),
					resource.TestCheckResourceAttr(addr, "inventory.system.serial", "S123"),
					resource.TestCheckResourceAttr(addr, "inventory.system.uuid", "5b1c3e5e-0d2a-4c55-9d7e-1f0e2a3b4c5d"),
					resource.TestCheckResourceAttr(addr, "inventory.system.boot_mode", "uefi"),
					resource.TestCheckResourceAttr(addr, "inventory.system.secure_boot", "true"),
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
	t.Parallel()
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
	inspected := time.Now().Add(-time.Hour).Truncate(time.Second)
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
					inspectNode(t, env, "inv-managed", inspected, 4, 8192, 100)
					inspectNode(t, env, "inv-listed", inspected, 2, 512, 4)
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
			{
				// Inspected again: the refresh reads the new inventory.
				PreConfig: func() { inspectNode(t, env, "inv-managed", inspected.Add(time.Minute), 8, 8192, 200) },
				Config: cfg(`
  maintenance        = true
  maintenance_reason = "inventory test"
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, inv.AtMapKey("cpus"), knownvalue.Int64Exact(8)),
					statecheck.ExpectKnownValue(addr, inv.AtMapKey("inspected_at"),
						knownvalue.StringExact(inspected.Add(time.Minute).UTC().Format(time.RFC3339))),
				},
			},
		},
	})
}

// TestReadInventoryOnlyWhenNew: the provider asks for a node's inventory
// only when the node says it was inspected at another time than the
// inventory it holds, so a refresh of a node costs one request, not two:
// none for a node never inspected, none when nothing changed, one after
// a new inspection.
func TestReadInventoryOnlyWhenNew(t *testing.T) {
	opts := testenv.Options{Systems: 2}
	opts.SimOptions.Password = bmcPassword
	env := testenv.Start(t, opts)
	ctx := context.Background()
	c := accClient(t, env, env.AdminToken)
	never := enrollNode(t, env, "inv-never", "inv", 0)
	inspected := enrollNode(t, env, "inv-once", "inv", 1)
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	inspectNode(t, env, inspected.Name, at, 2, 512, 4)
	read := func(name string, prior types.Object) (types.Object, float64) {
		t.Helper()
		n, err := c.GetNode(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		before := inventoryRequests(t, env)
		var diags diag.Diagnostics
		o := readInventory(ctx, c, n, prior, &diags)
		if diags.HasError() {
			t.Fatalf("read inventory of %s: %v", name, diags)
		}
		return o, inventoryRequests(t, env) - before
	}
	cpus := func(o types.Object) int64 { return o.Attributes()["cpus"].(types.Int64).ValueInt64() }

	if o, asked := read(never.Name, types.ObjectNull(inventoryAttrTypes)); !o.IsNull() || asked != 0 {
		t.Fatalf("never inspected: %v after %v requests, want null after none", o, asked)
	}
	first, asked := read(inspected.Name, types.ObjectNull(inventoryAttrTypes))
	if first.IsNull() || cpus(first) != 2 || asked != 1 {
		t.Fatalf("first read: %v after %v requests, want 2 CPUs after 1", first, asked)
	}
	if o, asked := read(inspected.Name, first); !o.Equal(first) || asked != 0 {
		t.Fatalf("unchanged: %v after %v requests, want the prior after none", o, asked)
	}
	inspectNode(t, env, inspected.Name, at.Add(time.Minute), 8, 512, 4)
	if o, asked := read(inspected.Name, first); cpus(o) != 8 || asked != 1 {
		t.Fatalf("inspected again: %v after %v requests, want 8 CPUs after 1", o, asked)
	}
}

// inventoryRequests counts the requests the controller has served for
// nodes' inventories, from its own metrics.
func inventoryRequests(t *testing.T, env *testenv.Env) float64 {
	t.Helper()
	res, err := http.Get(env.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var sum float64
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "baremetal_http_request_duration_seconds_count{") || !strings.Contains(line, "/inventory") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}
