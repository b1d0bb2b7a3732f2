package app_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/ipmi/ipmisim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// TestNetbootInspectOnARealVM boots the deploy agent from the network on
// a machine whose BMC has no virtual media, as on IPMI nodes: the
// controller sets a one-time PXE boot and powers the VM on; the VM's
// network boot ROM (iPXE) gets the controller's netboot script as its
// DHCP boot file, asks again with the machine's SMBIOS UUID and MAC, and
// is answered with the kernel and this boot's initramfs of the node whose
// BMC reported that UUID. The agent then reports the hardware as it does
// from a CD.
func TestNetbootInspectOnARealVM(t *testing.T) {
	t.Parallel()
	env, sys := netbootEnv(t)
	logConsoleOnFailure(t, env, sys, 6000, nil)
	admin := client{t, env.URL, env.AdminToken}
	node := enroll(admin, env, 0, "vm-net", "vm")

	// Without a query the script asks again with the machine's identity;
	// a machine the controller is not booting is sent to its next device.
	if got := get(t, env.URL+api.AgentNetbootPath); !strings.HasPrefix(got, "#!ipxe\n") || !strings.Contains(got, "${uuid}") || !strings.Contains(got, "${mac}") {
		t.Fatalf("netboot script without a query:\n%s", got)
	}
	if got := get(t, env.URL+api.AgentNetbootPath+"?mac=52:54:00:ff:ff:ff"); !strings.Contains(got, "\nexit") || strings.Contains(got, "kernel") {
		t.Fatalf("netboot script of an unknown machine:\n%s", got)
	}

	took := inspectByNetboot(t, env, admin, node.ID, sys)
	t.Logf("inspection by network boot took %s (POST to available, TCG)", took.Round(time.Millisecond))
}

// TestIPMINetbootInspectOnARealVM is the network boot as it runs on IPMI
// nodes, the ones it exists for: the node's BMC is OpenIPMI's ipmi_sim
// whose chassis is the same qemu VM (ipmisim's Machine), so the IPMI
// driver's boot device (PXE, once) and power commands, and the system
// GUID the controller matches iPXE's SMBIOS UUID against, all go
// through a real IPMI 2.0 BMC to a machine that really boots.
func TestIPMINetbootInspectOnARealVM(t *testing.T) {
	t.Parallel()
	env, sys := netbootEnv(t)
	bmc := ipmisim.StartWith(t, ipmisim.Config{Machine: fleetMachine{env.Sim, sys}})
	logConsoleOnFailure(t, env, sys, 6000, func() string { return fmt.Sprintf("IPMI bridge: %v", bmc.BridgeErr()) })
	admin := client{t, env.URL, env.AdminToken}
	var node api.Node
	// ipmi_sim offers cipher suites 0-3 and does not list them.
	admin.call("POST", "/v1/nodes", fmt.Sprintf(`{"name":"vm-ipmi","driver":"ipmi","resource_class":"vm","bmc":{"address":%q,"username":%q,"password":%q,"cipher_suite":3}}`,
		bmc.Address(), bmc.Username, bmc.Password), 201, &node)
	admin.waitNode(node.ID, 60*time.Second, false, available)
	requestsBefore := env.Sim.Requests(sys)

	took := inspectByNetboot(t, env, admin, node.ID, sys)
	if on, err := bmc.Power(); err != nil || on {
		t.Errorf("IPMI chassis power after inspection: on=%v %v", on, err)
	}
	// The machine was driven over IPMI alone: the Redfish front of the
	// same VM saw no request.
	if n := env.Sim.Requests(sys) - requestsBefore; n != 0 {
		t.Errorf("%d Redfish requests to the system during an IPMI node's inspection", n)
	}
	if err := bmc.BridgeErr(); err != nil {
		t.Errorf("the IPMI chassis could not drive the VM: %v", err)
	}
	t.Logf("inspection of an IPMI node by network boot took %s (POST to available, TCG)", took.Round(time.Millisecond))
}

// fleetMachine is a VM-backed system of the Redfish simulator as the
// chassis of an IPMI simulator.
type fleetMachine struct {
	f  *sim.Fleet
	id string
}

func (m fleetMachine) UUID() string {
	u, _ := m.f.SystemUUID(m.id)
	return u
}

func (m fleetMachine) Powered() (bool, error) {
	p, err := m.f.Power(m.id)
	return p != "Off", err
}

func (m fleetMachine) SetPower(on bool) error { return m.f.SetPower(m.id, on) }

