package jobs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// A cleanup erases as its node's clean_erase says, else its resource
// class's (--clean-erase-class), else the controller's (--clean-erase):
// "full" boots the agent with a full erase, off boots no agent at all.
func TestCleanupEraseMode(t *testing.T) {
	for _, c := range []struct {
		name    string
		byClass map[string]string
		node    baremetal.CleanErase
		want    string // the agent's erase; "" boots no agent
	}{
		{"class full", map[string]string{"baremetal": "full", "scratch": ""}, "", "full"},
		{"class off", map[string]string{"baremetal": ""}, "", ""},
		{"node full over class metadata", map[string]string{"baremetal": "metadata"}, baremetal.CleanEraseFull, "full"},
		{"node off over class full", map[string]string{"baremetal": "full"}, baremetal.CleanEraseOff, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, sys := newSimHarness(t, openSQLite(t), 1, func(cfg *Config) {
				cfg.AgentBoot, cfg.PublicURL, cfg.CleanErase = true, "http://controller.invalid", "metadata"
				cfg.CleanEraseByClass = c.byClass
			})
			n := h.addNode("n-erase", sys[0], baremetal.StateCleaning, false)
			if c.node != "" {
				h.setNode(n.ID, func(n *baremetal.Node) { n.CleanErase = c.node })
			}
			h.start()
			h.enqueue(CleanupArgs{NodeID: n.ID})
			if c.want == "" {
				h.waitNode(n.ID, wait, "available", func(cur *baremetal.Node) bool { return cur.ProvisionState == baremetal.StateAvailable })
				if _, err := h.st.GetAgentSession(h.ctx, n.ID); !baremetal.IsCode(err, baremetal.CodeNotFound) {
					t.Fatalf("the agent was booted though the erase is off: %v", err)
				}
				return
			}
			var cmd api.AgentCommand
			h.waitNode(n.ID, wait, "agent booted to erase", func(*baremetal.Node) bool {
				s, err := h.st.GetAgentSession(h.ctx, n.ID)
				return err == nil && s.Purpose == baremetal.AgentClean && json.Unmarshal([]byte(s.Command), &cmd) == nil &&
					findEvent(h.events(n.ID), "clean", "booted the deploy agent") != nil
			})
			if cmd.Kind != api.AgentErase || cmd.Erase != c.want {
				t.Fatalf("agent command %+v, want erase %q", cmd, c.want)
			}
			if ev := findEvent(h.events(n.ID), "clean", "to erase the disks ("+c.want+")"); ev == nil {
				t.Errorf("no event names the erase mode:%s", dumpEvents(h.events(n.ID)))
			}
		})
	}
}

// The erase mode's precedence: node, then class, then controller.
func TestEraseModePrecedence(t *testing.T) {
	cfg := Config{CleanErase: "metadata", CleanEraseByClass: map[string]string{"storage": "full", "scratch": ""}}
	for _, c := range []struct {
		class string
		node  baremetal.CleanErase
		want  string
	}{
		{"baremetal", "", "metadata"},
		{"storage", "", "full"},
		{"scratch", "", ""},
		{"baremetal", baremetal.CleanEraseFull, "full"},
		{"storage", baremetal.CleanEraseMetadata, "metadata"},
		{"storage", baremetal.CleanEraseOff, ""},
		{"scratch", baremetal.CleanEraseMetadata, "metadata"},
	} {
		n := &baremetal.Node{ResourceClass: c.class, CleanErase: c.node}
		if got := cfg.eraseMode(n); got != c.want {
			t.Errorf("class %s, node %q: erase %q, want %q", c.class, c.node, got, c.want)
		}
	}
	if got := (Config{}).eraseMode(&baremetal.Node{CleanErase: baremetal.CleanEraseFull}); got != "full" {
		t.Errorf("a node's full erase with the controller's off: %q, want full", got)
	}
}

