package ipmi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/ipmi/ipmisim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testlog"
)

// The tests run against OpenIPMI's ipmi_sim (package openipmi), the real
// peer, and cross-check with ipmitool when it is installed. Where
// ipmi_sim cannot misbehave on demand (silence, latency, restarts), a UDP
// relay in front of it does (relay_test.go).

func newOpener(t *testing.T, opts Options) *Opener {
	t.Helper()
	o := NewOpener(opts)
	t.Cleanup(o.Close)
	return o
}

func endpoint(sim *ipmisim.Sim) bmc.Endpoint {
	return bmc.Endpoint{Driver: "ipmi", Address: sim.Address(), Username: sim.Username, Password: sim.Password}
}

func open(t *testing.T, o *Opener, ep bmc.Endpoint) *Client {
	t.Helper()
	cl, err := o.Open(context.Background(), ep)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return cl.(*Client)
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ipmitool runs ipmitool against sim, or returns "" when ipmitool is not
// installed outside CI.
func ipmitool(t *testing.T, sim *ipmisim.Sim, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("ipmitool"); err != nil {
		if ciRequired() {
			t.Fatal("ipmitool not found in PATH; CI must install it")
		}
		return ""
	}
	out, err := sim.IPMITool(ctxTimeout(t, 10*time.Second), args...)
	if err != nil {
		t.Fatalf("ipmitool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func ciRequired() bool { return os.Getenv("CI") == "true" }

func wantKind(t *testing.T, err error, kind bmc.Kind) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want kind %s", kind)
	}
	var be *bmc.Error
	if !errors.As(err, &be) {
		t.Fatalf("error %q is not a *bmc.Error", err)
	}
	if be.Kind != kind {
		t.Fatalf("error kind %s, want %s: %v", be.Kind, kind, err)
	}
}

func wantPower(t *testing.T, cl bmc.Client, sim *ipmisim.Sim, want bmc.PowerState) {
	t.Helper()
	got, err := cl.PowerState(ctxTimeout(t, 5*time.Second))
	if err != nil {
		t.Fatalf("PowerState: %v", err)
	}
	if got != want {
		t.Fatalf("PowerState = %s, want %s", got, want)
	}
	on, err := sim.Power()
	if err != nil {
		t.Fatal(err)
	}
	if on != (want == bmc.PowerOn) {
		t.Fatalf("simulator power on = %v, want %s", on, want)
	}
	if out := ipmitool(t, sim, "chassis", "power", "status"); out != "" {
		if wantOut := "Chassis Power is " + string(want); !strings.Contains(out, wantOut) {
			t.Fatalf("ipmitool says %q, want %q", strings.TrimSpace(out), wantOut)
		}
	}
}

func TestPower(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	o := newOpener(t, Options{})
	cl := open(t, o, endpoint(sim))
	ctx := ctxTimeout(t, 30*time.Second)

	wantPower(t, cl, sim, bmc.PowerOff)
	for _, step := range []struct {
		action bmc.PowerAction
		want   bmc.PowerState
	}{
		{bmc.ActionOn, bmc.PowerOn},
		{bmc.ActionOn, bmc.PowerOn}, // already on: still fine
		{bmc.ActionOff, bmc.PowerOff},
		{bmc.ActionOff, bmc.PowerOff},
		{bmc.ActionOn, bmc.PowerOn},
		{bmc.ActionSoftOff, bmc.PowerOff},
	} {
		if err := cl.SetPower(ctx, step.action); err != nil {
			t.Fatalf("SetPower(%s): %v", step.action, err)
		}
		wantPower(t, cl, sim, step.want)
	}

	// Reset of a machine that is off starts it, without a reset pulse.
	if err := cl.SetPower(ctx, bmc.ActionReset); err != nil {
		t.Fatalf("SetPower(reset) while off: %v", err)
	}
	wantPower(t, cl, sim, bmc.PowerOn)
	if n, _ := sim.Resets(); n != 0 {
		t.Fatalf("resets = %d after reset of an off machine, want 0 (a power on)", n)
	}
	// Reset of a running machine is a hard reset.
	if err := cl.SetPower(ctx, bmc.ActionReset); err != nil {
		t.Fatalf("SetPower(reset) while on: %v", err)
	}
	wantPower(t, cl, sim, bmc.PowerOn)
	if n, _ := sim.Resets(); n != 1 {
		t.Fatalf("resets = %d, want 1", n)
	}

	// Someone pressed the power button: the next read sees it.
	if err := sim.SetPower(false); err != nil {
		t.Fatal(err)
	}
	wantPower(t, cl, sim, bmc.PowerOff)

	if got := o.attempts.Load(); got != 2 {
		t.Errorf("connection attempts = %d, want 2 (suite 17 refused, 3 taken, then one session for everything)", got)
	}
}

func TestBootDevice(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	cl := open(t, newOpener(t, Options{}), endpoint(sim))
	ctx := ctxTimeout(t, 30*time.Second)

	for _, tc := range []struct {
		dev        bmc.BootDevice
		persistent bool
		sim        string // ipmi_sim's name for the selector
		ipmitool   string // ipmitool chassis bootparam get 5
	}{
		{bmc.BootPXE, false, "pxe", "Force PXE"},
		{bmc.BootCD, true, "cdrom", "Force Boot from CD/DVD"},
		{bmc.BootDisk, false, "default", "Force Boot from default Hard-Drive"},
		{bmc.BootNone, false, "none", "No override"},
	} {
		if err := cl.SetBootDevice(ctx, tc.dev, tc.persistent); err != nil {
			t.Fatalf("SetBootDevice(%s): %v", tc.dev, err)
		}
		if got, err := sim.BootDevice(); err != nil || got != tc.sim {
			t.Fatalf("after SetBootDevice(%s) the simulator has %q (%v), want %q", tc.dev, got, err, tc.sim)
		}
		if out := ipmitool(t, sim, "chassis", "bootparam", "get", "5"); out != "" && !strings.Contains(out, tc.ipmitool) {
			t.Fatalf("after SetBootDevice(%s) ipmitool shows:\n%s\nwant %q", tc.dev, out, tc.ipmitool)
		}
	}

	wantKind(t, cl.SetBootDevice(ctx, "floppy", false), bmc.KindUnsupported)
}

// The system GUID is what a network boot of the deploy agent recognises
// the machine by: the UUID read here, in one of the byte orders
// baremetal.NetbootUUIDs tries, is the one ipmitool shows.
func TestSystemUUID(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	cl := open(t, newOpener(t, Options{}), endpoint(sim))
	got, err := cl.SystemUUID(ctxTimeout(t, 30*time.Second))
	if err != nil {
		t.Fatalf("SystemUUID: %v", err)
	}
	if baremetal.NetbootUUID(got) == "" {
		t.Fatalf("SystemUUID = %q, not a usable UUID", got)
	}
	out := ipmitool(t, sim, "mc", "guid")
	// ipmitool 1.8.19 prints the 32 hex digits without dashes.
	m := regexp.MustCompile(`(?i)System GUID\s*:\s*([0-9a-f-]{32,36})\b`).FindStringSubmatch(out)
	if out != "" && m == nil {
		t.Fatalf("ipmitool mc guid printed no GUID:\n%s", out)
	}
	if m != nil && !slices.Contains(baremetal.NetbootUUIDs(got), baremetal.NetbootUUID(m[1])) {
		t.Fatalf("SystemUUID %s matches none of the orders of ipmitool's %s", got, m[1])
	}
}

func TestWrongCredentials(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	o := newOpener(t, Options{})
	ctx := ctxTimeout(t, 30*time.Second)

	wrong := endpoint(sim)
	wrong.Password = "not-" + sim.Password
	_, err := open(t, o, wrong).PowerState(ctx)
	wantKind(t, err, bmc.KindAuth)
	if !strings.Contains(err.Error(), "wrong password") {
		t.Errorf("error does not say what is wrong: %v", err)
	}
	t.Logf("wrong password: %v", err)

	nobody := endpoint(sim)
	nobody.Username = "nobody"
	_, err = open(t, o, nobody).PowerState(ctx)
	wantKind(t, err, bmc.KindAuth)
	t.Logf("unknown user: %v", err)

	// The same Opener and BMC, right credentials: fine. And a session
	// made with the right password is not reused for a wrong one.
	good := open(t, o, endpoint(sim))
	if _, err := good.PowerState(ctx); err != nil {
		t.Fatalf("right credentials after wrong ones: %v", err)
	}
	_, err = open(t, o, wrong).PowerState(ctx)
	wantKind(t, err, bmc.KindAuth)
	if _, err := good.PowerState(ctx); err != nil {
		t.Fatalf("right credentials again: %v", err)
	}
}

// TestPasswordNeverInErrors provokes every kind of failure and looks for
// the password (right and wrong ones) in what reaches callers and logs.
func TestPasswordNeverInErrors(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	var logs testlog.Buffer
	o := newOpener(t, Options{Logger: newTestLogger(&logs)})
	ctx := ctxTimeout(t, 30*time.Second)
	secrets := []string{sim.Password, "Wr0ngPassw0rd!"}

	var errs []error
	collect := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	ep := endpoint(sim)
	ep.Password = secrets[1]
	_, err := open(t, o, ep).PowerState(ctx) // wrong password
	collect(err)
	ep = endpoint(sim)
	ep.CipherSuite = 17 // refused by ipmi_sim
	_, err = open(t, o, ep).PowerState(ctx)
	collect(err)
	ep = endpoint(sim)
	ep.Address = deadAddress(t)
	_, err = open(t, o, ep).PowerState(ctx)
	collect(err)
	ep.Address = "ipmi://admin:" + sim.Password + "@127.0.0.1:623"
	_, err = o.Open(ctx, ep)
	collect(err)
	ep.Address = "https://admin:" + sim.Password + "@127.0.0.1"
	_, err = o.Open(ctx, ep)
	collect(err)
	ep.Address = "ipmi://127.0.0.1:623/" + sim.Password
	_, err = o.Open(ctx, ep)
	collect(err)
	ep = endpoint(sim)
	ep.Password = sim.Password + "-is-far-too-long-for-ipmi"
	_, err = o.Open(ctx, ep)
	collect(err)
	// A session that breaks, logged as a warning on reconnect.
	r := newRelay(t, sim.Port)
	ep = endpoint(sim)
	ep.Address = r.address()
	cl := open(t, o, ep)
	if _, err := cl.PowerState(ctx); err != nil {
		t.Fatal(err)
	}
	r.setDrop(dropAll)
	_, err = cl.PowerState(ctxTimeout(t, time.Second))
	collect(err)

	if len(errs) != 8 {
		t.Fatalf("got %d errors, want 8: %v", len(errs), errs)
	}
	for _, err := range errs {
		for _, form := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			for _, s := range secrets {
				if strings.Contains(form, s) {
					t.Errorf("password in error: %s", form)
				}
			}
		}
	}
	for _, s := range secrets {
		if strings.Contains(logs.String(), s) {
			t.Errorf("password in logs:\n%s", logs.String())
		}
	}
}

func TestAddressValidation(t *testing.T) {
	t.Parallel()
	o := newOpener(t, Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		addr string
		host string
		port int
	}{
		{"ipmi://10.0.0.5", "10.0.0.5", 623},
		{"ipmi://10.0.0.5:6230", "10.0.0.5", 6230},
		{"IPMI://bmc-7.rack1.example", "bmc-7.rack1.example", 623},
		{"ipmi://bmc7/", "bmc7", 623},
		{"ipmi://[fd00::7]:624", "fd00::7", 624},
	} {
		cl, err := o.Open(ctx, bmc.Endpoint{Address: tc.addr})
		if err != nil {
			t.Errorf("Open(%q): %v", tc.addr, err)
			continue
		}
		if got := cl.(*Client).t; got.host != tc.host || got.port != tc.port {
			t.Errorf("Open(%q) = %s:%d, want %s:%d", tc.addr, got.host, got.port, tc.host, tc.port)
		}
	}
	for _, tc := range []struct{ addr, want string }{
		{"", "empty"},
		{"10.0.0.5", "no scheme"},
		{"10.0.0.5:623", "invalid"},
		{"https://10.0.0.5", `scheme "https" is not supported`},
		{"redfish://10.0.0.5", `scheme "redfish" is not supported`},
		{"ipmi://", "no host"},
		{"ipmi://10.0.0.5:", "empty port"},
		{"ipmi://10.0.0.5:70000", "between 1 and 65535"},
		{"ipmi://10.0.0.5:0", "between 1 and 65535"},
		{"ipmi://10.0.0.5/redfish/v1", "path"},
		{"ipmi://10.0.0.5?x=1", "query"},
		{"ipmi://root:calvin@10.0.0.5", "credentials"},
		{"ipmi:10.0.0.5", "invalid"},
	} {
		_, err := o.Open(ctx, bmc.Endpoint{Address: tc.addr})
		if err == nil {
			t.Errorf("Open(%q) succeeded", tc.addr)
			continue
		}
		wantKind(t, err, bmc.KindUnsupported)
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v, want it to mention %q", tc.addr, err, tc.want)
		}
		if strings.Contains(err.Error(), "calvin") {
			t.Errorf("Open(%q) error repeats the password: %v", tc.addr, err)
		}
	}
	_, err := o.Open(ctx, bmc.Endpoint{Driver: "redfish", Address: "ipmi://10.0.0.5"})
	wantKind(t, err, bmc.KindUnsupported)
	_, err = o.Open(ctx, bmc.Endpoint{Address: "ipmi://10.0.0.5", CipherSuite: 99})
	wantKind(t, err, bmc.KindUnsupported)
}

