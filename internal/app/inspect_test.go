package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// TestInspectBootsTheAgentOnARealVM is inspection end to end with nothing
// simulated but the BMC's HTTP front: the controller serves its own static
// binary as the deploy agent's ISO; the simulated Redfish BMC, backed by
// a qemu VM, fetches that ISO as virtual media and boots it once from CD;
// the agent comes up as PID 1, gets an address by DHCP, and reports the
// VM's hardware to the controller with its per-boot token; the controller
// records the inventory, fills the node's properties, powers the VM off
// through Redfish and makes the node available again. The VM's firmware
// is UEFI (OVMF), as most current servers boot: the served ISO must carry
// a UEFI loader (--agent-uefi auto: Debian's signed shim and GRUB where
// installed, as in CI).
func TestInspectBootsTheAgentOnARealVM(t *testing.T) {
	t.Parallel()
	kernel := testvm.Require(t)
	testvm.RequireISOLinux(t)
	testvm.RequireOVMF(t)
	bin := testvm.BuildController(t, t.TempDir())
	const diskBytes = 1 << 30 // sparse
	env := testenv.Start(t, testenv.Options{
		Systems: 1, PowerSyncInterval: time.Second,
		SimOptions: sim.Options{VM: &sim.VMOptions{Dir: t.TempDir(), DiskBytes: diskBytes, MemoryMB: 512, UEFI: true}},
		// A VM with user networking reaches the host's loopback at 10.0.2.2.
		AgentKernel: kernel, AgentBinary: bin, AgentHost: "10.0.2.2", AgentTimeout: 4 * time.Minute,
		// The agent listens for LLDP on its NIC, which has a link; qemu's
		// user networking sends no LLDP, so a short wait ends it.
		InspectLLDPWait: 3 * time.Second,
	})
	logConsoleOnFailure(t, env, env.Sim.SystemIDs()[0], 6000, nil)
	admin := client{t, env.URL, env.AdminToken}
	node := enroll(admin, env, 0, "vm-0", "vm")
	if node.Properties.LocalGB != 0 {
		t.Fatalf("properties before inspection: %+v", node.Properties)
	}

	start := time.Now()
	var acc api.InspectAccepted
	admin.call("POST", "/v1/nodes/"+node.ID+"/inspect", "", 202, &acc)
	if n := admin.node(node.ID); n.ProvisionState != api.StateInspecting {
		t.Fatalf("after POST inspect: %s", n.ProvisionState)
	}
	// Inspecting nodes are out of scheduling.
	admin.call("POST", "/v1/instances", `{"name":"x","project":"p1","node_id":"`+node.ID+`","image":{"url":"https://images.example/x.img"}}`, 409, nil)

	// The BMC got a URL whose key opens this boot's ISO and nothing else.
	var mediaURL string
	for mediaURL == "" {
		if time.Since(start) > time.Minute {
			t.Fatal("no agent media inserted within a minute")
		}
		if img, inserted, err := env.Sim.Media(env.Sim.SystemIDs()[0]); err == nil && inserted {
			mediaURL = img
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(mediaURL, "/v1/agent/boot/"+node.ID+"/") {
		t.Fatalf("media %q is not the agent's ISO", mediaURL)
	}
	bad := mediaURL[:strings.Index(mediaURL, "/v1/agent/boot/")] + api.AgentBootPath(node.ID, "0000")
	if res, err := http.Get(bad); err != nil || res.StatusCode != http.StatusNotFound {
		t.Fatalf("a wrong key: %v %v", res, err)
	} else {
		res.Body.Close()
	}

	n := admin.waitNode(node.ID, 4*time.Minute, false, func(n api.Node) bool { return n.ProvisionState == api.StateAvailable })
	took := time.Since(start)
	if n.LastError != "" || n.Fault != "" {
		t.Fatalf("inspection failed: fault %q, last_error %q", n.Fault, n.LastError)
	}
	var inv api.NodeInventory
	admin.call("GET", "/v1/nodes/"+node.ID+"/inventory", "", 200, &inv)
	var vda *api.AgentDisk
	for i, d := range inv.Inventory.Disks {
		if d.Name == "vda" {
			vda = &inv.Inventory.Disks[i]
		}
	}
	vm, err := env.Sim.VM(env.Sim.SystemIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	if vda == nil || vda.SizeBytes != diskBytes || vda.Serial != vm.DiskSerial {
		t.Errorf("inventory disks %+v; want vda of %d bytes, serial %s", inv.Inventory.Disks, diskBytes, vm.DiskSerial)
	}
	if len(inv.Inventory.NICs) != 1 || !strings.EqualFold(inv.Inventory.NICs[0].MAC, vm.MAC) || inv.Inventory.NICs[0].LLDP != nil {
		t.Errorf("inventory NICs %+v; want the VM's one NIC, %s, without an LLDP neighbour (none sends)", inv.Inventory.NICs, vm.MAC)
	}
	// The kernel keeps some of the VM's memory for itself (MemTotal): most
	// of it, never more. The SMBIOS tables list what is installed: the
	// VM's -m, which inspection records as memory_mb.
	if inv.Inventory.CPUs != vm.CPUs || inv.Inventory.MemoryBytes > int64(vm.MemoryMB)<<20 || inv.Inventory.MemoryBytes < int64(vm.MemoryMB)<<20*3/4 {
		t.Errorf("inventory cpus %d, memory %d; the VM has %d CPUs, %d MiB", inv.Inventory.CPUs, inv.Inventory.MemoryBytes, vm.CPUs, vm.MemoryMB)
	}
	if inv.Inventory.InstalledMemoryBytes != int64(vm.MemoryMB)<<20 || n.Properties.MemoryMB != vm.MemoryMB {
		t.Errorf("installed memory %d MiB, memory_mb %d; the VM has %d MiB (MemTotal %d MiB)",
			inv.Inventory.InstalledMemoryBytes>>20, n.Properties.MemoryMB, vm.MemoryMB, inv.Inventory.MemoryBytes>>20)
	}
	if sb := inv.Inventory.System.SecureBoot; inv.Inventory.System.BootMode != api.BootModeUEFI || sb == nil || *sb {
		t.Errorf("the agent reports boot mode %q, Secure Boot %v; the VM boots UEFI without Secure Boot", inv.Inventory.System.BootMode, sb)
	}
	if n.Properties.CPUs != inv.Inventory.CPUs || n.Properties.LocalGB != 1 || n.Properties.MemoryMB == 0 {
		t.Errorf("properties after inspection: %+v (inventory %+v)", n.Properties, inv.Inventory)
	}
	if p, _ := env.Sim.Power(env.Sim.SystemIDs()[0]); p != "Off" {
		t.Errorf("VM power after inspection: %s", p)
	}
	if _, inserted, _ := env.Sim.Media(env.Sim.SystemIDs()[0]); inserted {
		t.Error("agent media left inserted")
	}
	var evs api.EventList
	admin.call("GET", "/v1/nodes/"+node.ID+"/events", "", 200, &evs)
	var reported, inspected bool
	for _, e := range evs.Items {
		// Booted from virtual media, the agent presented the VM's UUID,
		// the one the BMC reports, before it got anything.
		reported = reported || e.Type == "agent" && strings.Contains(e.Message, "booted for inspect") && strings.Contains(e.Message, "(its identity checked: uuid:")
		inspected = inspected || e.New == "available" && strings.Contains(e.Message, "inspected: ")
	}
	if !reported || !inspected {
		t.Errorf("events do not tell the story (agent reported=%v, inspected=%v): %+v", reported, inspected, evs.Items)
	}
	// The token stays on the node's side: not in the console, nor in any
	// event; the agent's old token no longer authenticates.
	serial, _ := env.Sim.VMSerial(env.Sim.SystemIDs()[0])
	for _, e := range evs.Items {
		if strings.Contains(e.Message, "agt_") {
			t.Errorf("event shows an agent token: %s", e.Message)
		}
	}
	if strings.Contains(serial, "agt_") {
		t.Error("the agent token appears on the console")
	}
	// The served ISO's command line puts the serial port last: the
	// agent's own log reaches it, not only the kernel's.
	if !strings.Contains(serial, "agent starting") || !strings.Contains(serial, "controller accepted the first heartbeat") {
		t.Error("the agent's log does not reach the serial console")
	}
	// The agent listened for LLDP on its NIC (a raw socket in the real
	// kernel) and, hearing no switch, went on after the wait.
	if !strings.Contains(serial, "LLDP: listening for the switches' announcements") || !strings.Contains(serial, "LLDP: done") ||
		strings.Contains(serial, "LLDP: cannot listen") {
		t.Error("the agent did not listen for LLDP on its NIC")
	}
	t.Logf("inspection took %s (POST to available, through a real VM boot under TCG)", took.Round(time.Millisecond))
}
