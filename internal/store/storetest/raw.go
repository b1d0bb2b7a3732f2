package storetest

import (
	"bytes"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// The suite looks under the store, at the database itself, through the
// handle Native returns: to check what is really stored.

// rawDB runs fn on s's database as a *sql.DB: SQLite's writer, or
// PostgreSQL's pool through pgx's database/sql driver (closed when fn
// returns, so that it holds none of the pool's connections when the store
// closes).
func rawDB(t *testing.T, s store.Store, fn func(db *sql.DB)) {
	t.Helper()
	switch db := s.Native().(type) {
	case *sql.DB:
		fn(db)
	case *pgxpool.Pool:
		sdb := stdlib.OpenDBFromPool(db)
		defer sdb.Close()
		fn(sdb)
	default:
		t.Fatalf("unknown native handle %T", db)
	}
}

func rawStrings(t *testing.T, s store.Store, query string) []string {
	t.Helper()
	var out []string
	rawDB(t, s, func(db *sql.DB) {
		rows, err := db.QueryContext(ctxOf(t), query)
		must(t, err)
		defer rows.Close()
		for rows.Next() {
			var v string
			must(t, rows.Scan(&v))
			out = append(out, v)
		}
		must(t, rows.Err())
	})
	return out
}

func rawExec(t *testing.T, s store.Store, query string) {
	t.Helper()
	rawDB(t, s, func(db *sql.DB) {
		_, err := db.ExecContext(ctxOf(t), query)
		must(t, err)
	})
}

func rawCount(t *testing.T, s store.Store, query string) int {
	t.Helper()
	var n int
	rawDB(t, s, func(db *sql.DB) { must(t, db.QueryRowContext(ctxOf(t), query).Scan(&n)) })
	return n
}

// assertNotOnDisk checks that plain appears nowhere in the database: in
// any column of the nodes table, and for SQLite in the bytes of the
// database file and its write-ahead log, before and after a checkpoint.
func assertNotOnDisk(t *testing.T, s store.Store, plain string) {
	t.Helper()
	switch db := s.Native().(type) {
	case *sql.DB:
		var path string
		must(t, db.QueryRowContext(ctxOf(t), `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path))
		grep := func(when string) {
			for _, p := range []string{path, path + "-wal"} {
				b, err := os.ReadFile(p)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				must(t, err)
				if len(b) == 0 && p == path {
					t.Fatalf("%s is empty; the check would prove nothing", p)
				}
				if bytes.Contains(b, []byte(plain)) {
					t.Errorf("%s: the plaintext password is in %s", when, p)
				}
			}
		}
		grep("before checkpoint")
		_, err := db.ExecContext(ctxOf(t), `PRAGMA wal_checkpoint(TRUNCATE)`)
		must(t, err)
		grep("after checkpoint")
	case *pgxpool.Pool:
		var n int
		must(t, db.QueryRow(ctxOf(t), `SELECT count(*) FROM nodes WHERE row_to_json(nodes)::text LIKE '%' || $1 || '%'`, plain).Scan(&n))
		if n != 0 {
			t.Errorf("the plaintext password is stored in %d node rows", n)
		}
	default:
		t.Fatalf("unknown native handle %T", db)
	}
}
