package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestAccDataSources reads nodes by id, by name and through filters,
// including the faulted ones a check block warns about, and makes sure
// neither BMC credentials nor the API token show up in the state or the
// provider's debug log.
func TestAccDataSources(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "tf.log")
	t.Setenv("TF_LOG", "DEBUG")
	t.Setenv("TF_LOG_PATH", logFile)

	env := accEnv(t, testenv.Options{Systems: 3, PowerSyncInterval: 300 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	nodes := nodeHCL(env, "a", "ds-a", "gpu", 0, "") +
		nodeHCL(env, "b", "ds-b", "gpu", 1, `
  maintenance        = true
  maintenance_reason = "rack move"
`) + nodeHCL(env, "c", "ds-c", "cpu", 2, "")
	base := providerConfig(env, env.AdminToken) + nodes
	reads := base + `
data "baremetal_node" "by_name" {
  name       = "ds-a"
  depends_on = [baremetal_node.a]
}
data "baremetal_node" "by_id" {
  id = baremetal_node.c.id
}
data "baremetal_nodes" "gpu_free" {
  resource_class  = "gpu"
  provision_state = "available"
  maintenance     = false
  fault           = "none"
  depends_on      = [baremetal_node.a, baremetal_node.b, baremetal_node.c]
}
data "baremetal_nodes" "all" {
  depends_on = [baremetal_node.a, baremetal_node.b, baremetal_node.c]
}
data "baremetal_nodes" "faulted" {
  fault      = "any"
  depends_on = [baremetal_node.a, baremetal_node.b, baremetal_node.c]
}
`
	// A scoped data source in a check block is read at every apply, so
	// plans with it are never empty; that is Terraform's design.
	withCheck := reads + `
check "no_faulted_nodes" {
  data "baremetal_nodes" "faulted_check" {
    fault = "any"
  }
  assert {
    condition     = length(data.baremetal_nodes.faulted_check.nodes) == 0
    error_message = "faulted nodes: ${join(", ", [for n in data.baremetal_nodes.faulted_check.nodes : n.name])}"
  }
}
`
	var systemC string

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config: reads,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrPair("data.baremetal_node.by_name", "id", "baremetal_node.a", "id"),
					resource.TestCheckResourceAttr("data.baremetal_node.by_name", "provision_state", "available"),
					resource.TestCheckResourceAttr("data.baremetal_node.by_name", "resource_class", "gpu"),
					resource.TestCheckResourceAttrWith("data.baremetal_node.by_name", "properties.cpus", positive),
					resource.TestCheckResourceAttr("data.baremetal_node.by_id", "name", "ds-c"),
					resource.TestCheckResourceAttr("data.baremetal_nodes.gpu_free", "nodes.#", "1"),
					resource.TestCheckResourceAttr("data.baremetal_nodes.gpu_free", "nodes.0.name", "ds-a"),
					resource.TestCheckResourceAttr("data.baremetal_nodes.all", "nodes.#", "3"),
					resource.TestCheckResourceAttr("data.baremetal_nodes.faulted", "nodes.#", "0"),
					resource.TestCheckTypeSetElemNestedAttrs("data.baremetal_nodes.all", "nodes.*", map[string]string{
						"name": "ds-b", "maintenance": "true", "maintenance_reason": "rack move",
					}),
					checkSecretOnlyIn(bmcPassword, "baremetal_node.a.bmc.password", "baremetal_node.b.bmc.password", "baremetal_node.c.bmc.password"),
					checkSecretOnlyIn(env.AdminToken),
				),
			},
			{
				// ds-c's BMC goes down: the power sync records a fault (never
				// maintenance). The check block only warns; the filters see it.
				PreConfig: func() {
					systemC = env.Sim.SystemIDs()[2]
					setFault(t, env, systemC, sim.FaultDown)
					poll(t, "ds-c faulted", 30*time.Second, func() (bool, error) {
						n, err := c.GetNode(context.Background(), "ds-c")
						return err == nil && n.Fault != "", err
					})
				},
				Config: reads,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("data.baremetal_nodes.faulted", "nodes.#", "1"),
					resource.TestCheckResourceAttr("data.baremetal_nodes.faulted", "nodes.0.name", "ds-c"),
					resource.TestCheckResourceAttr("data.baremetal_nodes.faulted", "nodes.0.fault", "bmc_unreachable"),
					resource.TestCheckResourceAttr("data.baremetal_nodes.faulted", "nodes.0.maintenance", "false"),
					resource.TestCheckResourceAttrSet("data.baremetal_nodes.faulted", "nodes.0.last_error"),
					resource.TestCheckResourceAttrWith("data.baremetal_nodes.faulted", "nodes.0.fault_since", nonEmpty),
					resource.TestCheckResourceAttr("data.baremetal_node.by_id", "fault", "bmc_unreachable"),
				),
			},
			{
				// The check's assertion fails: a warning, not an error.
				Config:             withCheck,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{onlyReads{}},
				},
			},
			{
				// The fault heals by itself once the BMC answers.
				PreConfig: func() {
					setFault(t, env, systemC, sim.FaultNone)
					waitNodeHealthy(t, c, "ds-c", "available", 30*time.Second)
				},
				Config: reads,
				Check:  resource.TestCheckResourceAttr("data.baremetal_nodes.faulted", "nodes.#", "0"),
			},
		},
	})

	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatalf("no debug log: %v", err)
	}
	if !strings.Contains(string(log), "baremetal API request") {
		t.Fatal("the debug log has no API request lines: TF_LOG_PATH was not honoured, the leak check would prove nothing")
	}
	for name, secret := range map[string]string{"API token": env.AdminToken, "BMC password": bmcPassword} {
		if strings.Contains(string(log), secret) {
			t.Errorf("the %s appears in the debug log", name)
		}
	}
}

func nonEmpty(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	return nil
}

// onlyReads is a plan check: nothing but data source reads is planned.
type onlyReads struct{}

func (onlyReads) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Mode == "data" || rc.Change == nil {
			continue
		}
		for _, a := range rc.Change.Actions {
			if a != "no-op" {
				resp.Error = fmt.Errorf("%s: unexpected %s", rc.Address, a)
				return
			}
		}
	}
}