// SerialLog is the VM's serial port as qemu logs it: the simulated BMC's
// Serial-over-LAN shows what the machine prints there.
func (m fleetMachine) SerialLog() string {
	st, _ := m.f.VM(m.id)
	return st.Serial
}
func (m fleetMachine) Reset() error { return m.f.ResetVM(m.id) }

func (m fleetMachine) SetBootDevice(dev string) error {
	switch dev {
	case "pxe":
		return m.f.SetBootOnce(m.id, "Pxe")
	case "cdrom":
		return m.f.SetBootOnce(m.id, "Cd")
	case "default":
		return m.f.SetBootOnce(m.id, "Hdd")
	}
	return m.f.SetBootOnce(m.id, "None") // none, bios: the VM's own order
}

// inspectByNetboot inspects node, whose machine is the VM of system sys
// and boots the agent from the network, and checks what it did; it
// returns the time from POST to available.
func inspectByNetboot(t *testing.T, env *testenv.Env, admin client, nodeID, sys string) time.Duration {
	t.Helper()
	start := time.Now()
	admin.call("POST", "/v1/nodes/"+nodeID+"/inspect", "", 202, nil)
	n := admin.waitNode(nodeID, 4*time.Minute, false, func(n api.Node) bool { return n.ProvisionState == api.StateAvailable })
	took := time.Since(start)
	if n.LastError != "" || n.Fault != "" {
		t.Fatalf("inspection failed: fault %q, last_error %q", n.Fault, n.LastError)
	}
	if st, err := env.Sim.VM(sys); err != nil || st.BootDevice != "pxe" {
		t.Fatalf("the VM's last boot was from %q (%v), want pxe", st.BootDevice, err)
	}
	var inv api.NodeInventory
	admin.call("GET", "/v1/nodes/"+nodeID+"/inventory", "", 200, &inv)
	if len(inv.Inventory.NICs) == 0 || inv.Inventory.System.UUID == "" || inv.Inventory.CPUs < 1 {
		t.Fatalf("inventory: %+v", inv.Inventory)
	}
	var evs api.EventList
	admin.call("GET", "/v1/nodes/"+nodeID+"/events", "", 200, &evs)
	var booted, checked bool
	for _, e := range evs.Items {
		booted = booted || strings.Contains(e.Message, "booted the deploy agent from the network")
		// The agent got its work by presenting the machine's SMBIOS UUID,
		// which is the one the BMC reports (in some byte order).
		checked = checked || e.Type == "agent" && strings.Contains(e.Message, "(its identity checked: uuid:")
	}
	if !booted || !checked {
		t.Errorf("no event says the agent was booted from the network (%v), or that its identity was checked (%v): %+v", booted, checked, evs.Items)
	}
	// Once the agent is done the same machine gets no agent any more.
	mac := inv.Inventory.NICs[0].MAC
	if got := get(t, env.URL+api.AgentNetbootPath+"?uuid="+inv.Inventory.System.UUID+"&mac="+mac); strings.Contains(got, "kernel") {
		t.Fatalf("netboot script after the inspection:\n%s", got)
	}
	if p, _ := env.Sim.Power(sys); p != "Off" {
		t.Errorf("VM power after inspection: %s", p)
	}
	return took
}

// netbootEnv is a controller that boots the agent from the network and a
// simulated BMC without virtual media whose one system is a qemu VM; it
// returns the system's id.
func netbootEnv(t *testing.T) (*testenv.Env, string) {
	kernel := testvm.Require(t)
	bin := testvm.BuildController(t, t.TempDir())
	env := testenv.Start(t, testenv.Options{
		Systems: 1, PowerSyncInterval: time.Second,
		SimOptions: sim.Options{NoVirtualMedia: true, VM: &sim.VMOptions{Dir: t.TempDir(), DiskBytes: 1 << 30, MemoryMB: 512}},
		// A VM with user networking reaches the host's loopback at 10.0.2.2.
		AgentKernel: kernel, AgentBinary: bin, AgentHost: "10.0.2.2", AgentTimeout: 4 * time.Minute,
		AgentNetboot: true,
	})
	return env, env.Sim.SystemIDs()[0]
}

// logConsoleOnFailure logs the last tail bytes of the VM's console (and
// what more says, if not nil) when the test fails: what the agent or the
// firmware printed is what explains a VM test's failure.
func logConsoleOnFailure(t *testing.T, env *testenv.Env, sys string, tail int, more func() string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		serial, _ := env.Sim.VMSerial(sys)
		if len(serial) > tail {
			serial = "..." + serial[len(serial)-tail:]
		}
		t.Logf("VM console:\n%s", serial)
		if more != nil {
			t.Log(more())
		}
	})
}

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, res.StatusCode, err)
	}
	return string(b)
}
