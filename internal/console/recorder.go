// Package console records nodes' serial consoles (IPMI Serial-over-LAN)
// while they boot the deploy agent or an image, into a bounded log per
// node in the store, and serves the same console to interactive viewers.
//
// A BMC has one SOL session at a time, so a node's console has one
// recorder among all controller replicas: the one holding its lease in
// the store (node_consoles). The recorder renews the lease each time it
// saves the log; a replica that dies lets its leases run out and the next
// replica that wants the console takes it, log and all. Interactive
// viewers attach to the recording of the replica they reach.
//
// Recording is best effort: a BMC without SOL, or whose SOL fails, never
// fails the work that booted the node. It is noted in the log itself.
package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// Store is what the recorder needs of the store.
type Store interface {
	GetNode(ctx context.Context, idOrName string) (*baremetal.Node, error)
	ClaimConsole(ctx context.Context, nodeID, holder string, until time.Time) (bool, error)
	SaveConsoleLog(ctx context.Context, nodeID, holder, log string, until time.Time) (bool, error)
	ReleaseConsole(ctx context.Context, nodeID, holder string) error
	GetConsoleLog(ctx context.Context, nodeID string) (*baremetal.ConsoleLog, error)
}

// Options tune a Recorder; zero values take the defaults.
type Options struct {
	// Flush is how often a recording saves its log (and renews its
	// lease) while the console prints. Default 2 s.
	Flush time.Duration
	// Lease is how long a recording's lease lasts without renewal: how
	// long a dead replica's consoles stay unrecorded. Default 30 s.
	Lease time.Duration
	// Linger is how long a recording goes on after its node left the
	// states that boot (inspecting, deploying, cleaning): a deployed
	// image's own boot, a failure's last words. Default 3 min.
	Linger time.Duration
	// MaxRecording ends a recording nobody watches after this long,
	// whatever the node does. Default 2 h.
	MaxRecording time.Duration
	// Retry is the first wait before opening a console again after it
	// failed (doubling, up to a minute). Default 2 s.
	Retry time.Duration
	// Timeout bounds opening a console. Default 10 s.
	Timeout time.Duration
	// RedfishSOL records Redfish nodes' consoles through IPMI
	// Serial-over-LAN on their BMC's host (UDP 623, the node's BMC
	// credentials), as iDRAC, iLO, XCC, Supermicro, CIMC and OpenBMC
	// offer it beside Redfish. Off, Redfish nodes are not recorded.
	RedfishSOL bool
	// Holder names this process in leases; default host, pid and a
	// random suffix.
	Holder string
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Flush, 2*time.Second)
	def(&o.Lease, 30*time.Second)
	def(&o.Linger, 3*time.Minute)
	def(&o.MaxRecording, 2*time.Hour)
	def(&o.Retry, 2*time.Second)
	def(&o.Timeout, 10*time.Second)
	if o.Holder == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		o.Holder = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Recorder records the consoles of the nodes that boot, one recording
// per node in this process.
type Recorder struct {
	store  Store
	bmc    bmc.Opener
	opts   Options
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	recs map[string]*recording
}

// New returns a Recorder; Close stops its recordings (saving their logs).
func New(st Store, opener bmc.Opener, opts Options) *Recorder {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Recorder{store: st, bmc: opener, opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel, recs: map[string]*recording{}}
}

// Holder is this process's name in leases.
func (r *Recorder) Holder() string { return r.opts.Holder }

// Close ends every recording, saving what it has, and waits for them.
func (r *Recorder) Close() {
	r.cancel()
	r.wg.Wait()
}

// booting reports whether a node in state s boots the agent or an image.
func booting(s baremetal.ProvisionState) bool {
	switch s {
	case baremetal.StateInspecting, baremetal.StateDeploying, baremetal.StateCleaning, baremetal.StateConfiguring:
		return true
	}
	return false
}

// Record makes sure the node's console is recorded (from now, while it
// boots, and Linger after). It returns at once; the recording opens the
// console in the background. Calling it again for a node being recorded
// extends nothing and costs nothing.
func (r *Recorder) Record(nodeID string) {
	r.start(nodeID)
}

