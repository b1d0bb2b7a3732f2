package disk

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// The agent fetches from the node's network, where the node's cloud
// metadata service may answer (a machine in a cloud, or one whose
// provisioning network routes to one): an image URL there, or one that
// redirects there, is refused before any request leaves, with a proxy
// configured or not (issue #26, items 21 and 22). The agent's loopback is
// itself and stays allowed (the tests' image servers live there).
func TestWriteRefusesMetadata(t *testing.T) {
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		_, _ = w.Write(make([]byte, 4096))
	}))
	defer proxy.Close()
	pu, _ := url.Parse(proxy.URL)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/user-data", http.StatusFound)
	}))
	defer redirect.Close()

	viaProxy := NewClient(&http.Transport{Proxy: http.ProxyURL(pu)})
	direct := NewClient(nil)
	for _, tc := range []struct {
		name   string
		client *http.Client
		url    string
	}{
		{"through a proxy", viaProxy, "http://169.254.169.254/latest/meta-data/iam/security-credentials/"},
		{"by name through a proxy", viaProxy, "http://metadata.google.internal/computeMetadata/v1/"},
		{"AWS over IPv6 through a proxy", viaProxy, "http://[fd00:ec2::254]/latest/meta-data/"},
		{"Alibaba through a proxy", viaProxy, "http://100.100.100.200/latest/meta-data/"},
		{"direct", direct, "http://169.254.169.254/latest/meta-data/"},
		{"redirected", direct, redirect.URL + "/disk.raw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Write(context.Background(), Source{URL: tc.url}, Target{Path: newDisk(t, 1<<20)}, Options{Client: tc.client, Retries: 1, Backoff: 1})
			assertErr(t, err, ErrInput, CodeImageUnreachable)
			if !strings.Contains(err.Error(), "not allowed") || !strings.Contains(err.Error(), "metadata") {
				t.Errorf("error does not say why: %v", err)
			}
		})
	}
	if n := proxied.Load(); n != 0 {
		t.Fatalf("the proxy was asked %d times for a metadata service", n)
	}
}
