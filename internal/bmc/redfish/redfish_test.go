package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

const testPassword = "Sup3r-S3cret-pw"

func startFleet(t testing.TB, opts sim.Options) *sim.Fleet {
	t.Helper()
	if opts.Password == "" {
		opts.Password = testPassword
	}
	f, err := sim.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func newOpener(t testing.TB, opts Options) *Opener {
	t.Helper()
	o := NewOpener(opts)
	t.Cleanup(o.Close)
	return o
}

func endpoint(url, systemID string) bmc.Endpoint {
	return bmc.Endpoint{Driver: "redfish", Address: url, Username: "admin", Password: testPassword, Insecure: true, SystemID: systemID}
}

func open(t testing.TB, o *Opener, ep bmc.Endpoint) *Client {
	t.Helper()
	c, err := o.Open(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	return c.(*Client)
}

// wantKind checks the error's Kind and that no secret leaks anywhere in
// its chain.
func wantKind(t *testing.T, err error, kind bmc.Kind) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %s error, got nil", kind)
	}
	if got := bmc.KindOf(err); got != kind {
		t.Fatalf("want kind %s, got %s: %v", kind, got, err)
	}
	var be *bmc.Error
	if !errors.As(err, &be) {
		t.Fatalf("not a *bmc.Error: %T %v", err, err)
	}
	noSecret(t, err)
	t.Logf("%s: %v", kind, err)
}

func noSecret(t *testing.T, err error) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), testPassword) {
			t.Fatalf("password in error message: %q", e.Error())
		}
	}
}

func mustPower(t *testing.T, c *Client, want bmc.PowerState) {
	t.Helper()
	got, err := c.PowerState(context.Background())
	if err != nil {
		t.Fatalf("power state: %v", err)
	}
	if got != want {
		t.Fatalf("power state %s, want %s", got, want)
	}
}

func TestPowerReadIsOneRequest(t *testing.T) {
	for _, noSessions := range []bool{false, true} {
		t.Run(fmt.Sprintf("noSessionService=%v", noSessions), func(t *testing.T) {
			f := startFleet(t, sim.Options{Systems: 3, NoSessionService: noSessions})
			o := newOpener(t, Options{})
			mustPower(t, open(t, o, endpoint(f.URL(), "/redfish/v1/Systems/2")), bmc.PowerOff) // login
			// The login reads the service root once (gofish's connect gets
			// the one the probe read), creates a session where the BMC
			// offers them, then the read: 3 requests, 2 without sessions.
			wantFirst := int64(3)
			if noSessions {
				wantFirst = 2
			}
			if got := f.TotalRequests(); got != wantFirst {
				t.Fatalf("the first power read (with its login) cost %d requests, want %d", got, wantFirst)
			}

			sys, total := f.Requests("2"), f.TotalRequests()
			const n = 25
			for range n {
				// A fresh Open each time, as a power-sync job would.
				mustPower(t, open(t, o, endpoint(f.URL(), "/redfish/v1/Systems/2")), bmc.PowerOff)
			}
			if d := f.Requests("2") - sys; d != n {
				t.Fatalf("%d power reads touched system 2 %d times", n, d)
			}
			if d := f.TotalRequests() - total; d != n {
				t.Fatalf("%d power reads cost %d HTTP requests", n, d)
			}
			wantLogins := int64(1)
			if noSessions {
				wantLogins = 0
			}
			if f.Logins() != wantLogins {
				t.Fatalf("logins %d, want %d", f.Logins(), wantLogins)
			}
		})
	}

	// The only system of a BMC is looked up once, then cached.
	f := startFleet(t, sim.Options{Systems: 1})
	o := newOpener(t, Options{})
	mustPower(t, open(t, o, endpoint(f.URL(), "")), bmc.PowerOff)
	total := f.TotalRequests()
	for range 10 {
		mustPower(t, open(t, o, endpoint(f.URL(), "")), bmc.PowerOff)
	}
	if d := f.TotalRequests() - total; d != 10 {
		t.Fatalf("10 reads without system_id cost %d requests", d)
	}
}

