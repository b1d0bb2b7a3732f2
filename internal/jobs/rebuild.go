package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// A rebuild in place (service.RebuildInstance) is a deploy of the same
// instance on the same node, run by the deploy job: the deploy flows'
// steps, under the name "rebuild", and first, when the node's policy
// erases disks between tenants (Config.eraseMode, as its cleanup would),
// an erase by the deploy agent. The erase is for the image the instance
// had, which may hold data the new one must not see (a rebuild may hand the
// machine to another team within the project); it is the one the cleanup
// does, checked the same way (eraseReadBack).
//
// An image rebuild keeps the agent it booted to erase: the write command
// is handed to it when the erase is done, so the machine boots the agent
// once. A live rebuild is done with the agent after the erase, and boots
// its image as a live deploy does.

// rebuildFlow is the flow of a rebuild of r.inst with deploy flow base.
func (r *flowRun) rebuildFlow(base *flow) *flow {
	f := &flow{name: "rebuild", state: base.state, fail: base.fail}
	if r.cfg.AgentBoot && r.cfg.PublicURL != "" && r.cfg.eraseMode(r.node) != "" {
		f.steps = append(f.steps, flowStep{"boot_agent", bootRebuildEraseAgent}, flowStep{"erase", rebuildErase})
	}
	for _, s := range base.steps {
		if s.name == "boot_agent" && len(f.steps) > 0 {
			continue // the erase's agent writes the image too
		}
		f.steps = append(f.steps, s)
	}
	return f
}

// rebuildEraseCommand is the id of the erase command of inst's current
// rebuild.
func rebuildEraseCommand(inst *baremetal.Instance) string {
	return fmt.Sprintf("rebuild-erase-%s-%d", inst.ID, inst.Rebuilds)
}

// bootRebuildEraseAgent boots the deploy agent to erase the node's disks,
// unless its session carries the erase (or, handed on, the write) already.
// A node the agent cannot be booted on is not erased, and an event says
// so: a live rebuild goes on (it writes no disk); an image rebuild, which
// needs the agent to write, fails.
func bootRebuildEraseAgent(ctx context.Context, r *flowRun) (stepResult, error) {
	n, inst := r.node, r.inst
	if inst.BootedAt != nil {
		return goTo("wait_ready"), nil
	}
	if sess, err := r.commandSession(ctx, n.ID, baremetal.AgentDeploy, writeCommand(inst)); sess != nil || err != nil {
		return goTo("write_image"), err
	}
	cmdID := rebuildEraseCommand(inst)
	if sess, err := r.commandSession(ctx, n.ID, baremetal.AgentDeploy, cmdID); sess != nil || err != nil {
		return nextStep, err
	}
	mode := r.cfg.eraseMode(n)
	how, err := r.startAgent(ctx, n, baremetal.AgentDeploy, &api.AgentCommand{ID: cmdID, Kind: api.AgentErase, Erase: mode})
	var perm *permanentError
	switch {
	case errors.As(err, &perm) && inst.DeployMethod != baremetal.DeployImage:
		note := "disks NOT erased before the rebuild: " + perm.msg
		if _, err := r.ledger.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, _ *baremetal.Node, c *ledger.Change) error {
			c.Events = append(c.Events, &baremetal.Event{Type: "deploy", Message: note})
			return nil
		}); err != nil {
			return flowOver, ignoreGone(err)
		}
		return goTo("prepare_boot"), nil
	case err != nil:
		return nextStep, err
	}
	msg := fmt.Sprintf("booted the deploy agent %s to erase the disks (%s) before rebuilding instance %s", how, mode, inst.Name)
	if err := r.agentBooted(ctx, n.ID, baremetal.StateDeploying, "deploy", msg); err != nil {
		return flowOver, ignoreGone(err)
	}
	return nextStep, nil
}

// rebuildErase waits for the agent's report on the erase and checks what
// it read back, as a cleanup's erase does; a failed or lost erase is the
// node's clean_failed fault and the rebuild tries again with a new agent.
// Done, an image rebuild hands the agent its write command; a live one
// lets the agent go.
func rebuildErase(ctx context.Context, r *flowRun) (stepResult, error) {
	n, inst := r.node, r.inst
	cmdID := rebuildEraseCommand(inst)
	sess, err := r.commandSession(ctx, n.ID, baremetal.AgentDeploy, cmdID)
	if err != nil {
		return nextStep, err
	}
	if sess == nil {
		if s, err := r.commandSession(ctx, n.ID, baremetal.AgentDeploy, writeCommand(inst)); s != nil || err != nil {
			return goTo("write_image"), err // handed on by an earlier run
		}
		return goTo("boot_agent"), nil
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
	if failed != "" {
		if err := r.store.DeleteAgentSession(ctx, n.ID); err != nil {
			return nextStep, err
		}
		r.recordActionFault(ctx, n.ID, baremetal.FaultCleanFailed, failed)
		return nextStep, errors.New(failed)
	}
	r.note("erased", "disks erased ("+mode+"): "+out.status.Message)
	if inst.DeployMethod != baremetal.DeployImage {
		return nextStep, r.store.DeleteAgentSession(ctx, n.ID)
	}
	// The same agent writes the image: its next heartbeat gets the
	// command (the agent runs a new command id when the last is done).
	b, err := json.Marshal(writeImageCommand(r, inst))
	if err != nil {
		return nextStep, err
	}
	sess.Command, sess.Status = string(b), ""
	if err := r.store.UpdateAgentSession(ctx, sess); err != nil {
		return nextStep, err
	}
	return nextStep, nil
}
