package redfish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// Options tunes an Opener.
type Options struct {
	// Timeout bounds every single HTTP request (default 10s). Context
	// deadlines are honoured on top of it.
	Timeout time.Duration
	// MaxConcurrentRequests caps in-flight requests, and so connections,
	// per BMC (default 2): BMC web servers take few connections and
	// sessions (iDRAC), and one BMC usually serves one machine. A service
	// in front of many systems (a chassis manager, the simulated fleet)
	// may be given more.
	MaxConcurrentRequests int
	// MediaSettle is how long a virtual media slot may take to show an
	// insert or eject the BMC accepted (default 15s; an AMI shows it
	// about 3 s after the answer), each time before the request is sent
	// again or fails.
	MediaSettle time.Duration
	// OwnsMedia tells images this controller inserts (its agent ISOs and
	// config drives) from an operator's: EjectMedia ejects the boot CD and
	// slots holding such images, and leaves other slots alone. Nil: every
	// image counts as the controller's.
	OwnsMedia func(image string) bool
	// Logger receives login, fallback and re-login events (default: discard).
	Logger *slog.Logger
}

// DefaultMaxConcurrentRequests is Options.MaxConcurrentRequests' default.
const DefaultMaxConcurrentRequests = 2

// Opener hands out Clients and keeps one gofish APIClient (connection pool
// and session) per BMC, keyed by address, username, password hash and TLS
// mode, so steady-state calls cost one request each.
type Opener struct {
	opts Options
	log  *slog.Logger
	// reloginEvery is the least time between two re-logins of one BMC, so a
	// resource that always answers 401 cannot turn every call into a login.
	reloginEvery time.Duration
	// authRetryAfter is how long a refused login is remembered: BMCs lock
	// accounts (or source addresses) after a few failed logins, so a wrong
	// password must not be retried at the rate of power sync. A corrected
	// password is a new cache key, so it is tried at once.
	authRetryAfter time.Duration

	mu        sync.Mutex
	conns     map[connKey]*conn
	closed    bool
	lastSweep time.Time
	bg        sync.WaitGroup // background session deletions
}

var _ bmc.Opener = (*Opener)(nil)

const (
	idleConnTTL   = 30 * time.Minute
	sweepInterval = 5 * time.Minute
	logoutTimeout = 3 * time.Second
)

// NewOpener returns an Opener; Close it to log out of every BMC.
func NewOpener(opts Options) *Opener {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.MaxConcurrentRequests <= 0 {
		opts.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	if opts.MediaSettle <= 0 {
		opts.MediaSettle = 15 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Opener{
		opts:           opts,
		log:            log.With("driver", "redfish"),
		reloginEvery:   time.Second,
		authRetryAfter: 15 * time.Second,
		conns:          make(map[connKey]*conn),
		lastSweep:      time.Now(),
	}
}

type connKey struct {
	endpoint string
	user     string
	pwHash   [32]byte
	insecure bool
}

// Open returns a Client for ep without talking to the BMC: the connection,
// the session and the system path are set up by the first call and then
// shared by every Client of the same BMC and credentials.
func (o *Opener) Open(_ context.Context, ep bmc.Endpoint) (bmc.Client, error) {
	if ep.Driver != "" && !strings.EqualFold(ep.Driver, "redfish") {
		return nil, bmc.Errorf(bmc.KindUnsupported, "open", "driver %q is not redfish", ep.Driver)
	}
	endpoint, user, pass, err := parseAddress(ep)
	if err != nil {
		return nil, classify("open", err, redact.New(ep.Password))
	}
	sysPath, err := systemPath(ep.SystemID)
	if err != nil {
		return nil, classify("open", err, redact.New(ep.Password))
	}
	key := connKey{endpoint: endpoint, user: user, pwHash: sha256.Sum256([]byte(pass)), insecure: ep.Insecure}

	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, classify("open", ErrClosed, nil)
	}
	o.sweepLocked()
	c := o.conns[key]
	if c == nil {
		c = o.newConn(endpoint, user, pass, ep.Insecure)
		o.conns[key] = c
	}
	c.touch()
	return &Client{c: c, system: sysPath}, nil
}

// isClosed reports whether Close was called.
func (o *Opener) isClosed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// Close logs out of every BMC session (bounded by a few seconds) and
// closes idle connections. Clients of a closed Opener fail with ErrClosed.
func (o *Opener) Close() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	conns := make([]*conn, 0, len(o.conns))
	for _, c := range o.conns {
		conns = append(conns, c)
	}
	clear(o.conns)
	o.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), logoutTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { c.shutdown(ctx) })
	}
	wg.Wait()
	o.bg.Wait()
}

