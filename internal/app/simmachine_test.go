package app_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// These tests run the deploy agent's flows end to end on simulated
// machines (sim.Options.Machine): the controller serves its agent ISO as
// in production (built per boot by its own builder, from a real kernel
// file, a stub /init and no modules), the simulated BMC's machine fetches
// it from the URL the controller inserted, reads its boot configuration
// from the ISO's initramfs and runs the agent's own code, which writes
// and erases the machine's disk files. Each flow takes seconds, where the
// same on a qemu VM (inspect_test.go, deploydisk_test.go) takes minutes.

// serveImage serves b at /disk.raw on loopback and returns its URL.
func serveImage(t *testing.T, b []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "disk.raw", time.Unix(1700000000, 0), bytes.NewReader(b))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return fmt.Sprintf("http://%s/disk.raw", l.Addr())
}

// logMachineOnFailure prints the machine's console when the test fails.
func logMachineOnFailure(t *testing.T, env *testenv.Env, sys string) {
	t.Cleanup(func() {
		if t.Failed() {
			console, _ := env.Sim.MachineConsole(sys)
			st, _ := env.Sim.Machine(sys)
			if len(console) > 8000 {
				console = "..." + console[len(console)-8000:]
			}
			t.Logf("machine %+v\nconsole:\n%s", st, console)
		}
	})
}