func (r *Recorder) start(nodeID string) *recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil {
		return nil
	}
	if rec, ok := r.recs[nodeID]; ok {
		return rec
	}
	rec := &recording{r: r, nodeID: nodeID, started: time.Now(), attached: make(chan struct{}, 1)}
	r.recs[nodeID] = rec
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		rec.run(r.ctx)
		r.mu.Lock()
		if r.recs[nodeID] == rec {
			delete(r.recs, nodeID)
		}
		r.mu.Unlock()
		rec.endViewers()
	}()
	return rec
}

// WaitOpen waits until the node's recording has its console open, at
// most d: a caller about to power the node on waits so that the firmware's
// and the kernel's first lines are recorded too. It reports whether the
// console is open.
func (r *Recorder) WaitOpen(ctx context.Context, nodeID string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		r.mu.Lock()
		rec := r.recs[nodeID]
		r.mu.Unlock()
		if rec == nil {
			return false
		}
		rec.mu.Lock()
		open := rec.con != nil
		rec.mu.Unlock()
		if open {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Settle waits, at most d, until this process's recording of the node
// has had no output for a moment: the machine's last words reach the
// console after the failure the agent reported over the network. Then
// it saves the log, so that the stored log (what GET console/log reads,
// on any replica) holds at least the lines a failure's event quotes
// rather than lagging a flush behind it. It returns at once when
// nothing here records the node.
func (r *Recorder) Settle(ctx context.Context, nodeID string, d time.Duration) {
	const quiet = 500 * time.Millisecond
	deadline := time.Now().Add(d)
	var rec *recording
	for ctx.Err() == nil {
		r.mu.Lock()
		rec = r.recs[nodeID]
		r.mu.Unlock()
		if rec == nil {
			return
		}
		rec.mu.Lock()
		open, last := rec.con != nil, rec.lastOutput
		rec.mu.Unlock()
		if !open || time.Since(last) > quiet || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ctx.Err() != nil {
		return
	}
	// Under saveMu, so that a recording that has ended (done is set
	// before its last save and the lease's release) is not saved again,
	// which would take the lease back.
	rec.saveMu.Lock()
	defer rec.saveMu.Unlock()
	rec.mu.Lock()
	live := rec.ring != nil && !rec.done
	rec.mu.Unlock()
	if live {
		rec.saveLocked(ctx, time.Now())
	}
}

// Tail returns the last n lines the node's console printed, from this
// process's recording when it has one (lines not saved yet included),
// else from the store. None when nothing was recorded.
func (r *Recorder) Tail(ctx context.Context, nodeID string, n int) []string {
	r.mu.Lock()
	rec := r.recs[nodeID]
	r.mu.Unlock()
	if rec != nil {
		if text, ok := rec.text(); ok {
			return Tail(text, n)
		}
	}
	c, err := r.store.GetConsoleLog(ctx, nodeID)
	if err != nil {
		return nil
	}
	return Tail(c.Log, n)
}

// recording is one node's console being recorded by this process.
type recording struct {
	r       *Recorder
	nodeID  string
	started time.Time

	saveMu  sync.Mutex // serializes save
	mu      sync.Mutex
	ring    *ring // nil until the lease is held and the stored log loaded
	clean   cleaner
	secrets *redact.Secrets
	// hiddenUser and hiddenPassword are the BMC credentials secrets was
	// last given (hide).
	hiddenUser, hiddenPassword string
	dirty                      bool
	// lastOutput is when the console last printed (Settle).
	lastOutput time.Time
	con        bmc.Console
	viewers    []*Session
	writer     *Session
	attached   chan struct{} // a viewer attached: a waiting recording tries at once
	done       bool
}

func (rec *recording) text() (string, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.ring == nil {
		return "", false
	}
	return rec.ring.text(scrub(rec.secrets, rec.clean.partial())), true
}

// run is a recording's life: hold the lease, keep a console open while
// the node is wanted, save the log as it grows, and give the lease back.
func (rec *recording) run(ctx context.Context) {
	r := rec.r
	log := r.log.With("node", rec.nodeID)
	// A node whose driver has no console (Redfish, until its SOL is
	// configured) is not recorded, and leaves no trace in the store.
	if n, err := r.store.GetNode(ctx, rec.nodeID); err != nil {
		return
	} else if !rec.watched() && !rec.consoleCapable(ctx, n) {
		return
	}
	until := func() time.Time { return time.Now().Add(r.opts.Lease) }
	ok, err := r.store.ClaimConsole(ctx, rec.nodeID, r.opts.Holder, until())
	if err != nil || !ok {
		if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
			log.Warn("console: cannot take the recording lease", "error", err)
		}
		return
	}
	var stored string
	if c, err := r.store.GetConsoleLog(ctx, rec.nodeID); err == nil {
		stored = c.Log
	}
	rec.mu.Lock()
	rec.ring = newRing(baremetal.ConsoleLogMax, stored)
	rec.secrets = redact.New()
	rec.mu.Unlock()

	defer func() {
		// Save what is left, even when the process stops.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		rec.mu.Lock()
		rec.done = true
		if p := rec.clean.partial(); p != "" {
			rec.ring.add(scrub(rec.secrets, p))
			rec.clean.reset()
			rec.dirty = true
		}
		rec.mu.Unlock()
		rec.save(sctx, time.Now())
		_ = r.store.ReleaseConsole(sctx, rec.nodeID, r.opts.Holder)
	}()

	lastBoot := time.Now()
	// A console lost once is reopened at once (its output is flowing);
	// lost again soon after, it waits, longer each time.
	wait, lostWait := r.opts.Retry, time.Duration(0)
	var lastErr string
	for ctx.Err() == nil {
		n, err := r.store.GetNode(ctx, rec.nodeID)
		if err != nil {
			return // gone (or the store is down: the lease runs out)
		}
		if booting(n.ProvisionState) {
			lastBoot = time.Now()
		}
		if !rec.wanted(lastBoot) {
			return
		}
		rec.hide(n)
		con, err := rec.open(ctx, n)
		if err != nil {
			if bmc.KindOf(err) == bmc.KindUnsupported && !rec.watched() {
				rec.note(fmt.Sprintf("console not recorded: %v", err))
				return
			}
			if msg := err.Error(); msg != lastErr {
				rec.note(fmt.Sprintf("console unavailable, retrying: %v", err))
				log.Info("console: cannot open", "error", err)
				lastErr = msg
			}
			if !rec.sleep(ctx, wait, &lastBoot) {
				return
			}
			wait = min(2*wait, time.Minute)
			continue
		}
		if lastErr != "" {
			rec.note("console open again")
			lastErr = ""
		}
		wait = r.opts.Retry
		opened := time.Now()
		err = rec.stream(ctx, con, &lastBoot)
		_ = con.Close()
		rec.mu.Lock()
		rec.con = nil
		rec.mu.Unlock()
		if errors.Is(err, errLeaseLost) || errors.Is(err, errNotWanted) || ctx.Err() != nil {
			if errors.Is(err, errLeaseLost) {
				log.Info("console: another controller records it now")
			}
			return
		}
		if err != nil {
			// A console lost soon after it opened was most likely taken
			// by someone else (an operator's ipmitool sol activate: the
			// BMC has one SOL session): reopening at once would take it
			// back from them every few seconds, so the wait grows with
			// each loss, up to maxLostWait, until a console stays.
			if time.Since(opened) >= stableConsole {
				lostWait = 0
			}
			if msg := err.Error(); msg != lastErr {
				rec.note(fmt.Sprintf("console lost (taken by another SOL client, or the BMC stopped answering), reopening in %s: %v", lostWait, err))
				lastErr = msg
			}
			if !rec.sleep(ctx, lostWait, &lastBoot) {
				return
			}
			lostWait = max(r.opts.Retry, min(2*lostWait, maxLostWait))
		}
	}
}

// stableConsole is how long a console must stay open for its loss to
// count as a first one; maxLostWait bounds the wait before reopening a
// console lost again and again.
const (
	stableConsole = 2 * time.Minute
	maxLostWait   = 2 * time.Minute
)

var (
	errLeaseLost = errors.New("console lease taken over")
	errNotWanted = errors.New("console no longer wanted")
)

// wanted: someone watches, or the node booted within Linger and the
// recording is younger than MaxRecording.
func (rec *recording) wanted(lastBoot time.Time) bool {
	if rec.watched() {
		return true
	}
	o := rec.r.opts
	return time.Since(lastBoot) < o.Linger && time.Since(rec.started) < o.MaxRecording
}

func (rec *recording) watched() bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.viewers) > 0
}