// sweepLocked forgets BMCs unused for a long time (rotated passwords,
// deleted nodes) so the cache does not grow forever. o.mu must be held.
func (o *Opener) sweepLocked() {
	now := time.Now()
	if now.Sub(o.lastSweep) < sweepInterval {
		return
	}
	o.lastSweep = now
	for k, c := range o.conns {
		if now.Sub(time.Unix(0, c.lastUsed.Load())) > idleConnTTL {
			delete(o.conns, k)
			o.background(func() {
				ctx, cancel := context.WithTimeout(context.Background(), logoutTimeout)
				defer cancel()
				c.shutdown(ctx)
			})
		}
	}
}

func (o *Opener) background(fn func()) {
	o.bg.Go(fn)
}

// parseAddress validates a Redfish address and returns scheme://host[:port]
// plus the credentials (userinfo in the address is accepted as a fallback
// and never kept in the URL).
func parseAddress(ep bmc.Endpoint) (endpoint, user, pass string, err error) {
	addr := strings.TrimSpace(ep.Address)
	if addr != "" && !strings.Contains(addr, "://") {
		addr = "https://" + addr // a bare host: Redfish is HTTPS
	}
	u, perr := url.Parse(addr)
	if perr != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", "", "", bmc.Errorf(bmc.KindUnreachable, "open",
			"invalid Redfish address %q: want https://host[:port] (or http://)", stripUserinfo(ep.Address))
	}
	user, pass = ep.Username, ep.Password
	if u.User != nil && user == "" && pass == "" {
		user = u.User.Username()
		pass, _ = u.User.Password()
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host), user, pass, nil
}

// systemPath normalizes Endpoint.SystemID: any spelling of a system
// (api.RedfishSystemPath, shared with the node's key).
func systemPath(id string) (string, error) {
	p, err := api.RedfishSystemPath(id)
	if err != nil {
		return "", bmc.Errorf(bmc.KindBMCError, "open", "invalid system_id: %v", err)
	}
	return p, nil
}

// conn is one BMC as seen with one set of credentials.
type conn struct {
	o         *Opener
	endpoint  string
	user      string
	password  string
	insecure  bool
	transport *http.Transport
	httpc     *http.Client
	lastUsed  atomic.Int64
	// secrets is what this BMC must not echo: the password, the Basic
	// credentials and the latest session tokens (see noteToken).
	secrets atomic.Pointer[redact.Secrets]
	// registries caches the BIOS attribute registries this BMC served,
	// by name: a registry's name changes with its content (the BIOS
	// version is in it), and reading one is several requests of tens of
	// KiB each (see registryOf).
	registries sync.Map // string -> bmc.BIOSRegistry

	mu            sync.Mutex
	api           *gofish.APIClient // nil until logged in
	gen           uint64            // bumped at each login
	probed        bool
	basic         bool // the BMC offers no usable SessionService
	systems       string
	loginCh       chan struct{} // closed when the login in flight ends
	loginErr      error
	loginCtxDone  bool // the last login failed because its caller's context ended
	lastLogin     time.Time
	authErr       error     // last login refused with 401/403 ...
	authErrAt     time.Time // ... and when
	defaultSystem string
	tokens        []string // the latest session tokens, newest last
	// members and membersAt are the systems the Systems collection listed
	// at its last read and when (see resolve).
	members   []string
	membersAt time.Time
	// expand is the root's $expand query (expandQuery); noExpand is set
	// once the BMC refused it, for the conn's life.
	expand   string
	noExpand bool
	// rtt is a moving average of the requests' round trips, in ns
	// (timedTransport).
	rtt atomic.Int64
}

