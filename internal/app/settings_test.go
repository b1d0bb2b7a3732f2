package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestHardwareSettingsApplyAndDrift: BIOS attributes and Secure Boot
// declared at enroll are applied before the node is ever available
// (enroll → configuring → available), on the simulated BMC through its
// pending settings object and a reset, and read back; a value its
// registry refuses is the node's last_error, nothing applied and no
// fault; a change made at the console shows as drift at the next read
// back, and applying again restores it; a node holding an instance gets
// its settings after its cleanup.
func TestHardwareSettingsApplyAndDrift(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 2, SettingsSyncInterval: 500 * time.Millisecond, ConfigureTimeout: 3 * time.Second})
	ctx := context.Background()
	on := true
	spec := env.NodeSpec(0, "hw-0", "gpu")
	spec.Settings = baremetal.HardwareSettings{BIOS: map[string]string{"ProcVirtualization": "Disabled", "NumaNodesPerSocket": "2"}, SecureBoot: &on}
	n, err := env.App.Service.CreateNode(ctx, env.Admin(), spec)
	if err != nil {
		t.Fatal(err)
	}
	sys := env.Sim.SystemIDs()[0]
	n = env.WaitNode(t, n.ID, 60*time.Second, func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateAvailable && n.Observed.ReadAt != nil
	})
	if u := n.Settings.Unmet(n.Observed); len(u) > 0 || n.LastError != "" || n.Fault != "" || n.Settings.Waiting {
		t.Fatalf("after enroll: unmet %q, last_error %q, fault %q, waiting %v", u, n.LastError, n.Fault, n.Settings.Waiting)
	}
	attrs, pending, err := env.Sim.BIOS(sys)
	if err != nil || attrs["ProcVirtualization"] != "Disabled" || attrs["NumaNodesPerSocket"] != int64(2) || len(pending) != 0 {
		t.Fatalf("the BMC's BIOS: %v pending %v (%v)", attrs, pending, err)
	}
	if enabled, _, _ := env.Sim.SecureBoot(sys); !enabled {
		t.Fatal("Secure Boot not enabled on the BMC")
	}
	if p, _ := env.Sim.Power(sys); p != "Off" {
		t.Errorf("the machine was left %s after its settings were applied", p)
	}
	if n.PowerState != baremetal.PowerOff {
		t.Errorf("the node shows power %s once available after its settings were applied; the flow left it off", n.PowerState)
	}
	evs, _, err := env.App.Store.ListEvents(ctx, n.ID, store.Page{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, e := range evs {
		if e.Field == "provision_state" {
			states = append(states, e.New)
		}
	}
	if !slices.Equal(states, []string{"enroll", "configuring", "available"}) {
		t.Errorf("provision states %q; want the node configured before it was available for good", states)
	}

	// A value the BMC's registry refuses: refused at once by the API now
	// that the registry is known, naming the attribute; nothing changes.
	_, err = env.App.Service.UpdateNode(ctx, env.Admin(), n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
		s := service.SpecOf(cur)
		s.Settings.BIOS = map[string]string{"ProcVirtualization": "Maybe"}
		s.ApplySettings = true
		return s, nil
	})
	if baremetal.ErrorField(err) != "bios_settings.ProcVirtualization" || !strings.Contains(err.Error(), "one of Enabled, Disabled") {
		t.Fatalf("a value the registry refuses: %v", err)
	}

	// Changed at the console: the read back shows the drift.
	if err := env.Sim.SetBIOSAttribute(sys, "ProcVirtualization", "Enabled"); err != nil {
		t.Fatal(err)
	}
	n = env.WaitNode(t, n.ID, 30*time.Second, func(n *baremetal.Node) bool { return len(n.Settings.Unmet(n.Observed)) > 0 })
	if u := n.Settings.Unmet(n.Observed); !slices.Equal(u, []string{"bios_settings.ProcVirtualization: want Disabled, is Enabled"}) {
		t.Fatalf("drift: %q", u)
	}
	// Applied again: configuring, then in effect again.
	if _, err := env.App.Service.UpdateNode(ctx, env.Admin(), n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
		s := service.SpecOf(cur)
		s.ApplySettings = true
		return s, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := env.App.Store.GetNode(ctx, n.ID); got.ProvisionState != baremetal.StateConfiguring {
		t.Fatalf("re-applied: state %s, want configuring", got.ProvisionState)
	}
	n = env.WaitNode(t, n.ID, 60*time.Second, func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateAvailable && len(n.Settings.Unmet(n.Observed)) == 0
	})
	if attrs, _, _ := env.Sim.BIOS(sys); attrs["ProcVirtualization"] != "Disabled" {
		t.Fatalf("re-applied: the BMC shows %v", attrs["ProcVirtualization"])
	}

	// A string longer than the registry allows: refused by the API.
	if _, err := env.App.Service.UpdateNode(ctx, env.Admin(), n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
		s := service.SpecOf(cur)
		s.Settings.BIOS = map[string]string{"AssetTag": strings.Repeat("x", 33)}
		s.ApplySettings = true
		return s, nil
	}); baremetal.ErrorField(err) != "bios_settings.AssetTag" {
		t.Fatalf("a string too long for the registry: %v", err)
	}

}

