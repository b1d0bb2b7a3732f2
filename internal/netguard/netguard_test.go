package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDNS answers from a table and never asks a real server: no test here
// sends a packet beyond the loopback.
type fakeDNS map[string][]string

func (f fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

var dns = fakeDNS{
	"images.example":   {"192.0.2.10"},
	"rebind.example":   {"192.0.2.11", "169.254.169.254"},
	"meta.example":     {"100.100.100.200"},
	"ec2v6.example":    {"fd00:ec2::254"},
	"loopback.example": {"127.0.0.1"},
}

func TestPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	agent := &Policy{Resolver: dns}
	controller := &Policy{Resolver: dns, DenyLocal: true, Own: []netip.AddrPort{netip.MustParseAddrPort("10.0.0.5:8080"), netip.MustParseAddrPort("[::]:9090")},
		LocalAddrs: func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("192.0.2.77")} }}
	for _, c := range []struct {
		p      *Policy
		host   string
		port   uint16
		denied string // "" allowed
	}{
		// Metadata, by address and by name, in every spelling.
		{agent, "169.254.169.254", 80, "metadata"},
		{agent, "fd00:ec2::254", 80, "metadata"},
		{agent, "100.100.100.200", 80, "metadata"},
		{agent, "168.63.129.16", 80, "metadata"},
		{agent, "::ffff:169.254.169.254", 80, "metadata"},
		{agent, "64:ff9b::a9fe:a9fe", 80, "NAT64"},
		{agent, "metadata.google.internal", 80, "metadata service's name"},
		{agent, "METADATA.Google.Internal.", 80, "metadata service's name"},
		{agent, "metadata", 80, "metadata service's name"},
		{agent, "meta.example", 80, "metadata"},
		{agent, "ec2v6.example", 80, "metadata"},
		{agent, "rebind.example", 80, "metadata"},
		{agent, "2852039166", 80, "numeric host"},
		{agent, "0xa9fea9fe", 80, "numeric host"},
		{agent, "0251.0376.0251.0376", 80, "numeric host"},
		{agent, "169.254.10.1", 80, "link-local"},
		{agent, "fe80::1", 80, "link-local"},
		// The agent's own loopback is harmless; the controller's is not.
		{agent, "127.0.0.1", 80, ""},
		{agent, "images.example", 80, ""},
		{controller, "127.0.0.1", 80, "loopback"},
		{controller, "loopback.example", 80, "loopback"},
		{controller, "::1", 80, "loopback"},
		{controller, "0.0.0.0", 80, "unspecified"},
		{controller, "10.0.0.5", 8080, "own API"},
		{controller, "10.0.0.5", 80, ""},
		{controller, "192.0.2.77", 9090, "own API"}, // a wildcard listen: every local address
		{controller, "192.0.2.78", 9090, ""},
		{controller, "images.example", 443, ""},
		// Allow exempts, but not from metadata unless named exactly, and
		// never from the API itself; Deny wins.
		{&Policy{DenyLocal: true, Allow: pfx("127.0.0.0/8")}, "127.0.0.1", 8000, ""},
		{&Policy{DenyLocal: true, Allow: pfx("0.0.0.0/0")}, "169.254.169.254", 80, "metadata"},
		{&Policy{DenyLocal: true, Allow: pfx("0.0.0.0/0")}, "169.254.1.1", 80, ""},
		{&Policy{Allow: pfx("100.100.100.200/32")}, "100.100.100.200", 80, ""},
		{&Policy{DenyLocal: true, Allow: pfx("127.0.0.0/8"), Own: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:8080")}}, "127.0.0.1", 8080, "own API"},
		{&Policy{Deny: pfx("192.0.2.0/24"), Resolver: dns}, "images.example", 80, "denied range 192.0.2.0/24"},
		{&Policy{Deny: pfx("192.0.2.0/24"), Allow: pfx("192.0.2.10")}, "192.0.2.10", 80, "denied range"},
	} {
		err := c.p.CheckHost(ctx, c.host, c.port)
		switch {
		case c.denied == "" && err != nil:
			t.Errorf("%s:%d: %v, want allowed", c.host, c.port, err)
		case c.denied != "" && (!IsDenied(err) || !strings.Contains(err.Error(), c.denied)):
			t.Errorf("%s:%d: %v, want denied for %q", c.host, c.port, err, c.denied)
		}
	}
	var dnsErr *net.DNSError
	if err := agent.CheckHost(ctx, "nope.example", 80); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("unknown name: %v, want the DNS error", err)
	}
}

func pfx(s string) []netip.Prefix {
	p, err := ParsePrefixes("--test", s)
	if err != nil {
		panic(err)
	}
	return p
}