func waitInstanceState(t *testing.T, c client, id string, timeout time.Duration, want ...api.InstanceState) api.Instance {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var inst api.Instance
		c.call("GET", "/v1/instances/"+id, "", 200, &inst)
		for _, w := range want {
			if inst.State == w {
				return inst
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s is %s after %s (last_error %q), want %v", inst.Name, inst.State, timeout, inst.LastError, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSimMachineInspectDeployAndErase(t *testing.T) {
	t.Parallel()
	simMachineInspectDeployAndErase(t, "")
}

func TestSimMachineInspectDeployAndErasePostgres(t *testing.T) {
	t.Parallel()
	simMachineInspectDeployAndErase(t, storetest.PostgresURL(t))
}

// simMachineInspectDeployAndErase is a node's life on a simulated
// machine: inspection reports the machine's description; an image
// deploy writes the image (checksum verified) and a config-2 partition
// to its disk, boots the disk, and the instance is active once the OS
// booted from that disk called back (deploy_timeout); deleting it erases
// the disks' metadata before the node is available again.
func simMachineInspectDeployAndErase(t *testing.T, dbURL string) {
	env := testenv.Start(t, testenv.Options{Systems: 1, DatabaseURL: dbURL, SimAgent: true, AgentTimeout: time.Minute})
	sys := env.Sim.SystemIDs()[0]
	logMachineOnFailure(t, env, sys)
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	node := enroll(admin, env, 0, "simm-0", "simm")
	desc, err := env.Sim.Machine(sys)
	if err != nil {
		t.Fatal(err)
	}

	// Inspection.
	start := time.Now()
	admin.call("POST", "/v1/nodes/"+node.ID+"/inspect", "", 202, nil)
	n := admin.waitNode(node.ID, time.Minute, false, func(n api.Node) bool { return n.ProvisionState == api.StateAvailable })
	inspected := time.Since(start)
	if n.Fault != "" || n.LastError != "" {
		t.Fatalf("inspection: fault %q, last_error %q", n.Fault, n.LastError)
	}
	var inv api.NodeInventory
	admin.call("GET", "/v1/nodes/"+node.ID+"/inventory", "", 200, &inv)
	got := inv.Inventory
	if got.CPUs != desc.CPUs || got.MemoryBytes != desc.MemoryBytes || got.System.UUID != desc.UUID || got.System.Serial != desc.Serial {
		t.Errorf("inventory %+v; want the machine's %+v", got, desc)
	}
	if len(got.Disks) != len(desc.Disks) || len(got.NICs) != len(desc.NICs) {
		t.Fatalf("inventory disks %+v, NICs %+v; want %+v, %+v", got.Disks, got.NICs, desc.Disks, desc.NICs)
	}
	for i, d := range desc.Disks {
		if g := got.Disks[i]; g.Name != d.Name || g.SizeBytes != d.Bytes || g.Serial != d.Serial || g.WWN != d.WWN {
			t.Errorf("inventory disk %d: %+v; want %+v", i, g, d)
		}
	}
	for i, nic := range desc.NICs {
		// The agent heard the switch port each NIC is cabled to.
		l := got.NICs[i].LLDP
		if !strings.EqualFold(got.NICs[i].MAC, nic.MAC) || l == nil || l.SystemName != nic.Switch || l.PortID != nic.SwitchPort || l.VLANID == 0 {
			t.Errorf("inventory NIC %d: %+v (LLDP %+v); want %+v", i, got.NICs[i], l, nic)
		}
	}
	if n.Properties.CPUs != desc.CPUs || n.Properties.MemoryMB != int(desc.MemoryBytes>>20) || n.Properties.LocalGB != 8 {
		t.Errorf("properties after inspection %+v; want %d CPUs, %d MiB, the largest disk's 8 GiB", n.Properties, desc.CPUs, desc.MemoryBytes>>20)
	}
	if p, _ := env.Sim.Power(sys); p != "Off" {
		t.Errorf("power after inspection: %s", p)
	}
	// Placement traits derived from what the agent saw: the disk kinds,
	// the boot mode, the speed of each link up.
	var want []string
	for _, d := range got.Disks {
		if !d.Removable && !d.Rotational {
			want = append(want, "STORAGE_DISK_SSD")
		}
	}
	if got.System.BootMode != "" {
		want = append(want, "BOOT_MODE_"+strings.ToUpper(got.System.BootMode))
	}
	for _, nic := range got.NICs {
		if nic.LinkUp && nic.SpeedMbps > 0 {
			want = append(want, baremetal.NICSpeedTrait(nic.SpeedMbps))
		}
	}
	if len(want) == 0 {
		t.Fatalf("the simulated machine's inventory gives no trait to derive: %+v", got)
	}
	for _, w := range want {
		if !slices.Contains(n.DerivedTraits, w) {
			t.Errorf("derived traits after inspection %q; want %s among them (inventory %+v)", n.DerivedTraits, w, got)
		}
	}

	// An image deploy that waits for the OS's callback.
	raw := testvm.DiskImage(8<<20, "BAREMETAL-SIMM-IMAGE")
	sum := sha256.Sum256(raw)
	imageURL := serveImage(t, raw)
	start = time.Now()
	var inst api.Instance
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"disk","node_id":%q,"image":{"url":%q,"checksum":"sha256:%s"},
		"user_data":"#cloud-config\nhostname: simm\n","deploy_timeout":"2m"}`, node.ID, imageURL, hex.EncodeToString(sum[:])), 201, &inst)
	if inst.DeployMethod != api.DeployImage {
		t.Fatalf("deploy_method %q, want image", inst.DeployMethod)
	}
	inst = waitInstanceState(t, member, inst.ID, time.Minute, api.InstanceActive, api.InstanceError)
	deployed := time.Since(start)
	if inst.State != api.InstanceActive || !inst.Ready {
		t.Fatalf("deploy: %+v", inst)
	}
	sda := desc.Disks[0]
	if disk := readAt(t, sda.File, 0, int64(len(raw))); !bytes.Equal(disk[:446], raw[:446]) || !bytes.Equal(disk[512:], raw[512:]) {
		t.Fatal("the machine's root disk does not hold the image")
	}
	end := readAt(t, sda.File, sda.Bytes-64<<20, 64<<20)
	if !bytes.Contains(end, []byte("config-2")) || !bytes.Contains(end, []byte("hostname: simm")) {
		t.Error("no config-2 drive with the user data at the end of the root disk")
	}
	st, _ := env.Sim.Machine(sys)
	if st.BootDevice != "disk" || st.Booted != sim.BootedOS || !strings.Contains(st.Note, "config drive on disk sda") {
		t.Errorf("machine after the deploy: %+v; want the OS booted from sda with its config drive", st)
	}
	if os, _ := env.Sim.OS(sys); os.ReadyCalls != 1 || os.LastStatus/100 != 2 {
		t.Errorf("simulated OS: %+v", os)
	}

	// Delete: the disks are erased before the next tenant.
	start = time.Now()
	member.call("DELETE", "/v1/instances/"+inst.ID, "", 202, nil)
	admin.waitNode(node.ID, time.Minute, false, available)
	cleaned := time.Since(start)
	zero := make([]byte, 1<<20)
	for _, d := range desc.Disks {
		if !bytes.Equal(readAt(t, d.File, 0, 1<<20), zero) || !bytes.Equal(readAt(t, d.File, d.Bytes-1<<20, 1<<20), zero) {
			t.Errorf("disk %s: its first or last MiB is not zero after the erasing cleanup", d.Name)
		}
	}
	if p, _ := env.Sim.Power(sys); p != "Off" {
		t.Errorf("power after cleaning: %s", p)
	}
	var evs api.EventList
	admin.call("GET", "/v1/nodes/"+node.ID+"/events?limit=200", "", 200, &evs)
	var erased bool
	for _, e := range evs.Items {
		erased = erased || e.New == "available" && strings.Contains(e.Message, "disks erased (metadata)")
	}
	if !erased {
		t.Errorf("no cleaning event saying the disks were erased: %+v", evs.Items)
	}
	if st, _ := env.Sim.Machine(sys); st.AgentBoots != 3 {
		t.Errorf("machine %+v; want 3 agent boots (inspect, deploy, clean)", st)
	}
	t.Logf("inspection %s; POST to active %s (8 MiB image, config drive, ready callback); DELETE to available %s",
		inspected.Round(time.Millisecond), deployed.Round(time.Millisecond), cleaned.Round(time.Millisecond))
}

// TestSimMachinePowerLossMidWrite is TestImageDeploySurvivesPowerLossMidWrite
// on a simulated machine: the machine and its BMC lose power while the
// agent writes; bmc_unreachable, then agent_lost as soon as the BMC
// reports the machine off; the retried deploy boots a new agent, which
// clears the fault, and the instance becomes active with the whole
// image on disk.
func TestSimMachinePowerLossMidWrite(t *testing.T) {
	t.Parallel()
	raw := testvm.DiskImage(16<<20, "BAREMETAL-SIMM-FAULT")
	sum := sha256.Sum256(raw)
	img := &pausedImage{data: raw, at: int64(len(raw) / 2), reached: make(chan struct{}), resume: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	images := &http.Server{Handler: img}
	go func() { _ = images.Serve(l) }()
	t.Cleanup(func() { img.release(); _ = images.Close() })
	imageURL := fmt.Sprintf("http://%s/disk.raw", l.Addr())

	env := testenv.Start(t, testenv.Options{Systems: 1, SimAgent: true,
		// Far beyond the test: the loss is seen from the machine's power.
		AgentTimeout: 10 * time.Minute})
	sys := env.Sim.SystemIDs()[0]
	logMachineOnFailure(t, env, sys)
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	node := enroll(admin, env, 0, "simm-fault-0", "simm")
	desc, _ := env.Sim.Machine(sys)

	start := time.Now()
	var inst api.Instance
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"survivor","node_id":%q,"deploy_method":"image","image":{"url":%q,"checksum":"sha256:%s"}}`,
		node.ID, imageURL, hex.EncodeToString(sum[:])), 201, &inst)
	select {
	case <-img.reached:
	case <-time.After(time.Minute):
		t.Fatal("the agent did not get halfway through the image within a minute")
	}
	midWrite := time.Since(start)

	// Power loss: the machine and its BMC.
	if err := env.Sim.SetPower(sys, false); err != nil {
		t.Fatal(err)
	}
	if err := env.Sim.SetFault(sys, sim.FaultDown); err != nil {
		t.Fatal(err)
	}
	lossAt := time.Now()
	n := admin.waitNode(node.ID, time.Minute, false, func(n api.Node) bool { return n.Fault == api.FaultBMCUnreachable })
	if n.ProvisionState != api.StateDeploying {
		t.Errorf("node %s while its BMC is down; want deploying", n.ProvisionState)
	}
	bmcFault := time.Since(lossAt)
	if st, _ := env.Sim.Machine(sys); st.AgentRunning {
		t.Errorf("an agent runs on a machine without power: %+v", st)
	}

	img.release()
	if err := env.Sim.SetFault(sys, sim.FaultNone); err != nil {
		t.Fatal(err)
	}
	backAt := time.Now()
	n = admin.waitNode(node.ID, time.Minute, false, func(n api.Node) bool { return n.Fault == api.FaultAgentLost })
	agentLost := time.Since(backAt)
	if !strings.Contains(n.LastError, "is off") || n.ProvisionState != api.StateDeploying {
		t.Errorf("agent_lost node: state %s, last_error %q; want deploying, saying the machine is off", n.ProvisionState, n.LastError)
	}
	inst = waitInstanceState(t, member, inst.ID, 2*time.Minute, api.InstanceActive, api.InstanceError)
	total := time.Since(start)
	if inst.State != api.InstanceActive {
		t.Fatalf("instance %s: %q; want active after the retry", inst.State, inst.LastError)
	}
	n = admin.node(node.ID)
	if n.Fault != "" || n.LastError != "" {
		t.Errorf("node after the deploy: fault %q, last_error %q; want healed", n.Fault, n.LastError)
	}
	if disk := readAt(t, desc.Disks[0].File, 0, int64(len(raw))); !bytes.Equal(disk, raw) {
		t.Error("the machine's disk does not hold the image after the retried write")
	}
	if st, _ := env.Sim.Machine(sys); st.AgentBoots != 2 {
		t.Errorf("machine %+v; want 2 agent boots (the lost one, the retry)", st)
	}
	var evs api.EventList
	admin.call("GET", "/v1/nodes/"+node.ID+"/events?limit=200", "", 200, &evs)
	var bmcHealed, lostRaised, lostCleared bool
	for _, e := range evs.Items {
		if e.Type != "fault" {
			continue
		}
		bmcHealed = bmcHealed || e.Old == string(api.FaultBMCUnreachable) && strings.Contains(e.Message, "BMC reachable again")
		lostRaised = lostRaised || e.New == string(api.FaultAgentLost)
		lostCleared = lostCleared || e.Old == string(api.FaultAgentLost) && e.New == ""
	}
	if !bmcHealed || !lostRaised || !lostCleared {
		t.Errorf("fault events: BMC healed %v, agent_lost raised %v and cleared %v: %+v", bmcHealed, lostRaised, lostCleared, evs.Items)
	}
	t.Logf("POST to mid-write %s; power loss to bmc_unreachable %s; BMC back to agent_lost %s; POST to active %s (16 MiB raw image)",
		midWrite.Round(time.Millisecond), bmcFault.Round(time.Millisecond), agentLost.Round(time.Millisecond), total.Round(time.Millisecond))
}

