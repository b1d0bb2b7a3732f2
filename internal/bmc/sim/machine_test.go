package sim_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agentboot"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	redfishdrv "github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/redfish"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// fakeController plays the controller's side of the agent protocol for
// the machine tests: it takes heartbeats with one token, hands out one
// command until its outcome is reported, serves files (agent ISO, boot
// files, images, config drives) and counts calls of a ready URL.
type fakeController struct {
	srv   *httptest.Server
	token string

	mu       sync.Mutex
	beats    []api.AgentHeartbeat
	cmd      *api.AgentCommand
	outcomes map[string]api.AgentCommandStatus
	files    map[string][]byte
	ready    []string // Authorization headers of the ready URL's calls
	netboot  []string // queries of the netboot script
	pause    chan struct{}
	paused   chan struct{}
}

func newFakeController(t testing.TB) *fakeController {
	c := &fakeController{token: "agt_test-" + fmt.Sprint(time.Now().UnixNano()), outcomes: map[string]api.AgentCommandStatus{}, files: map[string][]byte{}}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(func() {
		c.mu.Lock()
		if c.pause != nil {
			close(c.pause)
			c.pause = nil
		}
		c.mu.Unlock()
		c.srv.Close()
	})
	return c
}

func (c *fakeController) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == api.AgentHeartbeatPath && r.Method == http.MethodPost:
		if r.Header.Get("Authorization") != "Bearer "+c.token {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		var hb api.AgentHeartbeat
		if err := json.NewDecoder(r.Body).Decode(&hb); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.beats = append(c.beats, hb)
		if hb.Command != nil && hb.Command.State != api.AgentCommandRunning {
			c.outcomes[hb.Command.ID] = *hb.Command
			if c.cmd != nil && c.cmd.ID == hb.Command.ID {
				c.cmd = nil
			}
		}
		reply := api.AgentReply{NextHeartbeatSeconds: 1, Command: c.cmd}
		c.mu.Unlock()
		_ = json.NewEncoder(w).Encode(reply)
	case r.URL.Path == "/ready" && r.Method == http.MethodPost:
		c.mu.Lock()
		c.ready = append(c.ready, r.Header.Get("Authorization"))
		c.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/netboot":
		c.mu.Lock()
		c.netboot = append(c.netboot, r.URL.RawQuery)
		body := c.files["/netboot?"]
		if r.URL.RawQuery != "" {
			body = c.files["/netboot"]
		}
		c.mu.Unlock()
		_, _ = w.Write(body)
	default:
		c.mu.Lock()
		b, ok := c.files[r.URL.Path]
		pause, paused := c.pause, c.paused
		c.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		if pause != nil && strings.HasSuffix(r.URL.Path, ".raw") {
			// Half the image, then nothing until released.
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			_, _ = w.Write(b[:len(b)/2])
			w.(http.Flusher).Flush()
			close(paused)
			select {
			case <-pause:
			case <-r.Context().Done():
				return
			}
			_, _ = w.Write(b[len(b)/2:])
			return
		}
		http.ServeContent(w, r, r.URL.Path, time.Unix(1700000000, 0), bytes.NewReader(b))
	}
}

func (c *fakeController) put(path string, b []byte) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[path] = b
	return c.srv.URL + path
}

func (c *fakeController) config() agent.Config {
	return agent.Config{API: c.srv.URL, Token: c.token}
}

func (c *fakeController) give(cmd api.AgentCommand) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cmd = &cmd
}

func (c *fakeController) heartbeats() []api.AgentHeartbeat {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]api.AgentHeartbeat(nil), c.beats...)
}

func (c *fakeController) outcome(id string) (api.AgentCommandStatus, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.outcomes[id]
	return st, ok
}

func (c *fakeController) readyCalls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ready...)
}

