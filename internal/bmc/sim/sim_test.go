package sim_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

func start(t *testing.T, opts sim.Options) *sim.Fleet {
	t.Helper()
	f, err := sim.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func gofishConnect(t *testing.T, f *sim.Fleet, basic bool) *gofish.APIClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c, err := gofish.ConnectContext(ctx, gofish.ClientConfig{
		Endpoint: f.URL(), Username: "admin", Password: "password", BasicAuth: basic,
		HTTPClient: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: f.CertPool()},
		}},
	})
	if err != nil {
		t.Fatalf("gofish connect: %v", err)
	}
	return c
}

// The whole surface through an unmodified gofish client.
func TestGofishWalk(t *testing.T) {
	f := start(t, sim.Options{Systems: 3, TLS: true})
	c := gofishConnect(t, f, false)
	if f.Logins() != 1 || f.Sessions() != 1 {
		t.Fatalf("logins=%d sessions=%d, want 1/1", f.Logins(), f.Sessions())
	}

	systems, err := c.Service.Systems()
	if err != nil || len(systems) != 3 {
		t.Fatalf("systems: %d %v", len(systems), err)
	}
	sys, err := schemas.GetComputerSystem(c, f.SystemIDs()[1])
	if err != nil {
		t.Fatal(err)
	}
	if sys.ID != "2" || sys.PowerState != schemas.OffPowerState || sys.UUID == "" || sys.SerialNumber == "" ||
		gofish.Deref(sys.ProcessorSummary.Count) != 2 || gofish.Deref(sys.MemorySummary.TotalSystemMemoryGiB) != 64 {
		t.Fatalf("unexpected system: %+v", sys)
	}
	if types, _ := sys.GetSupportedResetTypes(); len(types) != 5 {
		t.Fatalf("reset types %v", types)
	}
	if _, err := sys.Reset(schemas.OnResetType); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.Power("2"); p != "On" {
		t.Fatalf("power %s after Reset On", p)
	}
	if _, err := sys.Reset(schemas.NmiResetType); err == nil {
		t.Fatal("Nmi is not advertised; gofish should refuse it")
	}
	if err := sys.SetBoot(&schemas.Boot{BootSourceOverrideTarget: schemas.PxeBootSource, BootSourceOverrideEnabled: schemas.OnceBootSourceOverrideEnabled}); err != nil {
		t.Fatal(err)
	}
	if tg, en, _ := f.BootOverride("/redfish/v1/Systems/2"); tg != "Pxe" || en != "Once" {
		t.Fatalf("boot %s/%s", tg, en)
	}

	mgrs, err := sys.ManagedBy()
	if err != nil || len(mgrs) != 1 {
		t.Fatalf("managers %d %v", len(mgrs), err)
	}
	vms, err := mgrs[0].VirtualMedia()
	// Default slots: the CD first, then a USB stick.
	if err != nil || len(vms) != 2 || !vms[0].SupportsMediaInsert || vms[0].ID != "CD" || vms[1].ID != "USB1" {
		t.Fatalf("virtual media %v %v", vms, err)
	}
	if _, err := vms[0].InsertMedia(&schemas.VirtualMediaInsertMediaParameters{Image: "http://images/x.iso"}); err != nil {
		t.Fatal(err)
	}
	if img, in, _ := f.Media("2"); img != "http://images/x.iso" || !in {
		t.Fatalf("media %q %v", img, in)
	}
	if _, err := vms[0].InsertMedia(&schemas.VirtualMediaInsertMediaParameters{Image: "http://images/y.iso"}); err == nil {
		t.Fatal("second insert without eject should be refused (409)")
	}
	if _, err := vms[0].EjectMedia(); err != nil {
		t.Fatal(err)
	}
	if _, in, _ := f.Media("2"); in {
		t.Fatal("still inserted after eject")
	}

	c.Logout()
	if f.Sessions() != 0 {
		t.Fatalf("sessions after logout: %d", f.Sessions())
	}
	if f.Requests("2") == 0 || f.Requests("3") == 0 || f.TotalRequests() < f.Requests("2") {
		t.Fatal("request counters did not move")
	}
}

