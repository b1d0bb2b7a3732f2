package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// nodeChange is what a mutation wants recorded besides the field diff.
type nodeChange struct {
	// reason explains a provision_state change in its event.
	reason string
	// events are extra events (e.g. the outcome of a power action).
	events []*baremetal.Event
}

// mutateFunc changes n, read fresh inside tx. It may use tx for related
// rows (the instance), never the Store (SQLite has one writer connection).
// Returning errSkip ends the transaction without writing anything.
type mutateFunc func(tx store.Tx, n *baremetal.Node, c *nodeChange) error

// errSkip tells updateNode that the mutation found nothing to do (the node
// moved on meanwhile); the transaction is rolled back and no error returned.
var errSkip = errors.New("skip node update")

// maxConflictRetries bounds the reload-and-retry loop of optimistic
// concurrency. A conflict means another writer changed the node between
// our read and our write; with a fresh read inside a short transaction that
// is rare, so a handful of retries is plenty.
const maxConflictRetries = 8

// updateNode applies fn to the node in a short transaction of its own and
// writes it with one event per change, reloading and retrying on a version
// conflict. It returns the node as written (or as read, when nothing
// changed). A node that no longer exists returns a not_found error.
func (r *Runner) updateNode(ctx context.Context, id string, fn mutateFunc) (*baremetal.Node, error) {
	for attempt := 0; ; attempt++ {
		var (
			out    *baremetal.Node
			faults []*baremetal.Event
		)
		err := r.store.InTx(ctx, func(tx store.Tx) error {
			n, _, err := r.mutateInTx(ctx, tx, id, fn, &faults)
			out = n
			return err
		})
		switch {
		case err == nil:
			r.logFaults(ctx, out, faults)
			return out, nil
		case errors.Is(err, errSkip):
			return out, nil
		case baremetal.IsCode(err, baremetal.CodeConflict) && attempt < maxConflictRetries:
			// Spread the retries of writers racing on one row.
			if err := sleep(ctx, time.Duration(rand.Int64N(int64(5*time.Millisecond)))); err != nil {
				return nil, err
			}
			continue
		default:
			return out, fmt.Errorf("update node %s: %w", id, err)
		}
	}
}

// mutateInTx is one read-modify-write of a node inside tx: it returns the
// node and whether it wrote, and appends the change's fault events to
// faults, for logFaults once the transaction has committed. Callers that
// batch several nodes in one transaction (the power sync) use it directly.
func (r *Runner) mutateInTx(ctx context.Context, tx store.Tx, id string, fn mutateFunc, faults *[]*baremetal.Event) (*baremetal.Node, bool, error) {
	n, err := tx.GetNode(ctx, id)
	if err != nil {
		return nil, false, err
	}
	before := *n
	var c nodeChange
	if err := fn(tx, n, &c); err != nil {
		return n, false, err
	}
	// The one place every controller write passes through enforces the
	// product's first rule: maintenance belongs to operators.
	if n.Maintenance != before.Maintenance || n.MaintenanceReason != before.MaintenanceReason {
		return n, false, fmt.Errorf("internal error: controller tried to change maintenance of node %s", before.ID)
	}
	now := time.Now()
	events := append(diffEvents(&before, n, c.reason, now), c.events...)
	changed := !sameNode(&before, n)
	if !changed && len(events) == 0 {
		return n, false, nil
	}
	if changed {
		if err := tx.UpdateNode(ctx, n); err != nil {
			return n, false, err
		}
	}
	for _, e := range events {
		e.NodeID = n.ID
		if e.Actor == "" {
			e.Actor = baremetal.ActorController
		}
		if err := tx.InsertEvent(ctx, e); err != nil {
			return n, false, fmt.Errorf("insert %s event: %w", e.Type, err)
		}
		if e.Type == "fault" {
			*faults = append(*faults, e)
		}
	}
	return n, changed, nil
}

