package ipmi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ipmiclient "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// DefaultCipherSuites is the order in which cipher suites are tried when
// the endpoint pins none: 17 (HMAC-SHA256, AES-128), what current BMCs
// prefer; 3 (HMAC-SHA1, AES-128), what every IPMI 2.0 BMC must offer and
// all that OpenIPMI's ipmi_sim offers; 8 (HMAC-MD5, AES-128) for old
// firmware. Suites without encryption are used only when pinned.
var DefaultCipherSuites = []int{17, 3, 8}

// Per-exchange timing. go-ipmi waits perTry for an answer and re-sends
// the request retries times. perTry is a tenth of the call's budget (the
// earlier of its deadline and Options.Timeout) within [100 ms, 500 ms]:
// a lost datagram costs one perTry, not the call, and a BMC that answers
// nothing is given up on after 3 × perTry (1.5 s with the default
// timeout; 300 ms for a 1 s deadline), not after the whole budget. A BMC
// answers in milliseconds on a LAN; 500 ms per try is ample.
//
// A session keeps the perTry of the call that opened it (go-ipmi's
// timeout cannot be changed safely once its keep-alive goroutine runs);
// every call is still bounded by its own deadline.
const (
	retries     = 2
	minPerTry   = 100 * time.Millisecond
	maxPerTry   = 500 * time.Millisecond
	perTryShare = 10
)

func perTry(ctx context.Context, callTimeout time.Duration) time.Duration {
	budget := callTimeout
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	return min(max(budget/perTryShare, minPerTry), maxPerTry)
}

// creds is what a session was authenticated with; a call with other
// credentials for the same BMC replaces the session.
type creds struct {
	user, pass string
	suite      int // pinned cipher suite, 0 = automatic
}

// session is one established RMCP+ session.
type session struct {
	cli       *ipmiclient.Client
	creds     creds
	suite     types.CipherSuiteID
	closeOnce sync.Once
}

// close ends the session on the BMC (Close Session, bounded by timeout)
// and releases the socket and go-ipmi's keep-alive goroutine.
func (s *session) close(timeout time.Duration) {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_ = s.cli.Close(ctx)
	})
}

// abandon releases a client whose Connect failed: its socket must be
// closed, but a Close Session to a BMC that did not open one is wasted (or
// worse, waits for a dead BMC), so the exchange is skipped with an
// already-canceled context.
func abandon(cli *ipmiclient.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = cli.Close(ctx)
}

// bmcConn serialises calls to one BMC and holds its session, if any.
// IPMI sessions are stateful (sequence numbers, one request in flight):
// one at a time per BMC is what BMCs handle well.
type bmcConn struct {
	sem      chan struct{} // 1-slot lock that a context can abandon
	sess     *session      // nil when not connected
	lastUsed time.Time
	sdr      *sdrCache // the BMC's sensors, once Health read them
}

