package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/imagecheck"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// How a deploy ends, whichever flow ran it: the image booted (booted,
// then waitReady for the OS's readiness callback), the deploy failed for
// good (deployFailed, the deploy flows' fail), or the image failed it
// (failOnImage: the instance fails, not the node).

// booted records that the node booted the instance's OS (booted says
// how): the node becomes active and the flow is done, or the flow goes on
// to wait for the OS's readiness callback when the instance has a
// deploy_timeout.
func (r *flowRun) booted(ctx context.Context, booted string) (stepResult, error) {
	waiting := false
	_, err := r.ledger.Update(ctx, r.node.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		waiting = false
		inst, err := deployingInstance(ctx, tx, n, r.inst.ID)
		if err != nil {
			return err
		}
		now := time.Now()
		r.observePower(n, bmc.PowerOn, nil, now)
		touchSeen(n, now)
		if inst.Rebuilds > 0 {
			// The pool addresses the rebuilt network dropped were held
			// while the old OS might run with them: it no longer does.
			if _, err := tx.FreeNodeAddresses(ctx, n.ID); err != nil {
				return err
			}
		}
		if inst.DeployTimeout > 0 {
			baremetal.BootedAwaitingReady(n, inst, now)
			if !inst.Ready {
				// The node stays deploying until the OS calls back
				// (service.InstanceReady) or the deadline passes.
				waiting = true
				c.Events = append(c.Events, &baremetal.Event{Type: "deploy", Time: now,
					Message: fmt.Sprintf("instance %s %s; waiting up to %s for the OS to call back", inst.Name, booted, inst.DeployTimeout)})
				return tx.UpdateInstance(ctx, inst)
			}
			booted += "; the OS had already called back"
		}
		if err := baremetal.FinishDeploy(n, inst); err != nil {
			return err
		}
		c.Reason = fmt.Sprintf("instance %s deployed: %s", inst.Name, booted)
		return tx.UpdateInstance(ctx, inst)
	})
	if err == nil && waiting {
		return nextStep, nil
	}
	return flowOver, ignoreGone(err)
}

// readyPoll bounds how long a deploy waiting for the readiness callback
// sleeps at a time. The callback itself finishes the deploy (the service
// writes instance and node), so this is not about noticing it sooner: it
// keeps the job from sitting in the jobs API as "scheduled in 23h" long
// after its instance became active.
const readyPoll = time.Minute

// waitReady waits for the booted OS's readiness callback: before the
// deadline it sleeps (snoozed, readyPoll at a time, holding nothing);
// after it, the deploy fails with deploy_timeout.
func waitReady(ctx context.Context, r *flowRun) (stepResult, error) {
	inst, err := r.store.GetInstance(ctx, r.inst.ID)
	if err != nil {
		return flowOver, ignoreGone(err)
	}
	if inst.Ready || inst.DeployTimeout <= 0 {
		return flowOver, nil // the callback finished it
	}
	if inst.BootedAt == nil {
		// Not booted after all (a node recorded at this step by hand):
		// boot it.
		return goTo(r.flow.steps[0].name), nil
	}
	deadline := inst.BootedAt.Add(inst.DeployTimeout)
	if left := time.Until(deadline); left > 0 {
		return waitFor(min(left, readyPoll)), nil
	}
	_, err = r.ledger.Update(ctx, r.node.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		inst, err := deployingInstance(ctx, tx, n, inst.ID)
		if err != nil {
			return err
		}
		if inst.Ready || inst.BootedAt == nil {
			return ledger.ErrSkip
		}
		now := time.Now()
		msg := fmt.Sprintf("the booted OS did not call POST %s within deploy_timeout %s of power-on (at %s)",
			api.ReadyPath(inst.ID), inst.DeployTimeout, inst.BootedAt.UTC().Format(time.RFC3339))
		n.SetActionFault(baremetal.FaultDeployTimeout, scrub(n, msg), now)
		c.Events = append(c.Events, r.failedEvent(r.stepName(), msg))
		return failDeploy(ctx, tx, n, inst, c, msg)
	})
	return flowOver, ignoreGone(err)
}

