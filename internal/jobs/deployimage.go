package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/imagecheck"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

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

// aboutImage reports whether err blames the deploy's image.
func aboutImage(err error) bool {
	var (
		ie *imagecheck.Error
		in *inputError
	)
	return errors.As(err, &ie) || errors.As(err, &in) || (isBMCErr(err) && bmc.KindOf(err) == bmc.KindImage)
}

// inputError is the deploy agent's report that writing the image failed
// on the user's input (unreachable, checksum, format, no disk fits), in
// its words.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// failOnImage records a deploy that failed on its image: the instance goes
// to error with the reason; the node, which did nothing wrong, is released
// (no instance, no fault: the BMC answered) and cleaned back to available
// by a cleanup job queued in the same transaction. The instance keeps its
// node_id for the record; deleting it later leaves the node alone. The
// instance's owner reads its last_error; the node's event, for admins,
// has the detail (see imageFailure).
func (r *run) failOnImage(ctx context.Context, cause error) error {
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