// roundTrip is how long the BMC's requests took lately; 0 before any.
func (c *conn) roundTrip() time.Duration { return time.Duration(c.rtt.Load()) }

// timedTransport keeps conn.rtt: each answered request moves it a
// quarter of the way to its own round trip (to its headers: the body is
// read after).
type timedTransport struct {
	next http.RoundTripper
	c    *conn
}

func (t *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		d := int64(time.Since(start))
		for {
			old := t.c.rtt.Load()
			next := d
			if old > 0 {
				next = old + (d-old)/4
			}
			if t.c.rtt.CompareAndSwap(old, next) {
				break
			}
		}
	}
	return resp, err
}

// expandQuery returns the $expand query to read a collection with, ""
// when the BMC has none (or refused it).
func (c *conn) expandQuery() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expand
}

// refuseExpand remembers that the BMC refused its own $expand.
func (c *conn) refuseExpand(why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.expand != "" {
		c.o.log.Info("the BMC refused the $expand its service root advertises; reading collections member by member", "bmc", c.endpoint, "query", c.expand, "error", why)
	}
	c.expand, c.noExpand = "", true
}

func (o *Opener) newConn(endpoint, user, pass string, insecure bool) *conn {
	dialer := &net.Dialer{Timeout: min(o.opts.Timeout, 10*time.Second), KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: insecure}, //nolint:gosec // per-endpoint opt-in
		TLSHandshakeTimeout: o.opts.Timeout,
		MaxIdleConns:        o.opts.MaxConcurrentRequests,
		MaxIdleConnsPerHost: o.opts.MaxConcurrentRequests,
		MaxConnsPerHost:     o.opts.MaxConcurrentRequests,
		IdleConnTimeout:     90 * time.Second,
		// HTTP/1.1 on purpose: BMC HTTP/2 stacks are young and quirky, and
		// a pool of keep-alive connections is what they are tested with.
		ForceAttemptHTTP2: false,
	}
	c := &conn{
		o: o, endpoint: endpoint, user: user, password: pass, insecure: insecure,
		transport: tr,
		// gofish sets no timeout of its own: a hung BMC would block forever.
		httpc:   &http.Client{Timeout: o.opts.Timeout},
		systems: "/redfish/v1/Systems",
	}
	c.httpc.Transport = &timedTransport{next: tr, c: c}
	c.secrets.Store(c.baseSecrets())
	c.touch()
	return c
}

func (c *conn) baseSecrets() *redact.Secrets {
	return redact.New(c.password, redact.Basic(c.user, c.password))
}

// redactor returns the secrets to hide in this BMC's errors.
func (c *conn) redactor() *redact.Secrets { return c.secrets.Load() }

// keptTokens is how many session tokens are hidden: the current one and
// the one before (a request in flight during a re-login still carries it).
const keptTokens = 2

// noteToken adds a new session token to the secrets. c.mu must be held.
func (c *conn) noteToken(token string) {
	if token == "" {
		return
	}
	c.tokens = append(c.tokens, token)
	if len(c.tokens) > keptTokens {
		c.tokens = c.tokens[len(c.tokens)-keptTokens:]
	}
	c.secrets.Store(c.baseSecrets().With(c.tokens...))
}

func (c *conn) touch() { c.lastUsed.Store(time.Now().UnixNano()) }

