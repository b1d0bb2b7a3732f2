// Package apiclient is the typed client of the controller's REST API v1
// (internal/api holds the wire types). The Terraform provider and the CLI
// talk to the controller only through it.
//
// Every method takes a context and honours it, including while waiting to
// retry. Transport failures and 502/503/504 answers are retried with
// exponential backoff (or after the server's Retry-After) for up to
// RetryWindow, long enough to ride through a controller restart or a
// database failover; a POST is retried only when the request certainly
// never reached the server, or when it carries an Idempotency-Key (the
// creates do: the server then creates once however often it is sent). A DELETE that finds the
// object gone on a retry has succeeded: an earlier attempt whose answer
// was lost did the work. Error responses become *APIError, which matches
// the sentinel errors (ErrNotFound, ...) with errors.Is.
//
// The bearer token is sent in the Authorization header and nowhere else:
// it never appears in errors or log fields, and request bodies (which may
// hold BMC passwords) are never logged.
package apiclient

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// Defaults of Options.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxRetries   = 50
	DefaultRetryWaitMin = 250 * time.Millisecond
	DefaultRetryWaitMax = 5 * time.Second
	// DefaultRetryWindow covers a database outage of a minute (a restart,
	// a failover) with room to spare: the controller answers 503 with
	// Retry-After meanwhile, and terraform should not fail over a blip.
	DefaultRetryWindow = 90 * time.Second

	maxResponseBytes = 16 << 20
	mergePatchType   = "application/merge-patch+json"
)

// LogFunc receives one line per HTTP attempt. Fields hold the method, path,
// status, attempt and duration; never headers or bodies.
type LogFunc func(ctx context.Context, msg string, fields map[string]any)

// Options configure a Client. The zero value is usable.
type Options struct {
	// Token is the bearer token. It is only ever put in the Authorization
	// header.
	Token string
	// CAFile is a PEM bundle of extra roots to trust for HTTPS; CAPEM the
	// same, inline.
	CAFile string
	CAPEM  []byte
	// Insecure skips TLS certificate verification.
	Insecure bool
	// Timeout bounds each HTTP attempt (not the whole call: use the
	// context for that). Default DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is the number of retries after the first attempt; 0 means
	// DefaultMaxRetries, a negative value disables retries.
	MaxRetries int
	// RetryWindow is how long after its first attempt a request may still
	// be retried: no retry starts later than that. 0 means
	// DefaultRetryWindow.
	RetryWindow time.Duration
	// RetryWaitMin and RetryWaitMax bound the backoff between attempts.
	RetryWaitMin time.Duration
	RetryWaitMax time.Duration
	// UserAgent is sent as User-Agent.
	UserAgent string
	// Log, if set, receives a line per attempt.
	Log LogFunc
	// Transport replaces the HTTP transport (tests); TLS options are then
	// ignored.
	Transport http.RoundTripper
}