// TestHardwareSettingsRefusedByTheBMC: a BMC that acknowledges a BIOS
// value and drops it (the driver reads the settings back) refuses the
// settings: the node is available with the reason in last_error and an
// event, without a fault or maintenance, and the machine was not reset.
func TestHardwareSettingsRefusedByTheBMC(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1, SimOptions: sim.Options{Tweak: func(q *sim.Quirks) {
		q.BIOS.Drops = []string{"LogicalProc"}
	}}})
	ctx := context.Background()
	spec := env.NodeSpec(0, "hw-drop", "gpu")
	spec.Settings = baremetal.HardwareSettings{BIOS: map[string]string{"LogicalProc": "Disabled"}}
	n, err := env.App.Service.CreateNode(ctx, env.Admin(), spec)
	if err != nil {
		t.Fatal(err)
	}
	n = env.WaitNode(t, n.ID, 60*time.Second, func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateAvailable && n.LastError != ""
	})
	if !strings.Contains(n.LastError, "hardware settings:") || !strings.Contains(n.LastError, "LogicalProc") || n.Fault != "" || n.Maintenance {
		t.Fatalf("dropped value: last_error %q, fault %q, maintenance %v", n.LastError, n.Fault, n.Maintenance)
	}
	if u := n.Settings.Unmet(n.Observed); !slices.Equal(u, []string{"bios_settings.LogicalProc: want Disabled, is Enabled"}) {
		t.Fatalf("unmet %q", u)
	}
	if p, _ := env.Sim.Power(env.Sim.SystemIDs()[0]); p != "Off" {
		t.Errorf("power %s after settings the BMC refused", p)
	}
}

