package jobs

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// reconcile makes sure every node in a transitional state has the job
// that moves it on. Every state change already commits together with its
// job (InsertTx), so this finds nothing in normal operation; it is the
// safety net for the rare ways a job can still go missing: a request
// deduplicated into a job of the same node that was just finishing
// (uniqueness covers running jobs), or a job discarded by hand. Inserting
// is idempotent: uniqueness drops the insert when the job is still
// queued, and a job for a node that moved on meanwhile exits at once.
//
// It runs once per power-sync pass, on the replica that fans the pass out.
func (r *Runner) reconcile(ctx context.Context, nodes []*baremetal.Node) {
	deleting, _, err := r.store.ListNodes(ctx, store.NodeFilter{Page: store.Page{Limit: store.MaxPageLimit}, ProvisionState: baremetal.StateDeleting})
	if err != nil {
		r.log.WarnContext(ctx, "reconcile: list deleting nodes", "err", err)
	}
	for _, n := range append(nodes, deleting...) {
		var args river.JobArgs
		switch n.ProvisionState {
		case baremetal.StateEnroll:
			args = VerifyArgs{NodeID: n.ID}
		case baremetal.StateDeploying:
			if n.InstanceID == "" {
				continue
			}
			args = DeployArgs{NodeID: n.ID, InstanceID: n.InstanceID}
		case baremetal.StateCleaning:
			args = CleanupArgs{NodeID: n.ID}
		case baremetal.StateDeleting:
			args = RetireArgs{NodeID: n.ID}
		default:
			continue
		}
		res, err := r.q.Insert(ctx, args, nil)
		if err != nil {
			r.log.WarnContext(ctx, "reconcile: queue job", "node", n.Name, "kind", args.Kind(), "err", err)
			continue
		}
		if !res.UniqueSkippedAsDuplicate {
			r.log.WarnContext(ctx, "reconcile: node had no pending job for its state; queued one",
				"node", n.Name, "state", n.ProvisionState, "kind", args.Kind(), "job_id", res.Job.ID)
		}
	}
}
