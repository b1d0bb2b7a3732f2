// Package sqlite is the embedded store: one database file (WAL mode) in the
// controller's data directory, through modernc.org/sqlite (pure Go, no cgo).
//
// Connections: SQLite allows one writer at a time, and River shares the
// database. Every write (the Store's own, every transaction, and River's)
// goes through one *sql.DB limited to a single connection, so writers queue
// in database/sql (honoring contexts) instead of failing with SQLITE_BUSY.
// Reads outside transactions use a second, query-only pool of several
// connections: in WAL mode readers never block the writer nor each other
// and see every committed write.
//
// Both pools open their connections through a statement cache
// (stmtcache.go): every statement, River's included, is compiled once per
// connection instead of on every call.
//
// The consequence callers must respect (see store.Store.InTx): while a
// transaction is open it holds the only writer connection, so a Store write
// or a River call outside the transaction waits until it ends.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/secret"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlstore"
)

// Store is the SQLite store. Create it with Open.
type Store struct {
	// Reads outside transactions go to the read pool, writes through the
	// gate to the writer.
	sqlstore.Queries
	writer *sql.DB
	gate   writeGate
	// txq holds the transactions waiting for the writer (group.go).
	txq txQueue
	// grouping is true while a commit group runs on the writer: its
	// statements are not interrupted by their callers' cancellation.
	grouping *atomic.Bool
	reader   *sql.DB
	path     string
	lock     *dirLock
	box      *secret.Box
}

var (
	_ store.Store = (*Store)(nil)
	_ store.Tx    = (*Tx)(nil)
)

// Writer pragmas: WAL so readers run alongside the writer; busy_timeout
// because another process (a CLI `migrate`, a backup) may hold the lock
// briefly; foreign keys so a node's events go with it. _txlock=immediate
// takes the write lock at BEGIN: a deferred transaction that reads then
// writes can fail with SQLITE_BUSY when another process wrote in between,
// and the busy handler cannot help it. temp_store(MEMORY) keeps the
// statement journal of each group member's SAVEPOINT (see group.go) in
// memory: on disk it was a temporary file opened, written and closed in
// most transactions (a tenth of an enroll's database CPU).
const writerParams = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=temp_store(MEMORY)&_txlock=immediate"

// Reader pragmas: query_only makes an accidental write through the read
// pool an error rather than a second writer racing the first.
const readerParams = "_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=query_only(1)"

// Open opens (creating when missing) the database file at path, applies
// pending migrations (ours and River's), and returns the store. box seals
// BMC passwords and is required.
//
// The store holds an exclusive lock on path+".lock" until Close: a second
// Open of the same database, in this process or another, fails at once
// saying who holds it. The database and its -wal and -shm files are
// created 0600 whatever the umask (they hold user data and sealed
// secrets).
func Open(ctx context.Context, path string, box *secret.Box) (st *Store, err error) {
	if box == nil {
		return nil, errors.New("sqlite: open: a secret.Box is required to seal BMC passwords")
	}
	// The file name reaches the driver as a DSN; "?" would start the
	// parameters, and in-memory databases cannot be shared by the two
	// pools, so accept plain file paths only.
	if path == "" || strings.ContainsAny(path, "?#") || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: open: %q is not a plain file path", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: open: create directory: %w", err)
	}
	lock, err := lockDir(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = lock.release()
		}
	}()
	if err := privateFiles(path); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}

	grouping := new(atomic.Bool)
	wc, err := newCachingConnector(path+"?"+writerParams, grouping)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	writer := sql.OpenDB(wc)
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)

	s := &Store{writer: writer, gate: newWriteGate(), path: path, lock: lock, grouping: grouping, box: box}
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := s.Migrate(ctx); err != nil {
		writer.Close()
		return nil, err
	}

	// Opened after migrating, so the file is already in WAL mode and has
	// its tables when the first read arrives.
	rc, err := newCachingConnector(path+"?"+readerParams, nil)
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	reader := sql.OpenDB(rc)
	n := max(4, runtime.NumCPU())
	reader.SetMaxOpenConns(n)
	reader.SetMaxIdleConns(n)
	reader.SetConnMaxLifetime(0)
	reader.SetConnMaxIdleTime(0)
	if err := reader.PingContext(ctx); err != nil {
		reader.Close()
		writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.reader = reader
	w := newQuerier(gatedWriter{writer, s.gate})
	s.Queries = sqlstore.New(dialect{}, box, newQuerier(reader), w, w)
	return s, nil
}

