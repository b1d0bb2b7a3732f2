package jobs

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// TestBusyNode checks the rule that lets one mutating job act on a node
// at a time, on rows in river_job as River leaves them: another running
// mutating job of the same node that started earlier (or at the same
// instant with a lower id) makes a job wait; finished jobs, jobs of other
// nodes and kinds that do not mutate (sync_node) do not.
func TestBusyNode(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		st := open(t)
		h, _ := newFakeHarness(t, st, 2)
		a := h.addNode("a", "sys-a", baremetal.StateEnroll, false)
		b := h.addNode("b", "sys-b", baremetal.StateEnroll, false)
		verifyA := h.enqueue(VerifyArgs{NodeID: a.ID})
		cleanupA := h.enqueue(CleanupArgs{NodeID: a.ID})
		powerB := h.enqueue(PowerArgs{NodeID: b.ID, Action: "on"})
		syncA := h.enqueue(SyncNodeArgs{NodeID: a.ID})

		// running sets a job running since secondsAgo; a negative value
		// leaves attempted_at empty.
		running := func(id int64, secondsAgo int) {
			t.Helper()
			q := `UPDATE river_job SET state = 'running', attempted_at = strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ? || ' seconds') WHERE id = ?`
			if st.Dialect() == "postgres" {
				q = `UPDATE river_job SET state = 'running', attempted_at = now() - make_interval(secs => $1) WHERE id = $2`
			}
			if secondsAgo < 0 {
				q = `UPDATE river_job SET state = 'running', attempted_at = NULL WHERE id = ?`
				if st.Dialect() == "postgres" {
					q = `UPDATE river_job SET state = 'running', attempted_at = NULL WHERE id = $1`
				}
				h.inTx(func(tx store.Tx) error { return execNative(h.ctx, tx, q, id) })
				return
			}
			h.inTx(func(tx store.Tx) error { return execNative(h.ctx, tx, q, secondsAgo, id) })
		}
		sameStart := func(id, as int64) {
			t.Helper()
			q := `UPDATE river_job SET attempted_at = (SELECT attempted_at FROM river_job WHERE id = ?) WHERE id = ?`
			if st.Dialect() == "postgres" {
				q = `UPDATE river_job SET attempted_at = (SELECT attempted_at FROM river_job WHERE id = $1) WHERE id = $2`
			}
			h.inTx(func(tx store.Tx) error { return execNative(h.ctx, tx, q, as, id) })
		}
		completed := func(id int64) {
			t.Helper()
			q := `UPDATE river_job SET state = 'completed', finalized_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE id = ?`
			if st.Dialect() == "postgres" {
				q = `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1`
			}
			h.inTx(func(tx store.Tx) error { return execNative(h.ctx, tx, q, id) })
		}
		busy := func(id int64, node string) bool {
			t.Helper()
			got, err := h.r.busyNode(h.ctx, &rivertype.JobRow{ID: id}, node)
			if err != nil {
				t.Fatalf("busyNode(%d): %v", id, err)
			}
			return got
		}
		check := func(what string, id int64, node string, want bool) {
			t.Helper()
			if got := busy(id, node); got != want {
				t.Errorf("%s: busyNode(job %d) = %v, want %v", what, id, got, want)
			}
		}

		running(verifyA, 0)
		check("alone", verifyA, a.ID, false)
		running(syncA, 30) // not a mutating kind
		running(powerB, 30)
		check("a sync_node and another node's job ran earlier", verifyA, a.ID, false)

		running(cleanupA, 10)
		check("the cleanup started earlier", verifyA, a.ID, true)
		check("the cleanup, which started first", cleanupA, a.ID, false)

		sameStart(verifyA, cleanupA)
		check("same start, the lower id goes first", verifyA, a.ID, false)
		check("same start, the higher id waits", cleanupA, a.ID, true)

		running(verifyA, -1)
		check("no start time: the lower id goes first", verifyA, a.ID, false)
		check("no start time: the higher id waits", cleanupA, a.ID, true)

		completed(verifyA)
		check("the earlier job has finished", cleanupA, a.ID, false)
	})
}

// The look for a running job of the node reads the index of running jobs
// by node (store.RiverRunningNodeIndex), not every running job's row: its
// predicates must keep matching the index's expression and condition.
func TestBusyNodeUsesTheRunningNodeIndex(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		st := open(t)
		h, _ := newFakeHarness(t, st, 1)
		n := h.addNode("a", "sys-a", baremetal.StateEnroll, false)
		id := h.enqueue(VerifyArgs{NodeID: n.ID})
		var plan []string
		h.inTx(func(tx store.Tx) error {
			switch x := tx.Native().(type) {
			case *sql.Tx:
				rows, err := x.QueryContext(h.ctx, `EXPLAIN QUERY PLAN `+busyNodeSQL("?", "?"), id, n.ID)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var a, b, c int
					var detail string
					if err := rows.Scan(&a, &b, &c, &detail); err != nil {
						return err
					}
					plan = append(plan, detail)
				}
				return rows.Err()
			case pgx.Tx:
				// A table of a few rows is read whole unless told not to.
				if _, err := x.Exec(h.ctx, `SET LOCAL enable_seqscan = off`); err != nil {
					return err
				}
				rows, err := x.Query(h.ctx, `EXPLAIN `+busyNodeSQL("$1::bigint", "$2::text"), id, n.ID)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var line string
					if err := rows.Scan(&line); err != nil {
						return err
					}
					plan = append(plan, line)
				}
				return rows.Err()
			default:
				return fmt.Errorf("store transaction %T: no SQL handle", x)
			}
		})
		if !strings.Contains(strings.Join(plan, "\n"), "baremetal_river_job_running_node") {
			t.Fatalf("the busy-node query does not use the index of running jobs by node:\n%s", strings.Join(plan, "\n"))
		}
	})
}
