package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// deployToDisk is a deploy with deploy_method image, in steps a retried
// or restarted job takes up where the last left off (the agent session
// says where):
//
//  1. no session for this instance: boot the deploy agent with the
//     command to write the image (checksum verified while it streams) to
//     the root disk the hints choose, then the config drive after it;
//  2. the agent reports: running (wait), failed on the user's input (the
//     instance fails, the node is cleaned, no fault), failed on the
//     machine (the deploy fails; deleting the instance cleans the node),
//     or succeeded;
//  3. succeeded: eject the agent, boot from disk persistently, power cycle,
//     and go on as a live deploy does (readiness callback, deploy_timeout).
//
// An agent that stops reporting (for AgentTimeout, or at all on a machine
// the BMC reports off) is a node fault, agent_lost: the deploy retries
// with a fresh boot of the agent until its attempts run out, and the
// fault clears when the new agent reports.
func (w *deployWorker) deployToDisk(ctx context.Context, job *river.Job[DeployArgs], n *baremetal.Node, inst *baremetal.Instance) error {
	if !w.cfg.AgentBoot || w.cfg.PublicURL == "" {
		return w.deployError(ctx, job, n, &permanentError{"deploy_method image needs the deploy agent, and this controller serves no agent image (--agent-kernel and --public-url)"})
	}
	cmdID := "write-" + inst.ID
	sess, err := w.store.GetAgentSession(ctx, n.ID)
	if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
		return err
	}
	if sess == nil || sess.Purpose != baremetal.AgentDeploy || sessionCommand(sess) != cmdID {
		cmd := &api.AgentCommand{ID: cmdID, Kind: api.AgentWriteImage,
			Image: &api.Image{URL: inst.Image.URL, Checksum: inst.Image.Checksum}, RootDeviceHints: inst.RootDevice}
		if inst.NeedsConfigDrive() {
			cmd.ConfigDriveURL = w.cfg.agentURL() + api.ConfigDrivePath(inst.ID, configdrive.Key(inst.ReadyToken))
		}
		how, err := w.startAgent(ctx, n, baremetal.AgentDeploy, cmd)
		if err != nil {
			return w.deployError(ctx, job, n, err)
		}
		msg := fmt.Sprintf("booted the deploy agent %s to write instance %s's image %s to disk", how, inst.Name, baremetal.RedactURL(inst.Image.URL))
		if err := w.agentBooted(ctx, n.ID, baremetal.StateDeploying, "deploy", msg); err != nil {
			return ignoreGone(err)
		}
		return river.JobSnooze(agentPoll)
	}
	out, err := w.commandOutcome(sess, cmdID)
	if err != nil {
		return err
	}
	switch {
	case out.status == nil || out.status.State == api.AgentCommandRunning:
		gone := w.agentGone(ctx, n, sess, out, "writing the image")
		if gone == "" {
			return river.JobSnooze(agentPoll)
		}
		if err := w.agentLost(ctx, n.ID, baremetal.StateDeploying, gone); err != nil {
			return ignoreGone(err)
		}
		// The next attempt boots a new agent, with a new token: the lost
		// one's, should it come back, no longer counts.
		if err := w.store.DeleteAgentSession(ctx, n.ID); err != nil {
			return err
		}
		return w.deployError(ctx, job, n, errors.New(gone))
	case out.status.State == api.AgentCommandFailed:
		_ = w.store.DeleteAgentSession(ctx, n.ID)
		if out.status.Input {
			return w.failOnImage(ctx, job, n, errors.New(out.status.Message))
		}
		return w.deployError(ctx, job, n, &permanentError{"writing the image failed on the node: " + out.status.Message})
	}
	// Written: boot it.
	if err := w.ejectMedia(ctx, n); err != nil {
		return w.deployError(ctx, job, n, err)
	}
	if err := w.bmcCall(ctx, n, "set boot device", func(ctx context.Context, c bmc.Client) error {
		return c.SetBootDevice(ctx, bmc.BootDisk, true)
	}); err != nil {
		return w.deployError(ctx, job, n, err)
	}
	if err := w.setPower(ctx, n, bmc.ActionReset); err != nil {
		return w.deployError(ctx, job, n, err)
	}
	took, err := w.waitPower(ctx, n, bmc.PowerOn, nil)
	if err != nil {
		return w.deployError(ctx, job, n, err)
	}
	if err := w.store.DeleteAgentSession(ctx, n.ID); err != nil {
		return err
	}
	return w.booted(ctx, n.ID, inst.ID, fmt.Sprintf("%s; booted from disk, power on observed after %s",
		out.status.Message, baremetal.HumanDuration(took)))
}
