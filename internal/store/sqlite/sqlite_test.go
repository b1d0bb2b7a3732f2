package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/secret"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlite"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return storetest.OpenSQLite(t) })
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	if _, err := sqlite.Open(ctx, filepath.Join(dir, "a.db"), nil); err == nil {
		t.Error("Open accepted a nil Box")
	}
	for _, p := range []string{"", ":memory:", "file:x.db", filepath.Join(dir, "a.db?mode=ro")} {
		if _, err := sqlite.Open(ctx, p, storetest.Box()); err == nil {
			t.Errorf("Open accepted path %q", p)
		}
	}
}

func TestNativeHandles(t *testing.T) {
	t.Parallel()
	s := storetest.OpenSQLite(t)
	db := storetest.NativeHandles[*sql.DB, *sql.Tx](t, s)
	if got := db.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("writer pool allows %d connections, want 1 (SQLite has one writer; a second connection waits on SQLITE_BUSY)", got)
	}
	var mode string
	if err := db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q (%v), want wal", mode, err)
	}
	var fk, busy int
	if err := db.QueryRowContext(t.Context(), "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys %d (%v), want 1", fk, err)
	}
	if err := db.QueryRowContext(t.Context(), "PRAGMA busy_timeout").Scan(&busy); err != nil || busy != 5000 {
		t.Errorf("busy_timeout %d (%v), want 5000", busy, err)
	}
}

// River shares the writer: a job inserted with InsertTx commits and rolls
// back with the store's own rows.
func TestRiverInsertTx(t *testing.T) {
	t.Parallel()
	storetest.RiverInsertTx(t, storetest.OpenSQLite(t))
}

// The read pool cannot write, even by mistake.
func TestReadPoolIsQueryOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "b.db")
	s, err := sqlite.Open(t.Context(), path, storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ro, err := sql.Open("sqlite", path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.ExecContext(t.Context(), `DELETE FROM nodes`); err == nil {
		t.Error("a query_only connection wrote")
	}
}

// Reopening with another key cannot read the passwords, and says so
// without leaking them.
func TestWrongKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "k.db")
	s, err := sqlite.Open(ctx, path, storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	n := &baremetal.Node{Name: "n", Driver: baremetal.DriverIPMI, ProvisionState: baremetal.StateEnroll,
		BMC: baremetal.BMC{Address: "ipmi://10.0.0.9", Password: "ipmi-secret-9"}}
	if err := s.InsertNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	s.Close()

	other, err := secret.New(bytes.Repeat([]byte{9}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	s2, err := sqlite.Open(ctx, path, other)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	_, err = s2.GetNode(ctx, n.ID)
	if err == nil || strings.Contains(err.Error(), "ipmi-secret-9") {
		t.Errorf("GetNode with the wrong key: %v", err)
	}
}

// A database migrated by a newer binary is refused, not used.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "n.db")
	s, err := sqlite.Open(ctx, path, storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Native().(*sql.DB).ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', '2999-01-01T00:00:00.000000Z')`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := sqlite.Open(ctx, path, storetest.Box()); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a newer schema: %v", err)
	}
}

func TestOpenCreatesPrivateDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "db")
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "baremetal.db"), storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("data directory mode %o, want 700", st.Mode().Perm())
	}
}

// Reads outside transactions go to the read pool; every one must see the
// writes committed before it, on whichever pooled connection it lands.
func TestReadYourWrites(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := storetest.OpenSQLite(t)
	n := &baremetal.Node{Name: "rw", Driver: baremetal.DriverRedfish, ProvisionState: baremetal.StateEnroll}
	if err := s.InsertNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		n.BMCFailures = i
		if err := s.UpdateNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetNode(ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != n.Version || got.BMCFailures != i {
			t.Fatalf("read after write %d saw version %d, want %d", i, got.Version, n.Version)
		}
	}
}

func BenchmarkGetNode(b *testing.B) {
	storetest.BenchGetNode(b, storetest.OpenSQLite(b))
}

func BenchmarkListNodesPage(b *testing.B) {
	storetest.BenchListNodesPage(b, storetest.OpenSQLite(b))
}

func BenchmarkUpdateNode(b *testing.B) {
	storetest.BenchUpdateNode(b, storetest.OpenSQLite(b))
}

// BenchmarkAllocateAddress60k allocates from a /16 holding 60 000
// addresses, filled from its start (storetest.BenchAllocateLargePool).
func BenchmarkAllocateAddress60k(b *testing.B) {
	storetest.BenchAllocateLargePool(b, storetest.OpenSQLite(b), 60000)
}
