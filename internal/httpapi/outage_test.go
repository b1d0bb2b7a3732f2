package httpapi_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// flakyStore is a real store whose database can be made unreachable: the
// calls the API makes first (token lookup, node list, ping) then fail the
// way the adapters report an outage.
type flakyStore struct {
	store.Store
	down atomic.Bool
}

var errRefused = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (s *flakyStore) fail(op string) error {
	if s.down.Load() {
		return store.Unavailable(op, errRefused)
	}
	return nil
}

func (s *flakyStore) GetTokenByHash(ctx context.Context, hash string) (*baremetal.Token, error) {
	if err := s.fail("get token"); err != nil {
		return nil, err
	}
	return s.Store.GetTokenByHash(ctx, hash)
}

func (s *flakyStore) ListNodes(ctx context.Context, f store.NodeFilter) ([]*baremetal.Node, string, error) {
	if err := s.fail("list nodes"); err != nil {
		return nil, "", err
	}
	return s.Store.ListNodes(ctx, f)
}

func (s *flakyStore) Ping(ctx context.Context) error {
	if err := s.fail("ping"); err != nil {
		return err
	}
	return s.Store.Ping(ctx)
}

// TestDatabaseOutageIs503 checks the API's side of an outage: every call
// that needs the database, the bearer-token lookup included, answers 503
// unavailable with Retry-After (not 500 internal); /readyz says 503 and
// /healthz 200; the outage is logged once when it starts and once when it
// ends, not once per request; and the same server answers again when the
// database is back.
func TestDatabaseOutageIs503(t *testing.T) {
	t.Parallel()
	fs := &flakyStore{}
	e := newEnv(t, func(t testing.TB) store.Store { fs.Store = storetest.OpenSQLite(t); return fs })
	e.mustJSON("GET", "/v1/nodes", adminSecret, "", 200, nil)

	fs.down.Store(true)
	for i := 0; i < 5; i++ {
		// e.member was never presented, so its lookup reaches the store;
		// the admin's is cached, so its request fails in the handler.
		for _, token := range []string{e.member, adminSecret} {
			r := e.do("GET", "/v1/nodes", token, "")
			if r.status != 503 || r.problem(t).Code != "unavailable" || r.header.Get("Retry-After") == "" {
				t.Fatalf("GET /v1/nodes during the outage: %d Retry-After=%q %s", r.status, r.header.Get("Retry-After"), r.body)
			}
			if strings.Contains(string(r.body), "connection refused") {
				t.Fatalf("the cause leaked to the client: %s", r.body)
			}
		}
		if r := e.do("GET", "/readyz", "", ""); r.status != 503 || r.header.Get("Retry-After") == "" {
			t.Fatalf("/readyz during the outage: %d %s", r.status, r.body)
		}
		if r := e.do("GET", "/healthz", "", ""); r.status != 200 {
			t.Fatalf("/healthz during the outage: %d %s", r.status, r.body)
		}
	}

	fs.down.Store(false)
	e.mustJSON("GET", "/v1/nodes", e.member, "", 200, nil)
	e.mustJSON("GET", "/readyz", "", "", 200, nil)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(e.logs.String(), "database reachable again") {
		if time.Now().After(deadline) {
			t.Fatalf("the end of the outage was never logged:\n%s", e.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	logs := e.logs.String()
	if n := strings.Count(logs, `"msg":"database unreachable"`); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, logs)
	}
	if n := strings.Count(logs, `"msg":"database reachable again"`); n != 1 {
		t.Errorf("the end of the outage was logged %d times, want once:\n%s", n, logs)
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"msg":"request failed"`) {
			t.Errorf("a per-request error line during the outage: %s", line)
		}
	}
}
