package jobs

import (
	"encoding/json"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// A resource class's erase mode (--clean-erase-class) wins over the
// controller's (--clean-erase): full for one class, no erase for another.
func TestCleanupEraseModeByResourceClass(t *testing.T) {
	t.Run("full", func(t *testing.T) {
		h, sys := newSimHarness(t, openSQLite(t), 1, func(c *Config) {
			c.AgentBoot, c.PublicURL, c.CleanErase = true, "http://controller.invalid", "metadata"
			c.CleanEraseByClass = map[string]string{"baremetal": "full", "scratch": ""}
		})
		n := h.addNode("n-full", sys[0], baremetal.StateCleaning, false)
		h.start()
		h.enqueue(CleanupArgs{NodeID: n.ID})
		var cmd api.AgentCommand
		h.waitNode(n.ID, wait, "agent booted to erase", func(*baremetal.Node) bool {
			s, err := h.st.GetAgentSession(h.ctx, n.ID)
			return err == nil && s.Purpose == baremetal.AgentClean && json.Unmarshal([]byte(s.Command), &cmd) == nil &&
				findEvent(h.events(n.ID), "clean", "booted the deploy agent") != nil
		})
		if cmd.Kind != api.AgentErase || cmd.Erase != "full" {
			t.Fatalf("agent command %+v, want a full erase", cmd)
		}
		if ev := findEvent(h.events(n.ID), "clean", "to erase the disks (full)"); ev == nil {
			t.Errorf("no event names the erase mode:%s", dumpEvents(h.events(n.ID)))
		}
	})
	t.Run("off", func(t *testing.T) {
		h, sys := newSimHarness(t, openSQLite(t), 1, func(c *Config) {
			c.AgentBoot, c.PublicURL, c.CleanErase = true, "http://controller.invalid", "metadata"
			c.CleanEraseByClass = map[string]string{"baremetal": ""}
		})
		n := h.addNode("n-off", sys[0], baremetal.StateCleaning, false)
		h.start()
		h.enqueue(CleanupArgs{NodeID: n.ID})
		h.waitNode(n.ID, wait, "available", func(cur *baremetal.Node) bool { return cur.ProvisionState == baremetal.StateAvailable })
		if _, err := h.st.GetAgentSession(h.ctx, n.ID); !baremetal.IsCode(err, baremetal.CodeNotFound) {
			t.Fatalf("the agent was booted for a class without erase: %v", err)
		}
	})
}
