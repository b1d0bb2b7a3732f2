// Package jobs is the controller's durable work on River: one args+worker
// pair per kind (verify, deploy, cleanup, power, retire), plus the periodic
// power sync. Jobs are enqueued with InsertTx in the same transaction as
// the state change that needs them, so neither can exist without the other.
package jobs

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Inserter enqueues a job inside an open store transaction. The service
// layer depends on this, not on River's generic client.
type Inserter interface {
	InsertTx(ctx context.Context, tx store.Tx, args river.JobArgs) (jobID int64, err error)
}

// VerifyArgs reaches a node's BMC once (power state + inventory) and moves
// it from enroll to available. Retried with backoff while the BMC fails.
type VerifyArgs struct {
	NodeID string `json:"node_id" river:"unique"`
}

func (VerifyArgs) Kind() string { return "verify" }

// DeployArgs boots an instance's image on its node.
type DeployArgs struct {
	NodeID     string `json:"node_id" river:"unique"`
	InstanceID string `json:"instance_id"`
}

func (DeployArgs) Kind() string { return "deploy" }

// CleanupArgs powers a node off, clears boot override and media, and makes
// it available again after its instance was deleted. Retries forever.
type CleanupArgs struct {
	NodeID string `json:"node_id" river:"unique"`
	// InstanceID is the deleted instance, for events.
	InstanceID string `json:"instance_id,omitempty"`
}

func (CleanupArgs) Kind() string { return "cleanup" }

// PowerArgs is an admin power action.
type PowerArgs struct {
	NodeID string `json:"node_id" river:"unique"`
	Action string `json:"action"` // on | off | reset | soft_off
	Actor  string `json:"actor"`
}

func (PowerArgs) Kind() string { return "power" }

// RetireArgs powers a deleted node off and removes its record.
type RetireArgs struct {
	NodeID string `json:"node_id" river:"unique"`
}

func (RetireArgs) Kind() string { return "retire" }
