package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlite"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// Another process holding the write lock past busy_timeout (a backup, an
// sqlite3 shell left in a transaction) makes the database unusable for
// writes: that is "unavailable, retry" (the API's 503), not an internal
// error; and writes work again once the lock is released.
func TestLockedDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "b.db")
	s, err := sqlite.Open(t.Context(), path, storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	err = s.InsertToken(ctx, &baremetal.Token{Name: "t", Role: baremetal.RoleAdmin, Hash: "h1"})
	if !store.IsUnavailable(err) || !baremetal.IsCode(err, baremetal.CodeUnavailable) {
		t.Errorf("write while another process holds the lock: want store.Unavailable, got %v", err)
	}
	err = s.InTx(ctx, func(tx store.Tx) error { return nil })
	if !store.IsUnavailable(err) {
		t.Errorf("transaction while another process holds the lock: want store.Unavailable, got %v", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertToken(ctx, &baremetal.Token{Name: "t", Role: baremetal.RoleAdmin, Hash: "h1"}); err != nil {
		t.Fatalf("write after the lock was released: %v", err)
	}
	// A statement the database rejects is not an outage.
	err = s.InsertToken(ctx, &baremetal.Token{Name: "t", Role: baremetal.RoleAdmin, Hash: "h1"})
	if store.IsUnavailable(err) || !baremetal.IsCode(err, baremetal.CodeConflict) {
		t.Errorf("duplicate token: want conflict, got %v", err)
	}
}
