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
		err := w.powerOff(ctx, n, nil)
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
