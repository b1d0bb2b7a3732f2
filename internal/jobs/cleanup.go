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
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// cleanupWorker returns a node whose instance was deleted to the pool:
// power off (observed), clear the boot override, eject media, available.
//
// It never gives up: destroy always succeeds, for the user. The instance is
// already gone from the user's view; the node stays cleaning, out of
// scheduling, and the job retries with backoff capped at MaxBackoff for as
// long as the BMC is down, keeping the node's fault and last_error current.
// In maintenance it waits (snoozes) and resumes when maintenance ends.
type cleanupWorker struct{ nodeWorker[CleanupArgs] }

func (w *cleanupWorker) Work(ctx context.Context, job *river.Job[CleanupArgs]) error {
	return w.finish(ctx, job.JobRow, w.cleanup(ctx, job))
}

func (w *cleanupWorker) cleanup(ctx context.Context, job *river.Job[CleanupArgs]) error {
	n, err := w.begin(ctx, job.JobRow, job.Args.NodeID, true)
	if n == nil {
		return err
	}
	if n.ProvisionState != baremetal.StateCleaning {
		return nil
	}
	stop := func(ctx context.Context) bool {
		cur, err := w.store.GetNode(ctx, n.ID)
		if err != nil {
			return baremetal.IsCode(err, baremetal.CodeNotFound)
		}
		return cur.ProvisionState != baremetal.StateCleaning
	}
	erased := ""
	if w.cfg.AgentBoot && w.cfg.eraseMode(n) != "" {
		var done bool
		if erased, done, err = w.erase(ctx, job, n); !done {
			return err
		}
	}
	if err := w.powerOff(ctx, n, stop); err != nil {
		return w.cleanupError(ctx, job, n, err)
	}
	if err := w.clearBoot(ctx, n); err != nil {
		return w.cleanupError(ctx, job, n, err)
	}
	_, err = w.ledger.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
		if n.ProvisionState != baremetal.StateCleaning {
			return ledger.ErrSkip
		}
		now := time.Now()
		w.observePower(n, bmc.PowerOff, nil, now)
		touchSeen(n, now)
		if err := baremetal.FinishCleaning(n); err != nil {
			return err
		}
		how := "powered off, boot override cleared"
		if erased != "" {
			how = erased + "; " + how
		}
		c.Reason = "cleaned: " + how
		if id := job.Args.InstanceID; id != "" {
			c.Reason = fmt.Sprintf("cleaned after instance %s was deleted: %s", id, how)
		}
		return nil
	})
	return ignoreGone(err)
}

// cleanupError records why this attempt failed and retries, forever.
func (w *cleanupWorker) cleanupError(ctx context.Context, job *river.Job[CleanupArgs], n *baremetal.Node, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch f := classify(err); {
	case f == failStopped:
		return nil
	case f == failPowerTimeout:
		w.recordActionFault(ctx, n.ID, baremetal.FaultPowerMismatch, "cleanup: "+err.Error())
	case f == failRefused:
		w.recordRefused(ctx, n.ID, "cleanup", err)
		return w.refusedRetry(ctx, job.Kind, fmt.Errorf("cleanup node %s: %w", n.Name, err))
	case f.bmcTrouble():
		w.recordBMCFailure(ctx, n.ID, "cleanup", err)
	}
	return w.retryForever(job.JobRow, fmt.Errorf("cleanup node %s: %w", n.Name, err))
}

// recordActionFault writes an action fault (e.g. power_mismatch) to a node.
func (r *nodeWork) recordActionFault(ctx context.Context, nodeID string, f baremetal.Fault, msg string) {
	_, err := r.ledger.Update(ctx, nodeID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		n.SetActionFault(f, scrub(n, msg), time.Now())
		return nil
	})
	if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
		r.log.WarnContext(ctx, "record fault", "node", nodeID, "fault", f, "err", err)
	}
}

