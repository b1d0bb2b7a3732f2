package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// setDerivedTraits stands for an inspection that found other hardware:
// it replaces the node's derived traits in the controller's store, as the
// controller does when it inspects the node or verifies its BMC.
func setDerivedTraits(t *testing.T, env *testenv.Env, name string, traits ...string) {
	t.Helper()
	ctx := context.Background()
	// The controller's own jobs (power sync) write the node too: retry
	// when one did in between.
	poll(t, "derived traits of "+name+" set", 10*time.Second, func() (bool, error) {
		n, err := env.App.Store.GetNode(ctx, name)
		if err != nil {
			return false, err
		}
		n.DerivedTraits = baremetal.SortedTraits(traits)
		if err := env.App.Store.UpdateNode(ctx, n); err != nil {
			return false, err
		}
		return true, nil
	})
}

func stringSet(values ...string) knownvalue.Check {
	checks := make([]knownvalue.Check, len(values))
	for i, v := range values {
		checks[i] = knownvalue.StringExact(v)
	}
	return knownvalue.SetExact(checks)
}

// TestAccNodeTraits: a node's traits and owner are set on create, drift
// when changed outside Terraform (a trait removed with the API shows in
// the plan, and the apply puts it back), change in place and clear; its
// derived traits follow each re-inspection at refresh without a diff,
// and an update that does not re-verify the BMC plans them as they are,
// not "(known after apply)". The node data source shows all three.
func TestAccNodeTraits(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	ctx := context.Background()
	const addr, ds = "baremetal_node.t", "data.baremetal_node.t"
	config := func(extra string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "t", "traits", "gpu", 0, extra) + `
data "baremetal_node" "t" {
  id = baremetal_node.t.id
}
`
	}
	managed := config(`
  traits = ["CUSTOM_GPU_A100", "rack:r12"]
  owner  = "team-a"
`)
	apiNode := func(check func(*api.Node) error) resource.TestCheckFunc {
		return func(*terraform.State) error {
			n, err := c.GetNode(ctx, "traits")
			if err != nil {
				return err
			}
			return check(n)
		}
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config: managed,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("traits"), stringSet("CUSTOM_GPU_A100", "rack:r12")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("owner"), knownvalue.StringExact("team-a")),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("traits"), stringSet("CUSTOM_GPU_A100", "rack:r12")),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("owner"), knownvalue.StringExact("team-a")),
				},
				Check: apiNode(func(n *api.Node) error {
					if !slices.Equal(n.Traits, []string{"CUSTOM_GPU_A100", "rack:r12"}) || n.Owner != "team-a" {
						return fmt.Errorf("controller's node: traits %v, owner %q", n.Traits, n.Owner)
					}
					return nil
				}),
			},
			{
				// An operator removes a trait and frees the node with the
				// API: drift, which the apply undoes.
				PreConfig: func() {
					traits, owner := []string{"CUSTOM_GPU_A100"}, ""
					if _, err := c.PatchNode(ctx, "traits", api.NodePatch{Traits: &traits, Owner: &owner}, ""); err != nil {
						t.Fatal(err)
					}
				},
				Config: managed,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("traits"), stringSet("CUSTOM_GPU_A100", "rack:r12")),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("owner"), knownvalue.StringExact("team-a")),
					},
				},
				Check: apiNode(func(n *api.Node) error {
					if !slices.Equal(n.Traits, []string{"CUSTOM_GPU_A100", "rack:r12"}) || n.Owner != "team-a" {
						return fmt.Errorf("after the apply: traits %v, owner %q", n.Traits, n.Owner)
					}
					return nil
				}),
			},
			{
				// A re-inspection found NVMe disks; the configuration moves
				// the node to another project. The plan shows the derived
				// traits the refresh read, not (known after apply).
				PreConfig: func() { setDerivedTraits(t, env, "traits", "HW_ARCH_X86_64", "STORAGE_DISK_NVME") },
				Config: config(`
  traits = ["CUSTOM_GPU_A100", "rack:r12"]
  owner  = "team-b"
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("derived_traits"), stringSet("HW_ARCH_X86_64", "STORAGE_DISK_NVME")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("owner"), knownvalue.StringExact("team-b")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("derived_traits"), stringSet("HW_ARCH_X86_64", "STORAGE_DISK_NVME")),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("derived_traits"), stringSet("HW_ARCH_X86_64", "STORAGE_DISK_NVME")),
				},
			},
			{
				// Another re-inspection: the disks are SSDs after all. The
				// refresh follows; nothing to apply.
				PreConfig: func() { setDerivedTraits(t, env, "traits", "HW_ARCH_X86_64", "STORAGE_DISK_SSD") },
				Config: config(`
  traits = ["CUSTOM_GPU_A100", "rack:r12"]
  owner  = "team-b"
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("derived_traits"), stringSet("HW_ARCH_X86_64", "STORAGE_DISK_SSD")),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("derived_traits"), stringSet("HW_ARCH_X86_64", "STORAGE_DISK_SSD")),
					// The operator's traits stay the operator's.
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("traits"), stringSet("CUSTOM_GPU_A100", "rack:r12")),
				},
			},
			{
				// Out of the configuration: no traits, no owner.
				Config: config(""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("traits"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("owner"), knownvalue.Null()),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("traits"), knownvalue.SetExact(nil)),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("owner"), knownvalue.StringExact("")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("derived_traits"), stringSet("HW_ARCH_X86_64", "STORAGE_DISK_SSD")),
				},
				Check: apiNode(func(n *api.Node) error {
					if len(n.Traits) != 0 || n.Owner != "" {
						return fmt.Errorf("after clearing: traits %v, owner %q", n.Traits, n.Owner)
					}
					return nil
				}),
			},
		},
	})
}

