package jobs

import (
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// TestInspectOnEnroll: with InspectOnEnroll and the agent served, a node
// whose BMC verify succeeds goes enroll → inspecting, not available, with
// its inspect job queued in the same transaction; the job then boots the
// agent (a session for inspection, the agent ISO inserted as virtual
// media, power on) and the node stays out of scheduling until the agent
// reports. (The agent's report is proven on a real VM in internal/app.)
func TestInspectOnEnroll(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1, func(c *Config) {
			c.InspectOnEnroll, c.AgentBoot, c.PublicURL = true, true, "http://controller.invalid"
		})
		n := h.addNode("n-insp", sys[0], baremetal.StateEnroll, false)
		h.start()
		h.enqueue(VerifyArgs{NodeID: n.ID})

		got := h.waitNode(n.ID, wait, "inspecting", func(n *baremetal.Node) bool {
			return n.ProvisionState != baremetal.StateEnroll
		})
		if got.ProvisionState != baremetal.StateInspecting || got.Schedulable() {
			t.Fatalf("after verify: %s (schedulable %v), want inspecting", got.ProvisionState, got.Schedulable())
		}
		if !strings.Contains(h.jobsOf(n.ID), " inspect ") {
			t.Errorf("no inspect job queued:%s", h.jobsOf(n.ID))
		}
		var ev *baremetal.Event
		for _, e := range h.events(n.ID) {
			if e.New == string(baremetal.StateInspecting) {
				ev = e
			}
		}
		if ev == nil || !strings.Contains(ev.Message, "BMC verified") || !strings.Contains(ev.Message, "inspect on enroll") {
			t.Errorf("no verify event saying the node is inspected on enroll:%s", dumpEvents(h.events(n.ID)))
		}
		// The inspect job boots the agent.
		h.waitNode(n.ID, wait, "agent booted", func(n *baremetal.Node) bool { return n.PowerState == baremetal.PowerOn })
		sess, err := h.st.GetAgentSession(h.ctx, n.ID)
		if err != nil || sess.Purpose != baremetal.AgentInspect {
			t.Fatalf("agent session: %+v, %v; want one for inspection", sess, err)
		}
		img, inserted, err := h.fleet.Media(sys[0])
		if err != nil || !inserted || !strings.HasPrefix(img, "http://controller.invalid"+api.AgentBootPath(n.ID, "")[:len("/v1/agent/boot/")]) {
			t.Errorf("virtual media %q (inserted %v, %v); want the agent ISO", img, inserted, err)
		}
		if got := h.node(n.ID); got.ProvisionState != baremetal.StateInspecting {
			t.Errorf("before the agent reports: %s, want inspecting", got.ProvisionState)
		}
	})
}

// Inspection on enroll needs the flag, the agent and virtual media; the
// event says why a node asked for it was not inspected.
func TestInspectOnEnrollDecision(t *testing.T) {
	redfish := &baremetal.Node{Driver: baremetal.DriverRedfish}
	ipmi := &baremetal.Node{Driver: baremetal.DriverIPMI}
	yes, no := true, false
	yesNode := &baremetal.Node{Driver: baremetal.DriverRedfish, InspectOnEnroll: &yes}
	noNode := &baremetal.Node{Driver: baremetal.DriverRedfish, InspectOnEnroll: &no}
	yesIPMI := &baremetal.Node{Driver: baremetal.DriverIPMI, InspectOnEnroll: &yes}
	on := Config{InspectOnEnroll: true, AgentBoot: true, PublicURL: "http://c.example"}
	netboot := on
	netboot.AgentNetboot = true
	for _, c := range []struct {
		name string
		cfg  Config
		n    *baremetal.Node
		want bool
		why  string
	}{
		{"off", Config{AgentBoot: true, PublicURL: "http://c.example"}, redfish, false, ""},
		{"on", on, redfish, true, "inspect on enroll"},
		{"no agent", Config{InspectOnEnroll: true, PublicURL: "http://c.example"}, redfish, false, "serves no deploy agent image"},
		{"no public url", Config{InspectOnEnroll: true, AgentBoot: true}, redfish, false, "serves no deploy agent image"},
		{"ipmi", on, ipmi, false, "IPMI has no virtual media"},
		{"ipmi netboot", netboot, ipmi, true, "inspect on enroll"},
		{"node true, flag off", Config{AgentBoot: true, PublicURL: "http://c.example"}, yesNode, true, "the node's inspect_on_enroll"},
		{"node false, flag on", on, noNode, false, "inspect_on_enroll is false"},
		{"node false, flag off", Config{AgentBoot: true, PublicURL: "http://c.example"}, noNode, false, ""},
		{"node true, no agent", Config{PublicURL: "http://c.example"}, yesNode, false, "serves no deploy agent image"},
		{"node true, ipmi", on, yesIPMI, false, "IPMI has no virtual media"},
	} {
		got, why := c.cfg.inspectOnEnroll(c.n)
		if got != c.want || (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v %q, want %v %q", c.name, got, why, c.want, c.why)
		}
	}
}
