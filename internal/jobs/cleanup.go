package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// cleanupWorker runs the cleanup flow of a node whose instance was
// deleted: its disks erased by the deploy agent (when the controller
// serves it and the node's erase mode asks: cleanupErasing), the machine
// observed off, boot override and media cleared, available.
//
// It never gives up: destroy always succeeds, for the user. The instance is
// already gone from the user's view; the node stays cleaning, out of
// scheduling, and the job retries with backoff capped at MaxBackoff for as
// long as the BMC is down, keeping the node's fault and last_error current.
// In maintenance it waits (snoozes) and resumes when maintenance ends.
type cleanupWorker struct{ nodeWorker[CleanupArgs] }

var cleanup = &flow{
	name: "cleanup", state: baremetal.StateCleaning,
	steps: []flowStep{
		{"power_off", powerOffCleaning},
		{"clear_boot", clearBootCleaned},
	},
	fail: keepTrying,
}

// cleanupErasing erases the disks first. A failed or lost erase is a
// clean_failed fault, retried with a fresh boot: the next tenant must not
// get this one's data.
var cleanupErasing = &flow{
	name: "cleanup", state: baremetal.StateCleaning,
	steps: []flowStep{
		{"boot_agent", bootEraseAgent},
		{"erase", eraseDisks},
		{"power_off", powerOffCleaning},
		{"clear_boot", clearBootCleaned},
	},
	fail: keepTrying,
}

func (w *cleanupWorker) Work(ctx context.Context, job *river.Job[CleanupArgs]) error {
	return w.finish(ctx, job.JobRow, w.runFlow(ctx, job.JobRow, job.Args.NodeID, true, func(_ context.Context, r *flowRun) (*flow, error) {
		r.deletedInstance = job.Args.InstanceID
		if w.cfg.AgentBoot && w.cfg.eraseMode(r.node) != "" {
			return cleanupErasing, nil
		}
		return cleanup, nil
	}))
}

// eraseCommand is the id of the erase command of a cleanup job.
func eraseCommand(job *rivertype.JobRow) string { return fmt.Sprintf("erase-%d", job.ID) }

// bootEraseAgent boots the deploy agent to erase the node's disks
// (Config.eraseMode), unless the node's agent session carries the erase
// already. A node the agent cannot be booted on (no virtual media, no
// network boot) is not erased, and an event says so.
func bootEraseAgent(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	cmdID := eraseCommand(r.job)
	if sess, err := r.commandSession(ctx, n.ID, baremetal.AgentClean, cmdID); sess != nil || err != nil {
		return nextStep, err
	}
	cmd := &api.AgentCommand{ID: cmdID, Kind: api.AgentErase, Erase: r.cfg.eraseMode(n)}
	how, err := r.startAgent(ctx, n, baremetal.AgentClean, cmd)
	var perm *permanentError
	switch {
	case errors.As(err, &perm):
		note := "disks NOT erased: " + perm.msg
		_, err := r.ledger.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
			c.Events = append(c.Events, &baremetal.Event{Type: "clean", Message: note})
			return nil
		})
		if err != nil {
			return flowOver, ignoreGone(err)
		}
		r.note("erased", note)
		return goTo("power_off"), nil
	case err != nil:
		return nextStep, err
	}
	msg := fmt.Sprintf("booted the deploy agent %s to erase the disks (%s)", how, cmd.Erase)
	if err := r.agentBooted(ctx, n.ID, baremetal.StateCleaning, "clean", msg); err != nil {
		return flowOver, ignoreGone(err)
	}
	return nextStep, nil
}

// eraseDisks waits for the agent's report on the erase and checks what
// it read back (eraseReadBack). A failed or lost erase is the node's
// clean_failed fault and boots a new agent; the session it reads is gone
// then, as after any lost agent.
func eraseDisks(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	cmdID := eraseCommand(r.job)
	sess, err := r.commandSession(ctx, n.ID, baremetal.AgentClean, cmdID)
	if sess == nil || err != nil {
		return goTo("boot_agent"), err
	}
	out, err := r.commandOutcome(sess, cmdID)
	if err != nil {
		return nextStep, err
	}
	mode := r.cfg.eraseMode(n)
	var failed string
	switch {
	case out.status == nil || out.status.State == api.AgentCommandRunning:
		if failed = r.agentGone(ctx, n, sess, out, "erasing the disks"); failed == "" {
			return waitFor(agentPoll), nil
		}
	case out.status.State == api.AgentCommandFailed:
		failed = "erasing the disks failed: " + out.status.Message
	default:
		failed = eraseReadBack(out.status, mode)
	}
	if err := r.store.DeleteAgentSession(ctx, n.ID); err != nil {
		return nextStep, err
	}
	if failed != "" {
		r.recordActionFault(ctx, n.ID, baremetal.FaultCleanFailed, failed)
		return nextStep, errors.New(failed)
	}
	r.note("erased", "disks erased ("+mode+"): "+out.status.Message)
	return nextStep, nil
}

// powerOffCleaning makes sure the machine is observed off, giving up the
// wait when the node leaves cleaning.
func powerOffCleaning(ctx context.Context, r *flowRun) (stepResult, error) {
	return nextStep, r.powerOff(ctx, r.node, r.stopped)
}

// clearBootCleaned clears the boot override and media, and returns the
// node to the pool, saying what the cleanup did.
func clearBootCleaned(ctx context.Context, r *flowRun) (stepResult, error) {
	if err := r.clearBoot(ctx, r.node); err != nil {
		return nextStep, err
	}
	_, err := r.ledger.Update(ctx, r.node.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		if n.ProvisionState != baremetal.StateCleaning {
			return ledger.ErrSkip
		}
		now := time.Now()
		r.observePower(n, bmc.PowerOff, nil, now)
		touchSeen(n, now)
		if err := baremetal.FinishCleaning(n); err != nil {
			return err
		}
		// The deleted instances' pool addresses, held while the machine
		// might still run their OS, are free now that it is off and
		// (as its policy says) erased.
		freed, err := tx.FreeNodeAddresses(ctx, n.ID)
		if err != nil {
			return err
		}
		if freed > 0 {
			c.Events = append(c.Events, &baremetal.Event{Type: "clean", Message: fmt.Sprintf("%d pool address(es) the deleted instance held are free again", freed)})
		}
		how := "powered off, boot override cleared"
		if erased := r.notes["erased"]; erased != "" {
			how = erased + "; " + how
		}
		c.Reason = "cleaned: " + how
		if id := r.deletedInstance; id != "" {
			c.Reason = fmt.Sprintf("cleaned after instance %s was deleted: %s", id, how)
		}
		return r.becomeAvailable(ctx, tx, n, c)
	})
	return flowOver, ignoreGone(err)
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
