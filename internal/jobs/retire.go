package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// retireWorker powers a node in state deleting off and removes its record.
type retireWorker struct {
	river.WorkerDefaults[RetireArgs]
	r *Runner
}

func (w *retireWorker) NextRetry(job *river.Job[RetireArgs]) time.Time {
	return w.r.nextRetry(job.JobRow)
}

func (w *retireWorker) Work(ctx context.Context, job *river.Job[RetireArgs]) error {
	err := w.r.retire(ctx, job)
	var snooze *river.JobSnoozeError
	if err != nil && !errors.As(err, &snooze) {
		err = w.r.retryForever(job.JobRow, err)
	}
	return w.r.finish(ctx, job.JobRow, err)
}

func (r *Runner) retire(ctx context.Context, job *river.Job[RetireArgs]) error {
	a := job.Args
	n, err := r.begin(ctx, job.JobRow, a.NodeID, !a.Force)
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
		err := r.powerOff(ctx, n, nil)
		if err == nil {
			err = r.clearBoot(ctx, n)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			switch f := classify(err); {
			case f == failRefused:
				r.recordRefused(ctx, n.ID, "retire", err)
				return r.refusedRetry(ctx, job.Kind, fmt.Errorf("retire node %s: %w", n.Name, err))
			case f.bmcTrouble():
				r.recordBMCFailure(ctx, n.ID, "retire", err)
			case f == failPowerTimeout:
				r.recordActionFault(ctx, n.ID, baremetal.FaultPowerMismatch, "retire: "+err.Error())
			}
			return fmt.Errorf("retire node %s: %w", n.Name, err)
		}
	}
	if err := r.deleteNode(ctx, n.ID); err != nil {
		return err
	}
	r.log.InfoContext(ctx, "node removed", "node", n.Name, "id", n.ID)
	return nil
}
