// Package storetest holds the conformance suite every store.Store must
// pass (Run), and helpers that give other packages' tests a real, fresh,
// isolated database: OpenSQLite, OpenPostgres and PostgresURL.
//
// PostgreSQL tests need BAREMETAL_TEST_DATABASE_URL, an admin URL of a
// server where the tests may create and drop databases. Without it they
// skip locally, and fail when CI=true: CI must never pass by skipping.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/secret"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/postgres"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlite"
)

// DatabaseURLEnv names the environment variable holding the PostgreSQL
// admin URL for tests.
const DatabaseURLEnv = "BAREMETAL_TEST_DATABASE_URL"

// Box returns the secret.Box of every store opened here. The key is fixed
// so a test can reopen a database it wrote; it protects nothing.
func Box() *secret.Box {
	key := sha256.Sum256([]byte("storetest: not a secret"))
	b, err := secret.New(key[:])
	if err != nil {
		panic(err)
	}
	return b
}

// reopeners remembers how to open the database of each store opened here
// again, for the suite's persistence test.
var reopeners sync.Map // store.Store → func(testing.TB) store.Store

// reopen opens s's database again, or skips when s was not opened here.
func reopen(t testing.TB, s store.Store) store.Store {
	t.Helper()
	f, ok := reopeners.Load(s)
	if !ok {
		t.Skip("store was not opened by storetest.OpenSQLite/OpenPostgres; cannot reopen it")
	}
	return f.(func(testing.TB) store.Store)(t)
}

// OpenSQLite opens a store on a new database file in a temporary
// directory; it is closed when the test ends.
func OpenSQLite(t testing.TB) store.Store {
	t.Helper()
	return openSQLiteAt(t, filepath.Join(t.TempDir(), "baremetal.db"))
}

func openSQLiteAt(t testing.TB, path string) store.Store {
	t.Helper()
	return openAt(t, "sqlite", path, func(ctx context.Context) (store.Store, error) { return sqlite.Open(ctx, path, Box()) },
		openSQLiteAt)
}

// openAt opens a store with open (name and where say which, for errors),
// closes it when t ends, and remembers reopen for the suite's persistence
// test.
func openAt(t testing.TB, name, where string, open func(context.Context) (store.Store, error),
	reopen func(testing.TB, string) store.Store) store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := open(ctx)
	if err != nil {
		t.Fatalf("open %s store: %v", name, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close %s store: %v", name, err)
		}
	})
	reopeners.Store(s, func(t testing.TB) store.Store { return reopen(t, where) })
	return s
}

// OpenPostgres opens a store on a new, empty PostgreSQL database (see
// PostgresURL); it is closed and the database dropped when the test ends.
func OpenPostgres(t testing.TB) store.Store {
	t.Helper()
	return openPostgresAt(t, PostgresURL(t))
}

func openPostgresAt(t testing.TB, dbURL string) store.Store {
	t.Helper()
	return openAt(t, "postgres", dbURL, func(ctx context.Context) (store.Store, error) { return postgres.Open(ctx, dbURL, Box()) },
		openPostgresAt)
}

// PostgresURL creates a new, uniquely named, empty database on the server
// of BAREMETAL_TEST_DATABASE_URL and returns its URL; the database is
// dropped (WITH (FORCE), so leftover connections do not keep it) when the
// test ends. Without the variable the test is skipped, or fails under CI.
func PostgresURL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(DatabaseURLEnv)
	if admin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the PostgreSQL tests", DatabaseURLEnv)
		}
		t.Skipf("%s is not set; skipping PostgreSQL test", DatabaseURLEnv)
	}
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL", DatabaseURLEnv)
	}

	name := databaseName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := adminExec(ctx, admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

func adminExec(ctx context.Context, adminURL, sql string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// databaseName makes a unique database name that still says which test
// made it (handy when one is left behind by a killed test run).
func databaseName(testName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	hint := b.String()
	if len(hint) > 36 {
		hint = hint[len(hint)-36:]
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	// PostgreSQL identifiers stop at 63 bytes: 7 + 36 + 1 + 12 fits.
	return "bmtest_" + hint + "_" + hex.EncodeToString(rnd[:])
}
