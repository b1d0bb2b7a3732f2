package imagecheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/netguard"
)

// counting is an HTTP server on addr that counts the requests reaching it.
func counting(t *testing.T, addr string, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

// wantRefused checks a check refused by the image URL policy: permanent,
// the detail (for admins) saying why, the public reason (for the
// instance's owner) only "unreachable".
func wantRefused(t *testing.T, err error, why string) {
	t.Helper()
	wantErr(t, err, false, "not allowed", why)
	e := err.(*Error)
	if e.Public != "unreachable from the controller" {
		t.Errorf("public reason %q, want only that the image is unreachable", e.Public)
	}
}

// With a proxy configured (HTTP_PROXY), the metadata service is still
// never asked: the target is judged before the proxy gets the request
// (issue #26, item 21), by address, by name, and by what a name resolves
// to; the other metadata addresses too (item 22).
func TestCheckMetadataThroughProxy(t *testing.T) {
	proxy, seen := counting(t, "127.0.0.1:0", serveImage)
	pu, _ := url.Parse(proxy.URL)
	c := New(Options{Timeout: 2 * time.Second, Proxy: http.ProxyURL(pu)})
	for _, u := range []string{
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"http://[fd00:ec2::254]/latest/meta-data/",
		"http://100.100.100.200/latest/meta-data/",
		"http://metadata.google.internal/computeMetadata/v1/",
	} {
		wantRefused(t, c.Check(context.Background(), u), "metadata")
	}
	if n := seen.Load(); n != 0 {
		t.Fatalf("the proxy was asked %d times for a metadata service", n)
	}
	// An allowed target does go through the proxy (here it answers for
	// a TEST-NET address, which is never dialed).
	if err := c.Check(context.Background(), "http://192.0.2.10/boot.iso"); err != nil || seen.Load() == 0 {
		t.Fatalf("an allowed image through the proxy: %v (proxy asked %d times)", err, seen.Load())
	}
}

// By default the controller's loopback and its own API are refused, also
// as a redirect's target, so a member cannot probe them (issue #26, item
// 23); the refusal says nothing a port scan could use, to the member.
// --image-url-allow exempts an address range, never the API itself.
func TestCheckLocalTargets(t *testing.T) {
	api, apiSeen := counting(t, "127.0.0.1:0", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	images, _ := counting(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect.iso" {
			http.Redirect(w, r, api.URL+"/v1/tokens", http.StatusFound)
			return
		}
		serveImage(w, r)
	})
	own := []netip.AddrPort{netip.MustParseAddrPort(api.Listener.Addr().String())}
	def := New(Options{Timeout: 2 * time.Second, Own: own})
	wantRefused(t, def.Check(context.Background(), api.URL+"/v1/tokens"), "the controller's own API address")
	wantRefused(t, def.Check(context.Background(), images.URL+"/boot.iso"), "loopback")
	wantRefused(t, def.Check(context.Background(), "http://localhost:1/boot.iso"), "loopback")

	allow, err := netguard.ParsePrefixes("--image-url-allow", "127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	lo := New(Options{Timeout: 2 * time.Second, Own: own, Allow: allow})
	if err := lo.Check(context.Background(), images.URL+"/boot.iso"); err != nil {
		t.Fatalf("an allowed loopback image: %v", err)
	}
	wantRefused(t, lo.Check(context.Background(), images.URL+"/redirect.iso"), "the controller's own API address")
	if n := apiSeen.Load(); n != 0 {
		t.Fatalf("the controller's API was asked %d times", n)
	}
	deny, _ := netguard.ParsePrefixes("--image-url-deny", "127.0.0.2")
	wantRefused(t, New(Options{Timeout: 2 * time.Second, Allow: allow, Deny: deny}).Check(context.Background(), images.URL+"/boot.iso"), "denied range 127.0.0.2/32")
}

// What the instance's owner is told: that the image is unreachable, with
// the HTTP status when there was one; never why no answer came (refused,
// no route, timeout, DNS), which would make image URLs a port scanner of
// the controller's network. The admin's detail stays in Error().
func TestCheckPublicReasons(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/boot.iso":
			serveImage(w, r)
		case "/down.iso":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/empty.iso":
			http.ServeContent(w, r, "empty.iso", time.Time{}, strings.NewReader(""))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	allow, _ := netguard.ParsePrefixes("--image-url-allow", "127.0.0.0/8")
	c := New(Options{Timeout: 2 * time.Second, Allow: allow})
	for _, tc := range []struct{ url, detail, public string }{
		{srv.URL + "/missing.iso?sig=s3cr3t", "not found: the server answered HEAD with 404 Not Found", "unreachable from the controller (HTTP 404 Not Found)"},
		{srv.URL + "/down.iso", "the image server answered HEAD with 503", "unreachable from the controller (HTTP 503 Service Unavailable)"},
		{srv.URL + "/empty.iso", "the image is empty (0 bytes)", "the image is empty (0 bytes)"},
		{closedURL + "/boot.iso", "connection refused by " + strings.TrimPrefix(closedURL, "http://"), "unreachable from the controller"},
		{"http://images.nope.invalid/boot.iso", `DNS: host "images.nope.invalid" not found`, "unreachable from the controller"},
	} {
		err := c.Check(context.Background(), tc.url)
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if !strings.Contains(e.Error(), tc.detail) || e.Public != tc.public {
			t.Errorf("%s: detail %q, public %q; want %q and %q", tc.url, e.Error(), e.Public, tc.detail, tc.public)
		}
		if pe := e.PublicError(); !strings.HasPrefix(pe, "image "+redact(tc.url)+": ") || strings.Contains(pe, "s3cr3t") {
			t.Errorf("PublicError %q", pe)
		}
	}
}