// TestHardwareSettingsWaitForTheInstance: settings asked for while the
// node holds an instance do not touch it (no reset under a running OS);
// they wait, and are applied when the instance is gone and the node
// cleaned, before it takes another.
func TestHardwareSettingsWaitForTheInstance(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	ctx := context.Background()
	node := env.EnrollNodes(t, 1, "busy", "gpu")[0]
	inst, err := env.App.Service.CreateInstance(ctx, env.Admin(), baremetal.Instance{Name: "vm", Project: "p1",
		ResourceClass: "gpu", Image: baremetal.Image{URL: "https://images.example/x.iso"}})
	if err != nil {
		t.Fatal(err)
	}
	env.WaitNode(t, node.ID, time.Minute, func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateActive })
	n, err := env.App.Service.UpdateNode(ctx, env.Admin(), node.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
		s := service.SpecOf(cur)
		s.Settings.BIOS = map[string]string{"ProcTurboMode": "Disabled"}
		s.ApplySettings = true
		return s, nil
	})
	if err != nil || n.ProvisionState != baremetal.StateActive || !n.Settings.Waiting {
		t.Fatalf("settings on a busy node: %v, state %s, waiting %v", err, n.ProvisionState, n.Settings.Waiting)
	}
	time.Sleep(300 * time.Millisecond) // nothing may happen meanwhile
	if attrs, pending, _ := env.Sim.BIOS(env.Sim.SystemIDs()[0]); attrs["ProcTurboMode"] != "Enabled" || len(pending) != 0 {
		t.Fatalf("the BMC was written while the instance ran: %v pending %v", attrs, pending)
	}
	if _, err := env.App.Service.DeleteInstance(ctx, env.Admin(), inst.ID, 0); err != nil {
		t.Fatal(err)
	}
	n = env.WaitNode(t, node.ID, time.Minute, func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateAvailable && len(n.Settings.Unmet(n.Observed)) == 0
	})
	if n.Settings.Waiting || n.LastError != "" {
		t.Fatalf("after the cleanup: waiting %v, last_error %q", n.Settings.Waiting, n.LastError)
	}
	if attrs, _, _ := env.Sim.BIOS(env.Sim.SystemIDs()[0]); attrs["ProcTurboMode"] != "Disabled" {
		t.Fatalf("after the cleanup the BMC shows %v", attrs["ProcTurboMode"])
	}
}

// TestRAIDVolumesApplyAndDrift: volumes declared on a node are created
// on its simulated RAID controller from the drives the declaration
// chooses (two SSDs by media type, the HDDs by count), read back; a
// volume made at the console, not declared, shows as drift and is
// deleted when the settings are applied again; a declaration no drive
// set can satisfy is refused before anything changes. Both with volumes
// made at once and with volumes made by BMC tasks.
func TestRAIDVolumesApplyAndDrift(t *testing.T) {
	for name, tasks := range map[string]bool{"immediate": false, "tasks": true} {
		t.Run(name, func(t *testing.T) {
			env := testenv.Start(t, testenv.Options{Systems: 1, SettingsSyncInterval: 500 * time.Millisecond,
				SimOptions: sim.Options{Tweak: func(q *sim.Quirks) { q.TaskMonitor = tasks }}})
			ctx := context.Background()
			sys := env.Sim.SystemIDs()[0]
			raid := []baremetal.VolumeSettings{
				{Name: "os", RAIDLevel: "1", DriveCount: 2, MediaType: "ssd"},
				{Name: "data", RAIDLevel: "0", DriveCount: 2, MediaType: "hdd", SizeGB: 1000},
			}
			spec := env.NodeSpec(0, "raid-0", "gpu")
			spec.Settings = baremetal.HardwareSettings{RAID: &raid}
			n, err := env.App.Service.CreateNode(ctx, env.Admin(), spec)
			if err != nil {
				t.Fatal(err)
			}
			n = env.WaitNode(t, n.ID, time.Minute, func(n *baremetal.Node) bool {
				return n.ProvisionState == baremetal.StateAvailable && n.Observed.ReadAt != nil
			})
			if u := n.Settings.Unmet(n.Observed); len(u) > 0 || n.LastError != "" {
				t.Fatalf("after enroll: unmet %q, last_error %q", u, n.LastError)
			}
			vols, err := env.Sim.Volumes(sys)
			if err != nil || len(vols) != 2 {
				t.Fatalf("the BMC's volumes: %+v, %v", vols, err)
			}
			st, _ := env.Sim.Storage(sys)
			media := map[string]string{}
			for _, d := range st.Drives {
				media[d.Path] = d.MediaType
			}
			for _, v := range vols {
				want := map[string]string{"os": "SSD", "data": "HDD"}[v.Name]
				for _, d := range v.Drives {
					if media[d] != want {
						t.Errorf("volume %s on drive %s (%s), want %s drives", v.Name, d, media[d], want)
					}
				}
			}
			// A volume made at the console: drift; applying again removes it.
			if err := env.Sim.DeleteVolumeOOB(sys, vols[1].ID); err != nil {
				t.Fatal(err)
			}
			n = env.WaitNode(t, n.ID, 30*time.Second, func(n *baremetal.Node) bool { return len(n.Settings.Unmet(n.Observed)) > 0 })
			if u := n.Settings.Unmet(n.Observed); len(u) != 1 || !strings.HasPrefix(u[0], "raid."+vols[1].Name+": want RAID") {
				t.Fatalf("drift: %q", u)
			}
			if _, err := env.App.Service.UpdateNode(ctx, env.Admin(), n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
				s := service.SpecOf(cur)
				s.ApplySettings = true
				return s, nil
			}); err != nil {
				t.Fatal(err)
			}
			n = env.WaitNode(t, n.ID, time.Minute, func(n *baremetal.Node) bool {
				return n.ProvisionState == baremetal.StateAvailable && len(n.Settings.Unmet(n.Observed)) == 0
			})
			if vols, _ := env.Sim.Volumes(sys); len(vols) != 2 {
				t.Fatalf("re-applied: the BMC's volumes %+v", vols)
			}
			// Three SSDs asked of a controller that has two: refused, nothing changed.
			_, err = env.App.Service.UpdateNode(ctx, env.Admin(), n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
				s := service.SpecOf(cur)
				bad := []baremetal.VolumeSettings{{Name: "big", RAIDLevel: "5", DriveCount: 3, MediaType: "ssd"}}
				s.Settings.RAID, s.ApplySettings = &bad, true
				return s, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			n = env.WaitNode(t, n.ID, time.Minute, func(n *baremetal.Node) bool {
				return n.ProvisionState == baremetal.StateAvailable && n.LastError != ""
			})
			if !strings.Contains(n.LastError, "volume big cannot be made") || !strings.Contains(n.LastError, "2 free SSD drives, not 3") || n.Fault != "" {
				t.Fatalf("infeasible volume: last_error %q fault %q", n.LastError, n.Fault)
			}
			if vols, _ := env.Sim.Volumes(sys); len(vols) != 2 {
				t.Fatalf("an infeasible declaration changed the volumes: %+v", vols)
			}
		})
	}
}

