package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// deployWorker boots an instance's image on its node: eject old media, set
// a one-time boot override (virtual media with the image when the BMC has
// it, else PXE), power on (or reset if already on), and wait until on is
// observed. Then node and instance become active.
//
// Between steps it re-reads the node: if the instance was deleted meanwhile
// (node now cleaning or deleting) the deploy stops quietly and the cleanup
// waiting behind it (exclusive.go) takes over.
type deployWorker struct {
	river.WorkerDefaults[DeployArgs]
	r *Runner
}

func (w *deployWorker) NextRetry(job *river.Job[DeployArgs]) time.Time {
	return w.r.nextRetry(job.JobRow)
}

func (w *deployWorker) Work(ctx context.Context, job *river.Job[DeployArgs]) error {
	err := w.r.deploy(ctx, job)
	var snooze *river.JobSnoozeError
	var cancel *river.JobCancelError
	if err != nil && job.Attempt >= job.MaxAttempts && !errors.As(err, &snooze) && !errors.As(err, &cancel) {
		// The last attempt failed before its failure could be recorded
		// (a database error, say). Discarding the job now would leave the
		// instance deploying forever with no reason given; wait and try
		// again instead (a snooze does not use an attempt), so the next
		// failure is recorded on the instance by deployError.
		w.r.log.WarnContext(ctx, "deploy failed on its last attempt without recording why; retrying", "job", job.ID, "err", err)
		err = river.JobSnooze(w.r.backoff(job.Attempt))
	}
	return w.r.finish(job.Kind, err)
}

// deploying reports whether n is still being deployed with instanceID.
func deploying(n *baremetal.Node, instanceID string) bool {
	return n.ProvisionState == baremetal.StateDeploying && n.InstanceID == instanceID
}

func (r *Runner) deploy(ctx context.Context, job *river.Job[DeployArgs]) error {
	a := job.Args
	n, err := r.begin(ctx, job.JobRow, a.NodeID, true)
	if n == nil {
		return err
	}
	if !deploying(n, a.InstanceID) {
		return nil
	}
	inst, err := r.store.GetInstance(ctx, a.InstanceID)
	if err != nil {
		return ignoreGone(err)
	}
	// stop is asked between steps and polls: has the deploy been
	// overtaken (instance deleted, node deleted or put elsewhere)?
	stop := func(ctx context.Context) bool {
		cur, err := r.store.GetNode(ctx, a.NodeID)
		if err != nil {
			return baremetal.IsCode(err, baremetal.CodeNotFound)
		}
		if !deploying(cur, a.InstanceID) {
			r.log.InfoContext(ctx, "deploy overtaken; stopping", "node", cur.Name, "instance", a.InstanceID, "state", cur.ProvisionState)
			return true
		}
		return false
	}

	dev, err := r.prepareBoot(ctx, n, inst.Image.URL)
	if err != nil {
		return r.deployError(ctx, job, n, err)
	}
	if stop(ctx) {
		return nil
	}
	ps, err := r.readPower(ctx, n)
	if err != nil {
		return r.deployError(ctx, job, n, err)
	}
	action := bmc.ActionOn
	if ps == bmc.PowerOn {
		// Already on (an earlier attempt, or an operator): reset so it
		// boots from the override we just set.
		action = bmc.ActionReset
	}
	if err := r.setPower(ctx, n, action); err != nil {
		return r.deployError(ctx, job, n, err)
	}
	took, err := r.waitPower(ctx, n, bmc.PowerOn, stop)
	if err != nil {
		return r.deployError(ctx, job, n, err)
	}

	_, err = r.updateNode(ctx, n.ID, func(tx store.Tx, n *baremetal.Node, c *nodeChange) error {
		if !deploying(n, a.InstanceID) {
			return errSkip
		}
		inst, err := tx.GetInstance(ctx, a.InstanceID)
		if baremetal.IsCode(err, baremetal.CodeNotFound) {
			return errSkip
		}
		if err != nil {
			return err
		}
		now := time.Now()
		r.observePower(n, bmc.PowerOn, nil, now)
		touchSeen(n, now)
		clearActionFault(n, baremetal.FaultPowerMismatch, baremetal.FaultDeployTimeout)
		if err := n.Transition(baremetal.StateActive); err != nil {
			return err
		}
		c.reason = fmt.Sprintf("instance %s deployed: booted from %s, power on observed after %s", inst.Name, dev, humanDuration(took))
		inst.State = baremetal.InstanceActive
		inst.LastError = ""
		return tx.UpdateInstance(ctx, inst)
	})
	return ignoreGone(err)
}

