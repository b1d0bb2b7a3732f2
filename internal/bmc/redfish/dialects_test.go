package redfish

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// quick shortens the dialects' delays so the tests take seconds: an AMI's
// 3 s insert delay becomes 400 ms (still more than a read or two).
func quick(q *sim.Quirks) {
	if q.InsertDelay > 0 {
		q.InsertDelay = 400 * time.Millisecond
	}
}

// ownsTestMedia: the images these tests insert are "ours"; an operator's
// (the XCC's floppy) is not.
func ownsTestMedia(image string) bool { return !strings.Contains(image, "fileserver.example") }

// TestVendorDialects drives every vendor dialect of the simulator through
// what the controller does with a BMC: find the system without a
// system_id, read power and inventory, each power action, a one-time CD
// boot keeping the boot mode, a boot image and a config drive read back,
// and the clean-up, leaving an operator's media alone.
func TestVendorDialects(t *testing.T) {
	for _, d := range sim.VendorDialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			q := sim.DialectQuirks(d)
			f := startFleet(t, sim.Options{Systems: 1, Dialect: d, Tweak: quick})
			sys := f.SystemIDs()[0]
			o := newOpener(t, Options{MediaSettle: 2 * time.Second, OwnsMedia: ownsTestMedia})
			c := open(t, o, endpoint(f.URL(), ""))
			ctx := context.Background()

			mustPower(t, c, bmc.PowerOff)
			inv, err := c.Inventory(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if q.ZeroInventoryWhenOff {
				// OpenBMC: nothing known while the host is off, and 0 is
				// not a fact.
				if inv.CPUs != 0 || inv.MemoryMB != 0 {
					t.Fatalf("inventory of a host that is off: %+v, want unknowns", inv)
				}
				if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
					t.Fatal(err)
				}
				if inv, err = c.Inventory(ctx); err != nil {
					t.Fatal(err)
				}
			}
			cpu := q.CPU
			if cpu.Sockets == 0 {
				cpu = sim.CPUShape{Sockets: 2, CoresPerSocket: 8, ThreadsPerCore: 2}
			}
			wantMem := int(q.MemoryGiB * 1024)
			if wantMem == 0 {
				wantMem = 64 * 1024
			}
			if inv.CPUs != cpu.Threads() || inv.CPUSockets != cpu.Sockets || inv.CPUCores != cpu.Sockets*cpu.CoresPerSocket ||
				inv.MemoryMB != wantMem || inv.CPUArch != "x86_64" {
				t.Fatalf("inventory %+v, want %d threads, %d sockets, %d cores, %d MiB", inv, cpu.Threads(), cpu.Sockets, cpu.Sockets*cpu.CoresPerSocket, wantMem)
			}
			mode := q.BootMode
			if mode == "" {
				mode = "UEFI"
			}
			if want := map[string]string{"UEFI": "uefi", "Legacy": "bios"}[mode]; inv.BootMode != want {
				t.Fatalf("boot mode %q, want %q", inv.BootMode, want)
			}

			// Every power action the controller uses, on every dialect.
			for _, a := range []bmc.PowerAction{bmc.ActionOn, bmc.ActionReset, bmc.ActionSoftOff, bmc.ActionOn, bmc.ActionOff} {
				if err := c.SetPower(ctx, a); err != nil {
					t.Fatalf("%s: %v", a, err)
				}
				mustPower(t, c, a.Target())
			}

			// A one-time CD boot keeps the system's boot mode.
			if err := c.SetBootDevice(ctx, bmc.BootCD, false); err != nil {
				t.Fatal(err)
			}
			target, _, _ := f.BootOverride(sys)
			if gotMode, _ := f.BootMode(sys); target != "Cd" || gotMode != mode {
				t.Fatalf("override %s in mode %s, want Cd in %s", target, gotMode, mode)
			}

			const boot = "http://images.example/boot.iso"
			err = c.InsertMedia(ctx, boot)
			if q.EmptyMediaCollection {
				wantKind(t, err, bmc.KindUnsupported)
				if !strings.Contains(err.Error(), "no usable virtual media") {
					t.Fatalf("the error does not say the media are unusable: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if img, in, _ := f.Media(sys); img != boot || !in {
				t.Fatalf("boot CD holds %q (inserted %v)", img, in)
			}
			// A config drive goes to a second, free slot; a one-slot BMC
			// has none, and says so.
			drive := driveURLs(t) + "/v1/instances/i/config-drive/k/config-2.iso"
			err = c.InsertConfigDrive(ctx, drive)
			slots, _ := f.MediaSlots(sys)
			if len(slots) == 1 {
				wantKind(t, err, bmc.KindUnsupported)
				if img, _, _ := f.Media(sys); img != boot {
					t.Fatalf("the config drive took the boot CD: %q", img)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if err := c.EjectMedia(ctx); err != nil {
				t.Fatal(err)
			}
			slots, _ = f.MediaSlots(sys)
			for _, s := range slots {
				if op, ok := q.OperatorMedia[s.ID]; ok {
					if !s.Inserted || s.Image != op {
						t.Fatalf("the operator's media in %s was touched: %+v", s.ID, s)
					}
					continue
				}
				if s.Inserted {
					t.Fatalf("slot %s still holds %s", s.ID, s.Image)
				}
			}
			if err := c.SetBootDevice(ctx, bmc.BootNone, false); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// An XCC's floppy slot holds an operator's image: the config drive goes
// to the free USB slot, not there, and no eject touches it.
func TestConfigDriveLeavesOperatorMedia(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Dialect: sim.DialectXCC, Tweak: func(q *sim.Quirks) {
		q.MediaSlots = []string{"CD1", "Floppy1"}
	}})
	o := newOpener(t, Options{MediaSettle: time.Second, OwnsMedia: ownsTestMedia})
	c := open(t, o, endpoint(f.URL(), ""))
	ctx := context.Background()
	if err := c.InsertMedia(ctx, "http://images.example/boot.iso"); err != nil {
		t.Fatal(err)
	}
	err := c.InsertConfigDrive(ctx, driveURLs(t)+"/d.iso")
	wantKind(t, err, bmc.KindUnsupported)
	if !strings.Contains(err.Error(), "Floppy1 (Floppy; holds http://fileserver.example/.../raid-driver.img, which is left alone)") {
		t.Fatalf("the error does not say why the floppy was not used: %v", err)
	}
	slots, _ := f.MediaSlots("1")
	if slots[1].Image != "http://fileserver.example/drivers/raid-driver.img" || !slots[1].Inserted {
		t.Fatalf("the operator's floppy was touched: %+v", slots[1])
	}
}

// Some iDRAC firmware answers InsertMedia 204 and inserts nothing: the
// insert is read back, sent once more, and fails naming the slot and what
// it shows, never counted as done.
func TestInsertMediaThatDoesNotTake(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Dialect: sim.DialectIDRAC9, Tweak: func(q *sim.Quirks) { q.InsertIgnored = true }})
	front := frontFleet(t, f)
	o := newOpener(t, Options{MediaSettle: 500 * time.Millisecond})
	c := open(t, o, endpoint(front.URL, ""))
	start := time.Now()
	err := c.InsertMedia(context.Background(), "http://images.example/boot.iso")
	wantKind(t, err, bmc.KindRefused)
	for _, want := range []string{"CD (/redfish/v1/Managers/iDRAC.Embedded.1/VirtualMedia/CD)", "twice", "Inserted=false, no image"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
	if n := front.n.Load(); n != 2 {
		t.Fatalf("%d media writes, want 2 (the insert and its one retry)", n)
	}
	t.Logf("failed after %s", time.Since(start).Round(time.Millisecond))
}

// An AMI shows the image seconds after its 204: the read-back waits for
// it instead of inserting again (or failing).
func TestInsertMediaThatShowsLate(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Dialect: sim.DialectAMI, Tweak: func(q *sim.Quirks) { q.InsertDelay = 700 * time.Millisecond }})
	front := frontFleet(t, f)
	o := newOpener(t, Options{MediaSettle: 3 * time.Second})
	c := open(t, o, endpoint(front.URL, ""))
	if err := c.InsertMedia(context.Background(), "http://images.example/boot.iso"); err != nil {
		t.Fatal(err)
	}
	if img, in, _ := f.Media("Self"); !in || img != "http://images.example/boot.iso" {
		t.Fatalf("CD holds %q inserted=%v", img, in)
	}
	if n := front.n.Load(); n != 1 {
		t.Fatalf("%d media writes, want 1", n)
	}
}