// logFaults tells the controller's log of faults raised and cleared, once
// each (after the commit, so a retried transaction does not say it twice):
// an operator reading the log learns that a BMC went away or came back
// without polling the API. Raised is WARN, cleared INFO.
func (r *Runner) logFaults(ctx context.Context, n *baremetal.Node, faults []*baremetal.Event) {
	for _, e := range faults {
		if e.New == string(baremetal.FaultNone) {
			r.log.InfoContext(ctx, "node fault cleared", "node", n.Name, "fault", e.Old, "message", e.Message)
			continue
		}
		r.log.WarnContext(ctx, "node fault", "node", n.Name, "fault", e.New, "was", e.Old,
			"provision_state", n.ProvisionState, "message", e.Message)
	}
}

// sameNode reports whether a and b hold the same data, ignoring the
// bookkeeping the store maintains.
func sameNode(a, b *baremetal.Node) bool {
	x, y := *a, *b
	x.UpdatedAt, y.UpdatedAt = time.Time{}, time.Time{}
	x.Version, y.Version = 0, 0
	return reflect.DeepEqual(x, y)
}

// diffEvents derives the events of a change: every provision_state, fault
// and power_state change is told, with old and new values.
func diffEvents(before, after *baremetal.Node, reason string, now time.Time) []*baremetal.Event {
	var evs []*baremetal.Event
	if before.ProvisionState != after.ProvisionState {
		msg := reason
		if msg == "" {
			msg = fmt.Sprintf("provision state %s → %s", before.ProvisionState, after.ProvisionState)
		}
		evs = append(evs, &baremetal.Event{
			Type: "provision_state", Field: "provision_state",
			Old: string(before.ProvisionState), New: string(after.ProvisionState), Message: msg,
		})
	}
	if before.Fault != after.Fault {
		var msg string
		switch {
		case after.Fault == baremetal.FaultNone && isBMCFault(before.Fault):
			msg = "BMC reachable again"
			if before.FaultSince != nil {
				msg += " after " + humanDuration(now.Sub(*before.FaultSince))
			}
		case after.Fault == baremetal.FaultNone:
			msg = "fault " + string(before.Fault) + " cleared"
			if before.FaultSince != nil {
				msg += " after " + humanDuration(now.Sub(*before.FaultSince))
			}
		case before.Fault == baremetal.FaultNone:
			msg = "fault " + string(after.Fault)
			if after.BMCFailures > 0 && isBMCFault(after.Fault) {
				msg += fmt.Sprintf(" after %d consecutive failed BMC calls", after.BMCFailures)
			}
			msg += ": " + after.LastError
		default:
			msg = fmt.Sprintf("fault %s → %s: %s", before.Fault, after.Fault, after.LastError)
		}
		evs = append(evs, &baremetal.Event{
			Type: "fault", Field: "fault", Old: string(before.Fault), New: string(after.Fault), Message: msg,
		})
	}
	if before.PowerState != after.PowerState {
		msg := "power state observed " + string(after.PowerState)
		if after.PowerState == baremetal.PowerUnknown {
			msg = "power state unknown while the BMC does not answer"
		}
		evs = append(evs, &baremetal.Event{
			Type: "power_state", Field: "power_state",
			Old: string(before.PowerState), New: string(after.PowerState), Message: msg,
		})
	}
	for _, e := range evs {
		e.Time = now
	}
	return evs
}

// recordBMCFailure writes a failed BMC call to the node's fault accounting.
// Errors writing it are logged, not returned: the caller is already
// handling the BMC error, which matters more.
func (r *Runner) recordBMCFailure(ctx context.Context, nodeID, op string, bmcErr error) {
	_, err := r.updateNode(ctx, nodeID, func(_ store.Tx, n *baremetal.Node, _ *nodeChange) error {
		r.noteFailure(n, op, bmcErr, time.Now())
		return nil
	})
	if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
		r.log.WarnContext(ctx, "record BMC failure", "node", nodeID, "op", op, "err", err)
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
