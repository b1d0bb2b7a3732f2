package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// fakeBMC hands out consoles whose machine side the test drives.
type fakeBMC struct {
	mu     sync.Mutex
	opens  int
	fail   error
	cons   []*fakeConsole
	noSOL  bool
	opened chan *fakeConsole
}

func (f *fakeBMC) Open(context.Context, bmc.Endpoint) (bmc.Client, error) {
	if f.noSOL {
		return plainClient{}, nil
	}
	return &fakeClient{f}, nil
}

type plainClient struct{}

func (plainClient) PowerState(context.Context) (bmc.PowerState, error)        { return bmc.PowerOn, nil }
func (plainClient) SetPower(context.Context, bmc.PowerAction) error           { return nil }
func (plainClient) SetBootDevice(context.Context, bmc.BootDevice, bool) error { return nil }

type fakeClient struct{ f *fakeBMC }

func (fakeClient) PowerState(context.Context) (bmc.PowerState, error)        { return bmc.PowerOn, nil }
func (fakeClient) SetPower(context.Context, bmc.PowerAction) error           { return nil }
func (fakeClient) SetBootDevice(context.Context, bmc.BootDevice, bool) error { return nil }

func (c *fakeClient) OpenConsole(context.Context) (bmc.Console, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens++
	if f.fail != nil {
		return nil, f.fail
	}
	pr, pw := io.Pipe()
	con := &fakeConsole{machine: pw, out: pr}
	f.cons = append(f.cons, con)
	if f.opened != nil {
		f.opened <- con
	}
	return con, nil
}

type fakeConsole struct {
	machine *io.PipeWriter // what the machine prints
	out     *io.PipeReader
	mu      sync.Mutex
	typed   strings.Builder
}

