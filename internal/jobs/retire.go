package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// retirePowerAttempts is how many attempts retire makes to power a deleted
// node off before it removes the record anyway. Powering off is courtesy
// (a deleted node should not keep running someone's OS), not a condition:
// the operator deleted the node, and a dead BMC must not keep it forever.
const retirePowerAttempts = 5

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
	return w.r.finish(job.Kind, err)
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
		if err := r.powerOff(ctx, n, nil); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var pt *powerTimeoutError
			switch {
			case isBMCErr(err):
				r.recordBMCFailure(ctx, n.ID, "retire", err)
			case errors.As(err, &pt):
				r.recordActionFault(ctx, n.ID, baremetal.FaultPowerMismatch, "retire: "+err.Error())
			}
			if job.Attempt < retirePowerAttempts {
				return fmt.Errorf("retire node %s: power off: %w", n.Name, err)
			}
			r.log.WarnContext(ctx, "removing deleted node without an observed power off",
				"node", n.Name, "attempts", job.Attempt, "err", err)
		}
	}
	if err := r.deleteNode(ctx, n.ID); err != nil {
		return err
	}
	r.log.InfoContext(ctx, "node removed", "node", n.Name, "id", n.ID)
	return nil
}