// Supermicro refuses Inserted and WriteProtected, keeps ImageName after an
// eject, and lists its reset types run together.
func TestSupermicroX12(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Dialect: sim.DialectX12})
	o := newOpener(t, Options{MediaSettle: time.Second})
	c := open(t, o, endpoint(f.URL(), ""))
	ctx := context.Background()
	if err := c.InsertMedia(ctx, "http://images.example/boot.iso"); err != nil {
		t.Fatal(err)
	}
	if err := c.EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
	// The image's name stays, not inserted: inserting it again must eject
	// nothing and insert once more.
	if err := c.InsertMedia(ctx, "http://images.example/boot.iso"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	// "GracefulShutdownGracefulRestart" is two reset types.
	if err := c.SetPower(ctx, bmc.ActionSoftOff); err != nil {
		t.Fatalf("soft_off on an X12: %v", err)
	}
	mustPower(t, c, bmc.PowerOff)
}

// A BMC that answers actions 202 with a task monitor: the call returns
// once the task is done, so the change has landed.
func TestTaskMonitorFollowed(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Tweak: func(q *sim.Quirks) {
		q.TaskMonitor, q.TaskDelay = true, 600*time.Millisecond
	}})
	o := newOpener(t, Options{MediaSettle: time.Second})
	c := open(t, o, endpoint(f.URL(), ""))
	ctx := context.Background()
	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.Power("1"); p != "On" {
		t.Fatalf("SetPower returned before its task finished: power %s", p)
	}
	if err := c.InsertMedia(ctx, "http://images.example/boot.iso"); err != nil {
		t.Fatal(err)
	}
	if err := c.EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
	if _, in, _ := f.Media("1"); in {
		t.Fatal("EjectMedia returned before its task finished")
	}
}

