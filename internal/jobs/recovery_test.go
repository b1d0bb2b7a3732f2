package jobs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// fakeRunning makes job look like what a controller killed mid-attempt
// leaves: running, its last attempt by replica, started just now (so
// River's own rescuer, which waits for RescueStuckJobsAfter - 48 s with
// testConfig - would not touch it during these tests), and on its last
// allowed attempt.
func (h *harness) fakeRunning(jobID int64, replica string) {
	h.t.Helper()
	h.inTx(func(tx store.Tx) error {
		if h.st.Dialect() == "sqlite" {
			return execNative(h.ctx, tx, `UPDATE river_job SET state = 'running', attempt = 1, max_attempts = 1,
				attempted_at = datetime('now', 'subsec'), attempted_by = jsonb(json_array(?1)) WHERE id = ?2`, replica, jobID)
		}
		return execNative(h.ctx, tx, `UPDATE river_job SET state = 'running', attempt = 1, max_attempts = 1,
			attempted_at = now(), attempted_by = ARRAY[$1] WHERE id = $2`, replica, jobID)
	})
}

// setHeartbeat writes another replica's heartbeat, age ago (PostgreSQL).
func (h *harness) setHeartbeat(replica string, age time.Duration) {
	h.t.Helper()
	h.inTx(func(tx store.Tx) error {
		return execNative(h.ctx, tx, `INSERT INTO replica_heartbeats (id, started_at, last_seen)
			VALUES ($1, now() - make_interval(secs => $2), now() - make_interval(secs => $2))
			ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen`, replica, age.Seconds())
	})
}

func (h *harness) heartbeatIDs() []string {
	h.t.Helper()
	var ids []string
	h.inTx(func(tx store.Tx) error {
		// queryRescued scans five columns; the id goes in the second.
		rs, err := queryRescued(h.ctx, tx, `SELECT 0, id, 0, '', '' FROM replica_heartbeats ORDER BY id`)
		ids = nil
		for _, r := range rs {
			ids = append(ids, r.kind)
		}
		return err
	})
	return ids
}

// finishedJob waits until job id is finalized and returns it.
func (h *harness) finishedJob(id int64) *rivertype.JobRow {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		j := h.job(id)
		if j.FinalizedAt != nil || time.Now().After(deadline) {
			return j
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) job(id int64) *rivertype.JobRow {
	h.t.Helper()
	res, err := h.r.q.JobList(h.ctx, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, j := range res.Jobs {
		if j.ID == id {
			return j
		}
	}
	h.t.Fatalf("job %d not found", id)
	return nil
}

// checkRescued asserts the bookkeeping of a rescued job that then ran: the
// interrupted attempt counted (attempt 2), its error says why, and the
// used-up attempts were extended by one rather than the job discarded.
func checkRescued(t *testing.T, j *rivertype.JobRow, dead string) {
	t.Helper()
	if j.State != rivertype.JobStateCompleted || j.Attempt != 2 || j.MaxAttempts != 2 {
		t.Errorf("rescued job: state=%s attempt=%d/%d, want completed 2/2", j.State, j.Attempt, j.MaxAttempts)
	}
	if len(j.Errors) != 1 || !strings.Contains(j.Errors[0].Error, dead) || j.Errors[0].Attempt != 1 || j.Errors[0].At.IsZero() {
		t.Errorf("rescued job errors: %+v, want one for attempt 1 naming %s", j.Errors, dead)
	}
	var md map[string]any
	if err := json.Unmarshal(j.Metadata, &md); err != nil || md["river:rescue_count"] != float64(1) {
		t.Errorf("rescued job metadata %s (%v), want river:rescue_count 1", j.Metadata, err)
	}
}

// A job a dead controller left running runs again at start: on SQLite
// every running job (the store's lock says no other controller is
// alive), on PostgreSQL those of replicas whose heartbeat is stale.
// Without the rescue the job stays running until River's rescuer, long
// after waitNode gives up.
func TestRescueAtStart(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newFakeHarness(t, open(t), 1)
		n := h.addNode("n-orphan", sys[0], baremetal.StateCleaning, false)
		mustPower(t, h, sys[0], true)
		id := h.enqueue(CleanupArgs{NodeID: n.ID})
		const dead = "dead-host-41-0badc0ffee00"
		h.fakeRunning(id, dead)
		if h.st.Dialect() == "postgres" {
			h.setHeartbeat(dead, time.Hour)
		}
		h.start()
		h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
		if p, _ := h.bmc.Power(sys[0]); p != "Off" {
			t.Errorf("BMC power %s after the rescued cleanup", p)
		}
		checkRescued(t, h.finishedJob(id), dead)
		// The dead replica is forgotten once its jobs are rescued; this
		// one's heartbeat is there.
		if ids := h.heartbeatIDs(); len(ids) != 1 || ids[0] != h.r.replicaID {
			t.Errorf("heartbeats %v, want only %s", ids, h.r.replicaID)
		}
	})
}

// PostgreSQL, several replicas: the running job of a replica whose
// heartbeat is fresh is left alone however long it runs; once the
// heartbeat stops, another replica runs the job again within about
// ReplicaTimeout.
func TestRescueDeadReplica(t *testing.T) {
	t.Parallel()
	const beat, timeout = 50 * time.Millisecond, 500 * time.Millisecond
	h, sys := newFakeHarness(t, storetest.OpenPostgres(t), 1, func(c *Config) { c.HeartbeatInterval, c.ReplicaTimeout = beat, timeout })
	n := h.addNode("n-replica", sys[0], baremetal.StateCleaning, false)
	mustPower(t, h, sys[0], true)
	id := h.enqueue(CleanupArgs{NodeID: n.ID})
	const other = "other-host-7-00112233aabb"
	h.fakeRunning(id, other)
	h.setHeartbeat(other, 0)
	h.start()

	// The other replica lives for 20 heartbeat periods (four timeouts):
	// its job must stay running, untouched.
	for range 20 {
		h.setHeartbeat(other, 0)
		time.Sleep(beat)
	}
	if j := h.job(id); j.State != rivertype.JobStateRunning || j.Attempt != 1 {
		t.Fatalf("the job of a live replica was touched: state=%s attempt=%d", j.State, j.Attempt)
	}

	// It dies (stops heartbeating).
	died := time.Now()
	h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
	t.Logf("rescued and completed %s after the last heartbeat (replica timeout %s)", time.Since(died).Round(time.Millisecond), timeout)
	checkRescued(t, h.finishedJob(id), other)
	if ids := h.heartbeatIDs(); len(ids) != 1 || ids[0] != h.r.replicaID {
		t.Errorf("heartbeats %v, want only %s", ids, h.r.replicaID)
	}
}

// A cleanly stopped runner removes its heartbeat, so nobody waits for it
// to go stale.
func TestHeartbeatRemovedOnStop(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, _ := newFakeHarness(t, open(t), 1)
		if err := h.r.Start(h.ctx); err != nil {
			t.Fatal(err)
		}
		if ids := h.heartbeatIDs(); len(ids) != 1 || ids[0] != h.r.replicaID {
			t.Fatalf("heartbeats after start %v, want %s", ids, h.r.replicaID)
		}
		if err := h.r.Stop(h.ctx); err != nil {
			t.Fatal(err)
		}
		if ids := h.heartbeatIDs(); len(ids) != 0 {
			t.Errorf("heartbeats after stop %v, want none", ids)
		}
	})
}
