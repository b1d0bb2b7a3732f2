// Package imagecheck looks, from the controller, at an image URL before a
// deploy hands it to a BMC: a HEAD, then a GET of the first sector (a range
// request), so that an image nobody can fetch fails its instance at once
// with a clear reason (DNS, connection refused, 404, a length that does not
// add up) instead of surfacing later as a BMC error, or not at all.
//
// What the controller sees is not always what the BMC sees: the two may
// sit on different networks or use different DNS. The check therefore only
// fails for answers that say the image is not there (no such host, refused,
// 404/410, access denied, an empty or inconsistent length), and calls
// everything that may pass by itself (5xx, 429, timeouts, resets, a DNS
// server that did not answer) transient, for the caller to retry a few
// times before blaming the image.
//
// An image URL is the user's: the check must not become a way to make
// the controller fetch what the user cannot reach. It goes through a
// netguard.Policy that refuses, before any request leaves (proxy or not,
// each redirect hop too), cloud metadata services, link-local addresses,
// the controller's loopback and its own API, and what the operator denies
// (--image-url-deny); --image-url-allow exempts ranges. And it tells the
// instance's owner only that an image is unreachable, with the HTTP status
// when there was one (Error.Public): why no answer came (refused, timeout,
// no such host, refused by the policy) would make image URLs a scanner of
// the controller's network, so that detail is for admins (Error.Reason,
// in the node's events).
package imagecheck

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/netguard"
)

// probe is how much of the image the GET asks for: one CD sector.
const probe = 2048

// DefaultTimeout bounds one whole check (HEAD and GET).
const DefaultTimeout = 10 * time.Second

// Error is a failed check. URL names the image without userinfo, query
// or fragment (presigned URLs carry tokens there). Reason is the detail,
// for admins (a node's events): it may name addresses and say how the
// network answered. Public is what the instance's owner is told.
type Error struct {
	URL    string
	Reason string
	// Public is Reason as the instance's owner may see it: that the image
	// is unreachable from the controller (with the HTTP status when the
	// server answered one), or what is wrong with the image served.
	Public string
	// Transient: the image server (or the network to it) may answer
	// differently soon; retrying is worthwhile.
	Transient bool
	Err       error
}

func (e *Error) Error() string { return "image " + e.URL + ": " + e.Reason }
func (e *Error) Unwrap() error { return e.Err }

// PublicError is Error for the instance's owner: Public instead of Reason.
func (e *Error) PublicError() string { return "image " + e.URL + ": " + e.Public }

// unreachable is the public reason of every failure without an answer.
const unreachable = "unreachable from the controller"

// IsTransient reports whether err is a check failure worth retrying.
func IsTransient(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Transient
}

// Options configures a Checker.
type Options struct {
	// Timeout bounds one check; default DefaultTimeout.
	Timeout time.Duration
	// Allow and Deny are the operator's --image-url-allow and
	// --image-url-deny (netguard.Policy's): Allow exempts ranges from the
	// refusal of loopback and link-local addresses (a metadata address
	// only by its exact /32 or /128), Deny refuses more.
	Allow, Deny []netip.Prefix
	// Own are the controller's listen addresses: always refused at their
	// port (an unspecified address: every address of the host).
	Own []netip.AddrPort
	// Proxy chooses a request's proxy; nil: the environment's
	// (HTTP_PROXY, HTTPS_PROXY, NO_PROXY).
	Proxy func(*http.Request) (*url.URL, error)
}

// Checker checks image URLs. It is safe for concurrent use.
type Checker struct {
	client  *http.Client
	timeout time.Duration
}

