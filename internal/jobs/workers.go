package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// nodeWork is what the workers of node jobs share: their dependencies
// (the store, the ledger that writes nodes, the queue, the BMC drivers
// in cfg) and what more than one kind does (BMC calls and fault
// accounting, powering off, clearing boot, mutual exclusion, the flow
// engine of flow.go). Each kind's own work lives beside its worker: the
// deploy flows in deploy.go and deploydisk.go, cleanup in cleanup.go,
// and so on.
type nodeWork struct {
	cfg     Config
	store   store.Store
	ledger  *ledger.Ledger
	log     *slog.Logger
	q       queue
	metrics *metrics
	// started is when this process's runner was made, storeBack (unix
	// nanoseconds, 0 for never) when this replica last reached the
	// database again after failing to: agent silence is counted from the
	// later of the two at the earliest (agentStall), since while either
	// was down the agents' heartbeats failed and they backed off.
	started   time.Time
	storeBack atomic.Int64
	// woken is when each node's waiting work was last woken (nudge,
	// wakeTx: its BMC answered again, its credentials changed), by node
	// id. River's JobRetry does not touch a running job, so an attempt
	// that was running when its node was woken, and fails with the BMC
	// trouble that just ended, would wait out its whole backoff: finish
	// turns that failure into a short snooze.
	woken sync.Map
}

// nodeWorker is what the worker of every node job kind embeds (not the
// per-node sync, which keeps River's retry schedule): River's defaults for
// its args, the shared node work, and nodeWork's retry schedule.
type nodeWorker[T river.JobArgs] struct {
	river.WorkerDefaults[T]
	*nodeWork
}

// NextRetry is the kinds' schedule, nextRetry.
func (w *nodeWorker[T]) NextRetry(job *river.Job[T]) time.Time {
	return w.nextRetry(job.JobRow)
}

// InsertTx enqueues args in tx, so the job exists if and only if the state
// change that needs it commits. A job of the same kind already waiting or
// running for the node is not duplicated: its id is returned instead.
func (r *nodeWork) InsertTx(ctx context.Context, tx store.Tx, args river.JobArgs) (int64, error) {
	res, err := r.q.InsertTx(ctx, tx, args, nil)
	if err != nil {
		return 0, fmt.Errorf("enqueue %s job: %w", args.Kind(), err)
	}
	return res.Job.ID, nil
}

// InsertNewTx enqueues args in tx as InsertTx does, for a node created
// in tx (no job of it can exist yet), without reading the job back:
// River's insert without RETURNING, a good part of an enroll's CPU
// otherwise.
func (r *nodeWork) InsertNewTx(ctx context.Context, tx store.Tx, args river.JobArgs) error {
	if _, err := r.q.InsertManyFastTx(ctx, tx, []river.InsertManyParams{{Args: args}}); err != nil {
		return fmt.Errorf("enqueue %s job: %w", args.Kind(), err)
	}
	return nil
}

// syncOne reads n's power and records the observation; when that clears a
// BMC fault, the node's waiting jobs are nudged.
func (r *nodeWork) syncOne(ctx context.Context, n *baremetal.Node) error {
	ps, bmcErr := r.readPower(ctx, n)
	if bmcErr != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	at := time.Now()
	var cleared bool
	_, err := r.ledger.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		was := n.Fault.BMC() || n.BMCFailures > 0
		r.observePower(n, ps, bmcErr, at)
		cleared = was && n.BMCFailures == 0
		return nil
	})
	if err != nil {
		return err
	}
	if cleared {
		r.nudge(ctx, n.ID)
	}
	if bmcErr != nil {
		return fmt.Errorf("sync node %s: %w", n.Name, bmcErr)
	}
	return nil
}