// erase boots the deploy agent to erase the node's disks (CleanErase) and
// waits for it, in steps like deployToDisk's. It returns what was done
// and true once the disks are erased (or cannot be: a BMC without
// virtual media, said in an event), else the error or snooze to return.
// A failed or lost erase is a clean_failed fault, retried with a fresh
// boot: the next tenant must not get this one's data.
func (w *cleanupWorker) erase(ctx context.Context, job *river.Job[CleanupArgs], n *baremetal.Node) (string, bool, error) {
	cmdID := fmt.Sprintf("erase-%d", job.ID)
	sess, err := w.store.GetAgentSession(ctx, n.ID)
	if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
		return "", false, err
	}
	if sess == nil || sess.Purpose != baremetal.AgentClean || sessionCommand(sess) != cmdID {
		cmd := &api.AgentCommand{ID: cmdID, Kind: api.AgentErase, Erase: w.cfg.eraseMode(n)}
		how, err := w.startAgent(ctx, n, baremetal.AgentClean, cmd)
		var perm *permanentError
		switch {
		case errors.As(err, &perm):
			note := "disks NOT erased: " + perm.msg
			_, uerr := w.ledger.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
				c.Events = append(c.Events, &baremetal.Event{Type: "clean", Message: note})
				return nil
			})
			return note, uerr == nil, ignoreGone(uerr)
		case err != nil:
			return "", false, w.cleanupError(ctx, job, n, err)
		}
		msg := fmt.Sprintf("booted the deploy agent %s to erase the disks (%s)", how, cmd.Erase)
		if err := w.agentBooted(ctx, n.ID, baremetal.StateCleaning, "clean", msg); err != nil {
			return "", false, ignoreGone(err)
		}
		return "", false, river.JobSnooze(agentPoll)
	}
	out, err := w.commandOutcome(sess, cmdID)
	if err != nil {
		return "", false, err
	}
	var failed string
	switch {
	case out.status == nil || out.status.State == api.AgentCommandRunning:
		if failed = w.agentGone(ctx, n, sess, out, "erasing the disks"); failed == "" {
			return "", false, river.JobSnooze(agentPoll)
		}
	case out.status.State == api.AgentCommandFailed:
		failed = "erasing the disks failed: " + out.status.Message
	default:
		failed = eraseReadBack(out.status, w.cfg.eraseMode(n))
	}
	if err := w.store.DeleteAgentSession(ctx, n.ID); err != nil {
		return "", false, err
	}
	if failed != "" {
		w.recordActionFault(ctx, n.ID, baremetal.FaultCleanFailed, failed)
		return "", false, w.retryForever(job.JobRow, fmt.Errorf("cleanup node %s: %s", n.Name, failed))
	}
	return "disks erased (" + w.cfg.eraseMode(n) + "): " + out.status.Message, true, nil
}

// eraseReadBack says why an erase the agent reported succeeded does not
// count ("" when it does). The report must say, per disk, what the agent
// read back as zeros after erasing: both ends of the disk
// (api.AgentEraseRegion each, the whole of a smaller disk) at least,
// and after a full erase blocks sampled across it. "Done" alone, from an
// agent that skipped the check or from whoever holds the boot's token,
// does not make the node clean for the next tenant.
func eraseReadBack(st *api.AgentCommandStatus, mode string) string {
	if len(st.Erased) == 0 {
		return "the deploy agent reported the erase done without what it read back from the disks afterwards: not counted as erased"
	}
	for _, d := range st.Erased {
		ends := min(d.SizeBytes, 2*api.AgentEraseRegion)
		switch {
		case d.SizeBytes <= 0 || d.VerifiedBytes < ends:
			return fmt.Sprintf("the deploy agent reported disk %s (%d bytes) erased, but read back only %d bytes of it as zeros, less than its ends (%d bytes): not counted as erased",
				d.Path, d.SizeBytes, d.VerifiedBytes, ends)
		case mode == string(baremetal.CleanEraseFull) && d.SampledBlocks <= 0:
			return fmt.Sprintf("the deploy agent reported disk %s erased in full, but read back no blocks sampled across it: not counted as erased", d.Path)
		}
	}
	return ""
}