// client returns the logged-in APIClient bound to ctx and its generation,
// logging in first if needed. Concurrent callers share one login.
func (c *conn) client(ctx context.Context) (*gofish.APIClient, uint64, error) {
	for {
		c.mu.Lock()
		if c.api != nil {
			api, gen := c.api, c.gen
			c.mu.Unlock()
			return api.WithContext(ctx), gen, nil
		}
		if ch := c.loginCh; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
			c.mu.Lock()
			api, gen, err, leaderGaveUp := c.api, c.gen, c.loginErr, c.loginCtxDone
			c.mu.Unlock()
			if api != nil {
				return api.WithContext(ctx), gen, nil
			}
			// The leader's own short deadline is no reason for us to fail
			// (a BMC that timed out is: every waiter shares that answer).
			if leaderGaveUp && ctx.Err() == nil {
				continue
			}
			return nil, 0, err
		}
		if since := time.Since(c.authErrAt); c.authErr != nil && since < c.o.authRetryAfter {
			err := &bmc.Error{Kind: bmc.KindAuth, Op: "login", Err: fmt.Errorf("%w (refused %s ago; next try in %s)",
				c.authErr, since.Round(time.Second), (c.o.authRetryAfter - since).Round(time.Second))}
			c.mu.Unlock()
			return nil, 0, err
		}
		ch := make(chan struct{})
		c.loginCh = ch
		c.mu.Unlock()

		api, err := c.login(ctx)

		c.mu.Lock()
		c.loginCh = nil
		c.loginErr = err
		c.loginCtxDone = err != nil && ctx.Err() != nil
		c.authErr = nil
		if err == nil {
			c.api = api
			c.gen++
			c.lastLogin = time.Now()
			if s, serr := api.GetSession(); serr == nil {
				c.noteToken(s.Token)
			}
		} else if st := statusOf(err); st == http.StatusUnauthorized || st == http.StatusForbidden {
			// Sanitized now: this error outlives the call that got it.
			c.authErr, c.authErrAt = errors.Unwrap(classify("login", err, c.redactor())), time.Now()
		}
		gen := c.gen
		c.mu.Unlock()
		close(ch)
		if err != nil {
			return nil, 0, err
		}
		return api.WithContext(ctx), gen, nil
	}
}

var errNoRelogin = errors.New("no re-login")

// relogin replaces the session of generation stale after a 401. Only one
// caller logs in; the others get the new client. It returns errNoRelogin
// when a new session cannot help (basic auth, or a login just happened).
func (c *conn) relogin(ctx context.Context, stale uint64) (*gofish.APIClient, error) {
	c.mu.Lock()
	if c.gen == stale && c.api != nil {
		if c.basic || time.Since(c.lastLogin) < c.o.reloginEvery {
			c.mu.Unlock()
			return nil, errNoRelogin
		}
		old := c.api
		c.api = nil
		c.mu.Unlock()
		c.o.log.Info("redfish session rejected, logging in again", "bmc", c.endpoint, "user", c.user)
		api, _, err := c.client(ctx)
		if err == nil {
			c.deleteSessionLater(api, old)
		}
		return api, err
	}
	c.mu.Unlock()
	api, _, err := c.client(ctx)
	return api, err
}

// deleteSessionLater frees the replaced session's slot on the BMC (they
// have few), using the new session; failures do not matter.
func (c *conn) deleteSessionLater(current, old *gofish.APIClient) {
	s, err := old.GetSession()
	if err != nil || s.ID == "" {
		return
	}
	c.o.background(func() {
		ctx, cancel := context.WithTimeout(context.Background(), logoutTimeout)
		defer cancel()
		_, _ = current.WithContext(ctx).Delete(s.ID)
	})
}

// shutdown deletes the session (best effort) and closes idle connections.
func (c *conn) shutdown(ctx context.Context) {
	c.mu.Lock()
	api := c.api
	c.api = nil
	c.gen++
	c.mu.Unlock()
	if api != nil {
		if s, err := api.GetSession(); err == nil && s.ID != "" {
			_, _ = api.WithContext(ctx).Delete(s.ID)
		}
	}
	c.transport.CloseIdleConnections()
}

