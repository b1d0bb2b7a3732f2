package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlstore"
)

// Group commit.
//
// Every commit of the writer connection waits for an fsync of the WAL
// (synchronous=FULL, the default: a commit survives power loss), and on a
// typical disk that fsync alone takes a millisecond or more. Transactions
// one after another are therefore capped at a few hundred commits a
// second, however little each does: measured, enrolling nodes through the
// API spent most of its time in the create's and the verify job's commits.
//
// So transactions that queue for the writer while another runs are
// committed together: the caller that gets the writer next (the leader)
// takes every transaction waiting at that moment (up to maxGroup), runs
// each one's fn inside a SAVEPOINT of one SQLite transaction, and commits
// once. For each caller nothing changes in what it sees:
//
//   - its fn's writes are atomic: an fn that fails (or panics) is rolled
//     back to its savepoint, the others' work stays;
//   - InTx returns only after the commit that made its writes durable
//     (or with the commit's error, and then none of them were written);
//   - the group runs one fn after another, in arrival order, so each fn
//     sees the writes of those before it, exactly as if their
//     transactions had committed just before it began.
//
// A transaction that finds the writer free runs alone, as a plain
// transaction: group commit costs nothing without contention.
//
// A statement interrupted inside a transaction may make SQLite roll back
// the whole transaction. A caller's cancellation does not interrupt a
// group's statements (cachingConn.stmtCtx), but a failing disk can. The leader sees that when the savepoint after the fn cannot
// be released or rolled back: the callers whose fns had run get
// store.Unavailable (nothing of theirs was written; a retry succeeds), and
// those not run yet go back to the front of the queue.

// maxGroup bounds the transactions committed together: each waits for
// all of its group's fns, so a bound keeps that wait short.
const maxGroup = 32

// txRequest is one caller's transaction waiting for (or in) a group.
type txRequest struct {
	ctx  context.Context
	fn   func(tx store.Tx) error
	done chan struct{}
	// err is the result; panicked, when non-nil, is the value fn panicked
	// with, re-raised in the caller's goroutine.
	err      error
	panicked any
}

func (r *txRequest) finish(err error) {
	r.err = err
	close(r.done)
}

// result is the caller's view of its finished request.
func (r *txRequest) result() error {
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.err
}

// txQueue holds the requests waiting for a leader.
type txQueue struct {
	mu  sync.Mutex
	req []*txRequest
}

func (q *txQueue) push(r *txRequest) {
	q.mu.Lock()
	q.req = append(q.req, r)
	q.mu.Unlock()
}

// pushFront puts requests a failed group did not run back at the head.
func (q *txQueue) pushFront(rs []*txRequest) {
	q.mu.Lock()
	q.req = append(append([]*txRequest(nil), rs...), q.req...)
	q.mu.Unlock()
}

// take removes up to n requests from the head.
func (q *txQueue) take(n int) []*txRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(n, len(q.req))
	out := q.req[:n:n]
	q.req = q.req[n:]
	if len(q.req) == 0 {
		q.req = nil
	}
	return out
}

// remove takes r out of the queue; false when a leader has it already.
func (q *txQueue) remove(r *txRequest) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.req {
		if x == r {
			q.req = append(q.req[:i:i], q.req[i+1:]...)
			return true
		}
	}
	return false
}

// InTx runs fn in a transaction on the writer connection, committed alone
// or with the transactions waiting beside it (see above). fn's error (or
// panic) rolls back its writes and is returned as is, except that a
// driver error saying the database cannot be used becomes
// store.Unavailable.
func (s *Store) InTx(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return wrap("begin", err)
	}
	r := &txRequest{ctx: ctx, fn: fn, done: make(chan struct{})}
	s.txq.push(r)
	for {
		select {
		case <-r.done:
			return r.result()
		case <-ctx.Done():
			if s.txq.remove(r) {
				return wrap("begin", ctx.Err())
			}
			// A leader is running it: its writes may be committing, so
			// the caller must learn the outcome, not a cancellation.
			<-r.done
			return r.result()
		case s.gate <- struct{}{}:
			s.lead()
		}
	}
}

