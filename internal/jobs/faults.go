package jobs

// BMC fault accounting lives here; faults about an action's outcome are
// the domain's (baremetal.Node.SetActionFault, ClearFault). The rules,
// which are the problem the product exists to solve:
//
//   - A failed BMC call counts (BMCFailures), records a classified
//     LastError and pushes NextCheckAt back exponentially, capped at
//     MaxBackoff, so the power sync stops spending time on dead BMCs.
//   - After FaultThreshold consecutive failures the node gets a fault
//     (bmc_auth_failed, bmc_error or bmc_unreachable) and FaultSince; only
//     then does its power state become "unknown". A single lost packet does
//     not make a healthy node unschedulable.
//   - The first success clears all of it and says so in an event.
//   - Maintenance is never touched: it is the operator's, not ours.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// backoff is the delay after the n-th consecutive failure (n ≥ 1):
// RetryBase·2^(n-1) capped at MaxBackoff, minus up to 20% jitter so nodes
// behind one failed switch do not all come back in the same instant.
func (r *nodeWork) backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	d := r.cfg.MaxBackoff
	if n <= 30 {
		if step := r.cfg.RetryBase << (n - 1); step > 0 && step < d {
			d = step
		}
	}
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// faultFor maps a BMC error kind to the node fault it becomes.
func faultFor(kind bmc.Kind) baremetal.Fault {
	switch kind {
	case bmc.KindAuth:
		return baremetal.FaultBMCAuthFailed
	case bmc.KindBMCError, bmc.KindRefused, bmc.KindImage:
		// The BMC answered; what it said is in LastError.
		return baremetal.FaultBMCError
	default:
		return baremetal.FaultBMCUnreachable
	}
}

// describeBMCError renders err for LastError: the operation, its class and
// the cause, never a credential (bmc.Drivers redacted it).
func describeBMCError(op string, err error) string {
	msg := err.Error()
	var be *bmc.Error
	if !errors.As(err, &be) {
		msg = fmt.Sprintf("bmc %s: %s: %v", op, bmc.KindOf(err), err)
	}
	return baremetal.ClipError(msg)
}

// scrub hides n's credentials in any encoding, and config drive keys, in
// a message about n that quotes more than a BMC error (whose text
// bmc.Drivers redacted): an agent's report, an image URL, an address.
func scrub(n *baremetal.Node, s string) string {
	return nodeSecrets(n).String(s)
}

// noteFailure records a failed BMC call on n (in memory; the caller writes).
func (r *nodeWork) noteFailure(n *baremetal.Node, op string, err error, now time.Time) {
	n.BMCFailures++
	next := now.Add(r.backoff(n.BMCFailures))
	n.NextCheckAt = &next
	if n.Fault == baremetal.FaultDuplicate {
		// A second node of another node's machine acts on nothing: its
		// BMC's trouble is the other node's to report, and the fault and
		// last_error keep saying which node that is.
		return
	}
	n.LastError = describeBMCError(op, err)
	if n.BMCFailures < r.cfg.FaultThreshold {
		return
	}
	// An action fault (power_mismatch, ...) gives way to a BMC fault: not
	// reaching the BMC at all is the more urgent thing to tell. FaultSince
	// then starts anew, so "reachable again after" measures the outage; a
	// BMC fault changing kind (unreachable → auth) keeps it.
	if !n.Fault.BMC() || n.FaultSince == nil {
		n.FaultSince = &now
	}
	n.Fault = faultFor(bmc.KindOf(err))
	// While the BMC does not answer we do not know the power state; saying
	// the last one would mislead an operator about a node that may be off.
	// A BMC that answered some other call with an error still reported the
	// power it last read: that reading stands.
	if !bmcAnswered(err) || isPowerRead(op, err) {
		n.PowerState = baremetal.PowerUnknown
	}
}

// noteSuccess records that the BMC answered: it clears every trace of BMC
// trouble (the "reachable again" event is derived from that change, see
// ledger.Diff). Action faults stay until their action succeeds.
func (r *nodeWork) noteSuccess(n *baremetal.Node, now time.Time) {
	if n.Fault.BMC() {
		n.Fault = baremetal.FaultNone
		n.FaultSince = nil
		n.LastError = ""
	} else if n.Fault == baremetal.FaultNone && n.BMCFailures > 0 {
		// Failures below the threshold left a LastError behind; it no
		// longer describes the node.
		n.LastError = ""
	}
	n.RestoreHealthFault(now)
	n.BMCFailures = 0
	n.NextCheckAt = nil
	// LastSeenAt is refreshed only when it is unset or something else is
	// written anyway (see touchSeen): rewriting every healthy node on every
	// pass would bump versions (breaking clients' If-Match) for nothing.
	if n.LastSeenAt == nil {
		n.LastSeenAt = &now
	}
}

// touchSeen refreshes LastSeenAt on a node that is being written anyway.
func touchSeen(n *baremetal.Node, now time.Time) { n.LastSeenAt = &now }

// observePower applies one power read to n: the BMC answered with ps (err
// nil) or failed. It is the single rule shared by the sync pass, sync_node
// and the jobs.
func (r *nodeWork) observePower(n *baremetal.Node, ps bmc.PowerState, err error, now time.Time) {
	if err != nil {
		r.noteFailure(n, "power state", err, now)
		return
	}
	r.noteSuccess(n, now)
	if p := toDomainPower(ps); p != n.PowerState {
		n.PowerState = p
		touchSeen(n, now)
	}
}

func toDomainPower(ps bmc.PowerState) baremetal.PowerState {
	switch ps {
	case bmc.PowerOn:
		return baremetal.PowerOn
	case bmc.PowerOff:
		return baremetal.PowerOff
	default:
		return baremetal.PowerUnknown
	}
}
