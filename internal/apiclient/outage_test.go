package apiclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// fakeClock is the client's clock in these tests: sleeping advances it at
// once, so a minute of retries runs in milliseconds. The test server reads
// the same clock, so "the controller answers 503 for 30 s" means what it
// says from the client's point of view.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.sleeps = append(c.sleeps, d)
	return nil
}

// outageServer answers 503 unavailable (as the controller does while its
// database is down) until the clock passes end, then hands over to ok.
func outageServer(t *testing.T, clock *fakeClock, end time.Time, retryAfter string, ok http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if clock.now().Before(end) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			writeProblem(w, 503, "unavailable", "the database is unreachable; retry later", "")
			return
		}
		ok(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// defaultClient is a client with the default retry settings, on clock.
func defaultClient(t *testing.T, srv *httptest.Server, clock *fakeClock) *Client {
	t.Helper()
	c, err := New(srv.URL, Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	c.now, c.sleep = clock.now, clock.sleep
	return c
}

// The provider rides through a 30 s database outage during terraform
// destroy (DELETE) and refresh (GET) with the default settings, with or
// without the server's Retry-After, which it honours.
func TestRidesThroughA30sOutage(t *testing.T) {
	for _, retryAfter := range []string{"5", ""} {
		for _, method := range []string{"GET", "DELETE"} {
			t.Run(method+"/Retry-After="+retryAfter, func(t *testing.T) {
				clock := newFakeClock()
				end := clock.now().Add(30 * time.Second)
				srv, calls := outageServer(t, clock, end, retryAfter, func(w http.ResponseWriter, r *http.Request) {
					if r.Method == "DELETE" {
						writeJSON(w, 202, api.Accepted{JobID: 7})
						return
					}
					writeJSON(w, 200, api.Instance{ID: "i1"})
				})
				c := defaultClient(t, srv, clock)
				var err error
				if method == "DELETE" {
					var a *api.Accepted
					a, err = c.DeleteInstance(context.Background(), "i1")
					if err == nil && a.JobID != 7 {
						t.Errorf("accepted %+v", a)
					}
				} else {
					_, err = c.GetInstance(context.Background(), "i1")
				}
				if err != nil {
					t.Fatalf("after %d attempts over %s: %v", calls.Load(), clock.now().Sub(end.Add(-30*time.Second)), err)
				}
				if clock.now().Before(end) || calls.Load() < 2 {
					t.Fatalf("succeeded before the outage ended: %d calls", calls.Load())
				}
				if retryAfter != "" {
					for _, d := range clock.sleeps {
						if d != 5*time.Second {
							t.Fatalf("Retry-After 5 not honoured: waits %v", clock.sleeps)
						}
					}
				}
			})
		}
	}
}

// Retries stop at the window: a request never starts a retry more than
// RetryWindow after its first attempt, and then reports the last answer.
func TestRetryWindowEnds(t *testing.T) {
	clock := newFakeClock()
	start := clock.now()
	srv, calls := outageServer(t, clock, start.Add(time.Hour), "5", nil)
	c := defaultClient(t, srv, clock)
	_, err := c.GetInstance(context.Background(), "i1")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("want ErrUnavailable, got %v", err)
	}
	took := clock.now().Sub(start)
	if took > DefaultRetryWindow || took < DefaultRetryWindow-5*time.Second {
		t.Fatalf("gave up after %s of retries (%d calls), want the %s window", took, calls.Load(), DefaultRetryWindow)
	}
}

// A POST without an Idempotency-Key that got an answer may have been
// applied: not repeated, outage or not. A create rides the outage out.
func TestPostIsNotRetriedDuringAnOutage(t *testing.T) {
	clock := newFakeClock()
	srv, calls := outageServer(t, clock, clock.now().Add(30*time.Second), "5", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 201, api.Instance{ID: "i1"})
	})
	c := defaultClient(t, srv, clock)
	if _, err := c.NodePower(context.Background(), "n1", api.ActionOn); !errors.Is(err, ErrUnavailable) || calls.Load() != 1 {
		t.Fatalf("want one attempt and ErrUnavailable, got %d: %v", calls.Load(), err)
	}
	if _, err := c.CreateInstance(context.Background(), api.InstanceCreate{Name: "i"}); err != nil || calls.Load() < 3 {
		t.Fatalf("a create during a 30 s outage: %v after %d calls", err, calls.Load())
	}
}

// A DELETE whose first answer was lost (a gateway timed out, but the
// controller did the work) finds the object gone on the retry: that is
// success. A first answer of 404 is still ErrNotFound.
func TestDeleteGoneOnRetryIsSuccess(t *testing.T) {
	var deleted atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if deleted.Swap(true) {
			writeProblem(w, 404, "not_found", "instance not found", "")
			return
		}
		writeProblem(w, 504, "", "gateway timeout", "")
	}))
	defer srv.Close()
	c := defaultClient(t, srv, newFakeClock())
	if _, err := c.DeleteInstance(context.Background(), "i1"); err != nil {
		t.Fatalf("DELETE gone on the retry: %v", err)
	}
	if _, err := c.DeleteInstance(context.Background(), "i1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DELETE of something already gone: want ErrNotFound, got %v", err)
	}
}
