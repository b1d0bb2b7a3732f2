package jobs

import (
	"context"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Node writes go through the ledger (internal/ledger), the one write path
// the service uses too; the jobs' mutations are ledger.Funcs run as
// ledger.Controller, which may not touch maintenance.

// recordBMCFailure writes a failed BMC call to the node's fault accounting.
// Errors writing it are logged, not returned: the caller is already
// handling the BMC error, which matters more.
func (r *nodeWork) recordBMCFailure(ctx context.Context, nodeID, op string, bmcErr error) {
	_, err := r.ledger.Update(ctx, nodeID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		r.noteFailure(n, op, bmcErr, time.Now())
		return nil
	})
	if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
		r.log.WarnContext(ctx, "record BMC failure", "node", nodeID, "op", op, "err", err)
	}
}

// recordActionFault writes an action fault (e.g. power_mismatch) to a node.
func (r *nodeWork) recordActionFault(ctx context.Context, nodeID string, f baremetal.Fault, msg string) {
	_, err := r.ledger.Update(ctx, nodeID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		n.SetActionFault(f, scrub(n, msg), time.Now())
		return nil
	})
	if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
		r.log.WarnContext(ctx, "record fault", "node", nodeID, "fault", f, "err", err)
	}
}
