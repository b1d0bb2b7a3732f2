package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlstore"
)

// openCaching opens a one-connection database through the caching
// connector, as the store's writer is.
func openCaching(t *testing.T) *sql.DB {
	t.Helper()
	c, err := newCachingConnector(filepath.Join(t.TempDir(), "cache.db")+"?"+writerParams, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

func mustExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// cachedConn returns the driver connection of a one-connection db.
func cachedConn(t *testing.T, db *sql.DB) *cachingConn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var cc *cachingConn
	if err := conn.Raw(func(dc any) error { cc = dc.(*cachingConn); return nil }); err != nil {
		t.Fatal(err)
	}
	return cc
}

// A query run again while the rows of the same text are still open on the
// same connection (in one transaction) must not reuse the lent statement.
func TestStmtCacheNestedSameQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openCaching(t)
	mustExec(t, db, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`)
	for i := range 3 {
		mustExec(t, db, `INSERT INTO t (id, v) VALUES (?, ?)`, i, fmt.Sprint("v", i))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	const q = `SELECT id, v FROM t WHERE id >= ? ORDER BY id`
	outer, err := tx.QueryContext(ctx, q, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for outer.Next() {
		var id int
		var v string
		if err := outer.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		// Same text, other arguments, while outer is open.
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (`+q+`)`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		inner, err := tx.QueryContext(ctx, q, id)
		if err != nil {
			t.Fatal(err)
		}
		m := 0
		for inner.Next() {
			m++
		}
		if err := inner.Close(); err != nil {
			t.Fatal(err)
		}
		if m != n {
			t.Fatalf("inner query from %d: %d rows, want %d", id, m, n)
		}
		got = append(got, v)
	}
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	if err := outer.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[v0 v1 v2]" {
		t.Fatalf("outer rows %v, want [v0 v1 v2]", got)
	}
}

// The cache stays bounded, and a statement evicted while its rows are open
// keeps working until they close.
func TestStmtCacheEviction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openCaching(t)
	mustExec(t, db, `CREATE TABLE t (id INTEGER PRIMARY KEY)`)
	mustExec(t, db, `INSERT INTO t (id) VALUES (1), (2)`)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	held, err := tx.QueryContext(ctx, `SELECT id FROM t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	if !held.Next() {
		t.Fatal("no first row")
	}
	for i := range 2 * stmtCacheSize {
		var n int
		if err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT %d`, i)).Scan(&n); err != nil || n != i {
			t.Fatalf("SELECT %d: %d, %v", i, n, err)
		}
	}
	var id int
	if !held.Next() {
		t.Fatalf("evicted statement lost its second row: %v", held.Err())
	}
	if err := held.Scan(&id); err != nil || id != 2 {
		t.Fatalf("second row %d, %v; want 2", id, err)
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	cc := cachedConn(t, db)
	cc.mu.Lock()
	n := cc.lru.Len()
	cc.mu.Unlock()
	if n > stmtCacheSize {
		t.Fatalf("%d cached statements, bound is %d", n, stmtCacheSize)
	}
}

// A cached statement follows schema changes (SQLite re-prepares it), and
// errors keep the driver's types (the store matches *sqlite.Error codes
// and messages: the table is named like the store's, so that the dialect
// names the violated constraint).
func TestStmtCacheSchemaChangeAndErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openCaching(t)
	mustExec(t, db, `CREATE TABLE nodes (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)`)
	const ins = `INSERT INTO nodes (id, name) VALUES (?, ?)`
	mustExec(t, db, ins, 1, "a")
	if _, err := db.ExecContext(ctx, ins, 2, "a"); (dialect{}).UniqueViolation(err) != sqlstore.NodesNameKey {
		t.Fatalf("duplicate insert through a cached statement: %v, want a UNIQUE violation", err)
	}
	const sel = `SELECT * FROM nodes WHERE id = ?`
	var id int
	var name string
	if err := db.QueryRowContext(ctx, sel, 1).Scan(&id, &name); err != nil || name != "a" {
		t.Fatalf("before ALTER TABLE: %q, %v", name, err)
	}
	mustExec(t, db, `ALTER TABLE nodes ADD COLUMN extra TEXT NOT NULL DEFAULT 'x'`)
	var extra string
	if err := db.QueryRowContext(ctx, sel, 1).Scan(&id, &name, &extra); err != nil || extra != "x" {
		t.Fatalf("after ALTER TABLE: %q, %v", extra, err)
	}
	mustExec(t, db, ins, 2, "b")
}