// lead runs the waiting transactions, holding the gate. An fn that ends
// its goroutine (runtime.Goexit: t.FailNow in a test) leaves its group's
// unfinished requests failed rather than waiting forever, and the gate
// free.
func (s *Store) lead() {
	group := s.txq.take(maxGroup)
	normal := false
	defer func() {
		if !normal {
			for _, r := range group {
				select {
				case <-r.done:
				default:
					r.finish(errors.New("sqlite: transaction abandoned: a function in its commit group ended its goroutine"))
				}
			}
		}
		s.gate.leave()
	}()
	switch len(group) {
	case 0: // run by an earlier leader meanwhile
	case 1:
		s.runAlone(group[0])
	default:
		s.runGroup(group)
	}
	normal = true
}

// runGroup commits several transactions as one.
func (s *Store) runGroup(group []*txRequest) {
	s.grouping.Store(true)
	defer s.grouping.Store(false)
	// The transaction belongs to no single caller: one caller's
	// cancellation must not roll back the others' work (database/sql rolls
	// a transaction back when its context ends).
	sqlTx, err := s.writer.BeginTx(context.WithoutCancel(group[0].ctx), nil)
	if err != nil {
		for _, r := range group {
			r.finish(wrap("begin", err))
		}
		return
	}
	defer func() { _ = sqlTx.Rollback() }() // after Commit, a no-op; after Goexit, needed
	var ran []*txRequest                    // fns whose writes are in sqlTx
	lost := func(i int, cause error) {
		_ = sqlTx.Rollback()
		for _, r := range ran {
			r.finish(store.Unavailable("sqlite: group commit", cause))
		}
		s.txq.pushFront(group[i:])
	}
	for i, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.finish(wrap("begin", err))
			continue
		}
		if _, err := sqlTx.ExecContext(context.Background(), "SAVEPOINT group_member"); err != nil {
			r.finish(wrap("savepoint", err)) // so that every group makes progress
			lost(i+1, err)
			return
		}
		panicked, err := s.runFn(sqlTx, r.fn)
		if err == nil && panicked == nil {
			if _, err := sqlTx.ExecContext(context.Background(), "RELEASE group_member"); err != nil {
				ran = append(ran, r)
				lost(i+1, err)
				return
			}
			ran = append(ran, r)
			continue
		}
		if _, rerr := sqlTx.ExecContext(context.Background(), "ROLLBACK TO group_member"); rerr != nil {
			r.err, r.panicked = err, panicked
			close(r.done)
			lost(i+1, rerr)
			return
		}
		if _, rerr := sqlTx.ExecContext(context.Background(), "RELEASE group_member"); rerr != nil {
			r.err, r.panicked = err, panicked
			close(r.done)
			lost(i+1, rerr)
			return
		}
		r.err, r.panicked = err, panicked
		close(r.done)
	}
	err = sqlTx.Commit()
	if err != nil {
		err = wrap("commit", err)
	}
	for _, r := range ran {
		r.finish(err)
	}
}

// runAlone is a plain transaction: nobody else was waiting.
func (s *Store) runAlone(r *txRequest) {
	sqlTx, err := s.writer.BeginTx(r.ctx, nil)
	if err != nil {
		r.finish(wrap("begin", err))
		return
	}
	defer func() { _ = sqlTx.Rollback() }() // after Commit, a no-op; after Goexit, needed
	panicked, err := s.runFn(sqlTx, r.fn)
	if err != nil || panicked != nil {
		_ = sqlTx.Rollback()
		r.err, r.panicked = err, panicked
		close(r.done)
		return
	}
	if err := sqlTx.Commit(); err != nil {
		r.finish(wrap("commit", err))
		return
	}
	r.finish(nil)
}

// runFn runs fn on sqlTx; a panic is returned, to be re-raised in fn's
// own caller (the leader may be another goroutine).
func (s *Store) runFn(sqlTx *sql.Tx, fn func(tx store.Tx) error) (panicked any, err error) {
	defer func() { panicked = recover() }()
	return nil, sqlstore.TxError(dialect{}, fn(s.newTx(sqlTx)))
}
