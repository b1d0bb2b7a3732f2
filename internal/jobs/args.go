package jobs

import (
	"context"
	"math"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Inserter enqueues a job inside an open store transaction. The service
// layer depends on this, not on River's generic client.
type Inserter interface {
	InsertTx(ctx context.Context, tx store.Tx, args river.JobArgs) (jobID int64, err error)
}

// Queue names. Power sync batches get their own queue so a sync pass over
// thousands of nodes never delays a user's deploy or cleanup waiting in the
// default queue.
const (
	QueueDefault   = river.QueueDefault
	QueuePowerSync = "power_sync"
)

// uniquePerNode dedupes a kind per node while a job is waiting or running.
// Completed (and cancelled/discarded) jobs are left out of ByState on
// purpose: River's default keeps a completed job blocking a new one with the
// same key for 24 h (measured on River v0.51), which would make a second cleanup of the
// same node a silent no-op.
var uniquePerNode = river.UniqueOpts{
	ByArgs: true,
	ByState: []rivertype.JobState{
		rivertype.JobStateAvailable,
		rivertype.JobStatePending,
		rivertype.JobStateRetryable,
		rivertype.JobStateRunning,
		rivertype.JobStateScheduled,
	},
}

// foreverAttempts is the MaxAttempts of kinds that must never give up
// (cleanup, verify, retire). River stores max_attempts as a smallint on PostgreSQL;
// workers snooze instead of failing once the counter nears it, so the limit
// is never reached.
const foreverAttempts = math.MaxInt16

// Attempts of kinds that do give up.
const (
	deployMaxAttempts = 12
	powerMaxAttempts  = 6
)

// VerifyArgs reaches a node's BMC once (power state + inventory) and moves
// it from enroll to available. Retried with backoff while the BMC fails.
type VerifyArgs struct {
	NodeID string `json:"node_id" river:"unique"`
}

func (VerifyArgs) Kind() string { return "verify" }

func (VerifyArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: foreverAttempts, UniqueOpts: uniquePerNode}
}

// DeployArgs boots an instance's image on its node.
type DeployArgs struct {
	NodeID string `json:"node_id" river:"unique"`
	// InstanceID is part of the unique key: a deploy still waiting to
	// retry for a deleted instance must not swallow the deploy of the next
	// instance placed on the same node.
	InstanceID string `json:"instance_id" river:"unique"`
	// Rebuild is the instance's rebuild count when the job was queued
	// (service.RebuildInstance), also part of the unique key: the last
	// deploy's job may still be running or about to snooze (in
	// wait_ready, after the OS's callback finished the deploy), and
	// would swallow the rebuild's insert until its snooze ends. Whichever
	// deploy job of the instance runs works the instance's current flow
	// from the node's step (the flows are made to be resumed), so a late
	// job of an earlier deploy does no harm.
	Rebuild int `json:"rebuild,omitempty" river:"unique"`
}

func (DeployArgs) Kind() string { return "deploy" }

func (DeployArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: deployMaxAttempts, UniqueOpts: uniquePerNode}
}

// CleanupArgs powers a node off, clears boot override and media, and makes
// it available again after its instance was deleted. Retries forever.
type CleanupArgs struct {
	NodeID string `json:"node_id" river:"unique"`
	// InstanceID is the deleted instance, for events.
	InstanceID string `json:"instance_id,omitempty"`
}

func (CleanupArgs) Kind() string { return "cleanup" }

func (CleanupArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: foreverAttempts, UniqueOpts: uniquePerNode}
}

// PowerArgs is an admin power action. Unique per node and action: a
// repeated "reset" while one waits is the same request, but "off" after
// "on" is a new one and must not be dropped as a duplicate; the two then
// run one after the other (exclusive.go), normally in the order they were
// queued.
type PowerArgs struct {
	NodeID string `json:"node_id" river:"unique"`
	Action string `json:"action" river:"unique"` // on | off | reset | soft_off
	Actor  string `json:"actor"`
}

func (PowerArgs) Kind() string { return "power" }

func (PowerArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: powerMaxAttempts, UniqueOpts: uniquePerNode}
}

// RetireArgs powers a deleted node off and removes its record.
type RetireArgs struct {
	NodeID string `json:"node_id" river:"unique"`
	// Force skips the power-off and the maintenance wait: the operator
	// asked for the record to go whatever the hardware does.
	Force bool `json:"force,omitempty"`
}

func (RetireArgs) Kind() string { return "retire" }

func (RetireArgs) InsertOpts() river.InsertOpts {
	// Never gives up: a node delete always completes once the BMC
	// answers (force=true removes the record without it).
	return river.InsertOpts{MaxAttempts: foreverAttempts, UniqueOpts: uniquePerNode}
}

// SyncNodeArgs reads one node's power state now, e.g. right after an admin
// changed its BMC credentials, so a fault clears without waiting for the
// next sync pass. It only observes, so it does not take the node's
// mutating-job slot.
type SyncNodeArgs struct {
	NodeID string `json:"node_id" river:"unique"`
}

func (SyncNodeArgs) Kind() string { return "sync_node" }

func (SyncNodeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: uniquePerNode}
}

// PowerSyncArgs is the periodic power-sync pass, enqueued by River's leader
// only. Its worker fans the due nodes out into PowerSyncBatchArgs jobs that
// any replica may take (see doc.go).
type PowerSyncArgs struct{}

func (PowerSyncArgs) Kind() string { return "power_sync" }

func (PowerSyncArgs) InsertOpts() river.InsertOpts {
	// A lost pass is replaced by the next one; retrying a stale one would
	// only duplicate it.
	return river.InsertOpts{MaxAttempts: 1, Queue: QueuePowerSync}
}

// PowerSyncBatchArgs reads the power state of a batch of nodes.
type PowerSyncBatchArgs struct {
	NodeIDs []string `json:"node_ids"`
	// Waiting are nodes backing off behind the BMC of one of NodeIDs that
	// had failed: the batch reads them too if that BMC answers again (see
	// Runner.syncNodes).
	Waiting []string `json:"waiting,omitempty"`
}

func (PowerSyncBatchArgs) Kind() string { return "power_sync_batch" }

func (PowerSyncBatchArgs) InsertOpts() river.InsertOpts {
	// BMC failures are recorded on the nodes, not returned; only database
	// errors fail a batch, and the next pass covers it anyway.
	return river.InsertOpts{MaxAttempts: 3, Queue: QueuePowerSync}
}

// mutatingKinds act on hardware or provision state; at most one of them
// runs per node at a time (see exclusive.go).
var mutatingKinds = []string{
	VerifyArgs{}.Kind(), DeployArgs{}.Kind(), CleanupArgs{}.Kind(),
	PowerArgs{}.Kind(), RetireArgs{}.Kind(), ConfigureArgs{}.Kind(),
}

// InspectArgs boots the deploy agent on a node in state inspecting and
// records the hardware it reports. It retries BMC trouble like a cleanup
// and gives up on the agent after Config.AgentTimeout.
type InspectArgs struct {
	NodeID string `json:"node_id" river:"unique"`
}

func (InspectArgs) Kind() string { return "inspect" }

func (InspectArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: foreverAttempts, UniqueOpts: uniquePerNode}
}