// New returns a Checker. Its client follows redirects (BMCs do), honours
// the proxy environment, and does not verify TLS certificates: BMCs
// commonly accept self-signed image servers, and the check reads at most
// one sector and trusts none of it (the checksum is for trust). Every
// request, through a proxy or not and each redirect hop, goes through a
// netguard.Policy (see the package doc): a refused target fails the check
// before anything is sent to it.
func New(opts Options) *Checker {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Proxy == nil {
		opts.Proxy = http.ProxyFromEnvironment
	}
	policy := &netguard.Policy{Allow: opts.Allow, Deny: opts.Deny, DenyLocal: true, Own: opts.Own}
	transport := &http.Transport{
		Proxy:                 opts.Proxy,
		TLSClientConfig:       &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see New
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
		DisableCompression:    true, // lengths are of the image, not of a gzip of it
		DisableKeepAlives:     true, // one check now and then: nothing to keep
	}
	return &Checker{
		timeout: opts.Timeout,
		client:  &http.Client{Transport: policy.Guard(transport, &net.Dialer{Timeout: opts.Timeout})},
	}
}

// Check looks at imageURL: nil when it serves a non-empty image whose
// length adds up, else an *Error.
func (c *Checker) Check(ctx context.Context, imageURL string) error {
	u, err := url.Parse(imageURL)
	shown := redact(imageURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &Error{URL: shown, Reason: "not an http:// or https:// URL", Public: "not an http:// or https:// URL"}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	headLen := int64(-1)
	resp, err := c.do(ctx, http.MethodHead, imageURL)
	if err != nil {
		return c.transportError(ctx, shown, u, err)
	}
	_ = resp.Body.Close()
	switch st := resp.StatusCode; {
	case st/100 == 2:
		headLen = resp.ContentLength
	case st == http.StatusBadRequest, st == http.StatusUnauthorized, st == http.StatusForbidden,
		st == http.StatusMethodNotAllowed, st == http.StatusNotImplemented:
		// Some servers refuse HEAD (405, 501, or 403 for URLs signed
		// for GET only): the GET below decides.
	default:
		return statusError(shown, "HEAD", st)
	}

	resp, err = c.do(ctx, http.MethodGet, imageURL)
	if err != nil {
		return c.transportError(ctx, shown, u, err)
	}
	defer resp.Body.Close()
	var total int64
	switch st := resp.StatusCode; st {
	case http.StatusPartialContent:
		start, end, size, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != 0 || end < start {
			return &Error{URL: shown, Reason: fmt.Sprintf("wrong length: the server answered the request for its first %d bytes with Content-Range %q", probe, resp.Header.Get("Content-Range")), Public: wrongLength}
		}
		total = size // -1: "*", unknown
		if err := readProbe(resp.Body, end-start+1); err != nil {
			return &Error{URL: shown, Reason: "wrong length: " + err.Error(), Public: wrongLength, Err: err}
		}
	case http.StatusOK:
		total = resp.ContentLength
		want := int64(probe)
		if total >= 0 && total < want {
			want = total
		}
		if err := readProbe(resp.Body, want); err != nil {
			return &Error{URL: shown, Reason: "wrong length: " + err.Error(), Public: wrongLength, Err: err}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		if _, _, size, ok := contentRange(resp.Header.Get("Content-Range")); ok && size == 0 {
			return &Error{URL: shown, Reason: "wrong length: the image is empty (0 bytes)", Public: emptyImage}
		}
		return &Error{URL: shown, Reason: fmt.Sprintf("wrong length: the server cannot serve the image's first %d bytes (416 Range Not Satisfiable)", probe), Public: wrongLength}
	default:
		return statusError(shown, "GET", st)
	}
	switch {
	case total == 0 || headLen == 0:
		return &Error{URL: shown, Reason: "wrong length: the image is empty (0 bytes)", Public: emptyImage}
	case headLen > 0 && total > 0 && headLen != total:
		return &Error{URL: shown, Reason: fmt.Sprintf("wrong length: HEAD says %d bytes, GET says %d", headLen, total), Public: wrongLength}
	}
	return nil
}

func (c *Checker) do(ctx context.Context, method, imageURL string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, imageURL, nil)
	if err != nil {
		return nil, err
	}
	if method == http.MethodGet {
		req.Header.Set("Range", fmt.Sprintf("bytes=0-%d", probe-1))
	}
	req.Header.Set("User-Agent", "baremetal-controller image check")
	return c.client.Do(req)
}

// The public reasons of an image served wrong: the user's to fix.
const (
	wrongLength = "wrong length (the server's answers about the image's size do not add up)"
	emptyImage  = "the image is empty (0 bytes)"
)

// readProbe reads want bytes of body (at most probe), failing when the
// server sends fewer than it promised.
func readProbe(body io.Reader, want int64) error {
	if want > probe {
		want = probe
	}
	n, err := io.Copy(io.Discard, io.LimitReader(body, want))
	if n < want {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("the server promised %d bytes and sent %d (%v)", want, n, err)
	}
	return nil
}

// contentRange parses "bytes START-END/SIZE" (SIZE may be "*": -1) and
// "bytes */SIZE" (start and end -1).
func contentRange(h string) (start, end, size int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(h), "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, sz, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	size = -1
	if sz != "*" {
		v, err := strconv.ParseInt(sz, 10, 64)
		if err != nil || v < 0 {
			return 0, 0, 0, false
		}
		size = v
	}
	if rng == "*" {
		return -1, -1, size, true
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	var err1, err2 error
	start, err1 = strconv.ParseInt(a, 10, 64)
	end, err2 = strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	return start, end, size, true
}

// statusError reports a non-success answer: 5xx, 408 and 429 may pass,
// anything else says the image is not to be had.
func statusError(shown, method string, status int) error {
	e := &Error{URL: shown, Reason: fmt.Sprintf("%s answered %d %s", method, status, http.StatusText(status)),
		Public: fmt.Sprintf("%s (HTTP %d %s)", unreachable, status, http.StatusText(status))}
	switch {
	case status == http.StatusNotFound, status == http.StatusGone:
		e.Reason = fmt.Sprintf("not found: the server answered %s with %d %s", method, status, http.StatusText(status))
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		e.Reason = fmt.Sprintf("access denied: the server answered %s with %d %s", method, status, http.StatusText(status))
	case status >= 500, status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		e.Transient = true
		e.Reason = fmt.Sprintf("the image server answered %s with %d %s", method, status, http.StatusText(status))
	}
	return e
}

// transportError explains why no answer came (to admins: to the owner,
// the image is unreachable).
func (c *Checker) transportError(ctx context.Context, shown string, u *url.URL, err error) error {
	e := &Error{URL: shown, Public: unreachable, Err: err}
	var dns *net.DNSError
	var denied *netguard.DeniedError
	switch {
	case errors.As(err, &denied):
		e.Reason = "refused by the controller's image URL policy (--image-url-allow, --image-url-deny): " + denied.Error()
	case errors.As(err, &dns):
		if dns.IsNotFound {
			e.Reason = fmt.Sprintf("DNS: host %q not found", dns.Name)
		} else {
			e.Transient = true
			e.Reason = fmt.Sprintf("DNS lookup of %q failed: %s", dns.Name, dns.Err)
		}
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Reason = fmt.Sprintf("connection refused by %s", hostPort(u))
	case ctx.Err() != nil || isTimeout(err):
		e.Transient = true
		e.Reason = fmt.Sprintf("no answer from %s within %s", hostPort(u), c.timeout)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		e.Transient = true
		e.Reason = fmt.Sprintf("connection to %s failed: %s", hostPort(u), rootCause(err))
	case isTLSError(err):
		e.Reason = fmt.Sprintf("TLS with %s failed: %s", hostPort(u), rootCause(err))
	default:
		e.Transient = true
		e.Reason = fmt.Sprintf("fetching from %s failed: %s", hostPort(u), rootCause(err))
	}
	return e
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isTLSError(err error) bool {
	var rh tls.RecordHeaderError
	var ae tls.AlertError
	return errors.As(err, &rh) || errors.As(err, &ae) || strings.Contains(err.Error(), "tls: ")
}

// rootCause drops net/http's "Get \"URL\": " prefix, which would show the
// URL unredacted.
func rootCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return u.Hostname() + ":443"
	}
	return u.Hostname() + ":80"
}

// redact shows an image URL without userinfo, query or fragment.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
