package apiclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// A create whose answer is lost (the controller created the node, then
// the connection dropped before the client read the 201) is retried under
// the same Idempotency-Key and gets that node: no orphan, no name
// conflict on the next apply.
func TestCreateWhoseAnswerIsLost(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 1})
	target, err := url.Parse(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var posts, dropped atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || posts.Add(1) > 1 {
			proxy.ServeHTTP(w, r)
			return
		}
		// The first create reaches the controller, which acts on it;
		// its answer never reaches the client.
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		if rec.Code != http.StatusCreated {
			t.Errorf("the first create itself failed: %d %s", rec.Code, rec.Body)
		}
		dropped.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_ = conn.Close()
	}))
	t.Cleanup(front.Close)

	c, err := apiclient.New(front.URL, apiclient.Options{Token: env.AdminToken, RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := c.CreateNode(ctx, api.NodeCreate{Name: "lost-answer", Driver: api.DriverRedfish, ResourceClass: "gpu",
		BMC: api.BMCInput{Address: env.Sim.URL(), Username: "admin", Password: "password", SystemID: env.Sim.SystemIDs()[0]}})
	if err != nil {
		t.Fatalf("create after a lost answer: %v", err)
	}
	if dropped.Load() != 1 || posts.Load() != 2 {
		t.Fatalf("answers dropped %d, POSTs %d; want 1 and 2", dropped.Load(), posts.Load())
	}
	direct, err := apiclient.New(env.URL, apiclient.Options{Token: env.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	list, err := direct.ListNodes(ctx, apiclient.NodeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != n.ID {
		t.Fatalf("nodes after the retried create: %+v (the client got %s)", list, n.ID)
	}
}