// login connects with a session when the BMC offers a SessionService and
// with basic auth when it does not (or refuses to create sessions).
func (c *conn) login(ctx context.Context) (*gofish.APIClient, error) {
	c.mu.Lock()
	probed, basic := c.probed, c.basic
	c.mu.Unlock()
	httpc := c.httpc
	if !probed {
		root, err := c.probe(ctx)
		if err != nil {
			return nil, err
		}
		// gofish's connect reads the service root again: hand it the one
		// just read (one request fewer per first login; a BMC may take
		// a second to answer each).
		primed := *c.httpc
		primed.Transport = &primedRoot{next: c.httpc.Transport, path: schemas.DefaultServiceRoot, root: root}
		httpc = &primed
		basic = root.sessions == ""
		c.mu.Lock()
		c.probed, c.basic = true, basic
		if !c.noExpand {
			c.expand = root.expand
		}
		if root.systems != "" {
			c.systems = strings.TrimSuffix(root.systems, "/")
		}
		c.mu.Unlock()
		if basic {
			c.o.log.Info("BMC offers no SessionService, using basic auth", "bmc", c.endpoint)
		}
	}
	cfg := gofish.ClientConfig{
		Endpoint:              c.endpoint,
		Username:              c.user,
		Password:              c.password,
		HTTPClient:            httpc,
		BasicAuth:             basic,
		MaxConcurrentRequests: int64(c.o.opts.MaxConcurrentRequests),
		ReuseConnections:      true, // else gofish closes the connection after each request
		NoModifyTransport:     true,
	}
	api, err := gofish.ConnectContext(ctx, cfg)
	fallback := ""
	switch {
	case basic:
	case err != nil && sessionLimit(err, c.redactor()):
		// iDRAC and others have few session slots, which other tools (or
		// replicas of this controller) may hold: basic auth needs none.
		fallback = "the BMC's sessions are all in use"
	case err != nil:
		switch statusOf(err) {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			fallback = fmt.Sprintf("the BMC refused to create a session (HTTP %d)", statusOf(err))
		}
	default:
		if sess, serr := api.GetSession(); serr != nil || sess.Token == "" {
			// A session without a token would send every request
			// unauthenticated. It still holds one of the BMC's few
			// session slots: give it back, with the basic credentials.
			fallback = "the BMC created a session without an X-Auth-Token"
			if serr == nil && sess.ID != "" {
				id := sess.ID
				c.o.background(func() {
					ctx, cancel := context.WithTimeout(context.Background(), logoutTimeout)
					defer cancel()
					req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.endpoint+id, nil)
					if err != nil {
						return
					}
					req.SetBasicAuth(c.user, c.password)
					if resp, err := c.httpc.Do(req); err == nil {
						_ = resp.Body.Close()
					}
				})
			}
		}
	}
	if fallback != "" {
		c.o.log.Info("using basic auth: "+fallback, "bmc", c.endpoint)
		c.mu.Lock()
		c.basic = true
		c.mu.Unlock()
		cfg.BasicAuth = true
		api, err = gofish.ConnectContext(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	c.o.log.Debug("redfish login", "bmc", c.endpoint, "user", c.user, "session", !cfg.BasicAuth)
	return api, nil
}

type rootInfo struct {
	sessions string
	systems  string
	// expand is the $expand query the BMC advertises for a collection's
	// members (ProtocolFeaturesSupported.ExpandQuery), "" for none.
	expand string
	// What the BMC answered, for primedRoot.
	body   []byte
	header http.Header
}

// primedRoot answers the first GET of the service root with the
// document the probe has just read, and passes every other request on.
type primedRoot struct {
	next http.RoundTripper
	path string
	root rootInfo
	used atomic.Bool
}

func (p *primedRoot) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet || strings.TrimSuffix(r.URL.Path, "/") != strings.TrimSuffix(p.path, "/") ||
		!p.used.CompareAndSwap(false, true) {
		return p.next.RoundTrip(r)
	}
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        p.root.header.Clone(),
		Body:          io.NopCloser(bytes.NewReader(p.root.body)),
		ContentLength: int64(len(p.root.body)),
		Request:       r,
	}, nil
}