// Client is a client of one controller. It is safe for concurrent use.
type Client struct {
	base       string // endpoint without trailing slash
	rc         *resty.Client
	maxRetries int
	waitMin    time.Duration
	waitMax    time.Duration
	window     time.Duration
	log        LogFunc
	// token and http serve the console WebSocket (DialConsole), which
	// resty does not speak.
	token string
	http  *http.Client
	// now and sleep are the clock; tests replace them to run a minute of
	// retries in no time.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns a client of the controller at endpoint (http:// or
// https://host[:port][/prefix]).
func New(endpoint string, opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil {
		return nil, fmt.Errorf("invalid endpoint: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("invalid endpoint %q: scheme must be http or https", u.Redacted())
	}
	if u.Host == "" {
		return nil, fmt.Errorf("invalid endpoint %q: no host", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("invalid endpoint %q: must not have a query or fragment", u.Redacted())
	}
	if u.User != nil {
		return nil, errors.New("invalid endpoint: credentials belong in the token, not in the URL")
	}

	transport := opts.Transport
	if transport == nil {
		tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
		if opts.Insecure {
			tlsConfig.InsecureSkipVerify = true //nolint:gosec // operator's explicit choice
		}
		pem := opts.CAPEM
		if opts.CAFile != "" {
			b, err := os.ReadFile(opts.CAFile)
			if err != nil {
				return nil, fmt.Errorf("reading CA file: %w", err)
			}
			pem = append(append([]byte{}, pem...), b...)
		}
		if len(pem) > 0 {
			pool, err := x509.SystemCertPool()
			if err != nil || pool == nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, errors.New("CA bundle holds no PEM certificate")
			}
			tlsConfig.RootCAs = pool
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tlsConfig
		t.MaxIdleConnsPerHost = 8
		transport = t
	}

	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c := &Client{
		base:       strings.TrimRight(u.String(), "/"),
		maxRetries: opts.MaxRetries,
		waitMin:    opts.RetryWaitMin,
		waitMax:    opts.RetryWaitMax,
		window:     opts.RetryWindow,
		log:        opts.Log,
		token:      opts.Token,
		// No redirects: never hand the token to another URL.
		http: &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		now:   time.Now,
		sleep: sleepCtx,
	}
	if c.maxRetries == 0 {
		c.maxRetries = DefaultMaxRetries
	} else if c.maxRetries < 0 {
		c.maxRetries = 0
	}
	if c.waitMin <= 0 {
		c.waitMin = DefaultRetryWaitMin
	}
	if c.waitMax <= 0 {
		c.waitMax = DefaultRetryWaitMax
	}
	if c.waitMax < c.waitMin {
		c.waitMax = c.waitMin
	}
	if c.window <= 0 {
		c.window = DefaultRetryWindow
	}

	c.rc = resty.New().
		SetTransport(transport).
		SetTimeout(timeout).
		SetRedirectPolicy(resty.NoRedirectPolicy()). // never hand the token to another URL
		SetRetryCount(0).                            // retries are ours: see do
		SetLogger(discardLogger{}).
		SetDisableWarn(true).
		SetResponseBodyLimit(maxResponseBytes).
		SetHeader("Accept", "application/json, "+api.ProblemContentType)
	if opts.Token != "" {
		c.rc.SetAuthToken(opts.Token)
	}
	if opts.UserAgent != "" {
		c.rc.SetHeader("User-Agent", opts.UserAgent)
	}
	return c, nil
}

// Endpoint returns the base URL the client talks to.
func (c *Client) Endpoint() string { return c.base }

// request is one API call.
type request struct {
	method      string
	path        string // under the endpoint, e.g. /v1/nodes
	query       url.Values
	body        any
	contentType string
	ifMatch     string
	// idempotencyKey, on a create, makes the server carry the request out
	// once however often it is sent, so a POST whose answer was lost is
	// retried like an idempotent method.
	idempotencyKey string
	out            any // decoded from a 2xx body when non-nil
}

// retryable reports whether r may be sent again after an answer that
// may have come after the server acted.
func (r request) retryable() bool { return idempotent(r.method) || r.idempotencyKey != "" }

// newIdempotencyKey is a fresh key for one create (all its attempts).
func newIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b) // never fails on Linux
	return "idk_" + hex.EncodeToString(b)
}

// do runs r with retries and returns the response headers of the final
// attempt.
func (c *Client) do(ctx context.Context, r request) (http.Header, error) {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return nil, fmt.Errorf("%s %s: encoding request: %w", r.method, r.path, err)
		}
	}
	first := c.now()
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
		}
		req := c.rc.R().SetContext(ctx)
		if r.query != nil {
			req.SetQueryParamsFromValues(r.query)
		}
		if body != nil {
			ct := r.contentType
			if ct == "" {
				ct = "application/json"
			}
			req.SetHeader("Content-Type", ct).SetBody(body)
		}
		if r.ifMatch != "" {
			req.SetHeader("If-Match", r.ifMatch)
		}
		if r.idempotencyKey != "" {
			req.SetHeader("Idempotency-Key", r.idempotencyKey)
		}
		start := time.Now()
		resp, err := req.Execute(r.method, c.base+r.path)
		fields := map[string]any{"method": r.method, "path": r.path, "attempt": attempt + 1, "duration_ms": time.Since(start).Milliseconds()}

		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, fmt.Errorf("%s %s: %w", r.method, r.path, ctxErr)
			}
			err = cleanTransportError(err)
			fields["error"] = err.Error()
			c.logf(ctx, "baremetal API request failed", fields)
			if retryableTransportError(r.retryable(), err) {
				retry, werr := c.backoff(ctx, first, attempt, 0)
				if werr != nil {
					return nil, fmt.Errorf("%s %s: %w (after %v)", r.method, r.path, werr, err)
				}
				if retry {
					continue
				}
			}
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
		}

		status := resp.StatusCode()
		fields["status"] = status
		c.logf(ctx, "baremetal API request", fields)
		if status >= 200 && status < 300 {
			if r.out != nil && len(bytes.TrimSpace(resp.Body())) > 0 {
				if err := json.Unmarshal(resp.Body(), r.out); err != nil {
					return resp.Header(), fmt.Errorf("%s %s: decoding %d response: %w", r.method, r.path, status, err)
				}
			}
			return resp.Header(), nil
		}
		if status == http.StatusNotFound && r.method == http.MethodDelete && attempt > 0 {
			// Gone on a retry: an earlier attempt, whose answer was lost
			// or was a gateway's error, did the work (or someone else
			// did). Either way what the caller wanted holds.
			return resp.Header(), nil
		}
		if retryableStatus(r.retryable(), status) {
			retry, werr := c.backoff(ctx, first, attempt, retryAfter(resp.Header()))
			if werr != nil {
				return nil, fmt.Errorf("%s %s: %w (after status %d)", r.method, r.path, werr, status)
			}
			if retry {
				continue
			}
		}
		return resp.Header(), &APIError{Method: r.method, Path: r.path, Problem: decodeProblem(resp)}
	}
}

