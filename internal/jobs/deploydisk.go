package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// writeCommand is the id of the agent command that writes inst's image
// (in its current rebuild, when it was rebuilt).
func writeCommand(inst *baremetal.Instance) string {
	if inst.Rebuilds > 0 {
		return fmt.Sprintf("write-%s-%d", inst.ID, inst.Rebuilds)
	}
	return "write-" + inst.ID
}

// writeImageCommand is the agent command that writes inst's image to the
// disk the root device hints choose, and its config drive after it.
func writeImageCommand(r *flowRun, inst *baremetal.Instance) *api.AgentCommand {
	cmd := &api.AgentCommand{ID: writeCommand(inst), Kind: api.AgentWriteImage,
		Image: &api.Image{URL: inst.Image.URL, Checksum: inst.Image.Checksum}, RootDeviceHints: rootHints(r.node, inst)}
	if inst.NeedsConfigDrive() {
		cmd.ConfigDriveURL = r.cfg.agentURL() + api.ConfigDrivePath(inst.ID, configdrive.Key(inst.ReadyToken))
	}
	return cmd
}

// rootHints are the root device hints of inst's deploy on n: the
// instance's own, else, on a node that declares RAID volumes, the first
// declared volume the BMC reports, by its size (the OS sees a volume as
// a disk of that size; the agent matches sizes in whole GiB, as the
// controller reports them), so the image goes on the volume the operator
// made for it rather than the largest disk. None: the agent's default.
func rootHints(n *baremetal.Node, inst *baremetal.Instance) map[string]string {
	if len(inst.RootDevice) > 0 || n == nil || n.Settings.RAID == nil {
		return inst.RootDevice
	}
	for _, v := range *n.Settings.RAID {
		for _, o := range n.Observed.Volumes {
			if o.Name == v.Name && o.SizeGB > 0 && v.VolumeFits(o) {
				return map[string]string{"size_gb": strconv.Itoa(o.SizeGB)}
			}
		}
	}
	return nil
}

// bootWriteAgent boots the deploy agent with the write command, unless
// the node's agent session carries it already.
func bootWriteAgent(ctx context.Context, r *flowRun) (stepResult, error) {
	n, inst := r.node, r.inst
	if inst.BootedAt != nil {
		return goTo("wait_ready"), nil
	}
	if !r.cfg.AgentBoot || r.cfg.PublicURL == "" {
		return nextStep, &permanentError{"deploy_method image needs the deploy agent, and this controller serves no agent image (--agent-kernel and --public-url)"}
	}
	cmdID := writeCommand(inst)
	if sess, err := r.commandSession(ctx, n.ID, baremetal.AgentDeploy, cmdID); sess != nil || err != nil {
		return nextStep, err
	}
	how, err := r.startAgent(ctx, n, baremetal.AgentDeploy, writeImageCommand(r, inst))
	if err != nil {
		return nextStep, err
	}
	msg := fmt.Sprintf("booted the deploy agent %s to write instance %s's image %s to disk", how, inst.Name, baremetal.RedactURL(inst.Image.URL))
	if err := r.agentBooted(ctx, n.ID, baremetal.StateDeploying, "deploy", msg); err != nil {
		return flowOver, ignoreGone(err)
	}
	return nextStep, nil
}

// writeImage waits for the agent's report on the write. The session it
// reads is gone when the last boot's agent was lost: the flow then boots
// a new one.
func writeImage(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	cmdID := writeCommand(r.inst)
	sess, err := r.commandSession(ctx, n.ID, baremetal.AgentDeploy, cmdID)
	if sess == nil || err != nil {
		return goTo("boot_agent"), err
	}
	out, err := r.commandOutcome(sess, cmdID)
	if err != nil {
		return nextStep, err
	}
	switch {
	case out.status == nil || out.status.State == api.AgentCommandRunning:
		gone := r.agentGone(ctx, n, sess, out, "writing the image")
		if gone == "" {
			return waitFor(agentPoll), nil
		}
		if err := r.agentLost(ctx, n.ID, baremetal.StateDeploying, gone); err != nil {
			return flowOver, ignoreGone(err)
		}
		// The next attempt boots a new agent, with a new token: the lost
		// one's, should it come back, no longer counts.
		if err := r.store.DeleteAgentSession(ctx, n.ID); err != nil {
			return nextStep, err
		}
		return nextStep, errors.New(gone)
	case out.status.State == api.AgentCommandFailed:
		_ = r.store.DeleteAgentSession(ctx, n.ID)
		if out.status.Input {
			return nextStep, &inputError{out.status.Message}
		}
		return nextStep, &permanentError{"writing the image failed on the node: " + out.status.Message}
	}
	r.note("written", out.status.Message)
	return nextStep, nil
}

// bootDisk boots the written disk: the agent's media ejected, a
// persistent boot from disk, a power cycle observed; then the session
// goes and the boot is recorded.
func bootDisk(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	if r.inst.BootedAt != nil {
		return goTo("wait_ready"), nil
	}
	if err := r.ejectMedia(ctx, n); err != nil {
		return nextStep, err
	}
	if err := r.bmcCall(ctx, n, "set boot device", func(ctx context.Context, c bmc.Client) error {
		return c.SetBootDevice(ctx, bmc.BootDisk, true)
	}); err != nil {
		return nextStep, err
	}
	if err := r.setPower(ctx, n, bmc.ActionReset); err != nil {
		return nextStep, err
	}
	took, err := r.waitPower(ctx, n, bmc.PowerOn, nil)
	if err != nil {
		return nextStep, err
	}
	if err := r.store.DeleteAgentSession(ctx, n.ID); err != nil {
		return nextStep, err
	}
	return r.booted(ctx, fmt.Sprintf("%s; booted from disk, power on observed after %s", r.notes["written"], baremetal.HumanDuration(took)))
}
