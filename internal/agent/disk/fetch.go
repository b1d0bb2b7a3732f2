package disk

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
	"sync/atomic"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/netguard"
)

// errRestart is how the fetcher asks Write to start over from byte zero:
// the server answered a resume with the whole file (it ignores Range, or
// the file changed), or gave no validator that would make a resume safe.
type errRestart struct{ reason string }

func (e *errRestart) Error() string { return "restart from zero: " + e.reason }

// fetcher is the served file as one io.Reader, across dropped
// connections: a read error mid-body reopens the URL with
// "Range: bytes=N-" and "If-Range: <validator>", so the bytes handed out
// stay the file's bytes in order (and the caller's hash stays right).
type fetcher struct {
	ctx      context.Context
	client   *http.Client
	u        *url.URL
	shown    string // u, redacted: the only form that goes into errors and logs
	stall    time.Duration
	retry    *retrier
	logf     func(string, ...any)
	off      int64 // bytes handed out
	size     int64 // the file's size, -1 when the server did not say
	etag     string
	lastMod  string
	resumes  int
	eof      bool
	received *atomic.Int64 // every byte off the network, counted for Result.Downloaded

	body     io.ReadCloser
	cancel   context.CancelFunc
	watchdog *time.Timer
	stalled  atomic.Bool
	// failed is the fetcher's last error, kept because a decompressor
	// between it and Write may hand its own error up instead.
	failed error
}

// retrier bounds retries: at most max consecutive failures without
// progress, waiting base, 2*base, ... (at most maxBackoff) in between.
type retrier struct {
	max      int
	base     time.Duration
	failures int
}

const maxBackoff = 30 * time.Second

// wait sleeps before the next try, or says there is none left.
func (r *retrier) wait(ctx context.Context) bool {
	if r.failures >= r.max {
		return false
	}
	d := r.base << r.failures
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	r.failures++
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (f *fetcher) Read(p []byte) (int, error) {
	for {
		if f.eof {
			return 0, io.EOF
		}
		if f.body == nil {
			if err := f.open(); err != nil {
				f.failed = err
				return 0, err
			}
		}
		n, err := f.body.Read(p)
		if n > 0 {
			f.off += int64(n)
			f.received.Add(int64(n))
			f.watchdog.Reset(f.stall)
			// Progress resets the retry budget: only failures in a
			// row are bounded, so a long download over a flaky link
			// still finishes, and a dead one still gives up.
			f.retry.failures = 0
		}
		if err == nil {
			return n, nil
		}
		if err == io.EOF {
			if f.size >= 0 && f.off < f.size {
				err = io.ErrUnexpectedEOF
			} else {
				f.closeBody()
				f.eof = true
				return n, io.EOF
			}
		}
		// The connection broke (or stalled) mid-body.
		stalled := f.stalled.Load()
		f.closeBody()
		if f.ctx.Err() != nil {
			f.failed = f.ctx.Err()
			return n, f.ctx.Err()
		}
		if stalled {
			err = fmt.Errorf("no data for %s", f.stall)
		}
		f.logf("image download: connection lost at byte %d of %s: %v", f.off, f.shown, err)
		if n > 0 {
			return n, nil // hand out what arrived; the next Read reopens
		}
		if !f.retry.wait(f.ctx) {
			f.failed = f.giveUp(err)
			return 0, f.failed
		}
	}
}

func (f *fetcher) giveUp(err error) error {
	if f.ctx.Err() != nil {
		return f.ctx.Err()
	}
	return inputErr(CodeImageUnreachable, err, "image download from %s failed after %d bytes and %d retries", f.shown, f.off, f.retry.max)
}

func (f *fetcher) closeBody() {
	if f.body != nil {
		f.body.Close()
		f.body = nil
	}
	if f.watchdog != nil {
		f.watchdog.Stop()
	}
	if f.cancel != nil {
		f.cancel()
	}
}

// Close releases the connection, if one is open.
func (f *fetcher) Close() { f.closeBody() }

// open (re)opens the URL at f.off, retrying what may pass.
func (f *fetcher) open() error {
	if f.off > 0 && f.etag == "" && f.lastMod == "" {
		// Without a validator a resumed request could splice two
		// versions of the file; starting over is slower but sound.
		return &errRestart{reason: "the server sent neither ETag nor Last-Modified, so a resume could mix two versions of the file"}
	}
	for {
		err := f.try()
		if err == nil {
			return nil
		}
		var re *errRestart
		if errors.As(err, &re) || f.ctx.Err() != nil {
			if f.ctx.Err() != nil {
				return f.ctx.Err()
			}
			return err
		}
		var e *Error
		if errors.As(err, &e) && (e.Code != CodeImageUnreachable || e.final) {
			return err // 404, 403, DNS name not found: asking again will not help
		}
		f.logf("image download: %v", err)
		if !f.retry.wait(f.ctx) {
			if f.ctx.Err() != nil {
				return f.ctx.Err()
			}
			return err
		}
	}
}

func (f *fetcher) try() error {
	ctx, cancel := context.WithCancel(f.ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.u.String(), nil)
	if err != nil {
		cancel()
		return inputErr(CodeImageUnreachable, nil, "image URL %s: cannot make a request", f.shown)
	}
	// "identity": the checksum is of the file as served, so no
	// transport-level gzip the client would undo behind our back.
	req.Header.Set("Accept-Encoding", "identity")
	if f.off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(f.off, 10)+"-")
		if f.etag != "" {
			req.Header.Set("If-Range", f.etag)
		} else {
			req.Header.Set("If-Range", f.lastMod)
		}
	}
	f.stalled.Store(false)
	// The watchdog covers the body; the transport's
	// ResponseHeaderTimeout covers the wait for the headers.
	f.watchdog = time.AfterFunc(f.stall, func() { f.stalled.Store(true); cancel() })
	f.cancel = cancel
	resp, err := f.client.Do(req)
	if err != nil {
		stalled := f.stalled.Load()
		f.closeBody()
		if stalled {
			err = fmt.Errorf("no answer for %s", f.stall)
		}
		return f.requestError(err)
	}
	if err := f.accept(resp); err != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // let the connection be reused
		resp.Body.Close()
		f.closeBody()
		return err
	}
	f.body = resp.Body
	f.watchdog.Reset(f.stall)
	return nil
}