func (c *fakeConsole) Read(p []byte) (int, error) { return c.out.Read(p) }
func (c *fakeConsole) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.typed.Write(p)
}
func (c *fakeConsole) Close() error { return c.out.Close() }
func (c *fakeConsole) print(t *testing.T, s string) {
	t.Helper()
	if _, err := c.machine.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func setup(t *testing.T, state baremetal.ProvisionState, f *fakeBMC, opts Options) (store.Store, *baremetal.Node, *Recorder) {
	t.Helper()
	st := storetest.OpenSQLite(t)
	n := &baremetal.Node{Name: "n1", Driver: baremetal.DriverIPMI, BMC: baremetal.BMC{Address: "ipmi://10.0.0.9", Username: "admin", Password: "Sup3r-Secret-pw"},
		PowerState: baremetal.PowerOn, ProvisionState: state}
	if err := st.InsertNode(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if opts.Flush == 0 {
		opts.Flush = 20 * time.Millisecond
	}
	if opts.Retry == 0 {
		opts.Retry = 20 * time.Millisecond
	}
	r := New(st, f, opts)
	t.Cleanup(r.Close)
	return st, n, r
}

func waitLog(t *testing.T, st store.Store, id, sub string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := st.GetConsoleLog(context.Background(), id)
		if err == nil && strings.Contains(c.Log, sub) {
			return c.Log
		}
		if time.Now().After(deadline) {
			got := ""
			if c != nil {
				got = c.Log
			}
			t.Fatalf("console log lacks %q (err %v):\n%s", sub, err, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRecordsCleanLines: what the machine prints while it boots is saved
// as clean lines, credentials hidden, and the recording ends Linger
// after the node stops booting, giving its lease back.
func TestRecordsCleanLines(t *testing.T) {
	f := &fakeBMC{opened: make(chan *fakeConsole, 4)}
	st, n, r := setup(t, baremetal.StateDeploying, f, Options{Linger: 100 * time.Millisecond})
	r.Record(n.ID)
	r.Record(n.ID) // once is enough
	con := <-f.opened
	con.print(t, "\x1b[2J\x1b[1;1HSeaBIOS (version 1.16)\r\n")
	con.print(t, "iPXE http://10.0.2.2/v1/agent/boot/"+n.ID+"/0123456789abcdef0123456789abcdef/agent.iso ok\r\n")
	con.print(t, "[    0.000000] Linux version 6.1.0 \x1b[32mOK\x1b[0m\r\n")
	con.print(t, "login as admin:Sup3r-Secret-pw token agt_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefg\r\n")
	con.print(t, "progress 10%\rprogress 100%\r\n")
	con.print(t, "half a li")
	con.print(t, "ne, ünïcode\r\n")
	log := waitLog(t, st, n.ID, "ünïcode")
	for _, want := range []string{"SeaBIOS (version 1.16)\n", "Linux version 6.1.0 OK\n", "progress 100%\n", "half a line, ünïcode\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	for _, bad := range []string{"\x1b", "\r", "Sup3r-Secret-pw", "agt_ABCDEF", "0123456789abcdef0123456789abcdef", "progress 10%"} {
		if strings.Contains(log, bad) {
			t.Errorf("log holds %q:\n%s", bad, log)
		}
	}
	if got := r.Tail(context.Background(), n.ID, 2); len(got) != 2 || got[1] != "half a line, ünïcode" {
		t.Errorf("Tail: %q", got)
	}
	c, _ := st.GetConsoleLog(context.Background(), n.ID)
	if !c.Recording(time.Now()) || c.Holder != r.Holder() {
		t.Fatalf("recording lease: %+v", c)
	}

	// The node is deployed: the recording goes on for Linger, then ends.
	n.ProvisionState = baremetal.StateActive
	if err := st.UpdateNode(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	con.print(t, "Debian GNU/Linux 12 host ttyS0\r\n")
	waitLog(t, st, n.ID, "Debian GNU/Linux 12 host ttyS0")
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, _ := st.GetConsoleLog(context.Background(), n.ID)
		if !c.Recording(time.Now()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recording did not end after the node stopped booting")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A later boot appends to the same log.
	n.ProvisionState = baremetal.StateCleaning
	if err := st.UpdateNode(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	r.Record(n.ID)
	con2 := <-f.opened
	con2.print(t, "second boot\r\n")
	log = waitLog(t, st, n.ID, "second boot")
	if !strings.Contains(log, "SeaBIOS") {
		t.Errorf("the earlier boot's lines are gone:\n%s", log)
	}
}

// TestReopensAndNotes: a console that fails is reopened, and the log says
// what happened; a node without a console is not recorded at all.
func TestReopensAndNotes(t *testing.T) {
	f := &fakeBMC{opened: make(chan *fakeConsole, 4), fail: bmc.Errorf(bmc.KindUnreachable, "open console", "no answer")}
	st, n, r := setup(t, baremetal.StateInspecting, f, Options{})
	r.Record(n.ID)
	waitLog(t, st, n.ID, "console unavailable, retrying: bmc open console: unreachable: no answer")
	f.mu.Lock()
	f.fail = nil
	f.mu.Unlock()
	con := <-f.opened
	con.print(t, "agent up\r\n")
	waitLog(t, st, n.ID, "agent up")
	waitLog(t, st, n.ID, "console open again")
	_ = con.machine.CloseWithError(errors.New("SOL deactivated by the BMC"))
	waitLog(t, st, n.ID, "reopening in 0s: SOL deactivated by the BMC")
	con2 := <-f.opened
	con2.print(t, "after the reopen\r\n")
	waitLog(t, st, n.ID, "after the reopen")
	// Lost again soon after it opened (another SOL client took it): each
	// loss waits twice as long before taking the console back.
	_ = con2.machine.CloseWithError(errors.New("taken"))
	waitLog(t, st, n.ID, "reopening in 20ms: taken")
	con3 := <-f.opened
	_ = con3.machine.CloseWithError(errors.New("taken"))
	waitLog(t, st, n.ID, "reopening in 40ms: taken")
	<-f.opened

	g := &fakeBMC{noSOL: true}
	st2, n2, r2 := setup(t, baremetal.StateDeploying, g, Options{})
	r2.Record(n2.ID)
	time.Sleep(100 * time.Millisecond)
	if _, err := st2.GetConsoleLog(context.Background(), n2.ID); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Fatalf("a node without a console has a console log: %v", err)
	}
}

// TestOneRecorderPerNode: a lease held by another replica keeps this one
// from recording and attaching; once it runs out, this one takes over.
func TestOneRecorderPerNode(t *testing.T) {
	f := &fakeBMC{opened: make(chan *fakeConsole, 4)}
	st, n, r := setup(t, baremetal.StateDeploying, f, Options{})
	if ok, _ := st.ClaimConsole(context.Background(), n.ID, "other-replica", time.Now().Add(300*time.Millisecond)); !ok {
		t.Fatal("claim")
	}
	r.Record(n.ID)
	_, err := r.Attach(context.Background(), n.ID, "admin", true)
	if !errors.Is(err, ErrRecordedElsewhere) {
		t.Fatalf("Attach while another replica records: %v", err)
	}
	f.mu.Lock()
	opens := f.opens
	f.mu.Unlock()
	if opens != 0 {
		t.Fatalf("%d consoles opened while another replica holds the node's", opens)
	}
	time.Sleep(350 * time.Millisecond)
	r.Record(n.ID)
	con := <-f.opened
	con.print(t, "taken over\r\n")
	waitLog(t, st, n.ID, "taken over")
}

// TestAttach: viewers get the raw output; one has the keyboard, the
// others watch; the keyboard is free again when its holder leaves.
func TestAttach(t *testing.T) {
	f := &fakeBMC{opened: make(chan *fakeConsole, 4)}
	_, n, r := setup(t, baremetal.StateActive, f, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s1, err := r.Attach(ctx, n.ID, "alice", true)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := r.Attach(ctx, n.ID, "bob", true)
	if err != nil {
		t.Fatal(err)
	}
	if !s1.Writer || s2.Writer {
		t.Fatalf("writers: %v %v", s1.Writer, s2.Writer)
	}
	con := <-f.opened
	con.print(t, "\x1b[1mlogin:\x1b[0m ")
	for _, s := range []*Session{s1, s2} {
		select {
		case b := <-s.Output():
			if string(b) != "\x1b[1mlogin:\x1b[0m " {
				t.Errorf("viewer got %q, want the raw output", b)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no output for a viewer")
		}
	}
	if err := s1.Write([]byte("root\r")); err != nil {
		t.Fatal(err)
	}
	if err := s2.Write([]byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("a watcher wrote: %v", err)
	}
	con.mu.Lock()
	typed := con.typed.String()
	con.mu.Unlock()
	if typed != "root\r" {
		t.Fatalf("console got %q", typed)
	}
	s1.Close()
	s3, err := r.Attach(ctx, n.ID, "carol", true)
	if err != nil || !s3.Writer {
		t.Fatalf("the keyboard was not free after its holder left: %v %v", err, s3 != nil && s3.Writer)
	}
	// An active node is recorded only while watched.
	cancel()
	select {
	case <-s2.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a session outlived its context")
	}
}

func TestSOLEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"https://10.1.2.3":                       "ipmi://10.1.2.3:623",
		"https://idrac-r640.example:8443/":       "ipmi://idrac-r640.example:623",
		"https://[fd00::5]/redfish/v1/Systems/1": "ipmi://[fd00::5]:623",
	} {
		ep, err := SOLEndpoint(bmc.Endpoint{Driver: "redfish", Address: in, Username: "root", Password: "calvin", Insecure: true})
		if err != nil || ep.Address != want || ep.Driver != "ipmi" || ep.Username != "root" || ep.Password != "calvin" {
			t.Errorf("%s: %+v %v, want %s", in, ep, err, want)
		}
	}
	if _, err := SOLEndpoint(bmc.Endpoint{Address: "not a url"}); bmc.KindOf(err) != bmc.KindUnsupported {
		t.Errorf("a bad address: %v", err)
	}
}

// claimGate holds the first ClaimConsole until release, then says the
// lease is someone else's; later claims go to the store.
type claimGate struct {
	store.Store
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *claimGate) ClaimConsole(ctx context.Context, nodeID, holder string, until time.Time) (bool, error) {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
		return false, nil
	}
	return g.Store.ClaimConsole(ctx, nodeID, holder, until)
}

// TestAttachToARecordingThatEnds: an Attach that found the node's
// recording just before it ended without ever holding the lease (run
// returned early, its viewers already ended) starts a new recording
// rather than joining the dead one, whose session would never see output
// nor end.
func TestAttachToARecordingThatEnds(t *testing.T) {
	f := &fakeBMC{opened: make(chan *fakeConsole, 4)}
	st, n, _ := setup(t, baremetal.StateActive, f, Options{})
	g := &claimGate{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	r := New(g, f, Options{Flush: 20 * time.Millisecond, Retry: 20 * time.Millisecond})
	t.Cleanup(r.Close)
	r.Record(n.ID)
	<-g.entered // the recording waits for its lease

	found, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	testHookAttach = func() {
		once.Do(func() {
			close(found)
			<-proceed
		})
	}
	t.Cleanup(func() { testHookAttach = nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		s   *Session
		err error
	}
	res := make(chan result, 1)
	go func() {
		s, err := r.Attach(ctx, n.ID, "alice", true)
		res <- result{s, err}
	}()
	<-found
	// The recording does not get the lease: it ends and leaves r.recs.
	close(g.release)
	for deadline := time.Now().Add(5 * time.Second); ; {
		r.mu.Lock()
		_, there := r.recs[n.ID]
		r.mu.Unlock()
		if !there {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recording did not end")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // and its viewers (none yet) ended
	close(proceed)
	got := <-res
	if got.err != nil {
		t.Fatal(got.err)
	}
	var con *fakeConsole
	select {
	case con = <-f.opened:
	case <-time.After(5 * time.Second):
		t.Fatal("the session joined a recording that ended: no console opened for it")
	}
	con.print(t, "login: ")
	select {
	case b := <-got.s.Output():
		if string(b) != "login: " {
			t.Fatalf("output %q", b)
		}
	case <-got.s.Done():
		t.Fatal("the session ended")
	case <-time.After(5 * time.Second):
		t.Fatal("no output for the session")
	}
}

// floodBMC's consoles print as fast as they are read, until closed.
type floodBMC struct{ opens chan struct{} }

func (f floodBMC) Open(context.Context, bmc.Endpoint) (bmc.Client, error) { return floodClient(f), nil }

type floodClient floodBMC

func (floodClient) PowerState(context.Context) (bmc.PowerState, error)        { return bmc.PowerOn, nil }
func (floodClient) SetPower(context.Context, bmc.PowerAction) error           { return nil }
func (floodClient) SetBootDevice(context.Context, bmc.BootDevice, bool) error { return nil }
func (c floodClient) OpenConsole(context.Context) (bmc.Console, error) {
	select {
	case c.opens <- struct{}{}:
	default:
	}
	return &floodConsole{closed: make(chan struct{})}, nil
}

type floodConsole struct {
	once   sync.Once
	closed chan struct{}
}

func (c *floodConsole) Read(p []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, io.EOF
	default:
	}
	return copy(p, strings.Repeat("kernel: busy busy busy\r\n", 200)), nil
}
func (c *floodConsole) Write(p []byte) (int, error) { return len(p), nil }
func (c *floodConsole) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// TestStreamReaderEnds: when a recording stops streaming (the node is no
// longer booting) while the console prints faster than it is logged, the
// goroutine reading the console ends too, rather than waiting forever to
// hand over a chunk nobody takes (until the controller stops).
func TestStreamReaderEnds(t *testing.T) {
	f := floodBMC{opens: make(chan struct{}, 1)}
	st, n, _ := setup(t, baremetal.StateActive, &fakeBMC{}, Options{})
	r := New(st, f, Options{Flush: 20 * time.Millisecond, Linger: 100 * time.Millisecond})
	t.Cleanup(r.Close)
	r.Record(n.ID)
	<-f.opens
	readers := func() int {
		buf := make([]byte, 1<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "(*recording).stream.func")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		_, recording := r.recs[n.ID]
		r.mu.Unlock()
		if !recording && readers() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("recording %v, %d console readers left after the recording ended", recording, readers())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSettleSaves: after Settle the stored log holds what the console
// printed, though the recording's own flush is far off: GET console/log
// (any replica) must show at least the lines a failure's event quotes.
func TestSettleSaves(t *testing.T) {
	f := &fakeBMC{opened: make(chan *fakeConsole, 4)}
	st, n, r := setup(t, baremetal.StateDeploying, f, Options{Flush: time.Hour})
	r.Record(n.ID)
	con := <-f.opened
	con.print(t, "level=ERROR msg=\"command failed\"\r\n")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got := r.Tail(context.Background(), n.ID, 1); len(got) == 1 && strings.Contains(got[0], "command failed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recording did not take the line")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c, err := st.GetConsoleLog(context.Background(), n.ID); err == nil && strings.Contains(c.Log, "command failed") {
		t.Fatalf("saved before Settle (the test would prove nothing): %q", c.Log)
	}
	r.Settle(context.Background(), n.ID, 2*time.Second)
	c, err := st.GetConsoleLog(context.Background(), n.ID)
	if err != nil || !strings.Contains(c.Log, `level=ERROR msg="command failed"`) {
		t.Fatalf("after Settle the stored log lacks the line (err %v): %+v", err, c)
	}
	if !c.Recording(time.Now()) || c.Holder != r.Holder() {
		t.Fatalf("Settle's save lost the lease: %+v", c)
	}
}

// TestHidesAPasswordChangedWhileRecording: an admin changes the node's
// BMC password while its console is recorded; what the machine prints of
// the new one is hidden within a flush, the old one still hidden, without
// the console reopening.
func TestHidesAPasswordChangedWhileRecording(t *testing.T) {
	f := &fakeBMC{opened: make(chan *fakeConsole, 4)}
	st, n, r := setup(t, baremetal.StateDeploying, f, Options{})
	r.Record(n.ID)
	con := <-f.opened
	con.print(t, "first line\r\n")
	waitLog(t, st, n.ID, "first line")
	n, err := st.GetNode(context.Background(), n.ID)
	if err != nil {
		t.Fatal(err)
	}
	n.BMC.Password = "N3w-Passw0rd-xyz"
	if err := st.UpdateNode(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	// Within a flush (20 ms) the new password is hidden: print it until a
	// line comes out hidden (lines printed before the recorder saw the
	// change may show it; that is the flush's window).
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		probe := fmt.Sprintf("echo-%d ", i)
		con.print(t, probe+"N3w-Passw0rd-xyz and Sup3r-Secret-pw\r\n")
		log := waitLog(t, st, n.ID, probe)
		line := log[strings.Index(log, probe):]
		line = line[:strings.IndexByte(line, '\n')]
		if strings.Contains(line, "Sup3r-Secret-pw") {
			t.Fatalf("the old password shows: %q", line)
		}
		if !strings.Contains(line, "N3w-Passw0rd-xyz") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new password still shows after 5 s: %q", line)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.mu.Lock()
	opens := f.opens
	f.mu.Unlock()
	if opens != 1 {
		t.Fatalf("the console was opened %d times; the test wants the change seen without a reopen", opens)
	}
}
