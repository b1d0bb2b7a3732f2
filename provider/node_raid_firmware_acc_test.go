package provider

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// checkSimVolumes checks the names of a simulated system's volumes and
// the media of their drives (volume name to SSD or HDD).
func checkSimVolumes(env *testenv.Env, system string, want map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		vols, err := env.Sim.Volumes(system)
		if err != nil {
			return err
		}
		st, err := env.Sim.Storage(system)
		if err != nil {
			return err
		}
		media := map[string]string{}
		for _, d := range st.Drives {
			media[d.Path] = d.MediaType
		}
		var names []string
		for _, v := range vols {
			names = append(names, v.Name)
			for _, d := range v.Drives {
				if media[d] != want[v.Name] {
					return fmt.Errorf("the BMC's volume %s is on drive %s (%s), want %s drives", v.Name, d, media[d], want[v.Name])
				}
			}
			if len(v.Drives) != 2 {
				return fmt.Errorf("the BMC's volume %s is on %d drives, want 2", v.Name, len(v.Drives))
			}
		}
		if len(names) != len(want) {
			return fmt.Errorf("the BMC has volumes %v, want %v", names, want)
		}
		return nil
	}
}

// TestAccNodeRAID: volumes declared on a new node are made before it is
// available, and the plan after is empty; an import reads them back; a
// volume deleted at the console is drift in the plan, and the apply makes
// it again; removing raid stops managing the volumes, which stay.
func TestAccNodeRAID(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1, SettingsSyncInterval: 500 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	sys := env.Sim.SystemIDs()[0]
	const addr = "baremetal_node.raid"
	cfg := func(extra string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "raid", "raid", "rc", 0, extra)
	}
	const raid = `
  raid = [
    { name = "os", raid_level = "1", drive_count = 2, media_type = "ssd" },
    { name = "data", raid_level = "0", drive_count = 2, media_type = "hdd" },
  ]
`
	both := map[string]string{"os": "SSD", "data": "HDD"}
	empty := []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}
	drift := []plancheck.PlanCheck{
		expectUpdate{addr: addr, changed: []string{"raid.1.name", "raid.1.raid_level", "raid.1.drive_count", "raid.1.media_type"},
			unknown: []string{"hardware"}},
	}
	apiRAID := func(declared bool) resource.TestCheckFunc {
		return checkAPI(c, addr, func(n *api.Node) error {
			if (n.RAID != nil) != declared || declared && len(*n.RAID) != 2 {
				return fmt.Errorf("API raid %+v, want declared %v", n.RAID, declared)
			}
			if n.ProvisionState != api.StateAvailable || n.LastError != "" || len(n.Hardware.Unmet) > 0 {
				return fmt.Errorf("node %s, last_error %q, unmet %q", n.ProvisionState, n.LastError, n.Hardware.Unmet)
			}
			return nil
		})
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config: cfg(raid),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("raid").AtSliceIndex(1).AtMapKey("name"), knownvalue.StringExact("data")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("raid").AtSliceIndex(1).AtMapKey("size_gb"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("hardware").AtMapKey("unmet"), knownvalue.ListExact(nil)),
				},
				Check:            resource.ComposeAggregateTestCheckFunc(checkSimVolumes(env, sys, both), apiRAID(true)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: empty},
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"bmc.password", "hardware.read_at"},
			},
			{
				// Deleted at the console: the plan makes it again.
				PreConfig: func() {
					vols, err := env.Sim.Volumes(sys)
					if err != nil {
						t.Fatal(err)
					}
					i := slices.IndexFunc(vols, func(v sim.VolumeStatus) bool { return v.Name == "data" })
					if i < 0 {
						t.Fatalf("no volume data on the BMC: %+v", vols)
					}
					if err := env.Sim.DeleteVolumeOOB(sys, vols[i].ID); err != nil {
						t.Fatal(err)
					}
					waitUnmet(t, c, "raid", "raid.data: want RAID 0, is missing")
				},
				Config:             cfg(raid),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks:   resource.ConfigPlanChecks{PostApplyPostRefresh: drift},
			},
			{
				Config:           cfg(raid),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: drift, PostApplyPostRefresh: empty},
				Check:            resource.ComposeAggregateTestCheckFunc(checkSimVolumes(env, sys, both), apiRAID(true)),
			},
			{
				// Removed: no longer managed; the BMC keeps its volumes.
				Config: cfg(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("raid"), knownvalue.Null()),
					},
					PostApplyPostRefresh: empty,
				},
				Check: resource.ComposeAggregateTestCheckFunc(checkSimVolumes(env, sys, both), apiRAID(false)),
			},
		},
	})
}