// accept checks a response and takes the file's validators from it.
func (f *fetcher) accept(resp *http.Response) error {
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return inputErr(CodeImageNotFound, nil, "image URL %s: HTTP %s", f.shown, resp.Status)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return inputErr(CodeImageDenied, nil, "image URL %s: HTTP %s", f.shown, resp.Status)
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout:
		return inputErr(CodeImageUnreachable, nil, "image URL %s: HTTP %s", f.shown, resp.Status)
	}
	etag := resp.Header.Get("ETag")
	if strings.HasPrefix(etag, "W/") {
		etag = "" // If-Range takes strong validators only (RFC 9110 13.1.5)
	}
	lastMod := resp.Header.Get("Last-Modified")

	if f.off == 0 {
		if resp.StatusCode != http.StatusOK {
			return inputErr(CodeImageHTTP, nil, "image URL %s: HTTP %s, want 200 OK", f.shown, resp.Status)
		}
		f.size = resp.ContentLength
		f.etag, f.lastMod = etag, lastMod
		return nil
	}

	switch resp.StatusCode {
	case http.StatusOK:
		if (f.etag != "" && etag != f.etag) || (f.etag == "" && lastMod != f.lastMod) {
			return &errRestart{reason: "the image changed on the server during the download"}
		}
		return &errRestart{reason: "the server ignores Range requests and sent the whole file again"}
	case http.StatusPartialContent:
		start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != f.off || (f.size >= 0 && total >= 0 && total != f.size) {
			return &errRestart{reason: fmt.Sprintf("the server answered a resume at byte %d with Content-Range %q", f.off, resp.Header.Get("Content-Range"))}
		}
		if (f.etag != "" && etag != "" && etag != f.etag) || (f.etag == "" && lastMod != "" && lastMod != f.lastMod) {
			return &errRestart{reason: "the image changed on the server during the download"}
		}
		f.resumes++
		f.logf("image download: resumed %s at byte %d", f.shown, f.off)
		return nil
	case http.StatusRequestedRangeNotSatisfiable:
		return &errRestart{reason: "the server refused the resume range (416)"}
	}
	return inputErr(CodeImageHTTP, nil, "image URL %s: HTTP %s, want 206 Partial Content", f.shown, resp.Status)
}

// parseContentRange reads "bytes START-END/TOTAL" (TOTAL may be "*": -1).
func parseContentRange(s string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}

// requestError turns a failed request into an error that says what
// happened without the URL's secrets: net/http's *url.Error quotes the
// whole URL, so only its cause is kept.
func (f *fetcher) requestError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if netguard.IsDenied(err) {
		e := inputErr(CodeImageUnreachable, err, "image URL %s: refused", f.shown)
		e.final = true
		return e
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		e := inputErr(CodeImageUnreachable, err, "image URL %s: host not found", f.shown)
		e.final = true
		return e
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return inputErr(CodeImageTLS, err, "image URL %s: TLS certificate not trusted", f.shown)
	}
	if strings.Contains(err.Error(), "stopped after 10 redirects") {
		return inputErr(CodeImageHTTP, nil, "image URL %s: too many redirects", f.shown)
	}
	return inputErr(CodeImageUnreachable, err, "image URL %s", f.shown)
}

// NewClient returns the client images are fetched with, over t (nil: a
// clone of http.DefaultTransport, which honours the proxy environment):
// without transport compression (the checksum is of the file as served),
// waiting at most a minute for response headers, and guarded by the
// agent's netguard.Policy. The agent fetches from the node's network,
// where the node's cloud metadata service may answer: no request, through
// a proxy or not and on no redirect hop, reaches a metadata service or a
// link-local address. The node's loopback is the agent itself, and is
// allowed; the controller's addresses are not the agent's to guard (it
// reaches the controller by design).
func NewClient(t *http.Transport) *http.Client {
	if t == nil {
		t = http.DefaultTransport.(*http.Transport).Clone()
	}
	t.DisableCompression = true
	t.ResponseHeaderTimeout = time.Minute
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: (&netguard.Policy{}).Guard(t, d)}
}
