package jobs

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
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
// A job whose process died stays "running" until River's rescuer moves it
// (see NOTES.md); jobs behind it wait that long, which is the price of not
// acting on a node twice.

// busyNode reports whether another mutating job of nodeID is running and
// started before job.
func (r *Runner) busyNode(ctx context.Context, job *rivertype.JobRow, nodeID string) (bool, error) {
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

// nudge makes the node's waiting mutating jobs run now. It is called when
// a BMC fault clears (power sync, sync_node): a cleanup or verify backing
// off for minutes behind a BMC that just came back should not keep waiting.
func (r *Runner) nudge(ctx context.Context, nodeID string) {
	res, err := r.q.JobList(ctx, river.NewJobListParams().
		States(rivertype.JobStateRetryable, rivertype.JobStateScheduled).
		Kinds(mutatingKinds...).
		Where(argsNodeID, river.NamedArgs{"node_id": nodeID}).
		First(20))
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