// agentImages is the controller's own agent image builder, as a
// controller serving simulated machines runs it: the real kernel file,
// a stub /init and no modules (the machine runs neither).
func agentImages(t testing.TB, uefi image.UEFIBoot) *agentboot.Builder {
	t.Helper()
	kernel := testvm.RequireKernel(t)
	testvm.RequireISOLinux(t)
	dir := t.TempDir()
	b, err := agentboot.New(agentboot.Options{Kernel: kernel, ModulesDir: testvm.NoModules(t, dir, kernel), Agent: testvm.StubAgent(t, dir), Dir: dir, UEFI: uefi})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// autoUEFI is the UEFI boot a controller started with --agent-uefi auto
// gives its ISOs on this host.
func autoUEFI(t testing.TB) image.UEFIBoot {
	u, err := image.ResolveUEFI("auto", "")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// machineFleet starts a fleet of simulated machines and a Redfish driver
// client for its first system.
func machineFleet(t testing.TB, o sim.Options) (*sim.Fleet, bmc.Client) {
	t.Helper()
	if o.Machine == nil {
		o.Machine = &sim.MachineOptions{}
	}
	if o.Machine.Dir == "" {
		o.Machine.Dir = t.TempDir()
	}
	f, err := sim.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			console, _ := f.MachineConsole("1")
			st, _ := f.Machine("1")
			t.Logf("machine %+v\nconsole:\n%s", st, tail(console, 6000))
		}
		if err := f.Close(); err != nil {
			t.Errorf("close fleet: %v", err)
		}
	})
	op := redfishdrv.NewOpener(redfishdrv.Options{Timeout: 10 * time.Second})
	t.Cleanup(op.Close)
	c, err := op.Open(context.Background(), bmc.Endpoint{Driver: "redfish", Address: f.URL(), Username: "admin", Password: "password", SystemID: "/redfish/v1/Systems/1"})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// waitFor polls cond every 20 ms for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bootAgent inserts the image at url in the CD and boots it once, as
// the controller boots the agent.
func bootAgent(ctx context.Context, t *testing.T, c bmc.Client, url string) {
	t.Helper()
	vm := c.(bmc.VirtualMedia)
	if err := vm.EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
	if err := vm.InsertMedia(ctx, url); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBootDevice(ctx, bmc.BootCD, false); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPower(ctx, bmc.ActionReset); err != nil {
		t.Fatal(err)
	}
}