// deployFailed is the deploy's fail: it decides between retrying and
// failing the deploy for good. Unreachable, auth and 5xx BMC errors are
// retried with backoff (the fault accounting records them); a missing
// capability, a power change that was never observed, or running out of
// attempts fail it: the instance goes to error and the node to
// deploy_failed, where deleting the instance cleans the node up. An
// image that is unusable fails the instance alone (failOnImage).
func deployFailed(ctx context.Context, r *flowRun, err error) (stepResult, error) {
	n, job := r.node, r.job
	fault := baremetal.FaultNone
	retry := job.Attempt < job.MaxAttempts
	switch f := classify(err); f {
	case failStopped:
		return flowOver, nil
	case failImage:
		if imagecheck.IsTransient(err) && job.Attempt < imageCheckAttempts {
			return nextStep, fmt.Errorf("deploy node %s: %w", n.Name, err)
		}
		return flowOver, r.failOnImage(ctx, err)
	case failPermanent:
		retry = false
	case failPowerTimeout:
		fault, retry = baremetal.FaultPowerMismatch, false
	case failRefused:
		// Like a missing capability: the same request will be refused
		// again. The node says so until a deploy or cleanup succeeds.
		fault, retry = baremetal.FaultBMCRefused, false
	case failUnsupported:
		r.recordBMCFailure(ctx, n.ID, "deploy", err)
		retry = false
	case failBMC:
		r.recordBMCFailure(ctx, n.ID, "deploy", err)
	}
	if retry {
		return nextStep, fmt.Errorf("deploy node %s: %w", n.Name, err)
	}
	msg := baremetal.ClipError(scrub(n, err.Error()))
	if f := classify(err); job.Attempt >= job.MaxAttempts && f != failPermanent && f != failPowerTimeout && f != failRefused {
		msg = fmt.Sprintf("gave up after %d attempts: %s", job.Attempt, msg)
	}
	_, uerr := r.ledger.Update(ctx, n.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		inst, err := deployingInstance(ctx, tx, n, r.inst.ID)
		if err != nil {
			return err
		}
		now := time.Now()
		if fault != baremetal.FaultNone {
			n.SetActionFault(fault, msg, now)
		} else if !n.Fault.BMC() {
			n.LastError = msg
		}
		c.Events = append(c.Events, r.failedEvent(r.stepName(), msg))
		return failDeploy(ctx, tx, n, inst, c, msg)
	})
	if uerr != nil && !baremetal.IsCode(uerr, baremetal.CodeNotFound) {
		// The failure could not be recorded; let River retry the whole job.
		return nextStep, fmt.Errorf("record deploy failure of node %s: %w", n.Name, uerr)
	}
	return flowOver, river.JobCancel(fmt.Errorf("deploy node %s: %w", n.Name, err))
}

// failDeploy records a deploy that failed for good (baremetal.FailDeploy)
// and writes the instance; the caller has set any fault first.
func failDeploy(ctx context.Context, tx store.Tx, n *baremetal.Node, inst *baremetal.Instance, c *ledger.Change, msg string) error {
	if err := baremetal.FailDeploy(n, inst, msg); err != nil {
		return err
	}
	c.Reason = fmt.Sprintf("deploy of instance %s failed: %s", inst.Name, msg)
	return tx.UpdateInstance(ctx, inst)
}

// deployingInstance reads, inside a node mutation, the instance n is
// still deploying; ledger.ErrSkip when the deploy was overtaken (node moved on,
// instance deleted).
func deployingInstance(ctx context.Context, tx store.Tx, n *baremetal.Node, instanceID string) (*baremetal.Instance, error) {
	if !deploying(n, instanceID) {
		return nil, ledger.ErrSkip
	}
	inst, err := tx.GetInstance(ctx, instanceID)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil, ledger.ErrSkip
	}
	return inst, err
}

// deploying reports whether n is still being deployed with instanceID.
func deploying(n *baremetal.Node, instanceID string) bool {
	return n.ProvisionState == baremetal.StateDeploying && n.InstanceID == instanceID
}