// A node's inspect_on_enroll wins over --inspect-on-enroll both ways: true
// with the flag off goes to inspecting, false with the flag on becomes
// available with an event saying why it was not inspected.
func TestInspectOnEnrollByNode(t *testing.T) {
	yes, no := true, false
	t.Run("node true, flag off", func(t *testing.T) {
		h, sys := newSimHarness(t, openSQLite(t), 1, func(c *Config) {
			c.InspectOnEnroll, c.AgentBoot, c.PublicURL = false, true, "http://controller.invalid"
		})
		n := h.addNode("n-yes", sys[0], baremetal.StateEnroll, false)
		h.setNode(n.ID, func(n *baremetal.Node) { n.InspectOnEnroll = &yes })
		h.start()
		h.enqueue(VerifyArgs{NodeID: n.ID})
		got := h.waitNode(n.ID, wait, "verified", func(n *baremetal.Node) bool { return n.ProvisionState != baremetal.StateEnroll })
		if got.ProvisionState != baremetal.StateInspecting {
			t.Fatalf("after verify: %s, want inspecting", got.ProvisionState)
		}
		if !strings.Contains(h.jobsOf(n.ID), " inspect ") {
			t.Errorf("no inspect job queued:%s", h.jobsOf(n.ID))
		}
		if ev := findEvent(h.events(n.ID), "provision_state", "the node's inspect_on_enroll"); ev == nil || ev.New != string(baremetal.StateInspecting) {
			t.Errorf("no event saying the node's own setting asked for inspection:%s", dumpEvents(h.events(n.ID)))
		}
	})
	t.Run("node false, flag on", func(t *testing.T) {
		h, sys := newSimHarness(t, openSQLite(t), 1, func(c *Config) {
			c.InspectOnEnroll, c.AgentBoot, c.PublicURL = true, true, "http://controller.invalid"
		})
		n := h.addNode("n-no", sys[0], baremetal.StateEnroll, false)
		h.setNode(n.ID, func(n *baremetal.Node) { n.InspectOnEnroll = &no })
		h.start()
		h.enqueue(VerifyArgs{NodeID: n.ID})
		got := h.waitNode(n.ID, wait, "verified", func(n *baremetal.Node) bool { return n.ProvisionState != baremetal.StateEnroll })
		if got.ProvisionState != baremetal.StateAvailable {
			t.Fatalf("after verify: %s, want available", got.ProvisionState)
		}
		if strings.Contains(h.jobsOf(n.ID), " inspect ") {
			t.Errorf("an inspect job was queued for a node that opted out:%s", h.jobsOf(n.ID))
		}
		if ev := findEvent(h.events(n.ID), "provision_state", "inspect_on_enroll is false"); ev == nil || ev.New != string(baremetal.StateAvailable) {
			t.Errorf("no event saying the node opted out of inspection:%s", dumpEvents(h.events(n.ID)))
		}
	})
	t.Run("node true, no agent", func(t *testing.T) {
		h, sys := newSimHarness(t, openSQLite(t), 1, func(c *Config) {})
		n := h.addNode("n-noagent", sys[0], baremetal.StateEnroll, false)
		h.setNode(n.ID, func(n *baremetal.Node) { n.InspectOnEnroll = &yes })
		h.start()
		h.enqueue(VerifyArgs{NodeID: n.ID})
		got := h.waitNode(n.ID, wait, "verified", func(n *baremetal.Node) bool { return n.ProvisionState != baremetal.StateEnroll })
		if got.ProvisionState != baremetal.StateAvailable {
			t.Fatalf("after verify: %s, want available (enrolled uninspected)", got.ProvisionState)
		}
		if ev := findEvent(h.events(n.ID), "provision_state", "serves no deploy agent image"); ev == nil || ev.New != string(baremetal.StateAvailable) {
			t.Errorf("no event saying why the node was not inspected:%s", dumpEvents(h.events(n.ID)))
		}
	})
}