// deadAddress is a loopback UDP port nobody listens on.
func deadAddress(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	return fmt.Sprintf("ipmi://127.0.0.1:%d", port)
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	ep := bmc.Endpoint{Username: "admin", Password: "password"}

	t.Run("nothing listening", func(t *testing.T) {
		t.Parallel()
		o := newOpener(t, Options{})
		ep := ep
		ep.Address = deadAddress(t)
		start := time.Now()
		_, err := open(t, o, ep).PowerState(ctxTimeout(t, 5*time.Second))
		elapsed := time.Since(start)
		wantKind(t, err, bmc.KindUnreachable)
		if !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("error does not say why: %v", err)
		}
		if o.attempts.Load() != 1 {
			t.Errorf("attempts = %d, want 1: no cipher suite search against a BMC that is not there", o.attempts.Load())
		}
		t.Logf("dead port classified in %v: %v", elapsed, err)
	})

	// A BMC that swallows every datagram: the call ends by its deadline.
	t.Run("silent", func(t *testing.T) {
		t.Parallel()
		sim := ipmisim.Start(t)
		r := newRelay(t, sim.Port)
		r.setDrop(dropAll)
		o := newOpener(t, Options{})
		ep := endpoint(sim)
		ep.Address = r.address()
		const deadline = 1500 * time.Millisecond
		start := time.Now()
		_, err := open(t, o, ep).PowerState(ctxTimeout(t, deadline))
		elapsed := time.Since(start)
		wantKind(t, err, bmc.KindUnreachable)
		if elapsed > deadline+500*time.Millisecond {
			t.Errorf("returned after %v, deadline was %v", elapsed, deadline)
		}
		if o.attempts.Load() != 1 {
			t.Errorf("attempts = %d, want 1", o.attempts.Load())
		}
		t.Logf("silent BMC classified in %v (deadline %v): %v", elapsed, deadline, err)
	})

	// No deadline from the caller: Options.Timeout bounds the call.
	t.Run("options timeout", func(t *testing.T) {
		t.Parallel()
		sim := ipmisim.Start(t)
		r := newRelay(t, sim.Port)
		r.setDrop(dropAll)
		o := newOpener(t, Options{Timeout: time.Second})
		ep := endpoint(sim)
		ep.Address = r.address()
		start := time.Now()
		err := open(t, o, ep).SetPower(context.Background(), bmc.ActionOn)
		elapsed := time.Since(start)
		wantKind(t, err, bmc.KindUnreachable)
		if elapsed > 1500*time.Millisecond {
			t.Errorf("returned after %v, Options.Timeout is 1s", elapsed)
		}
		t.Logf("silent BMC with Options.Timeout 1s: %v", elapsed)
	})
}