// TestSimMachineNetbootInspect: a BMC without virtual media; the
// controller boots the agent from the network (--agent-netboot), and the
// simulated machine's iPXE chain-loads the controller's netboot script
// with its UUID and MAC, then the agent's kernel and per-boot initramfs.
func TestSimMachineNetbootInspect(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 1, SimAgent: true, AgentNetboot: true, AgentTimeout: time.Minute,
		SimOptions: sim.Options{NoVirtualMedia: true}})
	sys := env.Sim.SystemIDs()[0]
	logMachineOnFailure(t, env, sys)
	admin := client{t, env.URL, env.AdminToken}
	node := enroll(admin, env, 0, "simm-pxe-0", "simm")
	start := time.Now()
	admin.call("POST", "/v1/nodes/"+node.ID+"/inspect", "", 202, nil)
	n := admin.waitNode(node.ID, time.Minute, false, func(n api.Node) bool { return n.ProvisionState == api.StateAvailable })
	if n.Fault != "" || n.LastError != "" {
		t.Fatalf("inspection: fault %q, last_error %q", n.Fault, n.LastError)
	}
	desc, _ := env.Sim.Machine(sys)
	if n.Properties.CPUs != desc.CPUs || n.Properties.LocalGB != 8 {
		t.Errorf("properties %+v; want the machine's", n.Properties)
	}
	if desc.BootDevice != "network" || desc.AgentBoots != 1 {
		t.Errorf("machine %+v; want one agent boot from the network", desc)
	}
	t.Logf("inspection by network boot: %s", time.Since(start).Round(time.Millisecond))
}