// placementFleet is four nodes for placement: small has no trait, medium
// and big have CUSTOM_NVME, and other, the smallest with the trait, is
// owned by another project. Their sizes are operator's properties, so
// that the test does not depend on the simulator's inventory.
func placementFleet(env *testenv.Env) string {
	node := func(label string, system int, cpus, memoryMB int, arch, extra string) string {
		return nodeHCL(env, label, "pl-"+label, "general", system, fmt.Sprintf(`
  properties = {
    cpus      = %d
    memory_mb = %d
    local_gb  = 400
    cpu_arch  = %q
  }
%s`, cpus, memoryMB, arch, extra))
	}
	return node("small", 0, 4, 16384, "x86_64", "") +
		node("medium", 1, 16, 65536, "x86_64", `  traits = ["CUSTOM_NVME"]`) +
		node("big", 2, 64, 262144, "x86_64", `  traits = ["CUSTOM_NVME", "CUSTOM_GPU_T4"]`) +
		node("other", 3, 8, 32768, "aarch64", "  traits = [\"CUSTOM_NVME\"]\n  owner  = \"other\"")
}

// TestAccInstanceRequirements: an instance placed by requirements alone
// (no resource_class, no node_id) fails with the controller's
// per-requirement explanation when no node has a required trait, and
// otherwise lands on the smallest node that meets them (best fit), not on
// a smaller one another project owns; changing a requirement replaces it.
func TestAccInstanceRequirements(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 4})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_instance.app"
	fleet := providerConfig(env, env.AdminToken) + placementFleet(env)
	instance := func(requirements string) string {
		return fleet + fmt.Sprintf(`
resource "baremetal_instance" "app" {
  name    = "app"
  project = "acc"
  image = {
    url = "https://images.example.com/app.img"
  }
%s
  depends_on = [baremetal_node.small, baremetal_node.medium, baremetal_node.big, baremetal_node.other]
}
`, requirements)
	}
	var firstID string

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkInstancesGone(c), checkNodesGone(c)),
		Steps: []resource.TestStep{
			{
				Config: instance(`  required_traits = ["CUSTOM_GPU_A100"]`),
				ExpectError: regexp.MustCompile(`(?s)Could not create instance app.*no node fits the instance's\s+requirements:\s+of\s+4\s+nodes,\s+` +
					`4\s+lack\s+trait\s+CUSTOM_GPU_A100,\s+1\s+is\s+owned\s+by\s+another\s+project`),
			},
			{
				Config: instance(`
  required_traits  = ["CUSTOM_NVME"]
  forbidden_traits = ["CUSTOM_GPU_T4"]
  min_cpus         = 8
  min_memory_mb    = 32768
  min_disk_gb      = 100
  cpu_arch         = "x86_64"
`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("active")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("resource_class"), knownvalue.StringExact("general")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("required_traits"), stringSet("CUSTOM_NVME")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("min_cpus"), knownvalue.Int64Exact(8)),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrPair(addr, "node_id", "baremetal_node.medium", "id"),
					func(s *terraform.State) error {
						firstID, _ = stateAttr(s, addr, "id")
						inst, err := c.GetInstance(context.Background(), firstID)
						if err != nil {
							return err
						}
						want := api.Requirements{RequiredTraits: []string{"CUSTOM_NVME"}, ForbiddenTraits: []string{"CUSTOM_GPU_T4"},
							MinCPUs: 8, MinMemoryMB: 32768, MinDiskGB: 100, CPUArch: "x86_64"}
						if fmt.Sprint(inst.Requirements) != fmt.Sprint(want) {
							return fmt.Errorf("controller's requirements %+v, want %+v", inst.Requirements, want)
						}
						return nil
					},
				),
			},
			{
				// Placement is decided at create: a new requirement
				// replaces the instance, which now needs the big node.
				Config: instance(`
  required_traits = ["CUSTOM_NVME", "CUSTOM_GPU_T4"]
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("forbidden_traits"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("min_cpus"), knownvalue.Null()),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrPair(addr, "node_id", "baremetal_node.big", "id"),
					func(s *terraform.State) error {
						if id, _ := stateAttr(s, addr, "id"); id == firstID {
							return fmt.Errorf("instance %s was not replaced", id)
						}
						return nil
					},
				),
			},
		},
	})
}

// TestAccPlacementDataSources: baremetal_nodes filters by traits,
// minimums, architecture, owner and schedulability and shows each node's
// traits and owner; baremetal_capacity counts the instances of a shape a
// project could place, within its quota, and explains a shortage per
// requirement. (A member token's capacity, its own project's, is in
// TestAccCapacityCheckExample: terraform-plugin-testing configures one
// provider server for every alias, the last configuration winning.)
func TestAccPlacementDataSources(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 4})
	c := accClient(t, env, env.AdminToken)
	if q, err := c.PutQuota(context.Background(), api.Quota{Project: "capped", Instances: 1}); err != nil || q.Instances != 1 {
		t.Fatalf("put quota: %+v, %v", q, err)
	}
	dep := "  depends_on = [baremetal_node.small, baremetal_node.medium, baremetal_node.big, baremetal_node.other]\n"
	config := providerConfig(env, env.AdminToken) + placementFleet(env) + `
data "baremetal_nodes" "nvme" {
  required_traits = ["CUSTOM_NVME"]
` + dep + `}
data "baremetal_nodes" "nvme_no_gpu_x86" {
  required_traits  = ["CUSTOM_NVME"]
  forbidden_traits = ["CUSTOM_GPU_T4"]
  cpu_arch         = "x86_64"
` + dep + `}
data "baremetal_nodes" "big_enough" {
  min_cpus      = 8
  min_memory_mb = 32768
  min_disk_gb   = 400
` + dep + `}
data "baremetal_nodes" "owned" {
  owner = "other"
` + dep + `}
data "baremetal_nodes" "schedulable" {
  schedulable = true
` + dep + `}
data "baremetal_nodes" "unschedulable" {
  schedulable = false
` + dep + `}
data "baremetal_capacity" "nvme" {
  project         = "acc"
  required_traits = ["CUSTOM_NVME"]
` + dep + `}
data "baremetal_capacity" "gpu" {
  project         = "acc"
  resource_class  = "general"
  required_traits = ["CUSTOM_GPU_A100"]
  min_memory_mb   = 131072
` + dep + `}
data "baremetal_capacity" "capped" {
  project  = "capped"
  min_cpus = 1
` + dep + `}
`
	names := func(ds string, want ...string) resource.TestCheckFunc {
		var checks []resource.TestCheckFunc
		checks = append(checks, resource.TestCheckResourceAttr(ds, "nodes.#", fmt.Sprint(len(want))))
		for _, n := range want {
			checks = append(checks, resource.TestCheckTypeSetElemNestedAttrs(ds, "nodes.*", map[string]string{"name": "pl-" + n}))
		}
		return resource.ComposeAggregateTestCheckFunc(checks...)
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				// The nodes first: a data source depending on a resource
				// being created is read at apply, and the maintenance below
				// must be set before the reads.
				Config: providerConfig(env, env.AdminToken) + placementFleet(env),
			},
			{
				PreConfig: func() {
					yes, reason := true, "fan"
					if _, err := c.PatchNode(context.Background(), "pl-small", api.NodePatch{Maintenance: &yes, MaintenanceReason: &reason}, ""); err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					names("data.baremetal_nodes.nvme", "medium", "big", "other"),
					names("data.baremetal_nodes.nvme_no_gpu_x86", "medium"),
					names("data.baremetal_nodes.big_enough", "medium", "big", "other"),
					names("data.baremetal_nodes.owned", "other"),
					names("data.baremetal_nodes.schedulable", "medium", "big", "other"),
					names("data.baremetal_nodes.unschedulable", "small"),
					resource.TestCheckTypeSetElemNestedAttrs("data.baremetal_nodes.owned", "nodes.*",
						map[string]string{"owner": "other", "traits.#": "1", "traits.0": "CUSTOM_NVME"}),
					resource.TestCheckTypeSetElemNestedAttrs("data.baremetal_nodes.nvme", "nodes.*",
						map[string]string{"name": "pl-big", "owner": "", "traits.#": "2"}),

					// acc may use medium and big; other is owned by another project.
					resource.TestCheckResourceAttr("data.baremetal_capacity.nvme", "placeable", "2"),
					resource.TestCheckResourceAttr("data.baremetal_capacity.nvme", "available", "2"),
					resource.TestCheckResourceAttr("data.baremetal_capacity.nvme", "pending", "0"),
					resource.TestCheckResourceAttr("data.baremetal_capacity.nvme", "nodes", "4"),
					resource.TestCheckResourceAttr("data.baremetal_capacity.nvme", "unsuited", "2"),
					resource.TestCheckNoResourceAttr("data.baremetal_capacity.nvme", "quota_remaining"),
					resource.TestCheckTypeSetElemNestedAttrs("data.baremetal_capacity.nvme", "unmet.*",
						map[string]string{"requirement": "owner", "value": "", "nodes": "1"}),

					resource.TestCheckResourceAttr("data.baremetal_capacity.gpu", "placeable", "0"),
					resource.TestCheckResourceAttr("data.baremetal_capacity.gpu", "unsuited", "4"),
					resource.TestCheckResourceAttr("data.baremetal_capacity.gpu", "unmet.0.requirement", "required_trait"),
					resource.TestCheckResourceAttr("data.baremetal_capacity.gpu", "unmet.0.value", "CUSTOM_GPU_A100"),
					resource.TestCheckResourceAttr("data.baremetal_capacity.gpu", "unmet.0.nodes", "4"),
					resource.TestMatchResourceAttr("data.baremetal_capacity.gpu", "unmet.0.message", regexp.MustCompile(`^4 nodes lack trait CUSTOM_GPU_A100$`)),
					resource.TestMatchResourceAttr("data.baremetal_capacity.gpu", "message",
						regexp.MustCompile(`^no node of class "general" fits the instance's requirements: of 4 nodes, 4 lack trait CUSTOM_GPU_A100, `+
							`3 have less than 131072 MB memory \(or unknown\), 1 is owned by another project$`)),

					// A quota of one: one placeable, whatever the nodes.
					resource.TestCheckResourceAttr("data.baremetal_capacity.capped", "quota_remaining", "1"),
					resource.TestCheckResourceAttr("data.baremetal_capacity.capped", "available", "2"),
					resource.TestCheckResourceAttr("data.baremetal_capacity.capped", "placeable", "1"),
				),
			},
		},
	})
}
