// Package postgres is the store for PostgreSQL through pgx/v5, for
// deployments that outgrow one machine: several controller replicas share
// one database, and River's jobs live in it too.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/secret"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/postgres/internal/dbsqlc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlstore"
)

// Store is the PostgreSQL store. Create it with Open.
type Store struct {
	queries
	pool *pgxpool.Pool
	// onPool is the generated code on the pool, for every transaction's
	// reads after a failed write.
	onPool querier
	box    *secret.Box
}

// queries are the store's queries (sqlstore) with PostgreSQL's own
// InsertEvents.
type queries struct {
	sqlstore.Queries
	// pg is the generated code the writes run on, for the queries only
	// PostgreSQL has (InsertEventBatch, GetNodeForUpdate, NextFreeNode).
	pg querier
}

// newQueries returns the queries of a store or transaction: w runs the
// writes and the reads, explain what sqlstore.New says.
func newQueries(box *secret.Box, w, explain querier) queries {
	return queries{Queries: sqlstore.New(dialect{}, box, w, w, explain), pg: w}
}

// InsertEvents sends the inserts as one batch: one round trip, the
// statements run in order (ids grow in insertion order), and in one
// implicit transaction outside InTx: all are written or none.
func (q queries) InsertEvents(ctx context.Context, evs []*baremetal.Event) error {
	if len(evs) < 2 {
		return q.Queries.InsertEvents(ctx, evs)
	}
	args := make([]dbsqlc.InsertEventBatchParams, len(evs))
	for i, e := range evs {
		if !store.Storable(e.NodeID) {
			return store.NotFound("node", e.NodeID)
		}
		args[i] = dbsqlc.InsertEventBatchParams{NodeID: e.NodeID, Time: sqlstore.EventTime(e), Actor: e.Actor,
			Type: e.Type, Field: e.Field, Old: e.Old, New: e.New, Message: e.Message}
	}
	ids := make([]int64, len(evs))
	var failed error
	q.pg.InsertEventBatch(ctx, args).QueryRow(func(i int, id int64, err error) {
		if err != nil && failed == nil {
			failed = q.EventError(evs[i], err)
		}
		ids[i] = id
	})
	if failed != nil {
		return failed
	}
	for i, e := range evs {
		e.ID, e.Time = ids[i], time.Time(args[i].Time)
	}
	return nil
}

var (
	_ store.Store = (*Store)(nil)
	_ store.Tx    = (*Tx)(nil)
)

// Open connects to the database at url (a postgres:// URL or a key=value
// DSN; pool settings such as pool_max_conns go in it), applies pending
// migrations (ours and River's), and returns the store. box seals BMC
// passwords and is required.
func Open(ctx context.Context, url string, box *secret.Box) (*Store, error) {
	if box == nil {
		return nil, errors.New("postgres: open: a secret.Box is required to seal BMC passwords")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors can echo the URL, password included.
		return nil, errors.New("postgres: open: malformed database URL")
	}
	// pgxpool's default (4 on this kind of machine) is too few once River's
	// producers, its listener and many workers each hold a connection
	// during a job's transaction. Connections open lazily, so a larger cap
	// costs nothing until needed. An explicit pool_max_conns wins.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = int32(max(16, 4*runtime.NumCPU()))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	q := newQuerier(pool)
	s := &Store{queries: newQueries(box, q, q), pool: pool, onPool: q, box: box}
	if err := s.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// migrationLock is the advisory lock key that serializes migrations of
// replicas starting together ("baremetal" in ASCII).
const migrationLock int64 = 0x626172656d6574

// Migrate applies pending migrations: the store's schema, then River's,
// then creates our index on River's jobs (store.RiverRunningNodeIndex).
// All are recorded in the database or made only if missing, so running it
// again is a no-op. In between it gives keyless nodes their BMC key
// (store.BackfillBMCKeys).
// Replicas starting at once take turns on an advisory lock.
func (s *Store) Migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	defer func() {
		// A session lock outlives a cancelled ctx; unlock regardless.
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock)
	}()

	if err := store.Migrate(ctx, "postgres", migrationFS, migrator{conn.Conn()}); err != nil {
		return err
	}
	if err := backfillBMCKeys(ctx, conn.Conn()); err != nil {
		return err
	}
	if err := sqlstore.MigrateRiver(ctx, dialect{}, riverpgxv5.New(s.pool)); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, store.RiverRunningNodeIndex); err != nil {
		return fmt.Errorf("postgres: index of running jobs by node: %w", err)
	}
	return nil
}