// TestCipherSuiteLearned: the suite that worked is remembered per BMC, so
// a new session does not search again.
func TestCipherSuiteLearned(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)

	// ipmi_sim refuses suite 17 at once; many BMCs just ignore it, which
	// is what the relay does here: probing then costs a timeout.
	r := newRelay(t, sim.Port)
	r.setDrop(proposesSHA256)
	o := newOpener(t, Options{})
	ep := endpoint(sim)
	ep.Address = r.address()
	cl := open(t, o, ep)

	start := time.Now()
	if _, err := cl.PowerState(ctxTimeout(t, 2*time.Second)); err != nil {
		t.Fatalf("first call: %v", err)
	}
	first := time.Since(start)
	if got := o.attempts.Load(); got != 2 {
		t.Fatalf("attempts = %d after the first call, want 2 (17 ignored, 3 taken)", got)
	}
	if s, ok := o.learnedSuite(cl.t.key()); !ok || s != 3 {
		t.Fatalf("learned suite = %d, %v; want 3", s, ok)
	}

	o.dropSessions() // as if the session had expired
	sha256Before := r.openSHA256.Load()
	start = time.Now()
	if _, err := cl.PowerState(ctxTimeout(t, 2*time.Second)); err != nil {
		t.Fatalf("second call: %v", err)
	}
	second := time.Since(start)
	if got := o.attempts.Load(); got != 3 {
		t.Errorf("attempts = %d after reconnecting, want 3: the learned suite must be used directly", got)
	}
	if n := r.openSHA256.Load() - sha256Before; n != 0 {
		t.Errorf("%d Open Session requests for suite 17 after it was learned that 3 works", n)
	}
	t.Logf("first session (probing a silent suite 17 under a 2s deadline): %v; new session with the learned suite: %v", first, second)

	// The BMC stops taking suite 3 (new firmware, changed settings): the
	// learned suite is forgotten and the next session searches again.
	r.setDrop(func(p []byte) bool { return isOpenSession(p) && p[16+8+4] == 0x01 }) // RAKP-HMAC-SHA1
	o.dropSessions()
	_, err := cl.PowerState(ctxTimeout(t, 2*time.Second))
	wantKind(t, err, bmc.KindUnreachable) // silence, not a refusal: maybe loss
	if _, ok := o.learnedSuite(cl.t.key()); ok {
		t.Error("suite 3 still remembered after the BMC stopped answering Open Session for it")
	}
	r.setDrop(proposesSHA256)
	if _, err := cl.PowerState(ctxTimeout(t, 2*time.Second)); err != nil {
		t.Fatalf("after the BMC took suite 3 again: %v", err)
	}
	if s, ok := o.learnedSuite(cl.t.key()); !ok || s != 3 {
		t.Errorf("learned suite = %d, %v after searching again; want 3", s, ok)
	}

	// Another Opener has its own memory: it searches again, and with
	// ipmi_sim's explicit refusal that costs one round trip.
	o2 := newOpener(t, Options{})
	start = time.Now()
	if _, err := open(t, o2, endpoint(sim)).PowerState(ctxTimeout(t, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Logf("first session with an explicit refusal of suite 17: %v (%d attempts)", time.Since(start), o2.attempts.Load())
}

func TestPinnedCipherSuite(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	o := newOpener(t, Options{})
	ctx := ctxTimeout(t, 10*time.Second)

	ep := endpoint(sim)
	ep.CipherSuite = 3
	if _, err := open(t, o, ep).PowerState(ctx); err != nil {
		t.Fatal(err)
	}
	if got := o.attempts.Load(); got != 1 {
		t.Errorf("attempts = %d with suite 3 pinned, want 1", got)
	}

	ep.CipherSuite = 17 // not offered by ipmi_sim, and pinned: no fallback
	_, err := open(t, o, ep).PowerState(ctx)
	wantKind(t, err, bmc.KindUnsupported)
	if !strings.Contains(err.Error(), "cipher suites 17") {
		t.Errorf("error does not name the suite: %v", err)
	}
	t.Logf("pinned 17: %v", err)
}

// TestSessionReused: one session serves many calls, concurrent ones
// included (they queue on the BMC's lock).
func TestSessionReused(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	r := newRelay(t, sim.Port)
	o := newOpener(t, Options{})
	ep := endpoint(sim)
	ep.Address = r.address()
	ep.CipherSuite = 3
	ctx := ctxTimeout(t, 30*time.Second)

	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 8 {
		cl := open(t, o, ep) // separate Clients, one BMC
		wg.Go(func() {
			for range 5 {
				if _, err := cl.PowerState(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := r.openSessions.Load(); got != 1 {
		t.Errorf("%d sessions opened for 40 calls, want 1", got)
	}
}

// TestReconnect: a session that stops working is replaced, within the
// same call when the BMC is back (a BMC restart), or at the next call.
func TestReconnect(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	r := newRelay(t, sim.Port)
	var logs testlog.Buffer
	o := newOpener(t, Options{Logger: newTestLogger(&logs)})
	ep := endpoint(sim)
	ep.Address = r.address()
	cl := open(t, o, ep)
	ctx := ctxTimeout(t, 30*time.Second)
	if err := cl.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}

	// The BMC goes silent: unreachable, by the deadline.
	r.setDrop(dropAll)
	_, err := cl.PowerState(ctxTimeout(t, time.Second))
	wantKind(t, err, bmc.KindUnreachable)
	// It comes back: the next call makes a new session.
	r.setDrop(nil)
	if got, err := cl.PowerState(ctx); err != nil || got != bmc.PowerOn {
		t.Fatalf("after the BMC came back: %s, %v", got, err)
	}

	// The BMC restarts and forgets its sessions (same users, new
	// process): the stale session fails and the call reconnects.
	sim2 := ipmisim.StartWith(t, ipmisim.Config{Username: sim.Username, Password: sim.Password})
	if err := sim2.SetPower(true); err != nil {
		t.Fatal(err)
	}
	r.setUpstream(sim2.Port)
	before := o.attempts.Load()
	start := time.Now()
	if got, err := cl.PowerState(ctxTimeout(t, 5*time.Second)); err != nil || got != bmc.PowerOn {
		t.Fatalf("after a BMC restart: %s, %v", got, err)
	}
	t.Logf("call that found its session gone after a BMC restart took %v", time.Since(start))
	if got := o.attempts.Load() - before; got != 1 {
		t.Errorf("reconnect attempts = %d, want 1 (learned suite)", got)
	}
	if !strings.Contains(logs.String(), "reconnecting") {
		t.Errorf("no warning about the reconnect in the logs:\n%s", logs.String())
	}
}

func TestUnsupported(t *testing.T) {
	t.Parallel()
	o := newOpener(t, Options{})
	cl := open(t, o, bmc.Endpoint{Address: "ipmi://127.0.0.1"})
	ctx := context.Background()
	wantKind(t, cl.SetPower(ctx, "hibernate"), bmc.KindUnsupported)
	vm, ok := bmc.Client(cl).(bmc.VirtualMedia)
	if !ok {
		t.Fatal("Client does not implement VirtualMedia")
	}
	wantKind(t, vm.InsertMedia(ctx, "http://images/x.iso"), bmc.KindUnsupported)
	wantKind(t, vm.EjectMedia(ctx), bmc.KindUnsupported)
	if err := vm.EjectMedia(ctx); !errors.Is(err, bmc.ErrNoVirtualMedia) {
		t.Fatalf("EjectMedia: %v, want bmc.ErrNoVirtualMedia (the jobs boot IPMI nodes from the network by it)", err)
	}
}

func TestClosedOpener(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	o := NewOpener(Options{})
	cl := open(t, o, endpoint(sim))
	if _, err := cl.PowerState(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	o.Close()
	o.Close() // idempotent
	_, err := cl.PowerState(ctxTimeout(t, 5*time.Second))
	wantKind(t, err, bmc.KindUnreachable)
	_, err = o.Open(context.Background(), endpoint(sim))
	wantKind(t, err, bmc.KindUnreachable)
}

// TestSessionSlots: a BMC has few session slots (ipmi_sim: 63, real BMCs
// often 4 to 16, shared with every tool). Close gives them back; running
// out is a BMC error, not a cipher-suite or credentials problem.
func TestSessionSlots(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	ep := endpoint(sim)

	for i := range 70 {
		o := NewOpener(Options{})
		_, err := open(t, o, ep).PowerState(ctxTimeout(t, 5*time.Second))
		o.Close()
		if err != nil {
			t.Fatalf("session %d after %d closed ones: %v", i+1, i, err)
		}
	}

	var leaked []*Opener
	defer func() {
		for _, o := range leaked {
			o.Close()
		}
	}()
	var err error
	for range 100 {
		o := NewOpener(Options{})
		leaked = append(leaked, o)
		if _, err = open(t, o, ep).PowerState(ctxTimeout(t, 5*time.Second)); err != nil {
			break
		}
	}
	wantKind(t, err, bmc.KindBMCError)
	if !strings.Contains(err.Error(), "Insufficient resources") {
		t.Errorf("error does not say the BMC is out of sessions: %v", err)
	}
	t.Logf("session %d: %v", len(leaked), err)
	for _, o := range leaked {
		o.Close()
	}
	leaked = nil
	if _, err := open(t, newOpener(t, Options{}), ep).PowerState(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatalf("after closing: %v", err)
	}
}

// TestIdleSessionClosed: a session unused for IdleTimeout is ended, and
// the next call opens a new one.
func TestIdleSessionClosed(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	r := newRelay(t, sim.Port)
	o := newOpener(t, Options{IdleTimeout: 200 * time.Millisecond})
	ep := endpoint(sim)
	ep.Address = r.address()
	ep.CipherSuite = 3
	cl := open(t, o, ep)
	for range 3 {
		if _, err := cl.PowerState(ctxTimeout(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := cl.PowerState(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := r.openSessions.Load(); got != 2 {
		t.Errorf("sessions opened = %d, want 2 (one before the idle period, one after)", got)
	}
}

// IPMI has no BIOS settings nor Secure Boot: Capability says so, naming
// the driver and what it lacks, without a request to the BMC.
func TestNoBIOSSettings(t *testing.T) {
	t.Parallel()
	o := newOpener(t, Options{})
	c, err := bmc.Drivers{"ipmi": o}.Open(context.Background(), bmc.Endpoint{Driver: "ipmi", Address: "ipmi://127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bmc.Capability[bmc.BIOSSettings](c)
	wantKind(t, err, bmc.KindUnsupported)
	if !strings.Contains(err.Error(), "the ipmi driver has no BIOS settings") {
		t.Fatalf("unclear: %v", err)
	}
	_, err = bmc.Capability[bmc.SecureBootSetter](c)
	wantKind(t, err, bmc.KindUnsupported)
	if !strings.Contains(err.Error(), "the ipmi driver has no Secure Boot") {
		t.Fatalf("unclear: %v", err)
	}
	// The client from Drivers answers the methods too, the same way.
	_, err = c.(bmc.BIOSSettings).SetBIOS(context.Background(), bmc.BIOSValues{"ProcVirtualization": "Enabled"})
	wantKind(t, err, bmc.KindUnsupported)
}