// Migrate applies pending migrations: the store's schema, then River's,
// then creates our index on River's jobs (store.RiverRunningNodeIndex).
// All are recorded in the database or made only if missing, so running it
// again is a no-op. In between it gives keyless nodes their BMC key
// (store.BackfillBMCKeys).
func (s *Store) Migrate(ctx context.Context) error {
	if err := store.Migrate(ctx, "sqlite", migrationFS, migrator{s.writer}); err != nil {
		return err
	}
	if err := backfillBMCKeys(ctx, s.writer); err != nil {
		return err
	}
	if err := sqlstore.MigrateRiver(ctx, dialect{}, riversqlite.New(s.writer)); err != nil {
		return err
	}
	if _, err := s.writer.ExecContext(ctx, store.RiverRunningNodeIndex); err != nil {
		return fmt.Errorf("sqlite: index of running jobs by node: %w", err)
	}
	return nil
}

// Ping runs a query on the read pool. It does not touch the writer, so a
// long transaction does not make the controller look unready.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.reader.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return wrap("ping", err)
	}
	return nil
}

// Dialect returns "sqlite".
func (s *Store) Dialect() string { return "sqlite" }

// Native returns the writer *sql.DB (one connection), for River's
// riversqlite driver.
func (s *Store) Native() any { return s.writer }

// ReadNative returns the read pool's *sql.DB (query_only: a write through
// it is an error).
func (s *Store) ReadNative() any { return s.reader }

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close closes both pools, then releases the lock.
func (s *Store) Close() error {
	return errors.Join(s.reader.Close(), s.writer.Close(), s.lock.release())
}

// privateFiles makes the database file exist with mode 0600 before SQLite
// opens it: SQLite creates a missing file 0644 (less the umask) and gives
// its -wal and -shm files the mode of the database file, so a database
// created 0600 keeps all three private. Files an older controller left
// readable by others are tightened.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, 0o600); err != nil {
				return fmt.Errorf("make %s private: %w", p, err)
			}
		}
	}
	return nil
}

// Tx is an open transaction; every query runs on it (a transaction must
// see its own writes, and the one connection is its).
type Tx struct {
	sqlstore.Queries
	tx *sql.Tx
}

func (s *Store) newTx(sqlTx *sql.Tx) *Tx {
	q := newQuerier(sqlTx)
	return &Tx{Queries: sqlstore.New(dialect{}, s.box, q, q, q), tx: sqlTx}
}

// GetNodeForUpdate is GetNode: the transaction already holds the
// database's write lock (BEGIN IMMEDIATE), so no other writer can change
// the row before it ends.
func (t *Tx) GetNodeForUpdate(ctx context.Context, idOrName string) (*baremetal.Node, error) {
	return t.GetNode(ctx, idOrName)
}

// ClaimNode reads the first free node (see store.Tx): the transaction
// already holds the database's write lock, so no other create can claim
// it before this one ends.
func (t *Tx) ClaimNode(ctx context.Context, c store.NodeClaim) (*baremetal.Node, error) {
	return sqlstore.ClaimNode(ctx, t.Queries, c)
}

// Native returns the *sql.Tx, for River's InsertTx.
func (t *Tx) Native() any { return t.tx }

// AllocateAddress, UpdateIPPool and DeleteIPPool read then write under
// the pool's lock, which only a transaction holds (store.IPPools): on
// the Store each runs in one of its own. (On a Tx they are sqlstore's,
// in the caller's transaction.)

func (s *Store) AllocateAddress(ctx context.Context, poolIDOrName, instanceID, nodeID string) (a baremetal.IPAllocation, err error) {
	err = s.InTx(ctx, func(tx store.Tx) error {
		a, err = tx.AllocateAddress(ctx, poolIDOrName, instanceID, nodeID)
		return err
	})
	return a, err
}

func (s *Store) UpdateIPPool(ctx context.Context, p *baremetal.IPPool) error {
	c := *p
	if err := s.InTx(ctx, func(tx store.Tx) error {
		c = *p
		return tx.UpdateIPPool(ctx, &c)
	}); err != nil {
		return err
	}
	*p = c
	return nil
}

func (s *Store) DeleteIPPool(ctx context.Context, id string, version int64) error {
	return s.InTx(ctx, func(tx store.Tx) error { return tx.DeleteIPPool(ctx, id, version) })
}