func (c *Client) logf(ctx context.Context, msg string, fields map[string]any) {
	if c.log != nil {
		c.log(ctx, msg, fields)
	}
}

// backoff decides whether attempt (0-based) of a request that started at
// start may be followed by another, and if so waits before it: exponential
// backoff with full jitter between waitMin and waitMax, or the server's
// Retry-After (capped at waitMax) when it gave one. It answers false when
// the retries or the window are spent (no retry starts after the window),
// and returns early with the context's error.
func (c *Client) backoff(ctx context.Context, start time.Time, attempt int, after time.Duration) (bool, error) {
	if attempt >= c.maxRetries {
		return false, nil
	}
	d := after
	if d <= 0 {
		ceil := c.waitMin << min(attempt, 16)
		if ceil > c.waitMax || ceil <= 0 {
			ceil = c.waitMax
		}
		d = c.waitMin + rand.N(ceil-c.waitMin+1)
	}
	d = min(d, c.waitMax)
	if c.now().Add(d).Sub(start) > c.window {
		return false, nil
	}
	if err := c.sleep(ctx, d); err != nil {
		return false, err
	}
	return true, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// idempotent methods may be sent twice with the effect of once. PATCH here
// is JSON Merge Patch, which is idempotent.
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, http.MethodPatch:
		return true
	}
	return false
}

// retryableStatus: gateway trouble and unavailability are transient. A
// POST that got any answer may have been applied, so it is not repeated.
func retryableStatus(retryable bool, status int) bool {
	if !retryable {
		return false
	}
	switch status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryableTransportError: connection-level failures are transient, TLS
// verification failures are not. A non-idempotent request is retried only
// when it was never sent (the connection could not be opened).
func retryableTransportError(retryable bool, err error) bool {
	// The caller's context was checked before: a deadline here is the
	// per-attempt timeout, which is transient.
	if errors.Is(err, context.Canceled) {
		return false
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verify           *tls.CertificateVerificationError
		record           tls.RecordHeaderError
	)
	if errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &record) {
		return false
	}
	if notSent(err) {
		return true
	}
	if !retryable {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// notSent reports whether err happened before any byte of the request went
// out: the dial failed or the name did not resolve.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED)
}

// cleanTransportError strips the *url.Error wrapper (whose message repeats
// the method and URL we already prefix) but keeps the cause.
func cleanTransportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// decodeProblem reads an error response. Anything that is not a problem
// document (a proxy's HTML page) becomes a synthetic problem with a short,
// printable excerpt of the body.
func decodeProblem(resp *resty.Response) api.Problem {
	status := resp.StatusCode()
	var p api.Problem
	body := bytes.TrimSpace(resp.Body())
	if len(body) > 0 && body[0] == '{' && json.Unmarshal(body, &p) == nil && (p.Code != "" || p.Detail != "" || p.Title != "") {
		if p.Status == 0 {
			p.Status = status
		}
		if p.Code == "" && strings.HasPrefix(p.Type, api.ProblemTypeBase) {
			p.Code = api.ProblemCode(strings.TrimPrefix(p.Type, api.ProblemTypeBase))
		}
		// The status line is the truth for retries and sentinels.
		p.Status = status
		return p
	}
	p = api.Problem{Status: status, Title: http.StatusText(status)}
	if excerpt := printable(body, 200); excerpt != "" {
		p.Detail = excerpt
	} else {
		p.Detail = resp.Status()
	}
	return p
}

func printable(b []byte, n int) string {
	s := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, string(b))
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// escape makes an id or a name one path segment.
func escape(idOrName string) string { return url.PathEscape(idOrName) }

type discardLogger struct{}

func (discardLogger) Errorf(string, ...any) {}
func (discardLogger) Warnf(string, ...any)  {}
func (discardLogger) Debugf(string, ...any) {}