func (c *bmcConn) lock(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *bmcConn) tryLock() bool {
	select {
	case c.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

func (c *bmcConn) unlock() { <-c.sem }

// Phases of go-ipmi's Connect20, recognised by the text of its errors
// (v0.9.1 has no typed phase). They decide whether another cipher suite
// is worth a try.
const (
	phaseChannelAuth = "Get Channel Authentication Capabilities"
	phaseOpenSession = "Open Session failed"
	// Session set up, but the BMC refused administrator privilege.
	phaseSetPrivilege = "SetSessionPrivilegeLevel"
	// An Open Session reply cut short after its status byte: how ipmi_sim
	// (and the spec's error format) refuses a suite; go-ipmi cannot unpack
	// it, so the status itself is lost.
	shortOpenSessionReply = "unpack session setup response failed"
)

// connect establishes a session, choosing the cipher suite: the pinned
// one; else the one learned for this BMC; else DefaultCipherSuites in
// order. A suite the BMC refuses (an RMCP+ status saying so, or silence
// to Open Session while it did answer Get Channel Authentication
// Capabilities) moves on to the next; anything else (no answer at all,
// bad credentials) ends the search at once: another suite would not help
// and would only spend the deadline.
func (o *Opener) connect(ctx context.Context, t target, cr creds) (*session, error) {
	key := t.key()
	var suites []types.CipherSuiteID
	learned := false
	if cr.suite != 0 {
		suites = []types.CipherSuiteID{types.CipherSuiteID(cr.suite)}
	} else if s, ok := o.learnedSuite(key); ok {
		suites = []types.CipherSuiteID{s}
		learned = true
	} else {
		suites = o.defaultSuites()
	}

	var refused []string
	var lastRefusal error
	silent := false
	for i := 0; i < len(suites); i++ {
		suite := suites[i]
		if err := ctx.Err(); err != nil {
			return nil, bmc.Wrap(bmc.KindUnreachable, "connect", describe(fmt.Sprintf("connect to %s", key), err, cr.pass))
		}
		start := time.Now()
		cli, err := o.dial(ctx, t, cr, suite)
		if err == nil {
			if cr.suite == 0 {
				o.learnSuite(key, suite)
			}
			o.log.LogAttrs(ctx, slog.LevelDebug, "ipmi session opened",
				slog.String("bmc", key), slog.String("user", cr.user),
				slog.Int("cipher_suite", int(suite)), slog.Duration("elapsed", time.Since(start)))
			return &session{cli: cli, creds: cr, suite: suite}, nil
		}
		kind := classify(err)
		msg := err.Error()
		refusal, silentRefusal := false, false
		if strings.Contains(msg, phaseOpenSession) && ctx.Err() == nil {
			code, hasCode := rmcpStatus(err)
			switch {
			case hasCode:
				refusal = cipherRejections[code] // else: out of sessions, bad role, ...
			case strings.Contains(msg, shortOpenSessionReply):
				refusal = true // cut short, status unknown
			case kind == bmc.KindUnreachable:
				refusal, silentRefusal = true, true
			}
		}
		if !refusal {
			what := fmt.Sprintf("connect to %s with cipher suite %d", key, suite)
			switch {
			case strings.Contains(msg, phaseChannelAuth):
				what = fmt.Sprintf("connect to %s", key) // the suite played no part
			case strings.Contains(msg, phaseSetPrivilege):
				if _, isCC := completionCode(err); isCC {
					kind = bmc.KindAuth
					what += ": the user may not have administrator privilege"
				}
			}
			return nil, bmc.Wrap(kind, "connect", describe(what, err, cr.pass))
		}
		o.log.LogAttrs(ctx, slog.LevelDebug, "ipmi cipher suite refused",
			slog.String("bmc", key), slog.Int("cipher_suite", int(suite)),
			slog.Bool("silent", silentRefusal), slog.Duration("elapsed", time.Since(start)))
		refused = append(refused, fmt.Sprint(int(suite)))
		lastRefusal = err
		silent = silent || silentRefusal
		if learned {
			// The BMC no longer takes what it took before (firmware
			// update, changed settings): forget it and search again.
			o.forgetSuite(key)
			learned = false
			for _, s := range o.defaultSuites() {
				if s != suite {
					suites = append(suites, s)
				}
			}
		}
	}
	kind := bmc.KindUnsupported
	if silent {
		kind = bmc.KindUnreachable // silence may be loss, not refusal
	}
	return nil, bmc.Wrap(kind, "connect", describe(
		fmt.Sprintf("connect to %s: the BMC accepted none of cipher suites %s; last refusal", key, strings.Join(refused, ", ")),
		lastRefusal, cr.pass))
}

// dial makes one connection attempt with one cipher suite.
func (o *Opener) dial(ctx context.Context, t target, cr creds, suite types.CipherSuiteID) (*ipmiclient.Client, error) {
	cli, err := ipmiclient.NewClient(t.dialHost(), t.port, cr.user, cr.pass)
	if err != nil { // user name too long: the only error NewClient has
		return nil, bmc.Errorf(bmc.KindAuth, "connect", "%v", err)
	}
	sniff := &sniffDialer{ctx: ctx}
	cli.WithInterface(ipmiclient.InterfaceLanplus).
		WithUDPProxy(sniff).
		WithTimeout(perTry(ctx, o.opts.Timeout)).
		WithRetry(retries).
		WithMaxPrivilegeLevel(types.PrivilegeLevelAdministrator).
		// A single explicit suite: go-ipmi then skips "Get Channel
		// Cipher Suites", which BMCs like ipmi_sim ignore (4 s lost).
		WithCipherSuiteID(suite)
	o.attempts.Add(1)
	if err := cli.Connect(ctx); err != nil {
		abandon(cli)
		st, ok := sniff.openStatus()
		return nil, &dialError{err: err, openStatus: st, hasStatus: ok}
	}
	return cli, nil
}

// dialError is a failed connection attempt, with the RMCP+ status of the
// BMC's Open Session Response when one was seen (see sniffConn).
type dialError struct {
	err        error
	openStatus types.RmcpStatusCode
	hasStatus  bool
}

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// sniffDialer gives go-ipmi (through its UDP proxy hook) a socket that
// watches what it reads. An Open Session Response that refuses a session
// carries only a tag and a status byte (IPMI v2.0 §13.17); go-ipmi v0.9.1
// rejects it as too short before looking at the status, so "suite not
// offered" and "no free session slot" would look alike. The socket keeps
// the status for us. It also dials with the connection's context, which
// go-ipmi's own dial (a DNS lookup included) ignores.
type sniffDialer struct {
	ctx  context.Context
	conn *sniffConn
}

func (d *sniffDialer) Dial(network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(d.ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.conn = &sniffConn{Conn: c}
	return d.conn, nil
}

// openStatus returns the status of the last Open Session Response, if any
// was read.
func (d *sniffDialer) openStatus() (types.RmcpStatusCode, bool) {
	if d.conn == nil || !d.conn.sawOpen.Load() {
		return 0, false
	}
	return types.RmcpStatusCode(d.conn.openStatus.Load()), true
}

type sniffConn struct {
	net.Conn
	sawOpen    atomic.Bool
	openStatus atomic.Uint32
}

func (c *sniffConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	// RMCP header (4 bytes, class IPMI), auth type RMCP+ (0x06), payload
	// type Open Session Response (0x11), session ID, sequence, length
	// (to byte 16), then the payload: message tag, status code.
	if n >= 18 && b[0] == 0x06 && b[3] == 0x07 && b[4] == 0x06 && b[5]&0x3f == 0x11 {
		c.openStatus.Store(uint32(b[17]))
		c.sawOpen.Store(true)
	}
	return n, err
}

func (o *Opener) defaultSuites() []types.CipherSuiteID {
	out := make([]types.CipherSuiteID, 0, len(o.opts.CipherSuites))
	for _, s := range o.opts.CipherSuites {
		out = append(out, types.CipherSuiteID(s))
	}
	return out
}

func (o *Opener) learnedSuite(key string) (types.CipherSuiteID, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.suites[key]
	return s, ok
}

func (o *Opener) learnSuite(key string, s types.CipherSuiteID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if old, ok := o.suites[key]; !ok || old != s {
		o.log.Info("ipmi cipher suite learned", "bmc", key, "cipher_suite", int(s))
	}
	o.suites[key] = s
}

func (o *Opener) forgetSuite(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.suites, key)
}

// errClosed is returned by calls made after Opener.Close.
var errClosed = errors.New("ipmi opener is closed")
