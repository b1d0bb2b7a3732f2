package sim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// driveServer serves a config drive ISO at /drive.iso (and 404 elsewhere)
// and counts the GETs of it.
func driveServer(t *testing.T, d configdrive.Drive) (srv *httptest.Server, gets *atomic.Int64) {
	t.Helper()
	var iso bytes.Buffer
	if err := configdrive.Build(&iso, d); err != nil {
		t.Fatal(err)
	}
	gets = new(atomic.Int64)
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/drive.iso" {
			http.NotFound(w, r)
			return
		}
		gets.Add(1)
		_, _ = w.Write(iso.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv, gets
}

// readyServer records the ready callbacks; answer picks each status.
type readyServer struct {
	*httptest.Server
	mu     sync.Mutex
	auths  []string
	bodies []string
}

func newReadyServer(t *testing.T, answer func(n int) int) *readyServer {
	t.Helper()
	rs := &readyServer{}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rs.mu.Lock()
		rs.auths = append(rs.auths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		rs.bodies = append(rs.bodies, string(b))
		n := len(rs.auths)
		rs.mu.Unlock()
		w.WriteHeader(answer(n))
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *readyServer) calls() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.auths...)
}

// redfish sends one authenticated Redfish request and returns the status
// and body.
func redfish(t *testing.T, f *sim.Fleet, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("admin", "password")
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func insertMedia(t *testing.T, f *sim.Fleet, system, slot, image string) (int, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"Image": image})
	return redfish(t, f, http.MethodPost, "/redfish/v1/Managers/"+system+"/VirtualMedia/"+slot+"/Actions/VirtualMedia.InsertMedia", string(b))
}