// probe reads the (unauthenticated) service root once per BMC to learn
// whether it offers sessions: gofish would otherwise fail the login of a
// BMC without a SessionService.
func (c *conn) probe(ctx context.Context) (rootInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint+schemas.DefaultServiceRoot, nil)
	if err != nil {
		return rootInfo{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.httpc.Do(req)
	if err != nil {
		return rootInfo{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDoc))
	if err != nil {
		return rootInfo{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return rootInfo{}, schemas.ConstructError(resp.StatusCode, body)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return rootInfo{}, fmt.Errorf("%s is not a Redfish service root: %w", c.endpoint+schemas.DefaultServiceRoot, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return rootInfo{}, &shapeError{what: "service root is not a JSON object"}
	}
	d := doc(m)
	return rootInfo{sessions: d.obj("Links").link("Sessions"), systems: d.link("Systems"), expand: expandQuery(d),
		body: body, header: resp.Header}, nil
}

// expandQuery is the query that reads a collection with its members
// inline, in the form the service root says the BMC takes (DSP0266
// ProtocolFeaturesSupported.ExpandQuery): "." (subordinate resources,
// which a collection's Members are) where it takes NoLinks, else "*",
// one level where it takes Levels. "" where it advertises neither: many
// BMCs ignore or refuse a query they do not know.
func expandQuery(root doc) string {
	eq := root.obj("ProtocolFeaturesSupported").obj("ExpandQuery")
	q := ""
	if v, _ := eq.boolean("NoLinks"); v {
		q = "$expand=."
	} else if v, _ := eq.boolean("ExpandAll"); v {
		q = "$expand=*"
	} else {
		return ""
	}
	if v, _ := eq.boolean("Levels"); v {
		q += "($levels=1)"
	}
	return q
}

// resolveSystem returns the BMC's only system, cached per BMC.
func (c *conn) resolveSystem(api *gofish.APIClient) (string, error) {
	c.mu.Lock()
	if s := c.defaultSystem; s != "" {
		c.mu.Unlock()
		return s, nil
	}
	c.mu.Unlock()
	out, err := c.resolve(api, "")
	if err != nil {
		return "", err
	}
	p := out.ID
	if p == "" && len(out.Members) == 1 {
		// An id the API would not take as a system_id is still the path.
		p = out.Members[0]
	}
	c.mu.Lock()
	c.defaultSystem = p
	c.mu.Unlock()
	return p, nil
}

func (c *conn) forgetSystem(path string) {
	c.mu.Lock()
	if c.defaultSystem == path {
		c.defaultSystem = ""
	}
	c.mu.Unlock()
}

// sessionLimit reports whether a refused login says the BMC's session
// slots are full (Redfish Base SessionLimitExceeded, iDRAC's RAC0218,
// others' own words).
func sessionLimit(err error, secrets *redact.Secrets) bool {
	he, ok := asHTTPError(err, secrets)
	var h *HTTPError
	if !ok || !errors.As(he, &h) {
		return false
	}
	if strings.HasSuffix(h.MessageID, "SessionLimitExceeded") || strings.Contains(h.MessageID, "RAC0218") {
		return true
	}
	msg := strings.ToLower(h.Message)
	return strings.Contains(msg, "session") &&
		(strings.Contains(msg, "maximum") || strings.Contains(msg, "limit") || strings.Contains(msg, "exceed") || strings.Contains(msg, "too many"))
}