// finish counts a job attempt's outcome and passes its error through.
func (r *nodeWork) finish(ctx context.Context, job *rivertype.JobRow, err error) error {
	outcome := "ok"
	var snooze *rivertype.JobSnoozeError
	var cancel *rivertype.JobCancelError
	switch {
	case err == nil:
	case errors.As(err, &snooze):
		outcome = "snoozed"
	case errors.As(err, &cancel):
		outcome = "cancelled"
	default:
		outcome = "error"
		if r.wokenDuring(job) {
			// Retried at once, as the wake meant it to be; a snooze
			// gives the attempt back.
			outcome = "snoozed"
			r.log.InfoContext(ctx, "job failed while its node was woken; trying again now", "kind", job.Kind, "job_id", job.ID,
				"node", nodeIDOf(job), "err", err)
			r.metrics.jobsFinished.WithLabelValues(job.Kind, outcome).Inc()
			return river.JobSnooze(time.Second)
		}
		if loudAttempt(job.Attempt) {
			// Jobs retry for a very long time (destroy always succeeds):
			// say so at the 3rd failed attempt and then ever more rarely,
			// instead of never (River warns only when it gives up) or at
			// every attempt.
			r.log.WarnContext(ctx, "job keeps failing; it will be retried", "kind", job.Kind, "job_id", job.ID,
				"attempt", job.Attempt, "node", nodeIDOf(job), "err", err)
		}
	}
	r.metrics.jobsFinished.WithLabelValues(job.Kind, outcome).Inc()
	return err
}

// markWoken records that nodeID's waiting work was woken now.
func (r *nodeWork) markWoken(nodeID string) { r.woken.Store(nodeID, time.Now()) }

// wokenDuring reports whether job's node was woken while this attempt ran.
func (r *nodeWork) wokenDuring(job *rivertype.JobRow) bool {
	if job.AttemptedAt == nil {
		return false
	}
	v, ok := r.woken.Load(nodeIDOf(job))
	return ok && v.(time.Time).After(*job.AttemptedAt)
}

// loudAttempt: 3, 10, 30, 100, 300, 1000, ... failed attempts are logged.
func loudAttempt(a int) bool {
	for n := 3; n <= a; n *= 10 {
		if a == n || a == n*10/3 {
			return true
		}
	}
	return false
}

// nodeIDOf reads the node_id of a job's args, "" when it has none.
func nodeIDOf(job *rivertype.JobRow) string {
	var a struct {
		NodeID string `json:"node_id"`
	}
	_ = json.Unmarshal(job.EncodedArgs, &a) // a kind without node_id logs none
	return a.NodeID
}

// begin is how every mutating job starts. It returns the node to act on,
// or nil and the error the job should end with: nil when the node is gone
// (nothing left to do), a snooze while another mutating job of the node
// runs or while the node is in maintenance. Snoozing is waiting, not
// failing: it uses no attempt, so a job can wait out any maintenance.
func (r *nodeWork) begin(ctx context.Context, job *rivertype.JobRow, nodeID string, honorMaintenance bool) (*baremetal.Node, error) {
	busy, err := r.busyNode(ctx, job, nodeID)
	if err != nil {
		return nil, err
	}
	if busy {
		return nil, river.JobSnooze(r.cfg.BusyPoll)
	}
	n, err := r.store.GetNode(ctx, nodeID)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load node %s: %w", nodeID, err)
	}
	if honorMaintenance && n.Maintenance {
		r.log.DebugContext(ctx, "node in maintenance; job waits", "kind", job.Kind, "node", n.Name)
		return nil, river.JobSnooze(r.cfg.MaintenancePoll)
	}
	return n, nil
}

// nextRetry is the retry schedule of every kind: the same exponential
// backoff as NextCheckAt, capped at MaxBackoff.
func (r *nodeWork) nextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(r.backoff(job.Attempt))
}

// retryForever returns err for River to retry it, except on the last
// attempt, where it snoozes instead: snoozing gives the attempt back, so
// kinds that must never give up (cleanup, verify) never reach MaxAttempts.
func (r *nodeWork) retryForever(job *rivertype.JobRow, err error) error {
	if job.Attempt >= job.MaxAttempts-1 {
		r.log.Warn("job keeps failing; still retrying", "kind", job.Kind, "job", job.ID, "err", err)
		return river.JobSnooze(r.backoff(job.Attempt))
	}
	return err
}

