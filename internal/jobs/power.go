package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// powerWorker carries out an admin power action and waits until its result
// is observed; the outcome is an event either way.
type powerWorker struct{ nodeWorker[PowerArgs] }

func (w *powerWorker) Work(ctx context.Context, job *river.Job[PowerArgs]) error {
	return w.finish(ctx, job.JobRow, w.power(ctx, job))
}

func parseAction(s string) (bmc.PowerAction, bool) {
	a := bmc.PowerAction(s)
	return a, slices.Contains(bmc.PowerActions, a)
}

func (w *powerWorker) power(ctx context.Context, job *river.Job[PowerArgs]) error {
	a := job.Args
	action, ok := parseAction(a.Action)
	if !ok {
		return river.JobCancel(fmt.Errorf("power action %q: want one of %v", a.Action, bmc.PowerActions))
	}
	n, err := w.begin(ctx, job.JobRow, a.NodeID, true)
	if n == nil {
		return err
	}
	if n.ProvisionState == baremetal.StateDeleting {
		return nil // retire powers it off and removes it
	}
	who := a.Actor
	if who == "" {
		who = "an admin"
	}
	target := action.Target()

	if n.ProvisionState == baremetal.StateEnroll {
		// Not verified yet: it may be a second node of another node's
		// machine (identity.go), whose power is not its to change.
		err := w.ownMachine(ctx, n)
		var other *otherMachineError
		if errors.As(err, &other) {
			return w.powerRefused(ctx, n, fmt.Sprintf("power %s requested by %s refused: %s", a.Action, who, other.msg))
		}
		if err != nil {
			return w.powerError(ctx, job, n, who, err)
		}
	}
	ps, err := w.readPower(ctx, n)
	if err != nil {
		return w.powerError(ctx, job, n, who, err)
	}
	var took time.Duration
	already := ps == target && action != bmc.ActionReset
	if !already {
		if action == bmc.ActionReset && ps == bmc.PowerOff {
			// Many BMCs reject a restart of a system that is off; on is
			// what the admin wants to end in.
			action = bmc.ActionOn
		}
		if err := w.setPower(ctx, n, action); err != nil {
			return w.powerError(ctx, job, n, who, err)
		}
		if took, err = w.waitPower(ctx, n, target, nil); err != nil {
			return w.powerError(ctx, job, n, who, err)
		}
	}
	msg := fmt.Sprintf("power %s requested by %s: observed %s after %s", a.Action, who, target, baremetal.HumanDuration(took))
	if already {
		msg = fmt.Sprintf("power %s requested by %s: already %s", a.Action, who, target)
	}
	_, err = w.ledger.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
		now := time.Now()
		w.observePower(n, target, nil, now)
		touchSeen(n, now)
		n.ClearFault(baremetal.FaultPowerMismatch)
		c.Events = append(c.Events, &baremetal.Event{Type: "power", Message: msg, New: string(target)})
		return nil
	})
	return ignoreGone(err)
}

// powerRefused ends a power action that must not be carried out, saying
// why in an event.
func (w *powerWorker) powerRefused(ctx context.Context, n *baremetal.Node, msg string) error {
	msg = baremetal.ClipError(scrub(n, msg))
	_, err := w.ledger.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
		c.Events = append(c.Events, &baremetal.Event{Type: "power", Message: msg})
		return nil
	})
	if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
		w.log.WarnContext(ctx, "record refused power action", "node", n.Name, "err", err)
	}
	return river.JobCancel(errors.New(msg))
}

// powerError records a failed power action. BMC errors are retried until
// the attempts run out; a change that was never observed is final (and a
// power_mismatch fault). Each final failure is an event.
func (w *powerWorker) powerError(ctx context.Context, job *river.Job[PowerArgs], n *baremetal.Node, who string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	a := job.Args
	f := classify(err)
	timedOut := f == failPowerTimeout
	final := timedOut || job.Attempt >= job.MaxAttempts || f == failUnsupported
	if f.bmcTrouble() || f == failRefused {
		w.recordBMCFailure(ctx, n.ID, "power "+a.Action, err)
	}
	if !final {
		return fmt.Errorf("power %s node %s: %w", a.Action, n.Name, err)
	}
	msg := baremetal.ClipError(fmt.Sprintf("power %s requested by %s failed: %v", a.Action, who, err))
	_, uerr := w.ledger.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
		if timedOut {
			n.SetActionFault(baremetal.FaultPowerMismatch, msg, time.Now())
		}
		c.Events = append(c.Events, &baremetal.Event{Type: "power", Message: msg})
		return nil
	})
	if uerr != nil && !baremetal.IsCode(uerr, baremetal.CodeNotFound) {
		w.log.WarnContext(ctx, "record power failure", "node", n.Name, "err", uerr)
	}
	return river.JobCancel(fmt.Errorf("power %s node %s: %w", a.Action, n.Name, err))
}
