package jobs

import (
	"context"
	"slices"

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
// It runs once per power-sync pass, on the replica that fans the pass out,
// on the pass's listing of every node (listNodes).
func (r *Runner) reconcile(ctx context.Context, nodes []*baremetal.Node) {
	var candidates []*baremetal.Node
	for _, n := range nodes {
		if jobFor(n) != nil {
			candidates = append(candidates, n)
		}
	}
	// The listing may be seconds old (a pass over a big fleet): a node
	// listed in enroll may have been verified since, and its finished
	// verify no longer blocks a new one by uniqueness. Re-read the
	// candidates and queue only for those still in the state they were
	// listed in: after a large enroll the stale list queued hundreds of
	// spurious verify jobs.
	for chunk := range slices.Chunk(candidates, store.MaxPageLimit) {
		ids := make([]string, len(chunk))
		for i, n := range chunk {
			ids[i] = n.ID
		}
		fresh, err := r.store.GetNodes(ctx, ids)
		if err != nil {
			r.log.WarnContext(ctx, "reconcile: re-read nodes", "err", err)
			return
		}
		byID := make(map[string]*baremetal.Node, len(fresh))
		for _, n := range fresh {
			byID[n.ID] = n
		}
		var still []*baremetal.Node
		for _, listed := range chunk {
			n := byID[listed.ID]
			if n == nil || n.ProvisionState != listed.ProvisionState || n.InstanceID != listed.InstanceID {
				continue // gone or moved on: its own transition queued what it needs
			}
			still = append(still, n)
		}
		r.ensureJobs(ctx, still)
	}
}

// jobFor is the job that moves a node on from its transitional state, or
// nil when its state needs none.
func jobFor(n *baremetal.Node) river.JobArgs {
	switch n.ProvisionState {
	case baremetal.StateEnroll:
		return VerifyArgs{NodeID: n.ID}
	case baremetal.StateDeploying:
		if n.InstanceID == "" {
			return nil
		}
		return DeployArgs{NodeID: n.ID, InstanceID: n.InstanceID}
	case baremetal.StateCleaning:
		return CleanupArgs{NodeID: n.ID}
	case baremetal.StateDeleting:
		return RetireArgs{NodeID: n.ID}
	case baremetal.StateInspecting:
		return InspectArgs{NodeID: n.ID}
	case baremetal.StateConfiguring:
		return ConfigureArgs{NodeID: n.ID}
	}
	return nil
}

// ensureJobs inserts each node's job (jobFor), all in one transaction:
// uniqueness drops the insert when the node's job is still queued or
// running, which is the normal case. One insert per node, each its own
// transaction, cost a commit per node at every pass while many nodes sat
// in a transitional state (a large enroll, BMCs down while nodes clean).
func (r *Runner) ensureJobs(ctx context.Context, nodes []*baremetal.Node) {
	if len(nodes) == 0 {
		return
	}
	params := make([]river.InsertManyParams, len(nodes))
	for i, n := range nodes {
		params[i] = river.InsertManyParams{Args: jobFor(n)}
	}
	res, err := r.q.InsertMany(ctx, params)
	if err != nil {
		r.log.WarnContext(ctx, "reconcile: queue jobs", "nodes", len(nodes), "err", err)
		return
	}
	byKey := make(map[[2]string]*baremetal.Node, len(nodes))
	for _, n := range nodes {
		byKey[[2]string{jobFor(n).Kind(), n.ID}] = n
	}
	for _, res := range res {
		if res.UniqueSkippedAsDuplicate {
			continue
		}
		name, state := "", baremetal.ProvisionState("")
		if n := byKey[[2]string{res.Job.Kind, nodeIDOf(res.Job)}]; n != nil {
			name, state = n.Name, n.ProvisionState
		}
		r.log.WarnContext(ctx, "reconcile: node had no pending job for its state; queued one",
			"node", name, "state", state, "kind", res.Job.Kind, "job_id", res.Job.ID)
	}
}