// TestFirmwareUpdate: a firmware component declared at a version is
// updated from its image through the BMC's SimpleUpdate (a task; a BIOS
// applies at the reset), and the version is read back from the
// inventory; an image the BMC fails on is the node's last_error, without
// a fault, and the version stays.
func TestFirmwareUpdate(t *testing.T) {
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
	defer images.Close()
	env := testenv.Start(t, testenv.Options{Systems: 1})
	ctx := context.Background()
	sys := env.Sim.SystemIDs()[0]
	spec := env.NodeSpec(0, "fw-0", "gpu")
	spec.Settings = baremetal.HardwareSettings{Firmware: []baremetal.FirmwareSettings{
		{Component: "BIOS", Version: "2.1.0", ImageURL: images.URL + "/bios-2.1.0.bin"}}}
	n, err := env.App.Service.CreateNode(ctx, env.Admin(), spec)
	if err != nil {
		t.Fatal(err)
	}
	n = env.WaitNode(t, n.ID, time.Minute, func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateAvailable && n.Observed.ReadAt != nil
	})
	if u := n.Settings.Unmet(n.Observed); len(u) > 0 || n.LastError != "" {
		t.Fatalf("after the update: unmet %q, last_error %q", u, n.LastError)
	}
	if fw, _, err := env.Sim.Firmware(sys); err != nil || fw["BIOS"] != "2.1.0" {
		t.Fatalf("the BMC's firmware: %v, %v", fw, err)
	}
	if p, _ := env.Sim.Power(sys); p != "Off" {
		t.Errorf("power %s after the update", p)
	}

	_, err = env.App.Service.UpdateNode(ctx, env.Admin(), n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
		s := service.SpecOf(cur)
		s.Settings.Firmware = []baremetal.FirmwareSettings{{Component: "BIOS", Version: "2.2.0", ImageURL: images.URL + "/bios-broken.bin"}}
		s.ApplySettings = true
		return s, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n = env.WaitNode(t, n.ID, time.Minute, func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateAvailable && n.LastError != ""
	})
	if !strings.Contains(n.LastError, "failed to update firmware BIOS") || !strings.Contains(n.LastError, "signature check failed") || n.Fault != "" {
		t.Fatalf("a failed update: last_error %q, fault %q", n.LastError, n.Fault)
	}
	if fw, _, _ := env.Sim.Firmware(sys); fw["BIOS"] != "2.1.0" {
		t.Fatalf("a failed update changed the version: %v", fw)
	}
}

