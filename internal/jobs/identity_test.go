package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Issue #25: a node enrolled with system_id /redfish/v1/Systems/1/ (iLO's
// spelling) and one enrolled without system_id on the same BMC were two
// nodes, and deleting the second powered off the first's active server.
// Here both got in (enrolled before the rule, or while the BMC was down:
// the store alone cannot tell them apart). The verify of the second finds
// the first's machine: the second stays in enroll with fault duplicate
// naming the first, refuses power actions, and its retire leaves the
// machine alone.
func TestSecondNodeOfAMachine(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarnessWith(t, open(t), sim.Options{IDs: []string{"1"}, TrailingSlashIDs: true})
		first := h.addNode("first", "/redfish/v1/Systems/1/", baremetal.StateActive, false)
		h.addInstance(first, "web-1")
		if err := h.fleet.SetPower(sys[0], true); err != nil {
			t.Fatal(err)
		}
		second := h.addNode("second", "", baremetal.StateEnroll, false)
		h.start()

		h.enqueue(VerifyArgs{NodeID: second.ID})
		n := h.waitNode(second.ID, wait, "duplicate", func(n *baremetal.Node) bool { return n.Fault == baremetal.FaultDuplicate })
		if n.ProvisionState != baremetal.StateEnroll || !strings.Contains(n.LastError, `duplicate of node "first" (id `+first.ID+")") ||
			!strings.Contains(n.LastError, "/redfish/v1/Systems/1/") || n.BMC.SystemID != "" || n.FaultSince == nil {
			t.Fatalf("second node: state=%s system_id=%q last_error=%q", n.ProvisionState, n.BMC.SystemID, n.LastError)
		}

		// An admin's power action on it is refused, and says why.
		h.enqueue(PowerArgs{NodeID: second.ID, Action: "off", Actor: "admin"})
		h.waitEvent(second.ID, "power", "refused: duplicate of node \"first\"")
		if p, _ := h.fleet.Power(sys[0]); p != "On" {
			t.Fatalf("a power action on the second node changed the first's machine: power %s", p)
		}

		// Deleting it removes the record without touching the machine.
		h.setNode(second.ID, func(n *baremetal.Node) { n.ProvisionState = baremetal.StateDeleting })
		h.enqueue(RetireArgs{NodeID: second.ID})
		h.waitGone(second.ID, wait)
		if p, _ := h.fleet.Power(sys[0]); p != "On" {
			t.Fatalf("retiring the second node powered off the first's active server: power %s", p)
		}
		if n := h.node(first.ID); n.ProvisionState != baremetal.StateActive || n.Fault != "" {
			t.Fatalf("first node after the second's retire: state=%s fault=%q", n.ProvisionState, n.Fault)
		}
	})
}

// The same machine, found by the retire itself: a node enrolled (before
// this rule) without system_id, never verified since, whose BMC's only
// system is an active node's. Its retire asks the BMC first.
func TestRetireOfAnUnverifiedSecondNode(t *testing.T) {
	h, sys := newSimHarnessWith(t, openSQLite(t), sim.Options{IDs: []string{"1"}})
	first := h.addNode("first", sys[0], baremetal.StateActive, false)
	h.addInstance(first, "web-1")
	if err := h.fleet.SetPower(sys[0], true); err != nil {
		t.Fatal(err)
	}
	second := h.addNode("second", "", baremetal.StateDeleting, false)
	h.start()
	h.enqueue(RetireArgs{NodeID: second.ID})
	h.waitGone(second.ID, wait)
	if p, _ := h.fleet.Power(sys[0]); p != "On" {
		t.Fatalf("retiring the second node powered off the first's active server: power %s", p)
	}
	// The first's own retire powers its machine off, as ever.
	h.setNode(first.ID, func(n *baremetal.Node) { n.ProvisionState, n.InstanceID = baremetal.StateDeleting, "" })
	h.enqueue(RetireArgs{NodeID: first.ID})
	h.waitGone(first.ID, wait)
	if p, _ := h.fleet.Power(sys[0]); p != "Off" {
		t.Fatalf("retiring the first node left its machine %s", p)
	}
}

// A node without system_id gets the system its BMC serves (trailing slash
// and all) when it is verified; a second node found then heals into a
// node of its own once the first is gone; a system the BMC does not have
// is a last_error naming the URL tried and the systems the BMC lists.
func TestVerifyResolvesTheSystem(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, _ := newSimHarnessWith(t, open(t), sim.Options{IDs: []string{"1"}, TrailingSlashIDs: true})
		a := h.addNode("a", "", baremetal.StateEnroll, false)
		h.start()
		h.enqueue(VerifyArgs{NodeID: a.ID})
		n := h.waitNode(a.ID, wait, "available", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
		if n.BMC.SystemID != "/redfish/v1/Systems/1/" {
			t.Fatalf("verified node's system_id %q, want /redfish/v1/Systems/1/ as the BMC serves it", n.BMC.SystemID)
		}

		b := h.addNode("b", "", baremetal.StateEnroll, false)
		h.enqueue(VerifyArgs{NodeID: b.ID})
		h.waitNode(b.ID, wait, "duplicate", func(n *baremetal.Node) bool {
			return n.Fault == baremetal.FaultDuplicate && strings.Contains(n.LastError, `node "a"`)
		})
		// The verify ends there (its answer changes only with a change);
		// a's retire, which powers a's machine off as ever, queues it again.
		h.setNode(a.ID, func(n *baremetal.Node) { n.ProvisionState = baremetal.StateDeleting })
		h.enqueue(RetireArgs{NodeID: a.ID})
		h.waitGone(a.ID, wait)
		n = h.waitNode(b.ID, wait, "available once a is gone", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
		if n.BMC.SystemID != "/redfish/v1/Systems/1/" || n.Fault != "" || n.LastError != "" {
			t.Fatalf("healed node: system_id=%q fault=%q last_error=%q", n.BMC.SystemID, n.Fault, n.LastError)
		}

		c := h.addNode("c", "/redfish/v1/Systems/9", baremetal.StateEnroll, false)
		h.enqueue(VerifyArgs{NodeID: c.ID})
		n = h.waitNode(c.ID, wait, "faulted", func(n *baremetal.Node) bool { return n.Fault == baremetal.FaultBMCError })
		if !strings.Contains(n.LastError, h.address+"/redfish/v1/Systems/9 answered 404") ||
			!strings.Contains(n.LastError, "the BMC lists /redfish/v1/Systems/1/") || !strings.Contains(n.LastError, "set bmc.system_id to it") ||
			n.ProvisionState != baremetal.StateEnroll {
			t.Fatalf("a system the BMC does not have: state=%s last_error=%q", n.ProvisionState, n.LastError)
		}
	})
}

// waitEvent waits for an event of type typ whose message contains sub.
func (h *harness) waitEvent(nodeID, typ, sub string) *baremetal.Event {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		evs := h.events(nodeID)
		if e := findEvent(evs, typ, sub); e != nil {
			return e
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no %s event with %q after %s:%s\njobs: %s", typ, sub, wait, dumpEvents(evs), h.jobsOf(nodeID))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