func TestParsePrefixes(t *testing.T) {
	t.Parallel()
	got, err := ParsePrefixes("--image-url-allow", " 10.0.0.0/8, 192.0.2.7 ,2001:db8::/32,,::ffff:10.1.0.0/112")
	if err != nil {
		t.Fatal(err)
	}
	want := "[10.0.0.0/8 192.0.2.7/32 2001:db8::/32 10.1.0.0/16]"
	if fmtPrefixes(got) != want {
		t.Errorf("ParsePrefixes = %v, want %s", got, want)
	}
	if _, err := ParsePrefixes("--image-url-deny", "10.0.0.0/33"); err == nil || !strings.Contains(err.Error(), "--image-url-deny") {
		t.Errorf("bad prefix: %v", err)
	}
}

func fmtPrefixes(ps []netip.Prefix) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return "[" + strings.Join(s, " ") + "]"
}

// recorder is an HTTP server that counts what reaches it.
func recorder(t *testing.T, addr string, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener = l
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

func client(p *Policy, proxy *url.URL) *http.Client {
	d := &net.Dialer{Timeout: 2 * time.Second}
	t := &http.Transport{}
	if proxy != nil {
		t.Proxy = http.ProxyURL(proxy)
	}
	return &http.Client{Transport: p.Guard(t, d), Timeout: 5 * time.Second}
}

// Through a proxy the target is still judged: the request for the
// metadata service never reaches the proxy (issue #26, item 21), by
// address or by a name resolving there; an allowed target goes through
// the proxy, whose own (loopback) address is the operator's and is not
// refused.
func TestGuardWithProxy(t *testing.T) {
	t.Parallel()
	proxy, seen := recorder(t, "", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "via proxy: "+r.URL.String())
	})
	pu, _ := url.Parse(proxy.URL)
	c := client(&Policy{Resolver: dns, DenyLocal: true}, pu)
	for _, target := range []string{"http://169.254.169.254/latest/meta-data/iam/", "http://meta.example/latest/", "http://[fd00:ec2::254]/latest/", "http://metadata.google.internal/computeMetadata/v1/"} {
		resp, err := c.Get(target)
		if err == nil {
			resp.Body.Close()
		}
		if !IsDenied(err) {
			t.Errorf("%s through a proxy: %v, want denied", target, err)
		}
	}
	if n := seen.Load(); n != 0 {
		t.Fatalf("the proxy got %d requests for denied targets", n)
	}
	resp, err := c.Get("http://images.example/disk.img")
	if err != nil {
		t.Fatalf("allowed target through a loopback proxy: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if seen.Load() != 1 || !strings.Contains(string(b), "images.example") {
		t.Errorf("the proxy saw %d requests, answered %q", seen.Load(), b)
	}
}

// Every redirect hop is judged: an allowed image server that redirects to
// the controller's own API (here on another loopback address) is stopped
// before the API is asked (issue #26, item 23).
func TestGuardRedirect(t *testing.T) {
	t.Parallel()
	api, apiSeen := recorder(t, "127.0.0.1:0", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	apiAddr := netip.MustParseAddrPort(api.Listener.Addr().String())
	images, _ := recorder(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, api.URL+"/v1/tokens", http.StatusFound)
	})
	for name, p := range map[string]*Policy{
		"loopback denied":      {DenyLocal: true, Allow: pfx("127.0.0.2/32")},
		"loopback allowed too": {DenyLocal: true, Allow: pfx("127.0.0.0/8"), Own: []netip.AddrPort{apiAddr}},
	} {
		resp, err := client(p, nil).Get(images.URL + "/disk.img")
		if err == nil {
			resp.Body.Close()
		}
		if !IsDenied(err) {
			t.Errorf("%s: redirect to the API: %v, want denied", name, err)
		}
	}
	if n := apiSeen.Load(); n != 0 {
		t.Errorf("the API got %d requests", n)
	}
}

// Going straight to the host, the address dialed is judged again before
// the socket connects (a name that resolves elsewhere the second time,
// DNS rebinding, gains nothing); a connection to a proxy is not.
func TestGuardDial(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	tr := &http.Transport{}
	(&Policy{DenyLocal: true}).Guard(tr, &net.Dialer{Timeout: time.Second})
	ctx := context.Background()
	if c, err := tr.DialContext(ctx, "tcp", l.Addr().String()); !IsDenied(err) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("direct dial of a loopback address: %v, want denied", err)
	}
	time.Sleep(50 * time.Millisecond)
	if accepted.Load() != 0 {
		t.Fatal("the denied dial connected")
	}
	c, err := tr.DialContext(context.WithValue(ctx, viaProxyKey{}, true), "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("dial of a proxy: %v", err)
	}
	c.Close()
}