// prepareBoot ejects leftover media and sets the one-time boot override:
// the image on virtual media when the BMC supports it, PXE otherwise.
func (r *Runner) prepareBoot(ctx context.Context, n *baremetal.Node, imageURL string) (bmc.BootDevice, error) {
	vm, err := r.ejectMediaSupported(ctx, n)
	if err != nil {
		return "", err
	}
	dev := bmc.BootPXE
	if vm && imageURL != "" {
		err := r.bmcCall(ctx, n, "insert media", func(ctx context.Context, c bmc.Client) error {
			return c.(bmc.VirtualMedia).InsertMedia(ctx, imageURL)
		})
		switch {
		case err == nil:
			dev = bmc.BootCD
		case bmc.KindOf(err) != bmc.KindUnsupported:
			return "", err
		}
	}
	err = r.bmcCall(ctx, n, "set boot device", func(ctx context.Context, c bmc.Client) error {
		return c.SetBootDevice(ctx, dev, false)
	})
	return dev, err
}

// deployError decides between retrying and failing the deploy for good.
// Unreachable, auth and 5xx BMC errors are retried with backoff (the fault
// accounting records them); a missing capability, a power change that was
// never observed, or running out of attempts fail it: the instance goes to
// error and the node to deploy_failed, where deleting the instance cleans
// the node up.
func (r *Runner) deployError(ctx context.Context, job *river.Job[DeployArgs], n *baremetal.Node, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, errStopped) {
		return nil
	}
	fault := baremetal.FaultNone
	var pt *powerTimeoutError
	switch {
	case errors.As(err, &pt):
		fault = baremetal.FaultPowerMismatch
	case isBMCErr(err):
		r.recordBMCFailure(ctx, n.ID, "deploy", err)
		if bmc.KindOf(err) != bmc.KindUnsupported && job.Attempt < job.MaxAttempts {
			return fmt.Errorf("deploy node %s: %w", n.Name, err)
		}
	default:
		if job.Attempt < job.MaxAttempts {
			return fmt.Errorf("deploy node %s: %w", n.Name, err)
		}
	}
	msg := clip(scrub(n, err.Error()))
	if job.Attempt >= job.MaxAttempts && fault == baremetal.FaultNone && !errors.As(err, &pt) {
		msg = fmt.Sprintf("gave up after %d attempts: %s", job.Attempt, msg)
	}
	_, uerr := r.updateNode(ctx, n.ID, func(tx store.Tx, n *baremetal.Node, c *nodeChange) error {
		if !deploying(n, job.Args.InstanceID) {
			return errSkip
		}
		inst, err := tx.GetInstance(ctx, job.Args.InstanceID)
		if baremetal.IsCode(err, baremetal.CodeNotFound) {
			return errSkip
		}
		if err != nil {
			return err
		}
		now := time.Now()
		if fault != baremetal.FaultNone {
			setActionFault(n, fault, msg, now)
		} else if !isBMCFault(n.Fault) {
			n.LastError = msg
		}
		if err := n.Transition(baremetal.StateDeployFailed); err != nil {
			return err
		}
		c.reason = fmt.Sprintf("deploy of instance %s failed: %s", inst.Name, msg)
		inst.State = baremetal.InstanceError
		inst.LastError = msg
		return tx.UpdateInstance(ctx, inst)
	})
	if uerr != nil && !baremetal.IsCode(uerr, baremetal.CodeNotFound) {
		// The failure could not be recorded; let River retry the whole job.
		return fmt.Errorf("record deploy failure of node %s: %w", n.Name, uerr)
	}
	return river.JobCancel(fmt.Errorf("deploy node %s: %w", n.Name, err))
}