// ignoreGone turns "the node (or instance) is gone" into success: a job
// whose subject was deleted has nothing left to do.
func ignoreGone(err error) error {
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil
	}
	return err
}

// powerOff makes sure n is observed off: it reads the power state, asks
// for a hard off when it is not, and waits until off is observed. stop is
// passed to waitPower.
func (r *nodeWork) powerOff(ctx context.Context, n *baremetal.Node, stop func(context.Context) bool) error {
	ps, err := r.readPower(ctx, n)
	if err != nil {
		return err
	}
	if ps == bmc.PowerOff {
		return nil
	}
	if err := r.setPower(ctx, n, bmc.ActionOff); err != nil {
		return err
	}
	_, err = r.waitPower(ctx, n, bmc.PowerOff, stop)
	return err
}

// clearBoot removes the boot override and ejects virtual media; a BMC that
// has neither capability has nothing to clear.
func (r *nodeWork) clearBoot(ctx context.Context, n *baremetal.Node) error {
	err := r.bmcCall(ctx, n, "clear boot device", func(ctx context.Context, c bmc.Client) error {
		return c.SetBootDevice(ctx, bmc.BootNone, false)
	})
	if err != nil && bmc.KindOf(err) != bmc.KindUnsupported {
		return err
	}
	return r.ejectMedia(ctx, n)
}

// ejectMedia ejects virtual media when the driver has it.
func (r *nodeWork) ejectMedia(ctx context.Context, n *baremetal.Node) error {
	_, err := r.ejectMediaSupported(ctx, n)
	return err
}

// mediaSupport is whether a node's BMC has virtual media: its driver has
// none (IPMI: such nodes boot from the network), or its driver has and
// the BMC does not (why says what it answered: a Redfish BMC without the
// licence, an empty VirtualMedia collection), or it has.
type mediaSupport struct {
	ok  bool
	why string // when the driver has virtual media and the BMC does not
}

// ejectMediaSupported ejects virtual media and reports whether the BMC has
// virtual media at all (the driver type and the BMC both must support it).
func (r *nodeWork) ejectMediaSupported(ctx context.Context, n *baremetal.Node) (mediaSupport, error) {
	var ms mediaSupport
	err := r.mediaCall(ctx, n, "eject media", func(ctx context.Context, c bmc.Client) error {
		vm, err := bmc.Capability[bmc.VirtualMedia](c)
		if err != nil {
			return nil // the driver has none
		}
		err = vm.EjectMedia(ctx)
		if errors.Is(err, bmc.ErrNoVirtualMedia) {
			// Not one slot's refusal: the BMC has none it can use.
			ms.why = err.Error()
			return nil
		}
		ms.ok = true
		return err
	})
	return ms, err
}

// deleteNode removes a node record that is still in state deleting.
func (r *nodeWork) deleteNode(ctx context.Context, id string) error {
	err := r.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		n, err := tx.GetNode(ctx, id)
		if err != nil {
			return err
		}
		if n.ProvisionState != baremetal.StateDeleting {
			return ledger.ErrSkip
		}
		if err := tx.Remove(ctx, n); err != nil {
			return err
		}
		// The addresses the node held for its deleted instances: the
		// machine is off, and no record names it any more.
		if _, err := tx.FreeNodeAddresses(ctx, n.ID); err != nil {
			return err
		}
		return r.ReverifyOthersOnBMCTx(ctx, tx, n.Driver, n.BMC.Address, n.ID)
	})
	switch {
	case err == nil, errors.Is(err, ledger.ErrSkip), baremetal.IsCode(err, baremetal.CodeNotFound):
		return nil
	default:
		return fmt.Errorf("delete node %s: %w", id, err)
	}
}