func TestSessionsAndBasicFallback(t *testing.T) {
	t.Run("session", func(t *testing.T) {
		f := startFleet(t, sim.Options{Systems: 4})
		o := NewOpener(Options{})
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				c := open(t, o, endpoint(f.URL(), fmt.Sprint(i%4+1)))
				if _, err := c.PowerState(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if f.Logins() != 1 || f.Sessions() != 1 {
			t.Fatalf("concurrent first calls made %d logins (%d sessions), want 1", f.Logins(), f.Sessions())
		}
		o.Close()
		if f.Sessions() != 0 {
			t.Fatalf("Close left %d sessions on the BMC", f.Sessions())
		}
		_, err := o.Open(context.Background(), endpoint(f.URL(), "1"))
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Open after Close: %v", err)
		}
	})

	t.Run("no SessionService", func(t *testing.T) {
		f := startFleet(t, sim.Options{Systems: 1, NoSessionService: true})
		o := newOpener(t, Options{})
		c := open(t, o, endpoint(f.URL(), ""))
		mustPower(t, c, bmc.PowerOff)
		if err := c.SetPower(context.Background(), bmc.ActionOn); err != nil {
			t.Fatal(err)
		}
		mustPower(t, c, bmc.PowerOn)
		if f.Logins() != 0 {
			t.Fatal("logged in to a BMC without SessionService")
		}
	})

	t.Run("session creation refused", func(t *testing.T) {
		// A BMC that links a SessionService but answers 405 to a login.
		f := startFleet(t, sim.Options{Systems: 1})
		var posts atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/redfish/v1/SessionService/Sessions") {
				posts.Add(1)
				w.Header().Set("Allow", "GET")
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			f.Handler().ServeHTTP(w, r)
		}))
		defer srv.Close()
		o := newOpener(t, Options{})
		c := open(t, o, endpoint(srv.URL, ""))
		mustPower(t, c, bmc.PowerOff)
		mustPower(t, c, bmc.PowerOff)
		if posts.Load() != 1 || f.Logins() != 0 {
			t.Fatalf("session posts %d, logins %d; want one refused attempt then basic auth", posts.Load(), f.Logins())
		}
	})
}

func TestReloginOnExpiredSession(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	o := newOpener(t, Options{})
	o.reloginEvery = 0
	c := open(t, o, endpoint(f.URL(), "1"))
	mustPower(t, c, bmc.PowerOff)
	f.DropSessions() // BMC rebooted or session timed out
	mustPower(t, c, bmc.PowerOff)
	if f.Logins() != 2 {
		t.Fatalf("logins %d, want 2 (one re-login)", f.Logins())
	}

	// A 401 that a new session does not cure is an auth error, after one
	// re-login only.
	_ = f.SetFault("1", sim.FaultAuth)
	_, err := c.PowerState(context.Background())
	wantKind(t, err, bmc.KindAuth)
	if f.Logins() != 3 {
		t.Fatalf("logins %d, want 3", f.Logins())
	}
}

func TestWrongCredentials(t *testing.T) {
	for _, noSessions := range []bool{false, true} {
		t.Run(fmt.Sprintf("noSessionService=%v", noSessions), func(t *testing.T) {
			f := startFleet(t, sim.Options{Systems: 1, NoSessionService: noSessions, Password: "the-right-one"})
			o := newOpener(t, Options{})
			c := open(t, o, endpoint(f.URL(), "")) // uses testPassword: wrong
			_, err := c.PowerState(context.Background())
			wantKind(t, err, bmc.KindAuth)
			total := f.TotalRequests()
			err = c.SetPower(context.Background(), bmc.ActionOn)
			wantKind(t, err, bmc.KindAuth)
			if !noSessions && f.TotalRequests() != total {
				t.Fatal("a refused login was retried at once (BMCs lock accounts)")
			}
			if p, _ := f.Power("1"); p != "Off" {
				t.Fatal("power changed with a wrong password")
			}

			// The right password is another cache entry: tried at once.
			good := endpoint(f.URL(), "")
			good.Password = "the-right-one"
			mustPower(t, open(t, o, good), bmc.PowerOff)
		})
	}
}

