package jobs

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// At most one mutating job (verify, deploy, cleanup, power, retire) acts on
// a node at a time. Uniqueness alone cannot give that: it is per kind, and
// a cleanup must be able to queue while a deploy of the same node runs.
//
// So every mutating job, when it starts, looks in river_job for another
// running mutating job of the same node that started before it (earlier
// attempted_at, ties broken by id). If there is one it snoozes for BusyPoll
// and looks again; snoozing uses no attempt. The rule is total, so of two
// jobs starting together exactly one proceeds, on any number of replicas:
// the job table is the one thing they all share.
//
// A job whose process died stays "running" until it is rescued
// (recovery.go: at start on SQLite, ReplicaTimeout after the last heartbeat
// on PostgreSQL); jobs behind it wait that long, which is the price of not
// acting on a node twice.

// busyNode reports whether another mutating job of nodeID is running and
// started before job.
func (r *nodeWork) busyNode(ctx context.Context, job *rivertype.JobRow, nodeID string) (bool, error) {
	res, err := r.q.JobList(ctx, river.NewJobListParams().
		States(rivertype.JobStateRunning).
		Kinds(mutatingKinds...).
		Where(argsNodeID, river.NamedArgs{"node_id": nodeID}).
		First(50))
	if err != nil {
		return false, fmt.Errorf("list running jobs of node %s: %w", nodeID, err)
	}
	for _, other := range res.Jobs {
		if other.ID != job.ID && startedBefore(other, job) {
			return true, nil
		}
	}
	return false, nil
}

func startedBefore(a, b *rivertype.JobRow) bool {
	switch {
	case a.AttemptedAt == nil || b.AttemptedAt == nil:
		return a.ID < b.ID
	case a.AttemptedAt.Equal(*b.AttemptedAt):
		return a.ID < b.ID
	default:
		return a.AttemptedAt.Before(*b.AttemptedAt)
	}
}

// KickNodeTx makes a node's pending BMC work run now instead of waiting out
// its backoff: the service layer calls it in the transaction that changes
// the node's BMC address or credentials. It queues a sync_node (which
// reads the power with the new credentials and clears the fault) and makes
// the node's waiting mutating jobs (a verify or cleanup backing off behind
// a wrong password) available at once. Everything goes through tx: on
// SQLite, anything else would wait for the transaction's own connection.
func (r *Runner) KickNodeTx(ctx context.Context, tx store.Tx, nodeID string) error {
	if _, err := r.q.InsertTx(ctx, tx, SyncNodeArgs{NodeID: nodeID}, nil); err != nil {
		return fmt.Errorf("kick node %s: enqueue sync_node: %w", nodeID, err)
	}
	res, err := r.q.JobListTx(ctx, tx, waitingJobsOf(nodeID))
	if err != nil {
		return fmt.Errorf("kick node %s: list waiting jobs: %w", nodeID, err)
	}
	for _, j := range res.Jobs {
		if _, err := r.q.JobRetryTx(ctx, tx, j.ID); err != nil {
			return fmt.Errorf("kick node %s: retry job %d now: %w", nodeID, j.ID, err)
		}
	}
	return nil
}

func waitingJobsOf(nodeID string) *river.JobListParams {
	return river.NewJobListParams().
		States(rivertype.JobStateRetryable, rivertype.JobStateScheduled).
		Kinds(mutatingKinds...).
		Where(argsNodeID, river.NamedArgs{"node_id": nodeID}).
		First(20)
}

// nudge makes the node's waiting mutating jobs run now. It is called when
// a BMC fault clears (power sync, sync_node): a cleanup or verify backing
// off for minutes behind a BMC that just came back should not keep waiting.
func (r *nodeWork) nudge(ctx context.Context, nodeID string) {
	res, err := r.q.JobList(ctx, waitingJobsOf(nodeID))
	if err != nil {
		r.log.WarnContext(ctx, "list waiting jobs to nudge", "node", nodeID, "err", err)
		return
	}
	for _, j := range res.Jobs {
		if _, err := r.q.JobRetry(ctx, j.ID); err != nil {
			r.log.WarnContext(ctx, "nudge job", "node", nodeID, "job", j.ID, "err", err)
		}
	}
}
