package sim_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	redfishdrv "github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/redfish"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/qemu"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// vmFleet starts a fleet of one VM-backed system and a Redfish driver
// client for it.
func vmFleet(t *testing.T, o sim.VMOptions) (*sim.Fleet, bmc.Client) {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	f, err := sim.Start(sim.Options{VM: &o})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if st, err := f.VM("1"); err == nil {
				serial, _ := f.VMSerial("1")
				qlog, _ := os.ReadFile(st.QemuLog)
				t.Logf("VM %+v\nserial console:\n%s\nqemu log:\n%s", st, tail(serial, 4000), tail(string(qlog), 4000))
			}
		}
		if err := f.Close(); err != nil {
			t.Errorf("close fleet: %v", err)
		}
	})
	op := redfishdrv.NewOpener(redfishdrv.Options{Timeout: 30 * time.Second})
	t.Cleanup(op.Close)
	c, err := op.Open(context.Background(), bmc.Endpoint{Driver: "redfish", Address: f.URL(), Username: "admin", Password: "password", SystemID: "/redfish/v1/Systems/1"})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// waitPower polls the driver until the system reports want and returns
// how long that took.
func waitPower(ctx context.Context, t *testing.T, c bmc.Client, want bmc.PowerState) time.Duration {
	t.Helper()
	start := time.Now()
	var last bmc.PowerState
	var lastErr error
	for {
		st, err := c.PowerState(ctx)
		if err == nil && st == want {
			return time.Since(start)
		}
		last, lastErr = st, err
		select {
		case <-ctx.Done():
			t.Fatalf("power state never became %s: last %s, %v", want, last, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bootedWith returns the device that had bootindex=1 in the qemu command
// line of boot n (from qemu.log).
func bootedWith(t *testing.T, f *sim.Fleet, n int) string {
	t.Helper()
	st, err := f.VM("1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(st.QemuLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, fmt.Sprintf("--- boot %d ", n)) {
			continue
		}
		m := regexp.MustCompile(`-device (\S+?),\S*bootindex=1\b`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("boot %d: no device with bootindex=1 in %s", n, line)
		}
		return m[1]
	}
	t.Fatalf("no boot %d in the qemu log:\n%s", n, b)
	return ""
}

// A VM-backed system through the real Redfish driver, without booting an
// OS: power lands as qemu reports it, a restart is a new boot with the
// boot order of that moment, Once is used up by the boot it applies to,
// Continuous stays, and an image that cannot be fetched fails the insert
// as the image's fault.
func TestVMSystemPowerAndBootOrder(t *testing.T) {
	testvm.Require(t)
	f, c := vmFleet(t, sim.VMOptions{DiskBytes: 16 << 20, MemoryMB: 128})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if st, err := c.PowerState(ctx); err != nil || st != bmc.PowerOff {
		t.Fatalf("fresh VM system: power %s, %v; want off", st, err)
	}
	st, err := f.VM("1")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(st.Disk); err != nil || fi.Size() != 16<<20 {
		t.Fatalf("disk file %s: %v, %v; want 16 MiB", st.Disk, fi, err)
	}
	inv, err := c.(bmc.InventoryGetter).Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if inv.CPUs != 1 || inv.MemoryMB != 128 {
		t.Errorf("inventory %+v: want the VM's 1 CPU and 128 MiB", inv)
	}

	// Nothing can be fetched there: the insert fails, as the image's fault.
	dead := httptest.NewServer(http.NotFoundHandler())
	defer dead.Close()
	err = c.(bmc.VirtualMedia).InsertMedia(ctx, dead.URL+"/agent.iso")
	if bmc.KindOf(err) != bmc.KindImage || !strings.Contains(err.Error(), "404") {
		t.Errorf("insert of a missing image: %v (kind %s); want an image error naming the 404", err, bmc.KindOf(err))
	}

	if err := c.SetBootDevice(ctx, bmc.BootPXE, false); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	on := waitPower(ctx, t, c, bmc.PowerOn)
	t.Logf("power on to PowerState On: %s", on.Round(time.Millisecond))
	if dev := bootedWith(t, f, 1); !strings.HasPrefix(dev, "virtio-net") {
		t.Errorf("boot 1 (Pxe, Once) started from %s, want the NIC", dev)
	}
	if target, enabled, _ := f.BootOverride("1"); target != "None" || enabled != "Disabled" {
		t.Errorf("after the boot it applied to, the Once override reads %s/%s, want None/Disabled", target, enabled)
	}

	// A restart: a new boot, from the disk now that Once is used up.
	if err := c.SetPower(ctx, bmc.ActionReset); err != nil {
		t.Fatal(err)
	}
	waitBoots(ctx, t, f, 2)
	waitPower(ctx, t, c, bmc.PowerOn)
	if dev := bootedWith(t, f, 2); !strings.HasPrefix(dev, "virtio-blk") {
		t.Errorf("boot 2 (no override) started from %s, want the disk", dev)
	}

	// Continuous stays across boots.
	if err := c.SetBootDevice(ctx, bmc.BootCD, true); err != nil {
		t.Fatal(err)
	}
	for n := 3; n <= 4; n++ {
		if err := c.SetPower(ctx, bmc.ActionReset); err != nil {
			t.Fatal(err)
		}
		waitBoots(ctx, t, f, n)
		waitPower(ctx, t, c, bmc.PowerOn)
		if dev := bootedWith(t, f, n); dev != "ide-cd" {
			t.Errorf("boot %d (Cd, Continuous) started from %s, want the CD", n, dev)
		}
	}
	if target, enabled, _ := f.BootOverride("1"); target != "Cd" || enabled != "Continuous" {
		t.Errorf("Continuous override reads %s/%s after two boots, want Cd/Continuous", target, enabled)
	}

	// A restart keeps the power on: every reset is a new qemu process,
	// and none of them reads as Off, however quickly they follow.
	st, _ = f.VM("1")
	for n := st.Boots + 1; n <= st.Boots+5; n++ {
		if err := c.SetPower(ctx, bmc.ActionReset); err != nil {
			t.Fatal(err)
		}
		if ps, err := c.PowerState(ctx); err != nil || ps == bmc.PowerOff {
			t.Fatalf("right after reset %d: power %s, %v", n, ps, err)
		}
		waitBoots(ctx, t, f, n)
	}
	boots := st.Boots + 5

	// BootSourceOverrideMode picks the firmware of the next boot.
	if _, _, ok := qemu.FindOVMF(); ok {
		patchBootMode(ctx, t, f, "UEFI")
		if err := c.SetPower(ctx, bmc.ActionReset); err != nil {
			t.Fatal(err)
		}
		waitBoots(ctx, t, f, boots+1)
		waitPower(ctx, t, c, bmc.PowerOn)
		if st, _ := f.VM("1"); st.Firmware != "uefi" {
			t.Errorf("boot %d in UEFI mode ran firmware %q", boots+1, st.Firmware)
		}
	} else if os.Getenv("CI") == "true" {
		t.Error("no OVMF UEFI firmware (CI installs ovmf)")
	}

	start := time.Now()
	if err := c.SetPower(ctx, bmc.ActionOff); err != nil {
		t.Fatal(err)
	}
	off := waitPower(ctx, t, c, bmc.PowerOff)
	t.Logf("ForceOff to PowerState Off: %s (request %s)", off.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	st, _ = f.VM("1")
	if st.Running || st.LastExit != "host-qmp-quit" {
		t.Errorf("after ForceOff: running %v, last exit %q; want stopped by host-qmp-quit", st.Running, st.LastExit)
	}
}

func waitBoots(ctx context.Context, t *testing.T, f *sim.Fleet, n int) {
	t.Helper()
	for {
		st, err := f.VM("1")
		if err != nil {
			t.Fatal(err)
		}
		if st.Boots >= n && st.Running {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no boot %d: %+v", n, st)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// heartbeat is one call the stand-in controller received.
type heartbeat struct {
	auth string
	body api.AgentHeartbeat
	at   time.Time
}

// standIn is the controller's side of the agent API as far as it exists:
// it records heartbeats and accepts them.
func standIn(t *testing.T) (port int, got <-chan heartbeat) {
	t.Helper()
	ch := make(chan heartbeat, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != agent.HeartbeatPath {
			http.NotFound(w, r)
			return
		}
		var hb api.AgentHeartbeat
		if err := json.NewDecoder(r.Body).Decode(&hb); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case ch <- heartbeat{auth: r.Header.Get("Authorization"), body: hb, at: time.Now()}:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"next_heartbeat_seconds": 5}`))
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port, ch
}

// The end-to-end path of a deploy agent on a real machine, through the
// real Redfish driver: the BMC fetches the agent ISO at insert, the boot
// override sends the VM to its CD once, power on boots it (BIOS,
// isolinux, Linux, the agent), the agent's heartbeat reaches the
// "controller" with the VM's own disk, NIC and identity, and a power off
// lands as Off.
func TestVMSystemBootsAgentFromVirtualMedia(t *testing.T) {
	kernel := testvm.Require(t)
	testvm.RequireISOLinux(t)
	dir := t.TempDir()
	bin := testvm.BuildController(t, dir)
	port, got := standIn(t)
	tokBytes := make([]byte, 16)
	if _, err := rand.Read(tokBytes); err != nil {
		t.Fatal(err)
	}
	token := "agent-token-" + hex.EncodeToString(tokBytes)
	buildStart := time.Now()
	iso := testvm.AgentISO(t, dir, kernel, bin, agent.Config{API: fmt.Sprintf("http://%s:%d", testvm.HostAddr, port), Token: token})
	t.Logf("agent ISO built in %s", time.Since(buildStart).Round(time.Millisecond))

	var fetches atomic.Int64
	images := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		http.ServeFile(w, r, iso)
	}))
	defer images.Close()
	isoURL := images.URL + "/agent.iso?key=secret-key"

	const diskBytes = 64 << 20
	f, c := vmFleet(t, sim.VMOptions{DiskBytes: diskBytes})
	// Generous: TCG on a shared CI machine. Not an assertion on speed.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	vmed := c.(bmc.VirtualMedia)

	if err := vmed.InsertMedia(ctx, isoURL); err != nil {
		t.Fatal(err)
	}
	if fetches.Load() != 1 {
		t.Errorf("the BMC fetched the image %d times at insert, want once", fetches.Load())
	}
	if err := c.SetBootDevice(ctx, bmc.BootCD, false); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	on := waitPower(ctx, t, c, bmc.PowerOn)
	var hb heartbeat
	select {
	case hb = <-got:
	case <-ctx.Done():
		t.Fatal("no heartbeat from the agent")
	}
	t.Logf("power on request to PowerState On: %s; to first heartbeat: %s (guest uptime %.1fs)",
		on.Round(time.Millisecond), hb.at.Sub(start).Round(100*time.Millisecond), hb.body.UptimeSeconds)

	st, err := f.VM("1")
	if err != nil {
		t.Fatal(err)
	}
	if hb.auth != "Bearer "+token {
		t.Errorf("Authorization = %q, want the boot's token", hb.auth)
	}
	if hb.body.Inventory == nil {
		t.Fatal("heartbeat without an inventory")
	}
	inv := hb.body.Inventory
	var disks, nics []string
	foundDisk, foundNIC := false, false
	for _, d := range inv.Disks {
		disks = append(disks, fmt.Sprintf("%s:%d:%s", d.Name, d.SizeBytes, d.Serial))
		if d.Name == "vda" && d.SizeBytes == diskBytes && d.Serial == st.DiskSerial {
			foundDisk = true
		}
	}
	for _, n := range inv.NICs {
		nics = append(nics, n.Name+":"+n.MAC+":"+strings.Join(n.IPv4, ","))
		if strings.EqualFold(n.MAC, st.MAC) && len(n.IPv4) > 0 {
			foundNIC = true
		}
	}
	if !foundDisk {
		t.Errorf("heartbeat disks %v: no vda of %d bytes with serial %s", disks, diskBytes, st.DiskSerial)
	}
	if !foundNIC {
		t.Errorf("heartbeat NICs %v: no %s with an address", nics, st.MAC)
	}
	rf, err := c.(bmc.InventoryGetter).Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if inv.CPUs != rf.CPUs || inv.System.Serial != rf.Serial || !strings.EqualFold(inv.System.UUID, rf.SystemUUID) {
		t.Errorf("the agent saw %d CPUs, serial %q, UUID %q; the BMC says %d, %q, %q",
			inv.CPUs, inv.System.Serial, inv.System.UUID, rf.CPUs, rf.Serial, rf.SystemUUID)
	}
	if mem := inv.MemoryBytes >> 20; mem < 400 || mem > 512 {
		t.Errorf("the agent saw %d MiB of memory, want about the VM's 512", mem)
	}
	if target, enabled, _ := f.BootOverride("1"); target != "None" || enabled != "Disabled" {
		t.Errorf("after the CD boot, the Once override reads %s/%s, want None/Disabled", target, enabled)
	}
	if st.Boots != 1 || st.BootDevice != "cd" {
		t.Errorf("VM booted %d times, last from %q; want once, from the CD", st.Boots, st.BootDevice)
	}

	// Eject while it runs: the VM's drive is emptied and the copy is gone.
	if err := vmed.EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
	if img, in, _ := f.Media("1"); in || img != "" {
		t.Errorf("after eject the CD holds %q (inserted %v)", img, in)
	}
	if left, _ := filepath.Glob(filepath.Join(st.Dir, "media-*")); len(left) != 0 {
		t.Errorf("fetched media left after eject: %v", left)
	}

	offStart := time.Now()
	if err := c.SetPower(ctx, bmc.ActionOff); err != nil {
		t.Fatal(err)
	}
	off := waitPower(ctx, t, c, bmc.PowerOff)
	t.Logf("ForceOff: request took %s, PowerState Off %s after it was accepted", time.Since(offStart).Round(time.Millisecond)-off.Round(time.Millisecond), off.Round(time.Millisecond))
	st, _ = f.VM("1")
	if st.Running || st.LastExit != "host-qmp-quit" {
		t.Errorf("after ForceOff: running %v, last exit %q", st.Running, st.LastExit)
	}
	serial, err := f.VMSerial("1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(serial, "agent starting") {
		t.Errorf("serial console shows no agent start-up")
	}
	if strings.Contains(serial, token) || strings.Contains(serial, "secret-key") {
		t.Errorf("a secret appears on the serial console")
	}
	if fi, err := os.Stat(st.Disk); err != nil || fi.Size() != diskBytes {
		t.Errorf("disk file after the run: %v, %v", fi, err)
	}
}

// What can be refused before a VM starts is refused at Start, clearly.
func TestVMOptionsRefused(t *testing.T) {
	for name, c := range map[string]struct {
		opts  sim.Options
		wants string
	}{
		"no dir":        {sim.Options{VM: &sim.VMOptions{Qemu: "true"}}, "Dir is required"},
		"memory":        {sim.Options{VM: &sim.VMOptions{Dir: t.TempDir(), Qemu: "true", MemoryMB: 1024}}, "want 64 to 512"},
		"cpus":          {sim.Options{VM: &sim.VMOptions{Dir: t.TempDir(), Qemu: "true", CPUs: 8}}, "want 1 to 2"},
		"slots":         {sim.Options{MediaSlots: []string{"CD1", "CD2", "CD3", "USB1", "USB2"}, VM: &sim.VMOptions{Dir: t.TempDir(), Qemu: "true"}}, "at most 4 virtual media slots"},
		"no qemu":       {sim.Options{VM: &sim.VMOptions{Dir: t.TempDir(), Qemu: "no-such-qemu-here"}}, "apt-get install qemu-system-x86"},
		"uefi, no ovmf": {sim.Options{VM: &sim.VMOptions{Dir: t.TempDir(), Qemu: "true", UEFI: true, OVMFCode: "/nonexistent/OVMF_CODE.fd", OVMFVars: "/nonexistent/OVMF_VARS.fd"}}, "apt-get install ovmf"},
	} {
		f, err := sim.Start(c.opts)
		if err == nil {
			f.Close()
			t.Errorf("%s: started", name)
			continue
		}
		if !strings.Contains(err.Error(), c.wants) {
			t.Errorf("%s: %v; want it to say %q", name, err, c.wants)
		}
	}
}

// A qemu that cannot start leaves the system off, with qemu's reason in
// the status; UEFI is refused where there is no UEFI firmware. No real
// qemu needed: "false" stands in for one that exits at once.
func TestVMSystemQemuFailsToStart(t *testing.T) {
	f, c := vmFleet(t, sim.VMOptions{Qemu: "false", DiskBytes: 1 << 20, OVMFCode: "/nonexistent/OVMF_CODE.fd", OVMFVars: "/nonexistent/OVMF_VARS.fd"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	waitPower(ctx, t, c, bmc.PowerOff)
	for {
		st, err := f.VM("1")
		if err != nil {
			t.Fatal(err)
		}
		if !st.Running && st.Boots == 1 {
			if !strings.Contains(st.LastExit, "exit status 1") {
				t.Errorf("last exit %q, want qemu's exit status", st.LastExit)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("qemu never ended: %+v", st)
		case <-time.After(20 * time.Millisecond):
		}
	}

	if st := patchBootModeStatus(ctx, t, f, "UEFI"); st != http.StatusBadRequest {
		t.Errorf("UEFI without OVMF: HTTP %d, want 400", st)
	}
	if st := patchBootModeStatus(ctx, t, f, "Legacy"); st != http.StatusNoContent {
		t.Errorf("Legacy: HTTP %d, want 204", st)
	}
}

// patchBootModeStatus PATCHes BootSourceOverrideMode (the driver does not
// set it) and returns the HTTP status.
func patchBootModeStatus(ctx context.Context, t *testing.T, f *sim.Fleet, mode string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, f.URL()+"/redfish/v1/Systems/1",
		strings.NewReader(`{"Boot":{"BootSourceOverrideMode":"`+mode+`"}}`))
	req.SetBasicAuth("admin", "password")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func patchBootMode(ctx context.Context, t *testing.T, f *sim.Fleet, mode string) {
	t.Helper()
	if st := patchBootModeStatus(ctx, t, f, mode); st != http.StatusNoContent {
		t.Fatalf("PATCH BootSourceOverrideMode %s: HTTP %d", mode, st)
	}
}