func TestFaults(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 2, SlowDelay: 300 * time.Millisecond})
	o := newOpener(t, Options{Timeout: 600 * time.Millisecond})
	c := open(t, o, endpoint(f.URL(), "1"))
	other := open(t, o, endpoint(f.URL(), "2"))
	ctx := context.Background()
	mustPower(t, c, bmc.PowerOff)

	recover := func(t *testing.T) {
		t.Helper()
		_ = f.SetFault("1", sim.FaultNone)
		mustPower(t, c, bmc.PowerOff)
	}

	t.Run("down", func(t *testing.T) {
		_ = f.SetFault("1", sim.FaultDown)
		_, err := c.PowerState(ctx)
		wantKind(t, err, bmc.KindUnreachable)
		wantKind(t, c.SetPower(ctx, bmc.ActionOn), bmc.KindUnreachable)
		mustPower(t, other, bmc.PowerOff) // one bad system does not hurt its neighbours
		recover(t)
	})
	t.Run("error", func(t *testing.T) {
		_ = f.SetFault("1", sim.FaultError)
		_, err := c.PowerState(ctx)
		wantKind(t, err, bmc.KindBMCError)
		if !strings.Contains(err.Error(), "internal service error") || !strings.Contains(err.Error(), "500") {
			t.Fatalf("Redfish message missing: %v", err)
		}
		recover(t)
	})
	t.Run("auth", func(t *testing.T) {
		_ = f.SetFault("1", sim.FaultAuth)
		_, err := c.PowerState(ctx)
		wantKind(t, err, bmc.KindAuth)
		recover(t)
	})
	t.Run("hang", func(t *testing.T) {
		_ = f.SetFault("1", sim.FaultHang)
		t0 := time.Now()
		_, err := c.PowerState(ctx) // bounded by Options.Timeout
		wantKind(t, err, bmc.KindUnreachable)
		if d := time.Since(t0); d > 2*time.Second {
			t.Fatalf("hung call returned after %v, timeout 600ms", d)
		}
		dctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
		defer cancel()
		t0 = time.Now()
		_, err = c.PowerState(dctx) // bounded by the context
		wantKind(t, err, bmc.KindUnreachable)
		if d := time.Since(t0); d > 450*time.Millisecond {
			t.Fatalf("hung call returned %v after its 150ms deadline", d)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("deadline not visible with errors.Is: %v", err)
		}
		recover(t)
	})
	t.Run("slow", func(t *testing.T) {
		_ = f.SetFault("1", sim.FaultSlow)
		t0 := time.Now()
		mustPower(t, c, bmc.PowerOff) // 300ms < 600ms timeout
		if time.Since(t0) < 300*time.Millisecond {
			t.Fatal("slow fault was not slow")
		}
		dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := c.PowerState(dctx)
		wantKind(t, err, bmc.KindUnreachable)
		recover(t)
	})
	t.Run("flap", func(t *testing.T) {
		_ = f.SetFault("1", sim.FaultFlap)
		var seq []bool
		for range 8 {
			_, err := c.PowerState(ctx)
			if err != nil {
				wantKind(t, err, bmc.KindUnreachable)
			}
			seq = append(seq, err == nil)
		}
		fails := 0
		for i, ok := range seq {
			if !ok {
				fails++
				if i > 0 && !seq[i-1] {
					t.Fatalf("two failures in a row while flapping: %v", seq)
				}
			}
		}
		if fails < 3 || fails > 4 {
			t.Fatalf("flap sequence %v: want alternating failures", seq)
		}
		recover(t)
	})
}

func TestTLS(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, TLS: true})
	o := newOpener(t, Options{})
	mustPower(t, open(t, o, endpoint(f.URL(), "")), bmc.PowerOff)

	ep := endpoint(f.URL(), "")
	ep.Insecure = false
	_, err := open(t, o, ep).PowerState(context.Background())
	wantKind(t, err, bmc.KindUnreachable)
	if !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("want a certificate error, got %v", err)
	}
}

func TestNoPasswordInErrors(t *testing.T) {
	// A closed port, credentials only in the address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	o := newOpener(t, Options{Timeout: time.Second})
	c, err := o.Open(context.Background(), bmc.Endpoint{Address: "http://admin:" + testPassword + "@" + addr})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PowerState(context.Background())
	wantKind(t, err, bmc.KindUnreachable)
	if !strings.Contains(err.Error(), addr) {
		t.Fatalf("error should name the BMC: %v", err)
	}

	// Bad addresses are reported without their userinfo.
	_, err = o.Open(context.Background(), bmc.Endpoint{Address: "ftp://admin:" + testPassword + "@host"})
	wantKind(t, err, bmc.KindUnreachable)

	// A BMC that echoes the login request in its error.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/redfish/v1/":
			_, _ = io.WriteString(w, `{"Systems":{"@odata.id":"/redfish/v1/Systems"},"Links":{"Sessions":{"@odata.id":"/redfish/v1/SessionService/Sessions"}}}`)
		case r.Method == http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusBadRequest)
			msg, _ := json.Marshal(map[string]any{"error": map[string]any{
				"code": "Base.1.8.GeneralError", "message": "cannot parse " + string(body),
				"@Message.ExtendedInfo": []any{map[string]any{"MessageId": "Base.1.8.MalformedJSON", "Message": "bad request " + string(body)}},
			}})
			_, _ = w.Write(msg)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	_, err = open(t, o, endpoint(srv.URL, "1")).PowerState(context.Background())
	wantKind(t, err, bmc.KindBMCError)
	if !strings.Contains(err.Error(), "MalformedJSON") {
		t.Fatalf("Redfish MessageId missing: %v", err)
	}
}