// InTx runs fn in a transaction. fn's error (or panic) rolls back and is
// returned as is, except that a driver error saying the server is
// unreachable becomes store.Unavailable.
func (s *Store) InTx(ctx context.Context, fn func(tx store.Tx) error) error {
	pgTx, err := s.pool.Begin(ctx)
	if err != nil {
		return wrap("begin", err)
	}
	done := false
	defer func() {
		if !done {
			// Roll back even when ctx is cancelled, so the connection
			// returns to the pool clean.
			_ = pgTx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	// After a failed statement PostgreSQL refuses every later one in the
	// transaction, so a failed write is explained on the pool.
	if err := fn(&Tx{queries: newQueries(s.box, newQuerier(pgTx), s.onPool), tx: pgTx}); err != nil {
		return sqlstore.TxError(dialect{}, err)
	}
	done = true
	if err := pgTx.Commit(ctx); err != nil {
		return wrap("commit", err)
	}
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return wrap("ping", err)
	}
	return nil
}

// Dialect returns "postgres".
func (s *Store) Dialect() string { return "postgres" }

// Native returns the *pgxpool.Pool, for River's riverpgxv5 driver.
func (s *Store) Native() any { return s.pool }

// ReadNative is Native: PostgreSQL's readers never wait for a writer.
func (s *Store) ReadNative() any { return s.pool }

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Tx is an open transaction; every query runs on it.
type Tx struct {
	queries
	tx pgx.Tx
}

// GetNodeForUpdate reads the node with FOR UPDATE (see store.Tx).
func (t *Tx) GetNodeForUpdate(ctx context.Context, idOrName string) (*baremetal.Node, error) {
	return sqlstore.GetNodeWith(ctx, t.Queries, idOrName, t.pg.GetNodeForUpdate)
}

// ClaimNode claims a free node with FOR UPDATE SKIP LOCKED (see
// store.Tx): a create that loses the race for a node takes the next one
// at once, without a version conflict and a retry. When every free node
// is locked by another transaction, it waits for them one by one, in id
// order, and takes the first its holder left free.
//
// Each try runs in a savepoint, rolled back when it claims nothing: a
// locking read also locks the rows it then passes over because a
// concurrent commit took them, and holding those while waiting for
// another row could close a cycle with a transaction that writes several
// nodes (a power-sync batch) and waits for one of them: a deadlock. So
// the transaction waits holding no node, and keeps only the one it
// claims.
func (t *Tx) ClaimNode(ctx context.Context, c store.NodeClaim) (*baremetal.Node, error) {
	n, err := t.claimIn(ctx, func() (*baremetal.Node, error) {
		return sqlstore.ClaimNode(ctx, t.Queries, c)
	})
	if !baremetal.IsCode(err, baremetal.CodeNotFound) || !c.Storable() {
		return n, err
	}
	a := sqlstore.ClaimArgs(c)
	after := ""
	for {
		id, err := t.pg.NextFreeNode(ctx, after, a.ResourceClass, a.Driver, a.Project, a.MinCpus, a.MinMemoryMB,
			a.MinDiskGB, a.CPUArch, a.RequiredTraits, a.ForbiddenTraits)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, store.NoFreeNode(c)
		}
		if err != nil {
			return nil, wrap("claim node", err)
		}
		n, err := t.claimIn(ctx, func() (*baremetal.Node, error) {
			n, err := t.GetNodeForUpdate(ctx, id)
			if err == nil && !c.Fits(n) {
				return nil, store.NoFreeNode(c)
			}
			return n, err
		})
		if !baremetal.IsCode(err, baremetal.CodeNotFound) {
			return n, err
		}
		after = id
	}
}

// claimIn runs claim in a savepoint, released when claim returns a node
// (its locks then stay the transaction's) and rolled back otherwise, with
// every lock taken in it.
func (t *Tx) claimIn(ctx context.Context, claim func() (*baremetal.Node, error)) (*baremetal.Node, error) {
	sp, err := t.tx.Begin(ctx)
	if err != nil {
		return nil, wrap("claim node: savepoint", err)
	}
	n, err := claim()
	if err != nil {
		if rerr := sp.Rollback(ctx); rerr != nil {
			return nil, wrap("claim node: roll back to savepoint", rerr)
		}
		return nil, err
	}
	if err := sp.Commit(ctx); err != nil {
		return nil, wrap("claim node: release savepoint", err)
	}
	return n, nil
}

// Native returns the pgx.Tx, for River's InsertTx.
func (t *Tx) Native() any { return t.tx }

// AllocateAddress, UpdateIPPool and DeleteIPPool read then write under
// the pool's row lock, which only lasts as long as a transaction
// (store.IPPools): on the Store each runs in one of its own. (On a Tx
// they are sqlstore's, in the caller's transaction.)

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
