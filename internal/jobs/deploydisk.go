package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// imageDeploy is a deploy with deploy_method image:
//
//   - boot_agent: boot the deploy agent with the command to write the
//     image (checksum verified while it streams) to the root disk the
//     hints choose, then the config drive after it;
//   - write_image: wait for the agent's report: running (wait), failed
//     on the user's input (the instance fails, the node is cleaned, no
//     fault), failed on the machine (the deploy fails; deleting the
//     instance cleans the node), or succeeded;
//   - boot_disk: eject the agent, boot from disk persistently, power
//     cycle, and go on as a live deploy does (wait_ready).
//
// An agent that stops reporting (for AgentTimeout, or at all on a machine
// the BMC reports off) is a node fault, agent_lost: the deploy retries
// with a fresh boot of the agent until its attempts run out, and the
// fault clears when the new agent reports.
var imageDeploy = &flow{
	name: "deploy", state: baremetal.StateDeploying,
	steps: []step{
		{"boot_agent", bootWriteAgent},
		{"write_image", writeImage},
		{"boot_disk", bootDisk},
		{"wait_ready", waitReady},
	},
	fail: deployFailed,
}

// writeCommand is the id of the agent command that writes inst's image.
func writeCommand(inst *baremetal.Instance) string { return "write-" + inst.ID }

// bootWriteAgent boots the deploy agent with the write command, unless
// the node's agent session carries it already.
func bootWriteAgent(ctx context.Context, r *run) (result, error) {
	n, inst := r.node, r.inst
	if inst.BootedAt != nil {
		return goTo("wait_ready"), nil
	}
	if !r.cfg.AgentBoot || r.cfg.PublicURL == "" {
		return next, &permanentError{"deploy_method image needs the deploy agent, and this controller serves no agent image (--agent-kernel and --public-url)"}
	}
	cmdID := writeCommand(inst)
	sess, err := r.store.GetAgentSession(ctx, n.ID)
	if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
		return next, err
	}
	if sess != nil && sess.Purpose == baremetal.AgentDeploy && sessionCommand(sess) == cmdID {
		return next, nil
	}
	cmd := &api.AgentCommand{ID: cmdID, Kind: api.AgentWriteImage,
		Image: &api.Image{URL: inst.Image.URL, Checksum: inst.Image.Checksum}, RootDeviceHints: inst.RootDevice}
	if inst.NeedsConfigDrive() {
		cmd.ConfigDriveURL = r.cfg.agentURL() + api.ConfigDrivePath(inst.ID, configdrive.Key(inst.ReadyToken))
	}
	how, err := r.startAgent(ctx, n, baremetal.AgentDeploy, cmd)
	if err != nil {
		return next, err
	}
	msg := fmt.Sprintf("booted the deploy agent %s to write instance %s's image %s to disk", how, inst.Name, baremetal.RedactURL(inst.Image.URL))
	if err := r.agentBooted(ctx, n.ID, baremetal.StateDeploying, "deploy", msg); err != nil {
		return done, ignoreGone(err)
	}
	return next, nil
}

// writeImage waits for the agent's report on the write. The session it
// reads is gone when the last boot's agent was lost: the flow then boots
// a new one.
func writeImage(ctx context.Context, r *run) (result, error) {
	n := r.node
	cmdID := writeCommand(r.inst)
	sess, err := r.store.GetAgentSession(ctx, n.ID)
	switch {
	case baremetal.IsCode(err, baremetal.CodeNotFound):
		return goTo("boot_agent"), nil
	case err != nil:
		return next, err
	case sess.Purpose != baremetal.AgentDeploy || sessionCommand(sess) != cmdID:
		return goTo("boot_agent"), nil
	}
	out, err := r.commandOutcome(sess, cmdID)
	if err != nil {
		return next, err
	}
	switch {
	case out.status == nil || out.status.State == api.AgentCommandRunning:
		gone := r.agentGone(ctx, n, sess, out, "writing the image")
		if gone == "" {
			return waitFor(agentPoll), nil
		}
		if err := r.agentLost(ctx, n.ID, baremetal.StateDeploying, gone); err != nil {
			return done, ignoreGone(err)
		}
		// The next attempt boots a new agent, with a new token: the lost
		// one's, should it come back, no longer counts.
		if err := r.store.DeleteAgentSession(ctx, n.ID); err != nil {
			return next, err
		}
		return next, errors.New(gone)
	case out.status.State == api.AgentCommandFailed:
		_ = r.store.DeleteAgentSession(ctx, n.ID)
		if out.status.Input {
			return next, &inputError{out.status.Message}
		}
		return next, &permanentError{"writing the image failed on the node: " + out.status.Message}
	}
	r.note("written", out.status.Message)
	return next, nil
}

// bootDisk boots the written disk: the agent's media ejected, a
// persistent boot from disk, a power cycle observed; then the session
// goes and the boot is recorded.
func bootDisk(ctx context.Context, r *run) (result, error) {
	n := r.node
	if r.inst.BootedAt != nil {
		return goTo("wait_ready"), nil
	}
	if err := r.ejectMedia(ctx, n); err != nil {
		return next, err
	}
	if err := r.bmcCall(ctx, n, "set boot device", func(ctx context.Context, c bmc.Client) error {
		return c.SetBootDevice(ctx, bmc.BootDisk, true)
	}); err != nil {
		return next, err
	}
	if err := r.setPower(ctx, n, bmc.ActionReset); err != nil {
		return next, err
	}
	took, err := r.waitPower(ctx, n, bmc.PowerOn, nil)
	if err != nil {
		return next, err
	}
	if err := r.store.DeleteAgentSession(ctx, n.ID); err != nil {
		return next, err
	}
	return r.booted(ctx, fmt.Sprintf("%s; booted from disk, power on observed after %s", r.notes["written"], baremetal.HumanDuration(took)))
}