func TestPowerActions(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 2, PowerDelay: 150 * time.Millisecond})
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(f.URL(), "1"))
	ctx := context.Background()

	waitPower := func(want bmc.PowerState) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			got, err := c.PowerState(ctx)
			if err == nil && got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("power never became %s (last %s, %v)", want, got, err)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}

	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	mustPower(t, c, bmc.PowerOff) // accepted, not applied yet: like a real BMC
	waitPower(bmc.PowerOn)

	before := f.Requests("1")
	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	if d := f.Requests("1") - before; d != 1 {
		t.Fatalf("on while on cost %d requests, want 1 (a GET, no Reset)", d)
	}

	if err := c.SetPower(ctx, bmc.ActionReset); err != nil { // ForceRestart
		t.Fatal(err)
	}
	waitPower(bmc.PowerOn)
	if err := c.SetPower(ctx, bmc.ActionSoftOff); err != nil {
		t.Fatal(err)
	}
	waitPower(bmc.PowerOff)
	if err := c.SetPower(ctx, bmc.ActionReset); err != nil { // off: reset means On
		t.Fatal(err)
	}
	waitPower(bmc.PowerOn)
	if err := c.SetPower(ctx, bmc.ActionOff); err != nil {
		t.Fatal(err)
	}
	waitPower(bmc.PowerOff)

	wantKind(t, c.SetPower(ctx, "explode"), bmc.KindUnsupported)

	// A BMC that accepts Reset but never acts: the caller sees it by polling.
	_ = f.SetIgnorePower("2", true)
	c2 := open(t, o, endpoint(f.URL(), "2"))
	if err := c2.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	mustPower(t, c2, bmc.PowerOff)
}

func TestBootOverride(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(f.URL(), ""))
	ctx := context.Background()
	for _, tc := range []struct {
		dev                   bmc.BootDevice
		persistent            bool
		wantTarget, wantState string
	}{
		{bmc.BootPXE, false, "Pxe", "Once"},
		{bmc.BootDisk, true, "Hdd", "Continuous"},
		{bmc.BootCD, false, "Cd", "Once"},
		{bmc.BootNone, false, "None", "Disabled"},
		{bmc.BootNone, false, "None", "Disabled"},
	} {
		if err := c.SetBootDevice(ctx, tc.dev, tc.persistent); err != nil {
			t.Fatalf("%s: %v", tc.dev, err)
		}
		target, enabled, _ := f.BootOverride("1")
		if target != tc.wantTarget || enabled != tc.wantState {
			t.Fatalf("%s persistent=%v: BMC has %s/%s", tc.dev, tc.persistent, target, enabled)
		}
	}
	wantKind(t, c.SetBootDevice(ctx, "floppy", false), bmc.KindUnsupported)
}

func TestVirtualMedia(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 2})
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(f.URL(), "2"))
	ctx := context.Background()

	check := func(wantImage string, wantIn bool) {
		t.Helper()
		img, in, _ := f.Media("2")
		if img != wantImage || in != wantIn {
			t.Fatalf("media %q inserted=%v, want %q %v", img, in, wantImage, wantIn)
		}
	}
	if err := c.InsertMedia(ctx, "http://images.example/deploy.iso"); err != nil {
		t.Fatal(err)
	}
	check("http://images.example/deploy.iso", true)
	if err := c.InsertMedia(ctx, "http://images.example/deploy.iso"); err != nil {
		t.Fatal(err) // same image: nothing to do
	}
	if err := c.InsertMedia(ctx, "https://images.example/other.iso"); err != nil {
		t.Fatal(err) // another image: eject, then insert
	}
	check("https://images.example/other.iso", true)
	if err := c.EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
	check("", false)
	if err := c.EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
	check("", false)
	_, in, _ := f.Media("1")
	if in {
		t.Fatal("media went to the wrong system")
	}
	wantKind(t, c.InsertMedia(ctx, "not a url"), bmc.KindUnsupported)
}

