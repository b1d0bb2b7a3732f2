package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// retireWorker powers a node in state deleting off and removes its record.
type retireWorker struct{ nodeWorker[RetireArgs] }

func (w *retireWorker) Work(ctx context.Context, job *river.Job[RetireArgs]) error {
	err := w.retire(ctx, job)
	var snooze *river.JobSnoozeError
	if err != nil && !errors.As(err, &snooze) {
		err = w.retryForever(job.JobRow, err)
	}
	return w.finish(ctx, job.JobRow, err)
}

func (w *retireWorker) retire(ctx context.Context, job *river.Job[RetireArgs]) error {
	a := job.Args
	n, err := w.begin(ctx, job.JobRow, a.NodeID, !a.Force)
	if n == nil {
		return err
	}
	if n.ProvisionState != baremetal.StateDeleting {
		return nil
	}
	if !a.Force {
		// The record goes only once the machine is observed off and its
		// boot override and media are cleared: removing it earlier would
		// leave a server running someone's OS that nothing manages any
		// more. A dead BMC keeps the node in deleting (with its fault
		// current) for as long as it is dead; force=true is the operator's
		// way out.
		// A node whose machine is another node's (a second node for it,
		// see identity.go) never touches it: powering it off would stop
		// the other node's server.
		err := w.ownMachine(ctx, n)
		var other *otherMachineError
		if errors.As(err, &other) {
			return w.retireWithoutBMC(ctx, n, other)
		}
		if err == nil {
			err = w.powerOff(ctx, n, nil)
		}
		if err == nil {
			err = w.clearBoot(ctx, n)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			switch f := classify(err); {
			case f == failRefused:
				w.recordRefused(ctx, n.ID, "retire", err)
				return w.refusedRetry(ctx, job.Kind, fmt.Errorf("retire node %s: %w", n.Name, err))
			case f.bmcTrouble():
				w.recordBMCFailure(ctx, n.ID, "retire", err)
			case f == failPowerTimeout:
				w.recordActionFault(ctx, n.ID, baremetal.FaultPowerMismatch, "retire: "+err.Error())
			}
			return fmt.Errorf("retire node %s: %w", n.Name, err)
		}
	}
	if err := w.deleteNode(ctx, n.ID); err != nil {
		return err
	}
	w.log.InfoContext(ctx, "node removed", "node", n.Name, "id", n.ID)
	return nil
}

// retireWithoutBMC removes the record of a node whose machine is another
// node's, without a BMC call: the machine is not this node's to power off.
// The log says so (the node's events go with its record).
func (w *retireWorker) retireWithoutBMC(ctx context.Context, n *baremetal.Node, other *otherMachineError) error {
	if err := w.deleteNode(ctx, n.ID); err != nil {
		return err
	}
	w.log.InfoContext(ctx, "node removed without touching its BMC: its machine is another node's", "node", n.Name, "id", n.ID,
		"same_as_node_id", other.holder.ID, "same_as_name", other.holder.Name, "reason", other.msg)
	return nil
}