// A deploy that fails on its image fails the instance, not the node
// (errors about the user's input leave the node healthy: the next
// instance must not pay for this one's bad URL). Two
// things say the image is at fault: the controller's own check of the URL
// (imagecheck), and a BMC answering the insert with a reason about the
// image (bmc.KindImage: it could not fetch it, or will not take it).
//
// imageCheckAttempts is how many deploy attempts a transient check
// failure (the image server answering 5xx or 429, or not in time) gets
// before the instance fails with it. With the default backoff (RetryBase
// 2 s, doubling) that is about half a minute: enough for an image server
// restarting or a load balancer shedding a burst, while a server that
// stays down fails the instance in good time instead of leaving it
// deploying for the dozen attempts (up to an hour) that BMC trouble gets.
// Answers that say the image is not there (no such host, refused, 404,
// wrong length) fail it at once.
const imageCheckAttempts = 5

// failOnImage records a deploy that failed on its image: the instance goes
// to error with the reason. A rebuild keeps its node (deploy_failed, where
// the next rebuild starts). Otherwise the node, which did nothing wrong, is released
// (no instance, no fault: the BMC answered) and cleaned back to available
// by a cleanup job queued in the same transaction. The instance keeps its
// node_id for the record; deleting it later leaves the node alone. The
// instance's owner reads its last_error; the node's event, for admins,
// has the detail (see imageFailure).
func (r *flowRun) failOnImage(ctx context.Context, cause error) error {
	n, job := r.node, r.job
	public, msg := imageFailure(n, cause)
	if imagecheck.IsTransient(cause) {
		public = fmt.Sprintf("gave up after %d attempts: %s", job.Attempt, public)
		msg = fmt.Sprintf("gave up after %d attempts: %s", job.Attempt, msg)
	}
	_, err := r.ledger.Update(ctx, n.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		inst, err := deployingInstance(ctx, tx, n, r.inst.ID)
		if err != nil {
			return err
		}
		// Ejecting the old media worked before the image was looked at:
		// whatever BMC trouble the node had is over.
		r.noteSuccess(n, time.Now())
		if inst.Rebuilds > 0 {
			// A rebuild keeps its node whatever its image does: the
			// instance is the user's on this machine, and the next
			// rebuild (a corrected image, or the same one once its
			// server is back) is retried here.
			c.Events = append(c.Events, r.failedEvent(r.stepName(), "the instance's image: "+msg))
			if err := baremetal.FailDeploy(n, inst, public); err != nil {
				return err
			}
			c.Reason = fmt.Sprintf("rebuild of instance %s failed on its image, not on the node: %s; the instance keeps the node", inst.Name, msg)
			return tx.UpdateInstance(ctx, inst)
		}
		n.InstanceID = ""
		c.Events = append(c.Events, r.failedEvent(r.stepName(), "the instance's image: "+msg))
		if err := n.Transition(baremetal.StateCleaning); err != nil {
			return err
		}
		c.Reason = fmt.Sprintf("deploy of instance %s failed on its image, not on the node: %s; cleaning the node for the next instance", inst.Name, msg)
		inst.State = baremetal.InstanceError
		inst.LastError = public
		if err := tx.UpdateInstance(ctx, inst); err != nil {
			return err
		}
		_, err = r.InsertTx(ctx, tx, CleanupArgs{NodeID: n.ID})
		return err
	})
	if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
		// Not recorded: let River run the deploy again, which will fail
		// the same way and try to record it again.
		return fmt.Errorf("record image failure of instance %s: %w", r.inst.ID, err)
	}
	return river.JobCancel(fmt.Errorf("deploy node %s: %w", n.Name, cause))
}

// imageFailure says what was wrong with the image: public for the
// instance's last_error, detail for the node's event. They differ for the
// controller's own check, whose detail (refused, timed out, no such host,
// refused by the image URL policy) would let a member map the
// controller's network: the owner learns only that the image is
// unreachable from the controller, with the HTTP status when there was
// one. The BMC's and the agent's words are the same for both (they speak
// of their own network, not the controller's).
func imageFailure(n *baremetal.Node, err error) (public, detail string) {
	var be *bmc.Error
	if errors.As(err, &be) && be.Kind == bmc.KindImage {
		msg := baremetal.ClipError(fmt.Sprintf("the BMC of node %s could not use the image: %v", n.Name, be.Err))
		return msg, msg
	}
	detail = baremetal.ClipError(scrub(n, err.Error()))
	var ie *imagecheck.Error
	if errors.As(err, &ie) {
		return baremetal.ClipError(ie.PublicError()), detail
	}
	return detail, detail
}