func TestNoSessionServiceBasicAuth(t *testing.T) {
	f := start(t, sim.Options{Systems: 1, NoSessionService: true, Username: "root", Password: "calvin"})
	ctx := context.Background()
	_, err := gofish.ConnectContext(ctx, gofish.ClientConfig{Endpoint: f.URL(), Username: "root", Password: "calvin"})
	if err == nil {
		t.Fatal("session login should fail without a SessionService")
	}
	c, err := gofish.ConnectContext(ctx, gofish.ClientConfig{Endpoint: f.URL(), Username: "root", Password: "calvin", BasicAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := schemas.GetComputerSystem(c, f.SystemIDs()[0]); err != nil {
		t.Fatal(err)
	}
	bad, _ := gofish.ConnectContext(ctx, gofish.ClientConfig{Endpoint: f.URL(), Username: "root", Password: "wrong", BasicAuth: true})
	_, err = schemas.GetComputerSystem(bad, f.SystemIDs()[0])
	var rf *schemas.Error
	if !errors.As(err, &rf) || rf.HTTPReturnedStatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong password: %v", err)
	}
}

func get(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.SetBasicAuth("admin", "password")
	resp, err := c.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func TestFaults(t *testing.T) {
	f := start(t, sim.Options{Systems: 2, SlowDelay: 200 * time.Millisecond})
	c := &http.Client{Timeout: 2 * time.Second}
	sys := f.URL() + "/redfish/v1/Systems/1"
	mgr := f.URL() + "/redfish/v1/Managers/1"
	ctx := context.Background()

	status := func(url string) (int, error) {
		resp, err := get(ctx, c, url)
		if err != nil {
			return 0, err
		}
		return resp.StatusCode, nil
	}

	if err := f.SetFault("1", sim.FaultDown); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{sys, mgr, sys + "/Processors"} {
		if _, err := status(u); err == nil {
			t.Fatalf("down: %s answered", u)
		}
	}
	if s, err := status(f.URL() + "/redfish/v1/Systems/2"); err != nil || s != 200 {
		t.Fatalf("system 2 must stay healthy: %d %v", s, err)
	}
	if s, err := status(f.URL() + "/redfish/v1/Systems"); err != nil || s != 200 {
		t.Fatalf("collection must stay healthy: %d %v", s, err)
	}

	_ = f.SetFault("1", sim.FaultError)
	resp, err := func() (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, sys, nil)
		req.SetBasicAuth("admin", "password")
		return c.Do(req)
	}()
	if err != nil || resp.StatusCode != 500 {
		t.Fatalf("error fault: %v %v", resp, err)
	}
	var body struct {
		Error struct {
			Code     string
			Message  string
			Extended []struct{ MessageID string } `json:"@Message.ExtendedInfo"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if body.Error.Message == "" || len(body.Error.Extended) != 1 {
		t.Fatalf("not a Redfish extended error: %+v", body)
	}

	_ = f.SetFault("1", sim.FaultAuth)
	if s, _ := status(sys); s != 401 {
		t.Fatalf("auth fault: %d", s)
	}

	_ = f.SetFault("1", sim.FaultSlow)
	t0 := time.Now()
	if s, err := status(sys); err != nil || s != 200 || time.Since(t0) < 200*time.Millisecond {
		t.Fatalf("slow: %d %v after %v", s, err, time.Since(t0))
	}

	_ = f.SetFault("1", sim.FaultHang)
	hctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	t0 = time.Now()
	_, err = get(hctx, c, sys)
	cancel()
	if err == nil || time.Since(t0) > 1500*time.Millisecond {
		t.Fatalf("hang: err=%v after %v", err, time.Since(t0))
	}

	_ = f.SetFault("1", sim.FaultFlap)
	var got []bool
	for range 6 {
		_, err := status(sys)
		got = append(got, err == nil)
	}
	if fmt.Sprint(got) != "[false true false true false true]" {
		t.Fatalf("flap sequence %v", got)
	}

	_ = f.SetFault("/redfish/v1/Systems/1", sim.FaultNone)
	if s, err := status(sys); err != nil || s != 200 {
		t.Fatalf("recovered: %d %v", s, err)
	}
	if err := f.SetFault("99", sim.FaultDown); err == nil {
		t.Fatal("unknown system accepted")
	}
	if err := f.SetFault("1", "bogus"); err == nil {
		t.Fatal("unknown fault accepted")
	}
}

// Close must end hung requests and leave no goroutine behind.
func TestCloseEndsHangs(t *testing.T) {
	before := runtime.NumGoroutine()
	f, err := sim.Start(sim.Options{Systems: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.SetAllFaults(sim.FaultHang)
	tr := &http.Transport{}
	c := &http.Client{Transport: tr}
	errc := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := get(context.Background(), c, f.URL()+"/redfish/v1/Systems/1")
			errc <- err
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.Requests("1") < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	done := make(chan struct{})
	go func() { _ = f.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on hung requests")
	}
	for range 4 {
		if err := <-errc; err == nil {
			t.Fatal("hung request got an answer")
		}
	}
	tr.CloseIdleConnections()
	for time.Now().Before(deadline) && runtime.NumGoroutine() > before {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines: %d before, %d after Close\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

func TestPowerDelayAndIgnore(t *testing.T) {
	f := start(t, sim.Options{Systems: 2, PowerDelay: 200 * time.Millisecond})
	c := gofishConnect(t, f, true)
	sys, err := schemas.GetComputerSystem(c, f.SystemIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Reset(schemas.OnResetType); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.Power("1"); p != "Off" {
		t.Fatal("power changed before PowerDelay")
	}
	time.Sleep(400 * time.Millisecond)
	if p, _ := f.Power("1"); p != "On" {
		t.Fatal("power did not change after PowerDelay")
	}

	_ = f.SetIgnorePower("2", true)
	sys2, _ := schemas.GetComputerSystem(c, f.SystemIDs()[1])
	if _, err := sys2.Reset(schemas.OnResetType); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if p, _ := f.Power("2"); p != "Off" {
		t.Fatal("ignored Reset changed power")
	}
}

func TestTLSVerify(t *testing.T) {
	f := start(t, sim.Options{TLS: true})
	if !strings.HasPrefix(f.URL(), "https://") {
		t.Fatal(f.URL())
	}
	if _, err := get(context.Background(), &http.Client{Timeout: 2 * time.Second}, f.URL()+"/redfish/v1/"); err == nil {
		t.Fatal("self-signed cert verified by default")
	}
	ok := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.CertPool()}}}
	if resp, err := get(context.Background(), ok, f.URL()+"/redfish/v1/"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("with CertPool: %v", err)
	}
}

func TestScaleAndControl(t *testing.T) {
	t0 := time.Now()
	f := start(t, sim.Options{Systems: 10000})
	if len(f.SystemIDs()) != 10000 {
		t.Fatal(len(f.SystemIDs()))
	}
	t.Logf("10,000 systems started in %v", time.Since(t0))
	c := &http.Client{Timeout: 5 * time.Second}
	if resp, err := get(context.Background(), c, f.URL()+"/redfish/v1/Systems/9999"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("system 9999: %v", err)
	}

	post := func(path, body string) int {
		resp, err := c.Post(f.URL()+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post("/sim/systems/7/fault", `{"fault":"hang"}`); s != 200 {
		t.Fatal(s)
	}
	if s := post("/sim/systems/7/power", `{"power":"On"}`); s != 200 {
		t.Fatal(s)
	}
	if s := post("/sim/systems/7/fault", `{"fault":"nope"}`); s != 400 {
		t.Fatal(s)
	}
	resp, err := c.Get(f.URL() + "/sim/systems/7")
	if err != nil {
		t.Fatal(err)
	}
	var st sim.SystemStatus
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Fault != "hang" || st.Power != "On" {
		t.Fatalf("%+v", st)
	}
	if s := post("/sim/fault", `{"fault":"none"}`); s != 200 {
		t.Fatal(s)
	}
	if p, _ := f.Power("7"); p != "On" {
		t.Fatal(p)
	}
}

// The demo image answers HEAD and ranges like an image server, with the
// checksum the sim advertises.
func TestDemoImage(t *testing.T) {
	f, err := sim.Start(sim.Options{Systems: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	url := f.URL() + sim.DemoImagePath
	res, err := http.Head(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.ContentLength != 1<<20 || res.Header.Get("Last-Modified") == "" {
		t.Fatalf("HEAD: %d, length %d, last-modified %q", res.StatusCode, res.ContentLength, res.Header.Get("Last-Modified"))
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Range", "bytes=510-511")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, []byte{0x55, 0xaa}) {
		t.Fatalf("range: %d %x", res.StatusCode, b)
	}
	res, err = http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(res.Body)
	res.Body.Close()
	sum := sha256.Sum256(all)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != sim.DemoImageChecksum() {
		t.Fatalf("served image sha256 %s, advertised %s", got, sim.DemoImageChecksum())
	}
}

// ServeAlso answers the same fleet on another loopback address.
func TestServeAlso(t *testing.T) {
	f, err := sim.Start(sim.Options{Systems: 2})
	if err != nil {
		t.Fatal(err)
	}
	u, err := f.ServeAlso("127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u, "http://127.0.0.2:") {
		t.Fatalf("ServeAlso URL %s", u)
	}
	req, _ := http.NewRequest(http.MethodGet, u+"/redfish/v1/Systems", nil)
	req.SetBasicAuth("admin", "password")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET on the second address: %d", res.StatusCode)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(u + "/redfish/v1"); err == nil {
		t.Fatal("the second address still answers after Close")
	}
}
