package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/secret"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

func openGroupStore(t *testing.T) *Store {
	t.Helper()
	box, err := secret.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "group.db"), box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.writer.ExecContext(t.Context(), `CREATE TABLE t (x INTEGER NOT NULL UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	return s
}

// insert writes x into t through the transaction.
func insert(ctx context.Context, tx store.Tx, x int) error {
	_, err := tx.Native().(*sql.Tx).ExecContext(ctx, `INSERT INTO t (x) VALUES (?)`, x)
	return err
}

func rowsOfT(t *testing.T, s *Store) []int {
	t.Helper()
	rows, err := s.reader.QueryContext(t.Context(), `SELECT x FROM t ORDER BY x`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var x int
		if err := rows.Scan(&x); err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

// queued holds the writer while n transactions queue behind it, then lets
// them go: the next leader takes all n as one group.
func queued(t *testing.T, s *Store, n int, start func(i int)) {
	t.Helper()
	s.gate <- struct{}{}
	for i := range n {
		start(i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.txq.mu.Lock()
		l := len(s.txq.req)
		s.txq.mu.Unlock()
		if l == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d transactions queued", l, n)
		}
		time.Sleep(time.Millisecond)
	}
	s.gate.leave()
}

// TestGroupCommit commits transactions that queued together as one
// group, and each keeps its own outcome: the writes of one that fails,
// hits a constraint or panics are rolled back, the others' are committed,
// and each caller gets its own error or panic.
func TestGroupCommit(t *testing.T) {
	s := openGroupStore(t)
	ctx := t.Context()
	if err := s.InTx(ctx, func(tx store.Tx) error { return insert(ctx, tx, 1000) }); err != nil {
		t.Fatal(err)
	}
	const n = 12
	errs := make([]error, n)
	panics := make([]any, n)
	fail := errors.New("refused")
	var wg sync.WaitGroup
	queued(t, s, n, func(i int) {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			errs[i] = s.InTx(ctx, func(tx store.Tx) error {
				if err := insert(ctx, tx, i); err != nil {
					return err
				}
				switch i {
				case 3:
					return fail
				case 5:
					panic("boom")
				case 7:
					return insert(ctx, tx, 1000) // unique violation
				}
				return nil
			})
		})
	})
	wg.Wait()
	for i := range n {
		switch i {
		case 3:
			if !errors.Is(errs[i], fail) {
				t.Errorf("transaction %d: err %v, want its own", i, errs[i])
			}
		case 5:
			if panics[i] != "boom" {
				t.Errorf("transaction %d: panic %v, want boom re-raised in its caller", i, panics[i])
			}
		case 7:
			if errs[i] == nil {
				t.Errorf("transaction %d: the unique violation was not returned", i)
			}
		default:
			if errs[i] != nil || panics[i] != nil {
				t.Errorf("transaction %d: err %v, panic %v", i, errs[i], panics[i])
			}
		}
	}
	want := []int{0, 1, 2, 4, 6, 8, 9, 10, 11, 1000}
	if got := rowsOfT(t, s); !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	// Each saw the writes of those before it: a name taken earlier in the
	// group is taken.
	var first, second error
	var wg2 sync.WaitGroup
	queued(t, s, 2, func(i int) {
		wg2.Go(func() {
			err := s.InTx(ctx, func(tx store.Tx) error { return insert(ctx, tx, 2000) })
			if i == 0 {
				first = err
			} else {
				second = err
			}
		})
	})
	wg2.Wait()
	if (first == nil) == (second == nil) {
		t.Errorf("two inserts of one unique value in one group: errors %v and %v, want exactly one", first, second)
	}
}

// TestGroupCommitLostTransaction: when a member's statement ends the
// whole SQLite transaction (as an interrupted INSERT does), the members
// that had run get store.Unavailable and none of their writes is kept, and
// those not run yet run in a new transaction.
func TestGroupCommitLostTransaction(t *testing.T) {
	s := openGroupStore(t)
	ctx := t.Context()
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	var order []int
	var mu sync.Mutex
	queued(t, s, n, func(i int) {
		wg.Go(func() {
			errs[i] = s.InTx(ctx, func(tx store.Tx) error {
				mu.Lock()
				order = append(order, i)
				third := len(order) == 3
				mu.Unlock()
				if err := insert(ctx, tx, i); err != nil {
					return err
				}
				if third {
					// The third to run ends the transaction under the group.
					_, err := tx.Native().(*sql.Tx).ExecContext(ctx, `ROLLBACK`)
					return err
				}
				return nil
			})
		})
	})
	wg.Wait()
	if len(order) != n {
		t.Fatalf("%d fns ran (%v), want each once: %d", len(order), order, n)
	}
	var kept []int
	for k, i := range order {
		switch {
		case k < 3:
			if !store.IsUnavailable(errs[i]) {
				t.Errorf("transaction %d (run #%d, in the lost transaction): err %v, want unavailable", i, k+1, errs[i])
			}
		default:
			if errs[i] != nil {
				t.Errorf("transaction %d (run #%d, after the lost one): err %v", i, k+1, errs[i])
			}
			kept = append(kept, i)
		}
	}
	slices.Sort(kept)
	if got := rowsOfT(t, s); !slices.Equal(got, kept) {
		t.Errorf("rows %v, want only those of the transactions run after the lost one: %v", got, kept)
	}
}

// TestGroupCommitCancelledWhileQueued: a caller whose context ends while
// it waits for the writer gets its context's error, and its fn never runs.
func TestGroupCommitCancelledWhileQueued(t *testing.T) {
	s := openGroupStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	s.gate <- struct{}{}
	errc := make(chan error, 1)
	go func() {
		errc <- s.InTx(ctx, func(tx store.Tx) error { return insert(ctx, tx, 1) })
	}()
	for {
		s.txq.mu.Lock()
		l := len(s.txq.req)
		s.txq.mu.Unlock()
		if l == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	err := <-errc
	s.gate.leave()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if err := s.InTx(t.Context(), func(store.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := rowsOfT(t, s); len(got) != 0 {
		t.Errorf("rows %v: the cancelled transaction ran", got)
	}
	if got := fmt.Sprint(len(s.txq.req)); got != "0" {
		t.Errorf("%s requests left queued", got)
	}
}

// A caller cancelled while its statement runs inside a commit group does
// not interrupt it: SQLite would roll back the whole transaction, and with
// it the work of every other caller in the group.
func TestGroupCommitCancelledMidStatement(t *testing.T) {
	s := openGroupStore(t)
	ctx := t.Context()
	if _, err := s.writer.ExecContext(ctx, `CREATE TABLE big (x INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const n, slow = 5, 1
	errs := make([]error, n)
	var wg sync.WaitGroup
	queued(t, s, n, func(i int) {
		wg.Go(func() {
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			errs[i] = s.InTx(cctx, func(tx store.Tx) error {
				if err := insert(cctx, tx, i); err != nil {
					return err
				}
				if i != slow {
					return nil
				}
				// Cancelled while a long INSERT runs.
				time.AfterFunc(20*time.Millisecond, cancel)
				_, err := tx.Native().(*sql.Tx).ExecContext(cctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 2000000)
					INSERT INTO big SELECT x FROM c`)
				return err
			})
		})
	})
	wg.Wait()
	for i := range n {
		if i != slow && errs[i] != nil {
			t.Errorf("transaction %d: %v; a cancelled neighbour's statement lost its work", i, errs[i])
		}
	}
	got := rowsOfT(t, s)
	for i := range n {
		if i != slow && !slices.Contains(got, i) {
			t.Errorf("row %d not committed (rows %v)", i, got)
		}
	}
}