func (rec *recording) opener(ctx context.Context, n *baremetal.Node) (bmc.ConsoleOpener, error) {
	ep := bmc.Endpoint{Driver: string(n.Driver), Address: n.BMC.Address, Username: n.BMC.Username,
		Password: n.BMC.Password, Insecure: n.BMC.Insecure, SystemID: n.BMC.SystemID, CipherSuite: n.BMC.CipherSuite}
	if n.Driver == baremetal.DriverRedfish && rec.r.opts.RedfishSOL {
		var err error
		if ep, err = SOLEndpoint(ep); err != nil {
			return nil, err
		}
	}
	c, err := rec.r.bmc.Open(ctx, ep)
	if err != nil {
		return nil, err
	}
	return bmc.Capability[bmc.ConsoleOpener](c)
}

// SOLEndpoint is the IPMI endpoint of a Redfish BMC's Serial-over-LAN:
// the host of its Redfish URL, port 623, the same credentials.
func SOLEndpoint(ep bmc.Endpoint) (bmc.Endpoint, error) {
	u, err := url.Parse(ep.Address)
	if err != nil || u.Hostname() == "" {
		return bmc.Endpoint{}, bmc.Errorf(bmc.KindUnsupported, "open console", "the BMC address is not a URL with a host, so its Serial-over-LAN cannot be reached")
	}
	return bmc.Endpoint{Driver: "ipmi", Address: "ipmi://" + net.JoinHostPort(u.Hostname(), "623"),
		Username: ep.Username, Password: ep.Password}, nil
}

