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
package imagecheck

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// probe is how much of the image the GET asks for: one CD sector.
const probe = 2048

// DefaultTimeout bounds one whole check (HEAD and GET).
const DefaultTimeout = 10 * time.Second

// Error is a failed check. Reason is safe to show to the instance's owner:
// it names the image without userinfo, query or fragment (presigned URLs
// carry tokens there).
type Error struct {
	URL    string
	Reason string
	// Transient: the image server (or the network to it) may answer
	// differently soon; retrying is worthwhile.
	Transient bool
	Err       error
}

func (e *Error) Error() string { return "image " + e.URL + ": " + e.Reason }
func (e *Error) Unwrap() error { return e.Err }

// IsTransient reports whether err is a check failure worth retrying.
func IsTransient(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Transient
}

// Options configures a Checker.
type Options struct {
	// Timeout bounds one check; default DefaultTimeout.
	Timeout time.Duration
}

// Checker checks image URLs. It is safe for concurrent use.
type Checker struct {
	client  *http.Client
	timeout time.Duration
}

// errLinkLocal stops a check before it dials a link-local address.
var errLinkLocal = errors.New("link-local address")

// New returns a Checker. Its client follows redirects (BMCs do), honours
// the proxy environment, and does not verify TLS certificates: BMCs
// commonly accept self-signed image servers, and the check reads at most
// one sector and trusts none of it (the checksum is for trust). It never
// dials link-local addresses (cloud metadata services live there): a URL
// that points at one is not checked at all.
func New(opts Options) *Checker {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	dialer := &net.Dialer{
		Timeout: opts.Timeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if ip := net.ParseIP(host); ip != nil && (ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast()) {
				return errLinkLocal
			}
			return nil
		},
	}
	return &Checker{
		timeout: opts.Timeout,
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:                 http.ProxyFromEnvironment,
				DialContext:           dialer.DialContext,
				TLSClientConfig:       &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see New
				TLSHandshakeTimeout:   opts.Timeout,
				ResponseHeaderTimeout: opts.Timeout,
				DisableCompression:    true, // lengths are of the image, not of a gzip of it
				DisableKeepAlives:     true, // one check now and then: nothing to keep
			},
		},
	}
}

// Check looks at imageURL: nil when it serves a non-empty image whose
// length adds up, else an *Error. A URL pointing at a link-local address
// passes unchecked (see New).
func (c *Checker) Check(ctx context.Context, imageURL string) error {
	u, err := url.Parse(imageURL)
	shown := redact(imageURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &Error{URL: shown, Reason: "not an http:// or https:// URL"}
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
			return &Error{URL: shown, Reason: fmt.Sprintf("wrong length: the server answered the request for its first %d bytes with Content-Range %q", probe, resp.Header.Get("Content-Range"))}
		}
		total = size // -1: "*", unknown
		if err := readProbe(resp.Body, end-start+1); err != nil {
			return &Error{URL: shown, Reason: "wrong length: " + err.Error(), Err: err}
		}
	case http.StatusOK:
		total = resp.ContentLength
		want := int64(probe)
		if total >= 0 && total < want {
			want = total
		}
		if err := readProbe(resp.Body, want); err != nil {
			return &Error{URL: shown, Reason: "wrong length: " + err.Error(), Err: err}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		if _, _, size, ok := contentRange(resp.Header.Get("Content-Range")); ok && size == 0 {
			return &Error{URL: shown, Reason: "wrong length: the image is empty (0 bytes)"}
		}
		return &Error{URL: shown, Reason: fmt.Sprintf("wrong length: the server cannot serve the image's first %d bytes (416 Range Not Satisfiable)", probe)}
	default:
		return statusError(shown, "GET", st)
	}
	switch {
	case total == 0 || headLen == 0:
		return &Error{URL: shown, Reason: "wrong length: the image is empty (0 bytes)"}
	case headLen > 0 && total > 0 && headLen != total:
		return &Error{URL: shown, Reason: fmt.Sprintf("wrong length: HEAD says %d bytes, GET says %d", headLen, total)}
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
	e := &Error{URL: shown, Reason: fmt.Sprintf("%s answered %d %s", method, status, http.StatusText(status))}
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

// transportError explains why no answer came. A link-local target is not
// an error (the check is skipped).
func (c *Checker) transportError(ctx context.Context, shown string, u *url.URL, err error) error {
	if errors.Is(err, errLinkLocal) {
		return nil
	}
	e := &Error{URL: shown, Err: err}
	var dns *net.DNSError
	switch {
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