// etagFront fronts a fleet: it changes the system's power between the
// driver's GET and its first PATCH (iLO's ETags change with power), and
// can hide the ETags the BMC serves.
type etagFront struct {
	*httptest.Server
	patches  atomic.Int64
	hideETag bool
}

func newETagFront(t *testing.T, f *sim.Fleet, sys string) *etagFront {
	e := &etagFront{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch && strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), sys) {
			if e.patches.Add(1) == 1 {
				p, _ := f.Power(sys)
				_ = f.SetPower(sys, p != "On")
			}
		}
		if !e.hideETag || r.Method != http.MethodGet {
			f.Handler().ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		f.Handler().ServeHTTP(rec, r)
		var m map[string]any
		body := rec.Body.Bytes()
		if json.Unmarshal(body, &m) == nil {
			delete(m, "@odata.etag")
			body, _ = json.Marshal(m)
		}
		for k, v := range rec.Header() {
			if k != "Etag" && k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	}))
	t.Cleanup(e.Close)
	return e
}

// XCC: PATCH needs If-Match. A stale ETag (412) and a missing one (428)
// are each read again and sent once more.
func TestETagRequired(t *testing.T) {
	for _, hide := range []bool{false, true} {
		name := map[bool]string{false: "stale ETag 412", true: "no ETag served 428"}[hide]
		t.Run(name, func(t *testing.T) {
			f := startFleet(t, sim.Options{Systems: 1, Dialect: sim.DialectXCC})
			e := newETagFront(t, f, "/redfish/v1/Systems/1")
			e.hideETag = hide
			o := newOpener(t, Options{})
			c := open(t, o, endpoint(e.URL, ""))
			if err := c.SetBootDevice(context.Background(), bmc.BootPXE, false); err != nil {
				t.Fatal(err)
			}
			if target, _, _ := f.BootOverride("1"); target != "Pxe" {
				t.Fatalf("override %s", target)
			}
			if n := e.patches.Load(); n != 2 {
				t.Fatalf("%d PATCHes, want 2 (refused, then with a fresh precondition)", n)
			}
		})
	}
}

// iDRAC's session slots are full (other tools hold them): the driver logs
// in with basic auth instead of failing, and sessions are found where the
// service root says (/redfish/v1/Sessions on an iDRAC).
func TestSessionLimitFallsBackToBasic(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Dialect: sim.DialectIDRAC9, Tweak: func(q *sim.Quirks) { q.MaxSessions = 2 }})
	o := newOpener(t, Options{})
	mustPower(t, open(t, o, endpoint(f.URL(), "")), bmc.PowerOff)
	if f.Sessions() != 1 {
		t.Fatalf("%d sessions after the first login, want 1 (at /redfish/v1/Sessions)", f.Sessions())
	}
	// Someone else takes the last slot; a second controller (a new
	// opener) still gets in.
	login := func() int {
		resp, err := http.Post(f.URL()+"/redfish/v1/Sessions", "application/json",
			strings.NewReader(fmt.Sprintf(`{"UserName":"admin","Password":%q}`, testPassword)))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := login(); st != http.StatusCreated {
		t.Fatalf("filling the session slots: %d", st)
	}
	if st := login(); st != http.StatusBadRequest {
		t.Fatalf("the sim's session limit did not refuse: %d", st)
	}
	o2 := newOpener(t, Options{})
	mustPower(t, open(t, o2, endpoint(f.URL(), "")), bmc.PowerOff)
	if f.Sessions() != 2 {
		t.Fatalf("%d sessions", f.Sessions())
	}
}

// At most MaxConcurrentRequests (default 2) connections to one BMC,
// however many calls run at once.
func TestFewConnectionsPerBMC(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Latency: 20 * time.Millisecond})
	var open_, most atomic.Int64
	var mu sync.Mutex
	srv := httptest.NewUnstartedServer(f.Handler())
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			if n := open_.Add(1); n > most.Load() {
				most.Store(n)
			}
		case http.StateClosed, http.StateHijacked:
			open_.Add(-1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(srv.URL, "1"))
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := c.PowerState(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > DefaultMaxConcurrentRequests {
		t.Fatalf("%d connections at once to one BMC, want at most %d", m, DefaultMaxConcurrentRequests)
	}
}

