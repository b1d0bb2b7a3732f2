package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/postgres"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// unavailable fails the test unless err is the store's "database
// unreachable": CodeUnavailable (the API's 503) and store.IsUnavailable.
func unavailable(t *testing.T, what string, err error) {
	t.Helper()
	if !store.IsUnavailable(err) || !baremetal.IsCode(err, baremetal.CodeUnavailable) {
		t.Errorf("%s with the server stopped: want store.Unavailable, got %v", what, err)
	}
}

// TestOutageIsUnavailable stops a private PostgreSQL server under an open
// store: every kind of call (a read, the token lookup, a write, a
// transaction, a ping) reports the database as unreachable, a query that
// loses its connection mid-transaction too, and the same store works again
// once the server is back, without reopening it.
func TestOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	c := storetest.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, c.URL("postgres"), storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tok := &baremetal.Token{Name: "t", Role: baremetal.RoleAdmin, Hash: "h1"}
	if err := s.InsertToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	// The caller's own cancellation is not an outage.
	cancelled, stop := context.WithCancel(ctx)
	stop()
	if _, err := s.GetTokenByHash(cancelled, "h1"); err == nil || store.IsUnavailable(err) {
		t.Errorf("a cancelled lookup: want a plain error, got %v", err)
	}
	// Neither is a statement the server rejects.
	if err := s.InsertToken(ctx, &baremetal.Token{Name: "dup", Role: baremetal.RoleAdmin, Hash: "h1"}); !baremetal.IsCode(err, baremetal.CodeConflict) {
		t.Errorf("duplicate token: want conflict, got %v", err)
	}

	// The server goes away in the middle of a transaction.
	err = s.InTx(ctx, func(tx store.Tx) error {
		if _, err := tx.GetTokenByHash(ctx, "h1"); err != nil {
			return err
		}
		c.Stop(t, "immediate")
		_, err := tx.CountTokens(ctx)
		return err
	})
	unavailable(t, "a transaction whose server crashed", err)

	_, err = s.GetTokenByHash(ctx, "h1")
	unavailable(t, "GetTokenByHash", err)
	_, _, err = s.ListNodes(ctx, store.NodeFilter{})
	unavailable(t, "ListNodes", err)
	unavailable(t, "InsertEvent", s.InsertEvent(ctx, &baremetal.Event{NodeID: "n", Type: "x", Message: "m"}))
	unavailable(t, "InTx", s.InTx(ctx, func(tx store.Tx) error { return nil }))
	unavailable(t, "Ping", s.Ping(ctx))

	c.Start(t)
	// The pool may hand out a connection the crash killed before it
	// notices; within a few tries the same store answers again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := s.GetTokenByHash(ctx, "h1")
		if err == nil {
			if got.ID != tok.ID {
				t.Fatalf("after the restart: token %+v, want %s", got, tok.ID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store did not recover after the server restarted: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping after the restart: %v", err)
	}
}