func TestInventory(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(f.URL(), ""))
	inv, err := c.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if inv.CPUs != 32 || inv.MemoryMB != 64*1024 || inv.CPUArch != "x86_64" || len(inv.SystemUUID) != 36 || inv.Serial != "SIM0000001" {
		t.Fatalf("inventory %+v", inv)
	}
	// The power state comes with it (the enroll verify reads no more).
	if inv.PowerState != bmc.PowerOff {
		t.Fatalf("inventory power state %q, want off", inv.PowerState)
	}
	if err := f.SetPower(f.SystemIDs()[0], true); err != nil {
		t.Fatal(err)
	}
	if inv, err = c.Inventory(context.Background()); err != nil || inv.PowerState != bmc.PowerOn {
		t.Fatalf("inventory after power on: %+v, %v", inv, err)
	}
}

// TestInventoryExpand: where the service root advertises $expand the
// Processors collection is read with its members inline (the system and
// the collection: two requests for two sockets, against four); a BMC
// that answers the query with links all the same has each member read,
// and one that refuses the query (400) is read without it, from then on
// without asking again. The inventory is the same every way.
func TestInventoryExpand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		expand sim.ExpandSupport
		first  int64 // requests of the first inventory, the login's too
		again  int64 // of the second
	}{
		// The first: the service root (no sessions), the system, the
		// collection (and each processor).
		{"honored", sim.ExpandHonored, 3, 2},
		{"none", sim.ExpandNone, 5, 4},       // no query: each processor read
		{"ignored", sim.ExpandIgnored, 5, 4}, // links all the same: each read
		{"refused", sim.ExpandRefused, 6, 4}, // 400, then plain; never again
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFleet(t, sim.Options{Systems: 1, NoSessionService: true, Tweak: func(q *sim.Quirks) { q.Expand = tc.expand }})
			o := newOpener(t, Options{})
			c := open(t, o, endpoint(f.URL(), "/redfish/v1/Systems/1"))
			for i, want := range []int64{tc.first, tc.again} {
				before := f.TotalRequests()
				inv, err := c.Inventory(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if inv.CPUs != 32 || inv.CPUSockets != 2 || inv.CPUCores != 16 || inv.CPUArch != "x86_64" {
					t.Fatalf("inventory %d: %+v", i+1, inv)
				}
				if got := f.TotalRequests() - before; got != want {
					t.Errorf("inventory %d cost %d requests, want %d", i+1, got, want)
				}
			}
		})
	}
}

func TestMultipleSystems(t *testing.T) {
	f := startFleet(t, sim.Options{IDs: []string{"a", "b", "c"}})
	o := newOpener(t, Options{})
	ctx := context.Background()

	_, err := open(t, o, endpoint(f.URL(), "")).PowerState(ctx)
	wantKind(t, err, bmc.KindBMCError)
	if !errors.Is(err, ErrSystemIDRequired) || !strings.Contains(err.Error(), "/redfish/v1/Systems/b") {
		t.Fatalf("want ErrSystemIDRequired listing the systems: %v", err)
	}

	_ = f.SetPower("b", true)
	for _, id := range []string{"b", "/redfish/v1/Systems/b", "/redfish/v1/Systems/b/", f.URL() + "/redfish/v1/Systems/b"} {
		mustPower(t, open(t, o, endpoint(f.URL(), id)), bmc.PowerOn)
	}
	mustPower(t, open(t, o, endpoint(f.URL(), "a")), bmc.PowerOff)

	_, err = open(t, o, endpoint(f.URL(), "/redfish/v1/Systems/zz")).PowerState(ctx)
	wantKind(t, err, bmc.KindBMCError)
	if !errors.Is(err, ErrSystemNotFound) {
		t.Fatalf("want ErrSystemNotFound: %v", err)
	}
}

// quirkyBMC answers like real, imperfect firmware: no SessionService, odd
// types, trailing slashes, a reduced set of reset types.
type quirkyBMC struct {
	mu      sync.Mutex
	power   string
	allowed []string
	resets  []string
}