func TestSplitRunTogether(t *testing.T) {
	for in, want := range map[string]string{
		"GracefulShutdownGracefulRestart": "GracefulShutdown,GracefulRestart",
		"ForceOnForceOff":                 "ForceOn,ForceOff",
		"On":                              "On",
		"on":                              "On",
		"On, ForceOff":                    "On,ForceOff",
		"SomethingElse":                   "SomethingElse",
		"OnSomethingElse":                 "OnSomethingElse",
	} {
		if got := strings.Join(splitRunTogether(in, allResetTypes), ","); got != want {
			t.Errorf("splitRunTogether(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSameImage(t *testing.T) {
	const ours = "http://10.0.0.2:8080/v1/agent/boot/n1/k/agent.iso"
	for got, want := range map[string]bool{
		ours: true,
		"HTTP://10.0.0.2:8080/v1/agent/boot/n1/k/agent.iso": true,
		"agent.iso": true,
		"http://10.0.0.2:8080/v1/agent/boot/n1/other/agent.iso": false,
		"http://10.0.0.3:8080/v1/agent/boot/n1/k/agent.iso":     false,
		"other.iso": false,
	} {
		if sameImage(got, ours) != want {
			t.Errorf("sameImage(%q) = %v", got, !want)
		}
	}
	if !sameImage("https://h/x.iso", "https://h:443/x.iso") || !sameImage("http://h/x.iso?sig=1", "http://h/x.iso?sig=1") ||
		!sameImage("http://h/x.iso", "http://h/x.iso?sig=1") || sameImage("http://h/x.iso?sig=2", "http://h/x.iso?sig=1") {
		t.Error("ports and queries")
	}
}

// iDRAC 10 takes a boot override only through the system's
// @Redfish.Settings object, pending until the next reset: the driver
// writes it there and reads it back from there, and the machine boots it.
func TestBootOverrideThroughSettingsObject(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Dialect: sim.DialectIDRAC9, Tweak: func(q *sim.Quirks) { q.BootViaSettings = true }})
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(f.URL(), ""))
	ctx := context.Background()
	if err := c.SetBootDevice(ctx, bmc.BootCD, false); err != nil {
		t.Fatal(err)
	}
	sys := f.SystemIDs()[0]
	if target, _, _ := f.BootOverride(sys); target != "None" {
		t.Fatalf("the override landed before a reset: %s", target)
	}
	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	if target, enabled, _ := f.BootOverride(sys); target != "Cd" || enabled != "Once" {
		t.Fatalf("after power-on: %s %s, want the pending Cd Once", target, enabled)
	}
	if err := c.SetBootDevice(ctx, bmc.BootNone, false); err != nil {
		t.Fatalf("clearing through the settings object: %v", err)
	}
}

// A task that ends in Exception is an error, not a success.
func TestTaskThatFails(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Tweak: func(q *sim.Quirks) {
		q.TaskMonitor, q.TaskFails, q.TaskDelay = true, true, 100*time.Millisecond
	}})
	o := newOpener(t, Options{MediaSettle: 300 * time.Millisecond})
	c := open(t, o, endpoint(f.URL(), ""))
	ctx := context.Background()
	err := c.SetPower(ctx, bmc.ActionOn)
	wantKind(t, err, bmc.KindBMCError)
	if p, _ := f.Power("1"); p != "Off" {
		t.Fatalf("power %s after a failed task", p)
	}
	wantKind(t, c.InsertMedia(ctx, "http://images.example/boot.iso"), bmc.KindBMCError)
}

// HPE iLO refuses a PATCH that names the boot mode, even the one it is
// in; a Supermicro switches to Legacy when a boot target comes without
// one. Neither may change the machine's mode or fail the override.
func TestBootModeRules(t *testing.T) {
	for _, d := range []sim.Dialect{sim.DialectILO5, sim.DialectX12} {
		t.Run(string(d), func(t *testing.T) {
			f := startFleet(t, sim.Options{Systems: 1, Dialect: d})
			sys := f.SystemIDs()[0]
			before, _ := f.BootMode(sys)
			c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
			for _, dev := range []bmc.BootDevice{bmc.BootCD, bmc.BootPXE, bmc.BootDisk, bmc.BootNone} {
				if err := c.SetBootDevice(context.Background(), dev, dev == bmc.BootDisk); err != nil {
					t.Fatalf("%s: %v", dev, err)
				}
				if after, _ := f.BootMode(sys); after != before {
					t.Fatalf("%s: boot mode %s, was %s", dev, after, before)
				}
			}
		})
	}
}
