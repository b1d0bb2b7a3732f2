package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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

// TestAccNodePropertyOverrides: properties set in the configuration are
// the operator's overrides, which inspection never changes; removing one
// plans it as known after apply, and the apply brings back what
// inspection found (the simulated BMC's inventory at enroll, then the
// deploy agent's), with an empty plan after. A property never inspected
// comes back empty.
func TestAccNodePropertyOverrides(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_node.test"
	cfg := func(props string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "test", "overrides", "rc1", 0, props)
	}
	props := func(k string) tfjsonpath.Path { return tfjsonpath.New("properties").AtMapKey(k) }
	overrides := func(names ...string) statecheck.StateCheck {
		vs := make([]knownvalue.Check, len(names))
		for i, n := range names {
			vs[i] = knownvalue.StringExact(n)
		}
		return statecheck.ExpectKnownValue(addr, tfjsonpath.New("property_overrides"), knownvalue.SetExact(vs))
	}
	apiOverrides := func(want ...api.PropertyName) resource.TestCheckFunc {
		return checkAPI(c, addr, func(n *api.Node) error {
			if !slices.Equal(n.PropertyOverrides, want) {
				return fmt.Errorf("API property_overrides %q, want %q", n.PropertyOverrides, want)
			}
			return nil
		})
	}
	// What the simulated system's BMC reports (internal/bmc/sim).
	const simMemoryMB = 65536

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config: cfg(`properties = { cpus = 128, local_gb = 500 }`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, props("cpus"), knownvalue.Int64Exact(128)),
					statecheck.ExpectKnownValue(addr, props("local_gb"), knownvalue.Int64Exact(500)),
					statecheck.ExpectKnownValue(addr, props("memory_mb"), knownvalue.Int64Exact(simMemoryMB)),
					statecheck.ExpectKnownValue(addr, props("cpu_arch"), knownvalue.StringExact("x86_64")),
					overrides("cpus", "local_gb"),
				},
				Check: apiOverrides(api.PropertyCPUs, api.PropertyLocalGB),
			},
			{
				// The deploy agent inspects the node (stored as the inspect
				// job stores it): the refresh shows what it found, except
				// where the configuration overrides it.
				PreConfig: func() { inspectNode(t, env, "overrides", time.Now(), 4, 8192, 100) },
				Config:    cfg(`properties = { cpus = 128, local_gb = 500 }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, props("cpus"), knownvalue.Int64Exact(128)),
					statecheck.ExpectKnownValue(addr, props("local_gb"), knownvalue.Int64Exact(500)),
					statecheck.ExpectKnownValue(addr, props("memory_mb"), knownvalue.Int64Exact(8192)),
				},
			},
			{
				// cpus leaves the configuration: its override is cleared and
				// the agent's 4 CPUs come back.
				Config: cfg(`properties = { local_gb = 500 }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectUnknownValue(addr, props("cpus")),
						plancheck.ExpectKnownValue(addr, props("local_gb"), knownvalue.Int64Exact(500)),
						plancheck.ExpectKnownValue(addr, props("memory_mb"), knownvalue.Int64Exact(8192)),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("property_overrides"),
							knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("local_gb")})),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, props("cpus"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(addr, props("local_gb"), knownvalue.Int64Exact(500)),
					overrides("local_gb"),
				},
				Check: apiOverrides(api.PropertyLocalGB),
			},
			{
				// No properties at all: local_gb shows the agent's disk.
				Config: cfg(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectUnknownValue(addr, props("local_gb")),
						plancheck.ExpectKnownValue(addr, props("cpus"), knownvalue.Int64Exact(4)),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, props("local_gb"), knownvalue.Int64Exact(100)),
					statecheck.ExpectKnownValue(addr, props("cpus"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(addr, props("cpu_arch"), knownvalue.StringExact("x86_64")),
					overrides(),
				},
				Check: apiOverrides(),
			},
			{
				Config: cfg(`properties = { cpu_arch = "aarch64" }`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, props("cpu_arch"), knownvalue.StringExact("aarch64")),
					overrides("cpu_arch"),
				},
				Check: apiOverrides(api.PropertyCPUArch),
			},
		},
	})
}

// inspectNode stores an inventory for the named node and records its
// properties as inspected, as the inspect job does when the deploy agent
// reports (the agent itself is proven on a real VM in internal/app).
func inspectNode(t *testing.T, env *testenv.Env, name string, at time.Time, cpus, memoryMB, diskGB int) {
	t.Helper()
	inv := api.AgentInventory{CPUs: cpus, MemoryBytes: int64(memoryMB) << 20,
		Disks: []api.AgentDisk{{Name: "vda", Path: "/dev/vda", SizeBytes: int64(diskGB) << 30}}}
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
		if err := tx.SetInventory(ctx, &baremetal.Inventory{NodeID: n.ID, Data: string(data), InspectedAt: at}); err != nil {
			return err
		}
		n.RecordInspection(baremetal.Properties{CPUs: cpus, MemoryMB: memoryMB, LocalGB: diskGB}, false)
		return tx.UpdateNode(ctx, n)
	}); err != nil {
		t.Fatal(err)
	}
}
