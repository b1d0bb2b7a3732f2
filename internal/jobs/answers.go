package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// BMC errors come in two sorts: the BMC did not answer (unreachable, or it
// would not let us in), and the BMC answered with an error. Only the first
// says anything about reaching it; the second is about the request, the
// system or — for an image it could not fetch — the user's input.

// bmcAnswered reports whether err carries an answer of the BMC (as
// opposed to no answer at all, or a refused login).
func bmcAnswered(err error) bool {
	if !isBMCErr(err) {
		return false
	}
	switch bmc.KindOf(err) {
	case bmc.KindBMCError, bmc.KindRefused, bmc.KindImage, bmc.KindUnsupported:
		return true
	}
	return false
}

// isPowerRead reports whether the failed call was a power read, whose
// failure does leave the power state unknown.
func isPowerRead(op string, err error) bool {
	var be *bmc.Error
	return op == "power state" || (errors.As(err, &be) && be.Op == "power state")
}

// isRefused reports whether err is a BMC refusing a request in every form
// the driver knows: retrying soon cannot help.
func isRefused(err error) bool {
	return isBMCErr(err) && bmc.KindOf(err) == bmc.KindRefused
}

// recordRefused records on the node that its BMC refused what a job asked
// (fault bmc_refused, last_error with the BMC's words and the field). The
// BMC answered, so any trace of it being unreachable is cleared first and
// the power state is left as last observed. The fault stays until the
// refused work succeeds (cleanup and deploy clear it); power reads do not
// clear it, since they do not show the BMC would now take the request.
func (r *nodeWork) recordRefused(ctx context.Context, nodeID, what string, err error) {
	_, uerr := r.ledger.Update(ctx, nodeID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		now := time.Now()
		r.noteSuccess(n, now)
		n.SetActionFault(baremetal.FaultBMCRefused, what+": "+describeBMCError(what, err), now)
		return nil
	})
	if uerr != nil && !baremetal.IsCode(uerr, baremetal.CodeNotFound) {
		r.log.WarnContext(ctx, "record refused BMC request", "node", nodeID, "err", uerr)
	}
}

// refusedRetry is how a job whose request the BMC refused waits: slowly
// (MaxBackoff at a time) and without using attempts, because nothing but a
// change on the BMC (firmware, settings) or an operator fixes it, and the
// node's fault already says so. It never gives up: cleanup and retire must
// finish once the BMC takes the request.
func (r *nodeWork) refusedRetry(ctx context.Context, job string, err error) error {
	r.log.WarnContext(ctx, "BMC refused the request; retrying slowly", "job", job, "every", r.cfg.MaxBackoff, "err", err)
	return river.JobSnooze(r.cfg.MaxBackoff)
}