// consoleCapable: the node's driver has a console (Open talks to no BMC).
func (rec *recording) consoleCapable(ctx context.Context, n *baremetal.Node) bool {
	_, err := rec.opener(ctx, n)
	return err == nil || bmc.KindOf(err) != bmc.KindUnsupported
}

func (rec *recording) open(ctx context.Context, n *baremetal.Node) (bmc.Console, error) {
	octx, cancel := context.WithTimeout(ctx, rec.r.opts.Timeout)
	defer cancel()
	o, err := rec.opener(octx, n)
	if err != nil {
		return nil, err
	}
	con, err := o.OpenConsole(octx)
	if err != nil {
		return nil, err
	}
	rec.mu.Lock()
	rec.con = con
	rec.mu.Unlock()
	return con, nil
}

// sleep waits d (cut short by a viewer attaching), saving and renewing
// the lease meanwhile; false when the recording should end.
func (rec *recording) sleep(ctx context.Context, d time.Duration, lastBoot *time.Time) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	tick := time.NewTicker(rec.r.opts.Flush)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-rec.attached:
			return true
		case <-tick.C:
			if err := rec.check(ctx, lastBoot); err != nil {
				return false
			}
		}
	}
}

// check saves the log (renewing the lease) and decides whether to go on.
func (rec *recording) check(ctx context.Context, lastBoot *time.Time) error {
	if !rec.save(ctx, time.Now()) {
		return errLeaseLost
	}
	n, err := rec.r.store.GetNode(ctx, rec.nodeID)
	if err != nil {
		if baremetal.IsCode(err, baremetal.CodeNotFound) {
			return errNotWanted
		}
		return nil // the store is down: keep recording, the lease may run out
	}
	rec.hide(n)
	if booting(n.ProvisionState) {
		*lastBoot = time.Now()
	}
	if !rec.wanted(*lastBoot) {
		return errNotWanted
	}
	return nil
}

// hide makes the log hide n's BMC credentials (the password and its
// Basic form) from now on: at each open, and at each save, so that a
// password changed while the console is recorded (an admin's PATCH) is
// hidden within a flush, not only after the console reopens. The old
// ones stay hidden too: the machine may still print them.
func (rec *recording) hide(n *baremetal.Node) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.secrets != nil && rec.hiddenUser == n.BMC.Username && rec.hiddenPassword == n.BMC.Password {
		return
	}
	rec.secrets = rec.secrets.With(n.BMC.Password, redact.Basic(n.BMC.Username, n.BMC.Password))
	rec.hiddenUser, rec.hiddenPassword = n.BMC.Username, n.BMC.Password
}

