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
		// The agent reported writing, 20 s ago; then its machine went off.
		h, sys, n, inst, first := writingAgent(t, open(t), time.Now().Add(-20*time.Second), nil)
		if err := h.fleet.SetPower(sys, false); err != nil {
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
			p, _ := h.fleet.Power(sys)
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

// TestDeployToDiskAgentLostWhenItFallsSilentOnAMachineStillOn: an agent
// that reported writing and then fell silent while its machine stays on
// (hung, kernel panic, wedged disk) is lost after agentStall, not after
// AgentTimeout: the node gets agent_lost naming the silence, and the
// retry boots a new agent.
func TestDeployToDiskAgentLostWhenItFallsSilentOnAMachineStillOn(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		// It reported writing a moment ago; then nothing. The machine
		// stays on.
		h, sys, n, inst, first := writingAgent(t, open(t), time.Now(), func(c *Config) { c.agentStallAfter = 2 * time.Second })

		lost := h.waitNode(n.ID, wait, "agent_lost", func(cur *baremetal.Node) bool { return cur.Fault == baremetal.FaultAgentLost })
		if !strings.Contains(lost.LastError, "fell silent") || !strings.Contains(lost.LastError, "writing the image") {
			t.Errorf("last_error %q does not say the agent fell silent mid-write", lost.LastError)
		}
		if p, _ := h.fleet.Power(sys); p != "On" {
			t.Errorf("machine power %q; the test wants it on throughout", p)
		}
		h.waitNode(n.ID, wait, "agent booted again", func(cur *baremetal.Node) bool {
			s, err := h.st.GetAgentSession(h.ctx, n.ID)
			return err == nil && s.TokenHash != first.TokenHash
		})
		got, err := h.st.GetInstance(h.ctx, inst.ID)
		if err != nil || got.State != baremetal.InstanceDeploying {
			t.Errorf("instance after the agent was lost: %+v, %v; want deploying", got, err)
		}
	})
}

// TestAgentStallCountsFromTheProcessStart: an agent last heard of before
// this controller started, or before its database came back (the agent's
// heartbeats failed meanwhile, and it backs off), is not stalled until
// agentStall after that; an agent that finished its command or has not
// reported yet never is (AgentTimeout covers the first report).
func TestAgentStallCountsFromTheProcessStart(t *testing.T) {
	running, _ := json.Marshal(api.AgentCommandStatus{ID: "c1", State: api.AgentCommandRunning})
	done, _ := json.Marshal(api.AgentCommandStatus{ID: "c1", State: api.AgentCommandSucceeded})
	now := time.Now()
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	for _, tc := range []struct {
		name      string
		status    []byte
		seen      *time.Time
		started   time.Duration // ago
		storeBack time.Duration // ago; 0: the database never failed
		stalled   bool
		lostEver  bool
	}{
		{"silent 10 min, process up 20 min", running, ago(10 * time.Minute), 20 * time.Minute, 0, true, false},
		{"silent 10 min, process up 1 min", running, ago(10 * time.Minute), time.Minute, 0, false, false},
		{"silent 10 min, database back 1 min ago", running, ago(10 * time.Minute), 20 * time.Minute, time.Minute, false, false},
		{"silent 10 min, database back 8 min ago", running, ago(10 * time.Minute), 20 * time.Minute, 8 * time.Minute, true, false},
		{"silent 2 min, process up 20 min", running, ago(2 * time.Minute), 20 * time.Minute, 0, false, false},
		{"finished, silent 10 min", done, ago(10 * time.Minute), 20 * time.Minute, 0, false, false},
		{"never reported (AgentTimeout decides)", nil, nil, 20 * time.Minute, 0, false, true},
		{"silent past AgentTimeout", running, ago(20 * time.Minute), 30 * time.Minute, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &nodeWork{cfg: Config{AgentTimeout: 15 * time.Minute}, started: now.Add(-tc.started)}
			if tc.storeBack != 0 {
				w.storeBack.Store(now.Add(-tc.storeBack).UnixNano())
			}
			sess := &baremetal.AgentSession{NodeID: "n", CreatedAt: now.Add(-25 * time.Minute), Status: string(tc.status), LastSeenAt: tc.seen}
			out, err := w.commandOutcome(sess, "c1")
			if err != nil {
				t.Fatal(err)
			}
			if (out.stalled > 0) != tc.stalled || out.lost != tc.lostEver {
				t.Errorf("stalled %s, lost %v; want stalled %v, lost %v", out.stalled, out.lost, tc.stalled, tc.lostEver)
			}
		})
	}
}

// writingAgent starts an image deploy on a one-node simulated fleet (cfg
// adjusting the runner), waits until the agent is booted (a session with
// the write command, machine on), and records that the agent reported
// the write running, seen at seen.
func writingAgent(t *testing.T, st store.Store, seen time.Time, cfg func(*Config)) (h *harness, sys string, n *baremetal.Node, inst *baremetal.Instance, first *baremetal.AgentSession) {
	t.Helper()
	h, systems := newSimHarness(t, st, 1, func(c *Config) {
		c.AgentBoot, c.PublicURL = true, "http://controller.invalid"
		if cfg != nil {
			cfg(c)
		}
	})
	n = h.addNode("n-agent", systems[0], baremetal.StateDeploying, false)
	inst = h.addInstance(n, "web")
	h.inTx(func(tx store.Tx) error {
		inst.DeployMethod = baremetal.DeployImage
		return tx.UpdateInstance(h.ctx, inst)
	})
	h.start()
	h.enqueue(DeployArgs{NodeID: n.ID, InstanceID: inst.ID})

	h.waitNode(n.ID, wait, "agent booted", func(cur *baremetal.Node) bool {
		s, err := h.st.GetAgentSession(h.ctx, n.ID)
		if err == nil && s.Purpose == baremetal.AgentDeploy && cur.PowerState == baremetal.PowerOn {
			first = s
		}
		return first != nil
	})
	status, _ := json.Marshal(api.AgentCommandStatus{ID: "write-" + inst.ID, State: api.AgentCommandRunning, Progress: 40})
	first.Status, first.LastSeenAt = string(status), &seen
	if err := h.st.UpdateAgentSession(h.ctx, first); err != nil {
		t.Fatal(err)
	}
	return h, systems[0], n, inst, first
}
