package imagecheck

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/netguard"
)

// image is a fake 64 KiB ISO, served with byte ranges by http.ServeContent.
var image = make([]byte, 64<<10)

func serveImage(w http.ResponseWriter, r *http.Request) {
	http.ServeContent(w, r, "boot.iso", time.Time{}, strings.NewReader(string(image)))
}

// loopback is where the tests' image servers listen: allowed, as
// --image-url-allow allows it for make run's demo image.
var loopback, _ = netguard.ParsePrefixes("--image-url-allow", "127.0.0.0/8,::1")

func check(t *testing.T, url string) error {
	t.Helper()
	return New(Options{Timeout: 2 * time.Second, Allow: loopback}).Check(context.Background(), url)
}

// wantErr checks a failed check: permanent or transient as said, and its
// message holding every part of want.
func wantErr(t *testing.T, err error, transient bool, want ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *Error, got %T %v", err, err)
	}
	if e.Transient != transient {
		t.Errorf("transient=%v, want %v: %v", e.Transient, transient, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not say %q: %v", w, err)
		}
	}
	t.Log(err)
}

func TestCheckOK(t *testing.T) {
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods = append(methods, r.Method+" "+r.Header.Get("Range"))
		serveImage(w, r)
	}))
	defer srv.Close()
	if err := check(t, srv.URL+"/boot.iso"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(methods, ", "); got != "HEAD , GET bytes=0-2047" {
		t.Fatalf("requests %s", got)
	}
}

func TestCheckTLSSelfSigned(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(serveImage))
	defer srv.Close()
	if err := check(t, srv.URL+"/boot.iso"); err != nil {
		t.Fatalf("a self-signed image server (which BMCs accept) failed the check: %v", err)
	}
}

// A server that refuses HEAD (405, or 403 for a URL signed for GET) is
// judged by the range GET.
func TestCheckHeadRefused(t *testing.T) {
	for _, st := range []int{http.StatusMethodNotAllowed, http.StatusForbidden, http.StatusNotImplemented} {
		t.Run(fmt.Sprint(st), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodHead {
					w.WriteHeader(st)
					return
				}
				serveImage(w, r)
			}))
			defer srv.Close()
			if err := check(t, srv.URL+"/boot.iso?X-Signature=s3cr3t"); err != nil {
				t.Fatal(err)
			}
		})
	}
	// No range support at all: a plain 200 with the whole image.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(image)))
		_, _ = w.Write(image)
	}))
	defer srv.Close()
	if err := check(t, srv.URL+"/boot.iso"); err != nil {
		t.Fatal(err)
	}
}

func TestCheckNotFound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old.iso" {
			w.WriteHeader(http.StatusGone)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	err := check(t, "http://user:pw-s3cr3t@"+strings.TrimPrefix(srv.URL, "http://")+"/missing.iso?token=s3cr3t")
	wantErr(t, err, false, "not found", "404 Not Found", srv.URL+"/missing.iso")
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("the URL's secrets are in the error: %v", err)
	}
	wantErr(t, check(t, srv.URL+"/old.iso"), false, "410 Gone")
}

func TestCheckRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(serveImage))
	addr := srv.Listener.Addr().String()
	srv.Close()
	wantErr(t, check(t, "http://"+addr+"/boot.iso"), false, "connection refused by "+addr)
}

func TestCheckDNS(t *testing.T) {
	// .invalid never resolves (RFC 6761).
	wantErr(t, check(t, "http://images.nope.invalid/boot.iso"), false, "DNS", `"images.nope.invalid" not found`)
}

func TestCheckWrongLength(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"empty", func(w http.ResponseWriter, r *http.Request) {
			http.ServeContent(w, r, "boot.iso", time.Time{}, strings.NewReader(""))
		}, "the image is empty (0 bytes)"},
		{"HEAD and GET disagree", func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead {
				w.Header().Set("Content-Length", "1000000")
				return
			}
			serveImage(w, r)
		}, fmt.Sprintf("HEAD says 1000000 bytes, GET says %d", len(image))},
		{"truncated", func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead {
				serveImage(w, r)
				return
			}
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-2047/%d", len(image)))
			w.Header().Set("Content-Length", "2048")
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(image[:100])
		}, "promised 2048 bytes and sent 100"},
		{"range elsewhere", func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead {
				serveImage(w, r)
				return
			}
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 4096-6143/%d", len(image)))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(image[:2048])
		}, `Content-Range "bytes 4096-6143/65536"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			wantErr(t, check(t, srv.URL+"/boot.iso"), false, "wrong length", tc.want)
		})
	}
}

// 5xx, throttling and a server that does not answer in time may pass:
// transient.
func TestCheckTransient(t *testing.T) {
	for _, st := range []int{http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusTooManyRequests} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(st) }))
		wantErr(t, check(t, srv.URL+"/boot.iso"), true, fmt.Sprint(st))
		srv.Close()
	}

	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	err := New(Options{Timeout: 200 * time.Millisecond, Allow: loopback}).Check(context.Background(), srv.URL+"/boot.iso")
	wantErr(t, err, true, "no answer from", "within 200ms")
}

// The check never dials link-local addresses (cloud metadata lives
// there): such a URL fails the check without a request (it used to pass
// unchecked, and through a proxy it was fetched: see guard_test.go).
func TestCheckRefusesLinkLocal(t *testing.T) {
	wantRefused(t, check(t, "http://169.254.169.254/latest/meta-data/"), "a cloud metadata service's address")
	wantRefused(t, check(t, "http://169.254.7.7/boot.iso"), "a link-local address")
}

func TestCheckNotHTTP(t *testing.T) {
	wantErr(t, check(t, "ftp://images.example/boot.iso"), false, "not an http")
}
