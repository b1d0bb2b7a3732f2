package provider

import (
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestAccNodeDataSourcesHealth: the node data sources show the hardware
// health the controller read: ok, then critical with the reason and the
// hardware_critical fault when a power supply fails.
func TestAccNodeDataSourcesHealth(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1, HealthInterval: 300 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	sys := env.Sim.SystemIDs()[0]
	cfg := providerConfig(env, env.AdminToken) + nodeHCL(env, "hh", "hh", "rc", 0, "") + `
data "baremetal_node" "hh" {
  name       = "hh"
  depends_on = [baremetal_node.hh]
}
data "baremetal_nodes" "all" {
  depends_on = [baremetal_node.hh]
}
`
	const one, all = "data.baremetal_node.hh", "data.baremetal_nodes.all"
	waitHealth := func(cond func(*baremetal.Node) bool) {
		n, err := env.App.Store.GetNode(t.Context(), "hh")
		if err != nil {
			t.Fatal(err)
		}
		env.WaitNode(t, n.ID, 30*time.Second, cond)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config:    cfg,
				PreConfig: func() {},
			},
			{
				PreConfig: func() { waitHealth(func(n *baremetal.Node) bool { return n.Health.ReadAt != nil }) },
				Config:    cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(one, "health.state", "ok"),
					resource.TestCheckResourceAttrSet(one, "health.read_at"),
					resource.TestCheckResourceAttr(all, "nodes.0.health.state", "ok"),
				),
			},
			{
				PreConfig: func() {
					if err := env.Sim.SetSensor(sys, sim.Sensor{Kind: sim.SensorPSU, Name: "PSU2", Health: "Critical"}); err != nil {
						t.Fatal(err)
					}
					waitHealth(func(n *baremetal.Node) bool { return n.Fault == baremetal.FaultHardwareCritical })
				},
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(one, "health.state", "critical"),
					resource.TestCheckResourceAttr(one, "health.psus_failed", "1"),
					resource.TestCheckResourceAttr(one, "fault", "hardware_critical"),
					resource.TestCheckResourceAttr(all, "nodes.0.health.state", "critical"),
				),
			},
		},
	})
}