// stream copies the console into the log and to the viewers until it
// fails or the recording ends.
func (rec *recording) stream(ctx context.Context, con bmc.Console, lastBoot *time.Time) error {
	type chunk struct {
		b   []byte
		err error
	}
	chunks := make(chan chunk, 16)
	// stop ends the reader when stream returns: the caller closes con,
	// which unblocks a Read, but a reader waiting to hand over a chunk
	// (the channel full) would wait for the recorder's ctx, that is for
	// the controller to stop.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			b := make([]byte, 4096)
			n, err := con.Read(b)
			select {
			case chunks <- chunk{b[:n], err}:
			case <-ctx.Done():
				return
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	tick := time.NewTicker(rec.r.opts.Flush)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case c := <-chunks:
			if len(c.b) > 0 {
				rec.feed(c.b)
			}
			if c.err != nil {
				return c.err
			}
		case <-tick.C:
			if err := rec.check(ctx, lastBoot); err != nil {
				return err
			}
		}
	}
}

// feed adds console output to the log and hands it to the viewers.
func (rec *recording) feed(b []byte) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.lastOutput = time.Now()
	for _, l := range rec.clean.write(b) {
		rec.ring.add(scrub(rec.secrets, l))
	}
	rec.dirty = true
	for _, v := range rec.viewers {
		v.deliver(b)
	}
}

// note adds a line of the controller's own to the log.
func (rec *recording) note(msg string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.ring == nil {
		return
	}
	if p := rec.clean.partial(); p != "" {
		rec.ring.add(scrub(rec.secrets, p))
		rec.clean.reset()
	}
	rec.ring.add(fmt.Sprintf("--- %s %s ---", time.Now().UTC().Format(time.RFC3339), scrub(rec.secrets, msg)))
	rec.dirty = true
}

// save writes the log if it changed, and renews the lease either way;
// false when the lease went to another holder.
func (rec *recording) save(ctx context.Context, now time.Time) bool {
	// One save at a time: two (the recording's flush and a Settle) could
	// otherwise write their snapshots in the wrong order.
	rec.saveMu.Lock()
	defer rec.saveMu.Unlock()
	return rec.saveLocked(ctx, now)
}

func (rec *recording) saveLocked(ctx context.Context, now time.Time) bool {
	rec.mu.Lock()
	text := rec.ring.text(scrub(rec.secrets, rec.clean.partial()))
	dirty := rec.dirty
	rec.dirty = false
	rec.mu.Unlock()
	r := rec.r
	var ok bool
	var err error
	if dirty {
		ok, err = r.store.SaveConsoleLog(ctx, rec.nodeID, r.opts.Holder, text, now.Add(r.opts.Lease))
	} else {
		ok, err = r.store.ClaimConsole(ctx, rec.nodeID, r.opts.Holder, now.Add(r.opts.Lease))
	}
	if err != nil {
		r.log.Warn("console: cannot save the log", "node", rec.nodeID, "error", err)
		rec.mu.Lock()
		rec.dirty = rec.dirty || dirty
		rec.mu.Unlock()
		return true // the store is down; the lease may run out meanwhile
	}
	return ok
}

// Session is an interactive viewer of a node's console.
type Session struct {
	rec    *recording
	who    string
	out    chan []byte
	closed chan struct{}
	once   sync.Once
	// Writer is whether this viewer's keystrokes reach the console (one
	// viewer at a time); the others watch.
	Writer bool
	// Dropped counts output chunks this viewer was too slow to take.
	mu      sync.Mutex
	dropped int
}

// CanWrite is whether this viewer has the keyboard (Writer).
func (s *Session) CanWrite() bool { return s.Writer }

// Output is the console's raw output as it arrives (Done says when the
// session ended: Close, ctx, or the recording ended).
func (s *Session) Output() <-chan []byte { return s.out }