func reset(t *testing.T, f *sim.Fleet, system, resetType string) {
	t.Helper()
	if st, body := redfish(t, f, http.MethodPost, "/redfish/v1/Systems/"+system+"/Actions/ComputerSystem.Reset", `{"ResetType":"`+resetType+`"}`); st != http.StatusNoContent {
		t.Fatalf("reset %s: %d %s", resetType, st, body)
	}
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func osStatus(t *testing.T, f *sim.Fleet, system string) sim.OSStatus {
	t.Helper()
	st, err := f.OS(system)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestMediaSlots(t *testing.T) {
	f := start(t, sim.Options{Systems: 1})
	slots, err := f.MediaSlots("1")
	if err != nil || len(slots) != 2 || slots[0].ID != "CD" || slots[1].ID != "USB1" ||
		strings.Join(slots[1].MediaTypes, ",") != "USBStick" || strings.Join(slots[0].MediaTypes, ",") != "CD,DVD" {
		t.Fatalf("default slots %+v %v", slots, err)
	}

	one := start(t, sim.Options{MediaSlots: []string{"CD"}})
	if slots, _ := one.MediaSlots("1"); len(slots) != 1 {
		t.Fatalf("single-slot BMC has %+v", slots)
	}
	if st, body := redfish(t, one, http.MethodGet, "/redfish/v1/Managers/1/VirtualMedia/USB1", ""); st != http.StatusNotFound {
		t.Fatalf("absent slot: %d %s", st, body)
	}

	quirky := start(t, sim.Options{MediaSlots: []string{"Cd", "RemovableDisk", "Floppy1"}})
	_, body := redfish(t, quirky, http.MethodGet, "/redfish/v1/Managers/1/VirtualMedia/RemovableDisk", "")
	var doc map[string]any
	_ = json.Unmarshal([]byte(body), &doc)
	if _, has := doc["MediaTypes"]; has || doc["Id"] != "RemovableDisk" {
		t.Fatalf("removable slot advertises MediaTypes: %s", body)
	}
	if _, has := doc["Inserted"]; has {
		t.Fatalf("removable slot has Inserted: %s", body)
	}

	for _, bad := range [][]string{{"CD", "cd"}, {"Tape1"}, {"USB/1"}} {
		if _, err := sim.Start(sim.Options{MediaSlots: bad}); err == nil {
			t.Fatalf("slots %q accepted", bad)
		}
	}
}

func TestInsertFetchesImage(t *testing.T) {
	f := start(t, sim.Options{Systems: 2})
	srv, gets := driveServer(t, configdrive.Drive{UUID: "u-1", Hostname: "h1", ReadyURL: "http://127.0.0.1:1/ready", ReadyToken: "tok"})
	image := srv.URL + "/drive.iso" // https with a self-signed cert: not verified

	if st, body := insertMedia(t, f, "1", "USB1", image); st != http.StatusNoContent {
		t.Fatalf("insert: %d %s", st, body)
	}
	if gets.Load() != 1 {
		t.Fatalf("the image was fetched %d times, want once", gets.Load())
	}
	slots, _ := f.MediaSlots("1")
	if !slots[1].Inserted || slots[1].Image != image || !slots[1].ConfigDrive {
		t.Fatalf("USB1 after insert: %+v", slots[1])
	}
	if img, in, _ := f.SlotMedia("1", "USB1"); img != image || !in {
		t.Fatalf("SlotMedia %q %v", img, in)
	}
	if img, in, _ := f.Media("1"); img != "" || in {
		t.Fatal("Media reports the CD, which is empty")
	}
	if st, _ := insertMedia(t, f, "1", "USB1", image); st != http.StatusConflict {
		t.Fatalf("second insert without eject: %d, want 409", st)
	}
	if gets.Load() != 1 {
		t.Fatal("a refused insert fetched the image")
	}

	// Boot CD images are not fetched: tests use made-up URLs.
	if st, body := insertMedia(t, f, "1", "CD", "http://images.invalid/deploy.iso"); st != http.StatusNoContent {
		t.Fatalf("CD insert: %d %s", st, body)
	}
	if st, _ := redfish(t, f, http.MethodPost, "/redfish/v1/Managers/1/VirtualMedia/USB1/Actions/VirtualMedia.EjectMedia", "{}"); st != http.StatusNoContent {
		t.Fatal(st)
	}
	if _, in, _ := f.SlotMedia("1", "USB1"); in {
		t.Fatal("USB1 still inserted after eject")
	}
	if img, in, _ := f.Media("1"); img != "http://images.invalid/deploy.iso" || !in {
		t.Fatal("ejecting USB1 touched the CD")
	}

	// PATCH, as BMCs without the actions take it, fetches too.
	if st, body := redfish(t, f, http.MethodPatch, "/redfish/v1/Managers/2/VirtualMedia/USB1", `{"Image":"`+image+`","Inserted":true}`); st != http.StatusNoContent {
		t.Fatalf("PATCH insert: %d %s", st, body)
	}
	if gets.Load() != 2 {
		t.Fatalf("PATCH insert fetched %d times", gets.Load()-1)
	}
}

func TestInsertUnfetchable(t *testing.T) {
	f := start(t, sim.Options{Systems: 1})
	srv, _ := driveServer(t, configdrive.Drive{UUID: "u"})
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()

	for _, tc := range []struct{ image, want string }{
		{goneURL + "/drive.iso?token=s3cret", "could not be fetched"},
		{srv.URL + "/missing.iso", "HTTP 404"},
	} {
		st, body := insertMedia(t, f, "1", "USB1", tc.image)
		if st != http.StatusBadRequest || !strings.Contains(body, tc.want) || !strings.Contains(body, "@Message.ExtendedInfo") {
			t.Fatalf("insert of %s: %d %s", tc.image, st, body)
		}
		if strings.Contains(body, "s3cret") {
			t.Fatalf("the error echoes the URL's query: %s", body)
		}
		t.Logf("%d %s", st, body)
		if _, in, _ := f.SlotMedia("1", "USB1"); in {
			t.Fatal("a failed insert left the slot inserted")
		}
	}
}

// startWithDrive starts a fleet whose system 1 holds a config drive that
// calls rs back with token "tok-1".
func startWithDrive(t *testing.T, opts sim.Options, rs *readyServer) *sim.Fleet {
	t.Helper()
	f := start(t, opts)
	srv, _ := driveServer(t, configdrive.Drive{UUID: "u-1", ReadyURL: rs.URL + "/v1/ready/u-1", ReadyToken: "tok-1"})
	if st, body := insertMedia(t, f, "1", "USB1", srv.URL+"/drive.iso"); st != http.StatusNoContent {
		t.Fatalf("insert: %d %s", st, body)
	}
	return f
}

func TestSimulatedOSCallsBack(t *testing.T) {
	rs := newReadyServer(t, func(int) int { return http.StatusNoContent })
	f := startWithDrive(t, sim.Options{Systems: 2, PowerDelay: 20 * time.Millisecond}, rs)

	reset(t, f, "1", "On")
	eventually(t, "the ready callback", func() bool { return f.ReadyCalls("1") == 1 && !osStatus(t, f, "1").Pending })
	if got := rs.calls(); len(got) != 1 || got[0] != "POST /v1/ready/u-1 Bearer tok-1" {
		t.Fatalf("callbacks %q", got)
	}
	rs.mu.Lock()
	body := rs.bodies[0]
	rs.mu.Unlock()
	if body != "" {
		t.Fatalf("callback body %q, want empty", body)
	}
	if st := osStatus(t, f, "1"); st.LastStatus != http.StatusNoContent || st.PowerOns != 1 || st.LastError != "" {
		t.Fatalf("OS status %+v", st)
	}

	// A restart is a new boot: another callback.
	reset(t, f, "1", "ForceRestart")
	eventually(t, "the second callback", func() bool { return f.ReadyCalls("1") == 2 })
	// Off, then on again: a third.
	reset(t, f, "1", "ForceOff")
	eventually(t, "power off", func() bool { p, _ := f.Power("1"); return p == "Off" })
	if err := f.SetPower("1", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the third callback", func() bool { return f.ReadyCalls("1") == 3 })
	if st := osStatus(t, f, "1"); st.PowerOns != 3 {
		t.Fatalf("power-ons %d, want 3", st.PowerOns)
	}

	// System 2 has no config drive: it boots, nothing calls.
	reset(t, f, "2", "On")
	eventually(t, "system 2 on", func() bool { return osStatus(t, f, "2").PowerOns == 1 })
	if st := osStatus(t, f, "2"); st.Pending || st.ReadyCalls != 0 {
		t.Fatalf("system 2 without a drive: %+v", st)
	}

	// The control API shows the outcome.
	resp, err := http.Get(f.URL() + "/sim/systems/1")
	if err != nil {
		t.Fatal(err)
	}
	var ss sim.SystemStatus
	_ = json.NewDecoder(resp.Body).Decode(&ss)
	resp.Body.Close()
	if ss.OS.ReadyCalls != 3 || ss.OS.LastStatus != http.StatusNoContent || !ss.OS.Enabled || len(ss.MediaSlots) != 2 || !ss.MediaSlots[1].ConfigDrive {
		t.Fatalf("control status %+v", ss)
	}
}

func TestSimulatedOSRetries(t *testing.T) {
	// 503 first, then 204: one retry a second later.
	rs := newReadyServer(t, func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	f := startWithDrive(t, sim.Options{}, rs)
	reset(t, f, "1", "On")
	eventually(t, "the retried callback", func() bool { st := osStatus(t, f, "1"); return st.ReadyCalls == 2 && !st.Pending })
	if st := osStatus(t, f, "1"); st.LastStatus != http.StatusNoContent {
		t.Fatalf("%+v", st)
	}

	// A 4xx is final.
	rs4 := newReadyServer(t, func(int) int { return http.StatusUnauthorized })
	f4 := startWithDrive(t, sim.Options{}, rs4)
	reset(t, f4, "1", "On")
	eventually(t, "the refused callback", func() bool { st := osStatus(t, f4, "1"); return st.ReadyCalls == 1 && !st.Pending })
	if st := osStatus(t, f4, "1"); st.LastStatus != http.StatusUnauthorized || len(rs4.calls()) != 1 {
		t.Fatalf("%+v %q", st, rs4.calls())
	}
}

func TestSimulatedOSDisabled(t *testing.T) {
	rs := newReadyServer(t, func(int) int { return http.StatusNoContent })

	// Per system, through the control API. The OS starts synchronously
	// with the power change, so "not pending" right after it is final.
	f := startWithDrive(t, sim.Options{}, rs)
	resp, err := http.Post(f.URL()+"/sim/systems/1/os", "application/json", strings.NewReader(`{"enabled":false}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.StatusCode)
	}
	reset(t, f, "1", "On")
	if st := osStatus(t, f, "1"); st.Enabled || st.Pending || st.PowerOns != 1 {
		t.Fatalf("disabled OS: %+v", st)
	}

	// Fleet-wide, by option; SetOS turns it back on for the next boot.
	for _, opts := range []sim.Options{{NoOS: true}, {OSBootDelay: -1}} {
		f := startWithDrive(t, opts, rs)
		reset(t, f, "1", "On")
		if st := osStatus(t, f, "1"); st.Enabled || st.Pending {
			t.Fatalf("%+v: %+v", opts, st)
		}
		if err := f.SetOS("1", true); err != nil {
			t.Fatal(err)
		}
		reset(t, f, "1", "ForceRestart")
		eventually(t, "the callback once enabled", func() bool { return f.ReadyCalls("1") == 1 })
	}
	if n := len(rs.calls()); n != 2 {
		t.Fatalf("%d callbacks, want 2 (only the re-enabled systems)", n)
	}

	// Disabling cancels a pending callback.
	f2 := startWithDrive(t, sim.Options{OSBootDelay: time.Hour}, rs)
	reset(t, f2, "1", "On")
	if !osStatus(t, f2, "1").Pending {
		t.Fatal("no pending callback")
	}
	_ = f2.SetOS("1", false)
	if osStatus(t, f2, "1").Pending {
		t.Fatal("SetOS(false) left the callback pending")
	}
}

// Close must return promptly with a callback waiting for its boot delay
// or stuck in a ready URL that never answers, and leave nothing behind.
func TestCloseWithPendingCallback(t *testing.T) {
	before := runtime.NumGoroutine()
	hung := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	var iso bytes.Buffer
	_ = configdrive.Build(&iso, configdrive.Drive{UUID: "u", ReadyURL: stuck.URL + "/ready", ReadyToken: "t"})
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(iso.Bytes()) }))

	delayed, err := sim.Start(sim.Options{OSBootDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	calling, err := sim.Start(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*sim.Fleet{delayed, calling} {
		if st, body := insertMedia(t, f, "1", "USB1", img.URL+"/drive.iso"); st != http.StatusNoContent {
			t.Fatalf("insert: %d %s", st, body)
		}
		reset(t, f, "1", "On")
		if !osStatus(t, f, "1").Pending {
			t.Fatal("no pending callback")
		}
	}
	for _, f := range []*sim.Fleet{delayed, calling} {
		done := make(chan struct{})
		go func() { _ = f.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Close hangs on a pending callback")
		}
	}
	close(hung)
	stuck.Close()
	img.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines: %d before, %d after Close\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