// TestSettingsChangedWhileConfiguring: settings changed while the
// controller applies them are applied again by the same configure job
// (not left in configuring with no job), and a BMC changed meanwhile
// stops the configure: the node is verified again, and its settings are
// applied to the machine it reaches now.
func TestSettingsChangedWhileConfiguring(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 2, PowerSyncInterval: time.Hour,
		SimOptions: sim.Options{PowerDelay: 1500 * time.Millisecond}})
	ctx := context.Background()
	spec := env.NodeSpec(0, "busy-hw", "gpu")
	spec.Settings = baremetal.HardwareSettings{BIOS: map[string]string{"ProcTurboMode": "Disabled"}}
	n, err := env.App.Service.CreateNode(ctx, env.Admin(), spec)
	if err != nil {
		t.Fatal(err)
	}
	env.WaitNode(t, n.ID, 30*time.Second, func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateConfiguring })
	if _, err := env.App.Service.UpdateNode(ctx, env.Admin(), n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
		s := service.SpecOf(cur)
		s.Settings.BIOS = map[string]string{"ProcTurboMode": "Disabled", "LogicalProc": "Disabled"}
		s.ApplySettings = true
		return s, nil
	}); err != nil {
		t.Fatal(err)
	}
	n = env.WaitNode(t, n.ID, time.Minute, func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateAvailable && n.Observed.ReadAt != nil && len(n.Settings.Unmet(n.Observed)) == 0
	})
	if attrs, _, _ := env.Sim.BIOS(env.Sim.SystemIDs()[0]); attrs["LogicalProc"] != "Disabled" || attrs["ProcTurboMode"] != "Disabled" {
		t.Fatalf("the BMC shows %v", attrs)
	}

	// The BMC changed while configuring: verified again, then applied there.
	if _, err := env.App.Service.UpdateNode(ctx, env.Admin(), n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
		s := service.SpecOf(cur)
		s.Settings.BIOS = map[string]string{"ProcTurboMode": "Enabled"}
		s.ApplySettings = true
		return s, nil
	}); err != nil {
		t.Fatal(err)
	}
	env.WaitNode(t, n.ID, 30*time.Second, func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateConfiguring })
	moved, err := env.App.Service.UpdateNode(ctx, env.Admin(), n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
		s := service.SpecOf(cur)
		s.BMC.SystemID = env.Sim.SystemIDs()[1]
		return s, nil
	})
	if err != nil || moved.ProvisionState != baremetal.StateEnroll || !moved.Settings.Waiting {
		t.Fatalf("BMC changed while configuring: %v, state %s, waiting %v", err, moved.ProvisionState, moved.Settings.Waiting)
	}
	env.WaitNode(t, n.ID, time.Minute, func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateAvailable && len(n.Settings.Unmet(n.Observed)) == 0 && !n.Settings.Waiting
	})
	if attrs, _, _ := env.Sim.BIOS(env.Sim.SystemIDs()[1]); attrs["ProcTurboMode"] != "Enabled" {
		t.Fatalf("the new machine's BMC shows %v", attrs["ProcTurboMode"])
	}
}