func (q *quirkyBMC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	const sys = "/redfish/v1/Systems/System.Embedded.1"
	switch r.URL.Path {
	case "/redfish/v1/", "/redfish/v1":
		_, _ = io.WriteString(w, `{"Systems":{"@odata.id":"/redfish/v1/Systems/"},"RedfishVersion":"1.0.2"}`)
	case "/redfish/v1/Systems/", "/redfish/v1/Systems":
		_, _ = io.WriteString(w, `{"Members":[{"@odata.id":"`+sys+`/"}],"Members@odata.count":"1"}`)
	case sys, sys + "/":
		allowed, _ := json.Marshal(q.allowed)
		fmt.Fprintf(w, `{"@odata.id":"%s/","Id":"System.Embedded.1","powerstate":%q,
			"UUID":null,"SerialNumber":12345,
			"ProcessorSummary":{"Count":"2","LogicalProcessorCount":null,"Status":"weird"},
			"MemorySummary":{"TotalSystemMemoryGiB":"31.5"},
			"Boot":{"BootSourceOverrideTarget":null},
			"Actions":{"#ComputerSystem.Reset":{"target":"%s/Actions/ComputerSystem.Reset","ResetType@Redfish.AllowableValues":%s}}}`,
			sys, q.power, sys, allowed)
	case sys + "/Actions/ComputerSystem.Reset":
		var body struct{ ResetType string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		q.resets = append(q.resets, body.ResetType)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func TestQuirkyBMC(t *testing.T) {
	q := &quirkyBMC{power: "PoweringOn", allowed: []string{"ForceOn", "GracefulShutdown", "GracefulRestart", "Nmi"}}
	srv := httptest.NewServer(q)
	defer srv.Close()
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(srv.URL, ""))
	ctx := context.Background()

	mustPower(t, c, bmc.PowerUnknown) // transitional is not yet on
	inv, err := c.Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// "Count" is sockets (or cores, on some BMCs), never the CPUs: without
	// processors or a LogicalProcessorCount the CPUs are unknown (0).
	if inv.CPUs != 0 || inv.MemoryMB != 32256 || inv.Serial != "12345" || inv.PowerState != bmc.PowerUnknown {
		t.Fatalf("lenient inventory %+v", inv)
	}

	q.mu.Lock()
	q.power = "Off"
	q.mu.Unlock()
	for _, a := range []bmc.PowerAction{bmc.ActionOn, bmc.ActionReset} {
		if err := c.SetPower(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	q.mu.Lock()
	q.power = "On"
	q.mu.Unlock()
	for _, a := range []bmc.PowerAction{bmc.ActionOff, bmc.ActionSoftOff, bmc.ActionReset} {
		if err := c.SetPower(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	q.mu.Lock()
	got := strings.Join(q.resets, ",")
	q.allowed = []string{"Nmi"}
	q.mu.Unlock()
	if want := "ForceOn,ForceOn,GracefulShutdown,GracefulShutdown,GracefulRestart"; got != want {
		t.Fatalf("reset types sent %s, want %s", got, want)
	}
	wantKind(t, c.SetPower(ctx, bmc.ActionOff), bmc.KindUnsupported)
}

// Closing the Opener and the fleet leaves no goroutine behind, even after
// hung and failed calls.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	f, err := sim.Start(sim.Options{Systems: 3, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	o := NewOpener(Options{Timeout: 200 * time.Millisecond})
	o.reloginEvery = 0
	_ = f.SetFault("2", sim.FaultHang)
	_ = f.SetFault("3", sim.FaultDown)
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			c, _ := o.Open(context.Background(), endpoint(f.URL(), fmt.Sprint(i%3+1)))
			_, _ = c.PowerState(context.Background())
		})
	}
	wg.Wait()
	f.DropSessions()
	c, _ := o.Open(context.Background(), endpoint(f.URL(), "1"))
	_, _ = c.PowerState(context.Background()) // re-login: old session deleted in the background
	o.Close()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestResolveSaysTheRoundTrip: ResolveSystem says how long the BMC's
// requests take (the enroll decides by it whether to verify at once).
func TestResolveSaysTheRoundTrip(t *testing.T) {
	slow := startFleet(t, sim.Options{Systems: 1, ServiceLatency: 40 * time.Millisecond})
	fast := startFleet(t, sim.Options{Systems: 1})
	o := newOpener(t, Options{})
	rs, err := open(t, o, endpoint(slow.URL(), "")).ResolveSystem(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rf, err := open(t, o, endpoint(fast.URL(), "")).ResolveSystem(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Only what no load can break: the slow BMC's requests cannot have
	// taken less than its latency, and the fast one's were timed.
	if rs.RoundTrip < 40*time.Millisecond || rf.RoundTrip <= 0 {
		t.Fatalf("round trips: slow BMC %s, fast %s", rs.RoundTrip, rf.RoundTrip)
	}
}
