package jobs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// TestDeployToDiskAgentLostWhenTheMachineGoesOff: an image deploy whose
// agent was writing (it reported running) and then fell silent on a
// machine the BMC reports off is not left waiting for AgentTimeout: the
// node gets the agent_lost fault at once, the instance keeps deploying,
// and the retry boots a new agent (new session, new token, machine on).
// (The agent's report that clears the fault is the service's; the whole
// story on a real VM is in internal/app.)
func TestDeployToDiskAgentLostWhenTheMachineGoesOff(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1, func(c *Config) {
			c.AgentBoot, c.PublicURL = true, "http://controller.invalid"
		})
		n := h.addNode("n-lost", sys[0], baremetal.StateDeploying, false)
		inst := h.addInstance(n, "web")
		h.inTx(func(tx store.Tx) error {
			inst.DeployMethod = baremetal.DeployImage
			return tx.UpdateInstance(h.ctx, inst)
		})
		h.start()
		h.enqueue(DeployArgs{NodeID: n.ID, InstanceID: inst.ID})

		// The agent is booted: a session with the write command, power on.
		var first *baremetal.AgentSession
		h.waitNode(n.ID, wait, "agent booted", func(cur *baremetal.Node) bool {
			s, err := h.st.GetAgentSession(h.ctx, n.ID)
			if err == nil && s.Purpose == baremetal.AgentDeploy && cur.PowerState == baremetal.PowerOn {
				first = s
			}
			return first != nil
		})
		// It reported writing, 20 s ago; then its machine went off.
		st, _ := json.Marshal(api.AgentCommandStatus{ID: "write-" + inst.ID, State: api.AgentCommandRunning, Progress: 40})
		seen := time.Now().Add(-20 * time.Second)
		first.Status, first.LastSeenAt = string(st), &seen
		if err := h.st.UpdateAgentSession(h.ctx, first); err != nil {
			t.Fatal(err)
		}
		if err := h.fleet.SetPower(sys[0], false); err != nil {
			t.Fatal(err)
		}

		lost := h.waitNode(n.ID, wait, "agent_lost", func(cur *baremetal.Node) bool { return cur.Fault == baremetal.FaultAgentLost })
		if !strings.Contains(lost.LastError, "is off") || !strings.Contains(lost.LastError, "writing the image") {
			t.Errorf("last_error %q does not say the machine went off mid-write", lost.LastError)
		}
		if lost.ProvisionState != baremetal.StateDeploying {
			t.Errorf("node %s after the agent was lost; want deploying (retried)", lost.ProvisionState)
		}
		// The retry boots a fresh agent.
		h.waitNode(n.ID, wait, "agent booted again", func(cur *baremetal.Node) bool {
			s, err := h.st.GetAgentSession(h.ctx, n.ID)
			p, _ := h.fleet.Power(sys[0])
			return err == nil && s.TokenHash != first.TokenHash && p == "On"
		})
		got, err := h.st.GetInstance(h.ctx, inst.ID)
		if err != nil || got.State != baremetal.InstanceDeploying {
			t.Errorf("instance after the agent was lost: %+v, %v; want deploying", got, err)
		}
		if ev := findEvent(h.events(n.ID), "fault", "fault agent_lost"); ev == nil {
			t.Errorf("no agent_lost fault event:%s", dumpEvents(h.events(n.ID)))
		}
	})
}