// TestAccNodeFirmware: a firmware version declared on a new node is
// flashed from its image before the node is available, with an empty
// plan after; a version flashed by another tool is drift, and the apply
// flashes the declared one again; an image the BMC fails on fails the
// apply with the controller's words on the component.
func TestAccNodeFirmware(t *testing.T) {
	t.Parallel()
	images := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bios-2.1.0.bin":
			fmt.Fprint(w, "component=BIOS\nversion=2.1.0\n")
		case "/bios-broken.bin":
			fmt.Fprint(w, "component=BIOS\nversion=2.2.0\nfail=signature check failed\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(images.Close)
	env := accEnv(t, testenv.Options{Systems: 1, SettingsSyncInterval: 500 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	sys := env.Sim.SystemIDs()[0]
	const addr = "baremetal_node.fw"
	cfg := func(version, image string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "fw", "fw", "rc", 0, fmt.Sprintf(`
  firmware = [{ component = "BIOS", version = %q, image_url = "%s/%s" }]
`, version, images.URL, image))
	}
	simHas := func(want string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			fw, _, err := env.Sim.Firmware(sys)
			if err != nil || fw["BIOS"] != want {
				return fmt.Errorf("the BMC's firmware %v (%v), want BIOS %s", fw, err, want)
			}
			return nil
		}
	}
	empty := []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}
	drift := []plancheck.PlanCheck{
		expectUpdate{addr: addr, changed: []string{"firmware.0.version"}, unknown: []string{"hardware"}},
		plancheck.ExpectKnownValue(addr, tfjsonpath.New("firmware").AtSliceIndex(0).AtMapKey("version"), knownvalue.StringExact("2.1.0")),
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config:           cfg("2.1.0", "bios-2.1.0.bin"),
				Check:            simHas("2.1.0"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: empty},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("provision_state"), knownvalue.StringExact("available")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("hardware").AtMapKey("unmet"), knownvalue.ListExact(nil)),
				},
			},
			{
				// Flashed by another tool: drift.
				PreConfig: func() {
					if err := env.Sim.SetFirmwareVersion(sys, "BIOS", "1.0.0"); err != nil {
						t.Fatal(err)
					}
					waitUnmet(t, c, "fw", "firmware.BIOS: want 2.1.0, is 1.0.0")
				},
				Config:             cfg("2.1.0", "bios-2.1.0.bin"),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks:   resource.ConfigPlanChecks{PostApplyPostRefresh: drift},
			},
			{
				Config:           cfg("2.1.0", "bios-2.1.0.bin"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: drift, PostApplyPostRefresh: empty},
				Check:            simHas("2.1.0"),
			},
			{
				Config: cfg("2.2.0", "bios-broken.bin"),
				ExpectError: regexp.MustCompile(`(?s)The hardware settings of node fw were not applied.*` +
					words("hardware settings: the BMC failed to update firmware BIOS") + `.*` + words("signature check failed")),
			},
			{
				// The version stayed; the plan shows it.
				Config:             cfg("2.2.0", "bios-broken.bin"),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("firmware").AtSliceIndex(0).AtMapKey("version"), knownvalue.StringExact("2.2.0")),
				}},
				Check: simHas("2.1.0"),
			},
		},
	})
}

// TestAccNodeDataSourcesHardware: baremetal_node and baremetal_nodes
// show the node's declared BIOS settings and Secure Boot, and what the
// controller read of them (hardware), drift included.
func TestAccNodeDataSourcesHardware(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1, SettingsSyncInterval: 500 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	sys := env.Sim.SystemIDs()[0]
	cfg := func(lifecycle string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "hw", "hw", "rc", 0, `
  bios_settings = { ProcVirtualization = "Disabled" }
  secure_boot   = true
`+lifecycle) + `
data "baremetal_node" "hw" {
  name       = "hw"
  depends_on = [baremetal_node.hw]
}
data "baremetal_nodes" "all" {
  depends_on = [baremetal_node.hw]
}
`
	}
	const one, all = "data.baremetal_node.hw", "data.baremetal_nodes.all"
	check := func(unmet ...string) resource.TestCheckFunc {
		var checks []resource.TestCheckFunc
		for _, ds := range []struct{ addr, prefix string }{{one, ""}, {all, "nodes.0."}} {
			checks = append(checks,
				resource.TestCheckResourceAttr(ds.addr, ds.prefix+"bios_settings.%", "1"),
				resource.TestCheckResourceAttr(ds.addr, ds.prefix+"bios_settings.ProcVirtualization", "Disabled"),
				resource.TestCheckResourceAttr(ds.addr, ds.prefix+"secure_boot", "true"),
				resource.TestCheckResourceAttrSet(ds.addr, ds.prefix+"hardware.read_at"),
				resource.TestCheckResourceAttr(ds.addr, ds.prefix+"hardware.waiting", "false"),
				resource.TestCheckResourceAttr(ds.addr, ds.prefix+"hardware.lacks.#", "0"),
				resource.TestCheckResourceAttr(ds.addr, ds.prefix+"hardware.unmet.#", fmt.Sprint(len(unmet))),
			)
			for i, u := range unmet {
				checks = append(checks, resource.TestCheckResourceAttr(ds.addr, fmt.Sprintf("%shardware.unmet.%d", ds.prefix, i), u))
			}
		}
		return resource.ComposeAggregateTestCheckFunc(checks...)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{Config: cfg(""), Check: check()},
			{
				// Changed at the console, left so by the resource: the
				// data sources show the drift.
				PreConfig: func() {
					if err := env.Sim.SetBIOSAttribute(sys, "ProcVirtualization", "Enabled"); err != nil {
						t.Fatal(err)
					}
					waitUnmet(t, c, "hw", "bios_settings.ProcVirtualization: want Disabled, is Enabled")
				},
				Config: cfg("  lifecycle {\n    ignore_changes = [bios_settings]\n  }\n"),
				Check:  check("bios_settings.ProcVirtualization: want Disabled, is Enabled"),
			},
		},
	})
}