func readFileAt(t *testing.T, path string, off, n int64) []byte {
	t.Helper()
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	b := make([]byte, n)
	if _, err := fd.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

// A simulated machine runs the whole life of a node against the agent's
// protocol, from nothing but what a real one would have: the agent ISO
// the controller's own builder makes, fetched from its URL; the agent's
// code with the configuration from that ISO's initramfs; its disks as
// files the agent's disk package writes; then the OS booted from that
// disk calling back the ready URL of the config-2 partition the agent
// added; then an erase.
func TestMachineRunsTheAgentFromTheVirtualCD(t *testing.T) {
	t.Parallel()
	ctl := newFakeController(t)
	uefi := autoUEFI(t)
	images := agentImages(t, uefi)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	iso, err := images.ISO(ctx, ctl.config())
	if err != nil {
		t.Fatal(err)
	}
	isoURL := ctl.put("/agent.iso", iso)
	f, c := machineFleet(t, sim.Options{})
	if uefi == image.UEFIOff {
		// No UEFI loader on this host: the ISO boots on BIOS only.
		patchBootMode(ctx, t, f, "Legacy")
	}
	desc, err := f.Machine("1")
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	bootAgent(ctx, t, c, isoURL)
	waitFor(t, 10*time.Second, "the agent's first heartbeat", func() bool { return len(ctl.heartbeats()) > 0 })
	t.Logf("power on to the agent's first heartbeat: %s (ISO %d MiB)", time.Since(start).Round(time.Millisecond), len(iso)>>20)
	hb := ctl.heartbeats()[0]
	if target, enabled, _ := f.BootOverride("1"); target != "None" || enabled != "Disabled" {
		t.Errorf("boot override after the boot: %s/%s; want a Once override used up", target, enabled)
	}
	inv := hb.Inventory
	if inv == nil {
		t.Fatal("no inventory in the heartbeat")
	}
	wantMode := api.BootModeUEFI
	if uefi == image.UEFIOff {
		wantMode = api.BootModeBIOS
	}
	if inv.CPUs != 32 || inv.MemoryBytes != 64<<30 || inv.System.UUID != desc.UUID || inv.System.Serial != desc.Serial ||
		inv.System.BootMode != wantMode || inv.System.Vendor != "baremetal-sim" {
		t.Errorf("inventory %+v; want the description %+v, boot mode %s", inv, desc, wantMode)
	}
	if len(inv.Disks) != 2 || inv.Disks[0].Name != "sda" || inv.Disks[0].SizeBytes != 4<<30 || inv.Disks[0].Serial != desc.Disks[0].Serial ||
		inv.Disks[0].WWN != desc.Disks[0].WWN || inv.Disks[1].SizeBytes != 8<<30 {
		t.Errorf("inventory disks %+v; want %+v", inv.Disks, desc.Disks)
	}
	if len(inv.NICs) != 2 || inv.NICs[0].MAC != desc.NICs[0].MAC || inv.NICs[1].MAC != desc.NICs[1].MAC || !inv.NICs[0].LinkUp {
		t.Errorf("inventory NICs %+v; want %+v", inv.NICs, desc.NICs)
	}
	if hb.BootID == "" || hb.AgentVersion != "sim" {
		t.Errorf("heartbeat boot id %q, version %q", hb.BootID, hb.AgentVersion)
	}
	st, _ := f.Machine("1")
	if !st.AgentRunning || st.AgentBoots != 1 || st.BootDevice != "cd" || st.Booted != sim.BootedAgent {
		t.Errorf("machine status %+v; want the agent running from the CD", st)
	}
	var sys sim.SystemStatus
	getJSON(t, f.URL()+"/sim/systems/1", &sys)
	if sys.Machine == nil || !sys.Machine.AgentRunning || sys.Machine.AgentBoots != 1 {
		t.Errorf("control API machine %+v", sys.Machine)
	}

	// An image with its config drive: written to the root disk (the
	// smallest of at least 4 GiB, sda) by the agent's disk package.
	raw := testvm.DiskImage(8<<20, "BAREMETAL-SIM-IMAGE")
	sum := sha256.Sum256(raw)
	var drive bytes.Buffer
	if err := configdrive.Build(&drive, configdrive.Drive{UUID: "i-1", Name: "web", Hostname: "web",
		UserData: []byte("#cloud-config\nhostname: web\n"), ReadyURL: ctl.srv.URL + "/ready", ReadyToken: "rdy_secret"}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	ctl.give(api.AgentCommand{ID: "write-1", Kind: api.AgentWriteImage,
		Image:          &api.Image{URL: ctl.put("/disk.raw", raw), Checksum: "sha256:" + hex.EncodeToString(sum[:])},
		ConfigDriveURL: ctl.put("/drive.iso", drive.Bytes())})
	waitFor(t, 30*time.Second, "the write's outcome", func() bool { _, ok := ctl.outcome("write-1"); return ok })
	out, _ := ctl.outcome("write-1")
	if out.State != api.AgentCommandSucceeded || !strings.Contains(out.Message, "sha256 verified") || !strings.Contains(out.Message, "config-2") {
		t.Fatalf("write_image: %+v", out)
	}
	t.Logf("write_image of 8 MiB with a config drive: %s (%s)", time.Since(start).Round(time.Millisecond), out.Message)
	sda := desc.Disks[0].File
	if got := readFileAt(t, sda, 512, int64(len(raw))-512); !bytes.Equal(got, raw[512:]) {
		t.Error("disk sda does not hold the image")
	}
	if got := readFileAt(t, sda, 4<<30-64<<20, 64<<20); !bytes.Contains(got, []byte("hostname: web")) {
		t.Error("no config drive with the user data at the end of sda")
	}

	// Power off: the agent stops at once.
	if err := c.SetPower(ctx, bmc.ActionOff); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the agent to stop", func() bool { st, _ := f.Machine("1"); return !st.AgentRunning })
	n := len(ctl.heartbeats())
	time.Sleep(1500 * time.Millisecond)
	if m := len(ctl.heartbeats()); m != n {
		t.Errorf("%d heartbeats after the power went off", m-n)
	}

	// Boot from disk: the simulated OS finds the config drive on the
	// disk's config-2 partition and calls back, with its token.
	if err := c.(bmc.VirtualMedia).EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBootDevice(ctx, bmc.BootDisk, true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the OS's ready call", func() bool { return len(ctl.readyCalls()) > 0 })
	if got := ctl.readyCalls()[0]; got != "Bearer rdy_secret" {
		t.Errorf("ready call authorization %q", got)
	}
	if st, _ := f.Machine("1"); st.BootDevice != "disk" || st.Booted != sim.BootedOS || !strings.Contains(st.Note, "config drive on disk sda") {
		t.Errorf("machine after booting its disk: %+v", st)
	}

	// Erase: the agent again, from the CD (a Once override replacing
	// the Continuous Hdd), wipes both disks' metadata.
	bootAgent(ctx, t, c, isoURL)
	ctl.give(api.AgentCommand{ID: "erase-1", Kind: api.AgentErase, Erase: "metadata"})
	waitFor(t, 30*time.Second, "the erase's outcome", func() bool { _, ok := ctl.outcome("erase-1"); return ok })
	if out, _ := ctl.outcome("erase-1"); out.State != api.AgentCommandSucceeded || !strings.Contains(out.Message, "2 disks") {
		t.Fatalf("erase: %+v", out)
	}
	zero := make([]byte, 1<<20)
	for _, d := range desc.Disks {
		if !bytes.Equal(readFileAt(t, d.File, 0, 1<<20), zero) || !bytes.Equal(readFileAt(t, d.File, d.Bytes-1<<20, 1<<20), zero) {
			t.Errorf("disk %s: first or last MiB not zero after the erase", d.Name)
		}
	}
	if st, _ := f.Machine("1"); st.AgentBoots != 2 || st.Boots != 3 {
		t.Errorf("machine %+v; want 3 boots, 2 of the agent", st)
	}
	if target, enabled, _ := f.BootOverride("1"); target != "None" || enabled != "Disabled" {
		t.Errorf("boot override %s/%s; want none: the Once replaced the Continuous Hdd, and was used up", target, enabled)
	}
	console, _ := f.MachineConsole("1")
	if strings.Contains(console, ctl.token) || strings.Contains(console, "rdy_secret") {
		t.Error("a token appears on the machine's console")
	}
	if !strings.Contains(console, "agent starting") || !strings.Contains(console, "command succeeded") {
		t.Errorf("the console does not show the agent's log:\n%s", tail(console, 3000))
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// Power lost while the agent writes: the machine runs nothing from that
// moment (no heartbeat, no write, not even the agent's scrub of the
// failed write), and the next power-on boots the agent anew.
func TestMachinePowerLossStopsTheAgentMidWrite(t *testing.T) {
	t.Parallel()
	ctl := newFakeController(t)
	uefi := autoUEFI(t)
	images := agentImages(t, uefi)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	iso, err := images.ISO(ctx, ctl.config())
	if err != nil {
		t.Fatal(err)
	}
	isoURL := ctl.put("/agent.iso", iso)
	f, c := machineFleet(t, sim.Options{})
	if uefi == image.UEFIOff {
		patchBootMode(ctx, t, f, "Legacy")
	}
	desc, _ := f.Machine("1")
	raw := testvm.DiskImage(32<<20, "BAREMETAL-SIM-LOST")
	ctl.mu.Lock()
	ctl.pause, ctl.paused = make(chan struct{}), make(chan struct{})
	paused := ctl.paused
	ctl.mu.Unlock()
	ctl.give(api.AgentCommand{ID: "write-1", Kind: api.AgentWriteImage, Image: &api.Image{URL: ctl.put("/disk.raw", raw)}})
	bootAgent(ctx, t, c, isoURL)
	select {
	case <-paused:
	case <-ctx.Done():
		t.Fatal("the agent never got half the image")
	}
	// The agent has half the image; let it write what it has.
	time.Sleep(300 * time.Millisecond)

	if err := f.SetPower("1", false); err != nil {
		t.Fatal(err)
	}
	lost := time.Now()
	waitFor(t, 5*time.Second, "the agent to stop", func() bool { st, _ := f.Machine("1"); return !st.AgentRunning })
	t.Logf("power off to the agent stopped: %s", time.Since(lost).Round(time.Millisecond))
	before := readFileAt(t, desc.Disks[0].File, 0, 32<<20)
	beats := len(ctl.heartbeats())
	ctl.mu.Lock()
	close(ctl.pause) // the image server would now serve the rest
	ctl.pause = nil
	ctl.mu.Unlock()
	time.Sleep(1500 * time.Millisecond)
	if after := readFileAt(t, desc.Disks[0].File, 0, 32<<20); !bytes.Equal(before, after) {
		t.Error("the disk changed after the power went off")
	}
	if !bytes.HasPrefix(before, []byte("BAREMETAL-SIM-LOST")) {
		t.Error("the half-written image was scrubbed after the power went off (a machine without power writes nothing)")
	}
	if n := len(ctl.heartbeats()); n != beats {
		t.Errorf("%d heartbeats after the power went off", n-beats)
	}
	if _, ok := ctl.outcome("write-1"); ok {
		t.Error("an outcome of the write was reported after the power went off")
	}

	// Power back: the CD's Once override is used up, the disk has no
	// complete table... it has the image's MBR: the machine boots it.
	// The controller boots the agent again with a Once override.
	ctl.give(api.AgentCommand{ID: "write-2", Kind: api.AgentWriteImage, Image: &api.Image{URL: ctl.put("/disk2.raw", raw)}})
	bootAgent(ctx, t, c, isoURL)
	waitFor(t, 30*time.Second, "the retried write", func() bool { _, ok := ctl.outcome("write-2"); return ok })
	if out, _ := ctl.outcome("write-2"); out.State != api.AgentCommandSucceeded {
		t.Fatalf("the retried write: %+v", out)
	}
	if !bytes.Equal(readFileAt(t, desc.Disks[0].File, 0, 32<<20), raw) {
		t.Error("the disk does not hold the image after the retried write")
	}
	if st, _ := f.Machine("1"); st.AgentBoots != 2 {
		t.Errorf("machine %+v; want 2 agent boots", st)
	}
}

// What a machine does with what it cannot boot, and with a CD that is
// not the agent's.
func TestMachineBootsOnlyWhatItCan(t *testing.T) {
	t.Parallel()
	ctl := newFakeController(t)
	biosOnly := agentImages(t, image.UEFIOff)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	iso, err := biosOnly.ISO(ctx, ctl.config())
	if err != nil {
		t.Fatal(err)
	}
	f, c := machineFleet(t, sim.Options{})
	status := func() sim.MachineStatus { st, _ := f.Machine("1"); return st }
	booted := func(n int) func() bool {
		return func() bool { st := status(); return st.Boots == n && st.Booted != "" }
	}

	// A BIOS-only ISO on UEFI firmware (the default boot mode): nothing.
	bootAgent(ctx, t, c, ctl.put("/bios.iso", iso))
	waitFor(t, 10*time.Second, "boot 1", booted(1))
	if st := status(); st.Booted != sim.BootedNothing || !strings.Contains(st.Note, "no UEFI boot entry") || st.AgentBoots != 0 {
		t.Errorf("a BIOS-only agent ISO on UEFI: %+v", st)
	}
	// The same on Legacy BIOS boots the agent.
	patchBootMode(ctx, t, f, "Legacy")
	bootAgent(ctx, t, c, ctl.srv.URL+"/bios.iso")
	waitFor(t, 10*time.Second, "the agent on BIOS", func() bool { return len(ctl.heartbeats()) > 0 })
	if inv := ctl.heartbeats()[0].Inventory; inv == nil || inv.System.BootMode != api.BootModeBIOS {
		t.Errorf("inventory on BIOS: %+v", inv)
	}

	// Broken agent ISOs, made with the image package as the controller's
	// builder makes them, but for what each lacks.
	kernel := testvm.RequireKernel(t)
	dir := t.TempDir()
	var initrd bytes.Buffer
	if _, err := image.BuildInitrd(&initrd, image.InitrdOptions{Agent: testvm.StubAgent(t, dir), Kernel: kernel, ModulesDir: testvm.NoModules(t, dir, kernel)}); err != nil {
		t.Fatal(err)
	}
	mkISO := func(name string, kernelFile string, initrdBytes []byte, files map[string][]byte) string {
		t.Helper()
		base := dir + "/" + name
		if err := os.WriteFile(base+".initrd", initrdBytes, 0o644); err != nil {
			t.Fatal(err)
		}
		appendix, err := image.ConfigArchive(files)
		if err != nil {
			t.Fatal(err)
		}
		if err := image.BuildISO(base+".iso", image.ISOOptions{Kernel: kernelFile, Initrd: base + ".initrd", InitrdAppend: appendix}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(base + ".iso")
		if err != nil {
			t.Fatal(err)
		}
		return ctl.put("/"+name+".iso", b)
	}
	noToken := mkISO("notoken", kernel, initrd.Bytes(), map[string][]byte{agent.ConfigPath: []byte(`{"api":"` + ctl.srv.URL + `"}`)})
	notKernel := dir + "/notkernel"
	if err := os.WriteFile(notKernel, bytes.Repeat([]byte("x"), 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	noBzImage := mkISO("nobzimage", notKernel, initrd.Bytes(), map[string][]byte{agent.ConfigPath: []byte(`{"api":"` + ctl.srv.URL + `","token":"t"}`)})
	// An /init the kernel cannot run: the config archive alone, whose
	// files are not executable, stands for the whole initramfs.
	stub, _ := os.ReadFile(testvm.StubAgent(t, dir))
	noInit := mkISO("noinit", kernel, nil, map[string][]byte{"init": stub, agent.ConfigPath: []byte(`{"api":"` + ctl.srv.URL + `","token":"t"}`)})

	for i, tc := range []struct {
		url, booted, note string
	}{
		{noToken, sim.BootedAgent, "bad boot configuration: no token"},
		{noBzImage, sim.BootedNothing, "not a Linux bzImage"},
		{noInit, sim.BootedNothing, "kernel panic: /init is not executable"},
		{ctl.srv.URL + "/missing.iso", sim.BootedNothing, "cannot be read: it answered HTTP 404"},
		// Not the agent's: the sim plays the OS on it.
		{f.URL() + sim.DemoImagePath, sim.BootedOS, ""},
	} {
		n := status().Boots + 1
		bootAgent(ctx, t, c, tc.url)
		waitFor(t, 10*time.Second, fmt.Sprintf("boot of case %d", i), booted(n))
		if st := status(); st.Booted != tc.booted || !strings.Contains(st.Note, tc.note) || st.AgentRunning {
			t.Errorf("case %d (%s): machine %+v; want %s, note %q", i, tc.url, st, tc.booted, tc.note)
		}
	}
	beats := len(ctl.heartbeats())
	time.Sleep(1200 * time.Millisecond)
	if n := len(ctl.heartbeats()); n != beats {
		t.Errorf("%d heartbeats from broken agent boots", n-beats)
	}

	// Nothing in the drive, no table on the disks, no network boot: the
	// boot order finds nothing.
	if err := c.(bmc.VirtualMedia).EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBootDevice(ctx, bmc.BootNone, false); err != nil {
		t.Fatal(err)
	}
	n := status().Boots + 1
	if err := c.SetPower(ctx, bmc.ActionReset); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the empty boot", booted(n))
	if st := status(); st.Booted != sim.BootedNothing || !strings.Contains(st.Note, "no bootable device") {
		t.Errorf("empty machine: %+v", st)
	}
}

// The machine boots the agent from the network as iPXE would: the
// netboot script chains to itself with the machine's UUID and MAC, and
// the agent's script loads the kernel and per-boot initramfs.
func TestMachineNetbootsTheAgent(t *testing.T) {
	t.Parallel()
	ctl := newFakeController(t)
	images := agentImages(t, image.UEFIOff)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	initrd, err := images.Initrd(ctx, ctl.config())
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := images.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	kURL, iURL := ctl.put("/boot/vmlinuz", kernel), ctl.put("/boot/initrd", initrd)
	ctl.put("/netboot?", []byte("#!ipxe\nchain --autofree "+ctl.srv.URL+"/netboot?uuid=${uuid}&mac=${mac}\n"))
	ctl.put("/netboot", []byte("#!ipxe\necho booting the agent\nkernel "+kURL+" initrd=initrd "+images.Cmdline()+"\ninitrd "+iURL+"\nboot\n"))
	f, c := machineFleet(t, sim.Options{NoVirtualMedia: true, Machine: &sim.MachineOptions{NetbootURL: ctl.srv.URL + "/netboot", CPUs: 8, MemoryMiB: 4096}})
	desc, _ := f.Machine("1")
	if err := c.SetBootDevice(ctx, bmc.BootPXE, false); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the agent's heartbeat", func() bool { return len(ctl.heartbeats()) > 0 })
	ctl.mu.Lock()
	queries := append([]string(nil), ctl.netboot...)
	ctl.mu.Unlock()
	want := "uuid=" + desc.UUID + "&mac=" + desc.NICs[0].MAC
	if len(queries) != 2 || queries[0] != "" || queries[1] != want {
		t.Errorf("netboot script queries %q; want none, then %q", queries, want)
	}
	if st, _ := f.Machine("1"); st.BootDevice != "network" || st.Booted != sim.BootedAgent {
		t.Errorf("machine %+v", st)
	}
	if inv := ctl.heartbeats()[0].Inventory; inv == nil || inv.CPUs != 8 || inv.MemoryBytes != 4096<<20 {
		t.Errorf("inventory %+v; want the machine's 8 CPUs and 4 GiB", inv)
	}

	// No agent boot due: the script exits and the machine boots its
	// disk, which has nothing.
	ctl.put("/netboot", []byte("#!ipxe\necho baremetal: no deploy agent boot is due; booting the next device\nexit 1\n"))
	if err := c.SetBootDevice(ctx, bmc.BootPXE, false); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPower(ctx, bmc.ActionReset); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the second boot", func() bool { st, _ := f.Machine("1"); return st.Boots == 2 && st.Booted != "" })
	if st, _ := f.Machine("1"); st.Booted != sim.BootedNothing || !strings.Contains(st.Note, "no deploy agent boot is due") || !strings.Contains(st.Note, "disk: no disk holds a partition table") {
		t.Errorf("machine after the script's exit: %+v", st)
	}
}

// The description: Redfish and the agent see the same machine; the
// disks are sparse files of their size; bad descriptions are refused.
func TestMachineDescription(t *testing.T) {
	t.Parallel()
	f, c := machineFleet(t, sim.Options{Systems: 2, Machine: &sim.MachineOptions{NICs: 1,
		Disks: []sim.MachineDisk{{Name: "nvme0n1", Bytes: 1 << 30}, {Bytes: 2 << 30, Rotational: true, Model: "SIM HDD"}}}})
	ctx := context.Background()
	inv, err := c.(bmc.InventoryGetter).Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Machine("1")
	if inv.CPUs != a.CPUs || int64(inv.MemoryMB) != a.MemoryBytes>>20 {
		t.Errorf("Redfish inventory %+v; the machine has %d CPUs, %d bytes", inv, a.CPUs, a.MemoryBytes)
	}
	b, _ := f.Machine("2")
	if inv.SystemUUID != a.UUID || len(a.Disks) != 2 || a.Disks[1].Name != "sdb" || a.Disks[1].Model != "SIM HDD" {
		t.Errorf("machine 1: %+v (Redfish UUID %s)", a, inv.SystemUUID)
	}
	if a.NICs[0].MAC == b.NICs[0].MAC || a.Disks[0].Serial == b.Disks[0].Serial || a.Disks[0].WWN == b.Disks[0].WWN || a.UUID == b.UUID {
		t.Errorf("two machines share an identity: %+v, %+v", a, b)
	}
	for i, want := range []int64{1 << 30, 2 << 30} {
		p, err := f.Disk("1", i)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Size() != want {
			t.Errorf("disk %d: %v %v; want %d bytes", i, fi, err, want)
		}
	}
	if _, err := f.Disk("1", 2); err == nil {
		t.Error("Disk 2 of a machine with two: no error")
	}
	for _, bad := range []sim.MachineOptions{{CPUs: -1}, {MemoryMiB: 8}, {NICs: 17}, {Disks: []sim.MachineDisk{{Bytes: 1000}}},
		{Disks: []sim.MachineDisk{{Name: "sda", Bytes: 1 << 20}, {Name: "sda", Bytes: 1 << 20}}}} {
		o := bad
		o.Dir = t.TempDir()
		if f, err := sim.Start(sim.Options{Machine: &o}); err == nil {
			f.Close()
			t.Errorf("machine %+v: no error", bad)
		}
	}
	if _, err := sim.Start(sim.Options{Machine: &sim.MachineOptions{}, VM: &sim.VMOptions{Dir: t.TempDir()}}); err == nil {
		t.Error("Machine with VM: no error")
	}
	// A temporary directory goes with the fleet.
	g, err := sim.Start(sim.Options{Machine: &sim.MachineOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := g.Machine("1")
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(st.Dir); !os.IsNotExist(err) {
		t.Errorf("the fleet's machine directory %s is left after Close: %v", st.Dir, err)
	}
}