// Done is closed when the session ended.
func (s *Session) Done() <-chan struct{} { return s.closed }

// ErrReadOnly is Write's error for a viewer that is not the writer.
var ErrReadOnly = errors.New("another session has the console's keyboard; this one only watches")

// Write sends keystrokes to the console.
func (s *Session) Write(p []byte) error {
	if !s.Writer {
		return ErrReadOnly
	}
	s.rec.mu.Lock()
	con := s.rec.con
	s.rec.mu.Unlock()
	if con == nil {
		return errors.New("the console is not open at the moment (reopening)")
	}
	_, err := con.Write(p)
	return err
}

// Close detaches the viewer; the writer's keyboard goes to nobody.
func (s *Session) Close() {
	s.once.Do(func() {
		rec := s.rec
		rec.mu.Lock()
		rec.viewers = slices.DeleteFunc(rec.viewers, func(v *Session) bool { return v == s })
		if rec.writer == s {
			rec.writer = nil
		}
		rec.mu.Unlock()
		close(s.closed)
	})
}

func (s *Session) deliver(b []byte) {
	select {
	case <-s.closed:
	case s.out <- append([]byte(nil), b...):
	default:
		s.mu.Lock()
		s.dropped++
		s.mu.Unlock()
	}
}

// endViewers ends the sessions of a recording that ended. It marks the
// recording done first, so that an Attach that found the recording
// before it left r.recs (whatever way run returned) starts a new one
// rather than joining this one after its viewers were ended, to wait
// forever for output.
func (rec *recording) endViewers() {
	rec.mu.Lock()
	rec.done = true
	vs := slices.Clone(rec.viewers)
	rec.mu.Unlock()
	for _, v := range vs {
		v.Close()
	}
}

// HasConsole reports whether the node's driver has a console the
// controller can open (it asks no BMC): IPMI Serial-over-LAN.
func (r *Recorder) HasConsole(ctx context.Context, n *baremetal.Node) bool {
	rec := &recording{r: r, nodeID: n.ID}
	_, err := rec.opener(ctx, n)
	return err == nil
}

// testHookAttach, when set, runs in Attach between finding the node's
// recording and joining it.
var testHookAttach func()

// ErrRecordedElsewhere is Attach's error when another controller replica
// holds the node's console.
var ErrRecordedElsewhere = errors.New("another controller replica holds this node's console")

// Attach opens an interactive session on a node's console: the recording
// of this process (started if need be). The first session that asks to
// write gets the keyboard while it lasts; the others watch. The session
// ends when ctx does.
func (r *Recorder) Attach(ctx context.Context, nodeID, who string, write bool) (*Session, error) {
	for range 3 {
		rec := r.start(nodeID)
		if rec == nil {
			return nil, errors.New("the controller is stopping")
		}
		s := &Session{rec: rec, who: who, out: make(chan []byte, 256), closed: make(chan struct{})}
		if testHookAttach != nil {
			testHookAttach()
		}
		rec.mu.Lock()
		if rec.done {
			rec.mu.Unlock()
			time.Sleep(10 * time.Millisecond) // it is leaving r.recs: start a new one
			continue
		}
		rec.viewers = append(rec.viewers, s)
		if write && rec.writer == nil {
			rec.writer, s.Writer = s, true
		}
		rec.mu.Unlock()
		select {
		case rec.attached <- struct{}{}:
		default:
		}
		go func() {
			select {
			case <-ctx.Done():
				s.Close()
			case <-s.closed:
			}
		}()
		// A recording that could not take the lease ends at once.
		t := time.NewTimer(500 * time.Millisecond)
		defer t.Stop()
		for {
			rec.mu.Lock()
			has := rec.ring != nil
			rec.mu.Unlock()
			if has {
				return s, nil
			}
			select {
			case <-s.closed:
				c, err := r.store.GetConsoleLog(ctx, nodeID)
				if err == nil && c.Recording(time.Now()) && c.Holder != r.opts.Holder {
					return nil, fmt.Errorf("%w (%s)", ErrRecordedElsewhere, c.Holder)
				}
				return nil, errors.New("the console's recording ended")
			case <-t.C:
				return s, nil
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nil, errors.New("the console's recording ended")
}
