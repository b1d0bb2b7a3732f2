package jobs

import (
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// TestNoCodePathSetsMaintenance is the product's first promise:
// whatever the BMCs do, the controller never touches maintenance. Every
// failure mode of the simulator meets nodes in every provision state, with
// and without maintenance; sync passes, sync_node and each state's own job
// run through failures and then recovery, and maintenance and its reason
// must come out exactly as they went in.
func TestNoCodePathSetsMaintenance(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		faults := []sim.Fault{sim.FaultDown, sim.FaultHang, sim.FaultSlow, sim.FaultError, sim.FaultAuth, sim.FaultFlap}
		type tc struct {
			node   *baremetal.Node
			sys    string
			fault  sim.Fault
			reason string
		}
		var cases []tc
		total := len(faults) * len(baremetal.ProvisionStates) * 2
		h, sys := newSimHarness(t, open(t), total, func(c *Config) { c.Workers = 20 })
		i := 0
		for _, f := range faults {
			for _, ps := range baremetal.ProvisionStates {
				for _, maint := range []bool{false, true} {
					name := fmt.Sprintf("n-%s-%s-%v", f, ps, maint)
					n := h.addNode(name, sys[i], ps, maint)
					if ps == baremetal.StateDeploying || ps == baremetal.StateActive {
						h.addInstance(n, "i-"+name)
						n = h.node(n.ID)
					}
					mustPower(t, h, sys[i], i%2 == 0)
					h.fault(sys[i], f)
					cases = append(cases, tc{node: n, sys: sys[i], fault: f, reason: n.MaintenanceReason})
					i++
				}
			}
		}
		h.start()
		for _, c := range cases {
			for _, args := range jobsFor(c.node) {
				h.enqueue(args)
			}
		}
		passes := func(k int) {
			for range k {
				if _, err := h.r.SyncPass(h.ctx); err != nil {
					t.Fatalf("SyncPass: %v", err)
				}
				time.Sleep(h.r.cfg.MaxBackoff)
			}
		}
		check := func(phase string) {
			t.Helper()
			for _, c := range cases {
				n, err := h.st.GetNode(h.ctx, c.node.ID)
				if baremetal.IsCode(err, baremetal.CodeNotFound) {
					if c.node.Maintenance {
						t.Errorf("%s: %s was retired while in maintenance", phase, c.node.Name)
					}
					continue // retired: deleting nodes may go
				}
				if err != nil {
					t.Fatal(err)
				}
				if n.Maintenance != c.node.Maintenance || n.MaintenanceReason != c.reason {
					t.Errorf("%s: %s (fault %s): maintenance %v %q, want %v %q", phase, n.Name, c.fault,
						n.Maintenance, n.MaintenanceReason, c.node.Maintenance, c.reason)
				}
				for _, e := range h.events(n.ID) {
					if e.Type == "maintenance" || e.Field == "maintenance" {
						t.Errorf("%s: %s: maintenance event %+v", phase, n.Name, e)
					}
				}
			}
		}

		passes(4)
		check("while failing")
		// Faulted nodes must have their fault recorded by now, in and out
		// of maintenance (observing is allowed in maintenance).
		for _, c := range cases {
			if c.fault == sim.FaultSlow || c.fault == sim.FaultFlap {
				continue // may answer
			}
			n, err := h.st.GetNode(h.ctx, c.node.ID)
			if err != nil {
				continue
			}
			if n.Fault == "" && n.BMCFailures == 0 {
				t.Errorf("%s (fault %s): no fault accounting", n.Name, c.fault)
			}
		}

		for _, c := range cases {
			h.fault(c.sys, sim.FaultNone)
		}
		for _, c := range cases {
			h.enqueue(SyncNodeArgs{NodeID: c.node.ID})
		}
		passes(3)
		// Let the jobs of healthy nodes finish what they can.
		for _, c := range cases {
			if c.node.Maintenance || c.node.ProvisionState != baremetal.StateCleaning {
				continue
			}
			h.waitNode(c.node.ID, wait, "available", func(n *baremetal.Node) bool {
				return n.ProvisionState == baremetal.StateAvailable
			})
		}
		check("after recovery")
	})
}

// jobsFor is the work the controller would have queued for a node in its
// state, plus an admin power action and a sync_node.
func jobsFor(n *baremetal.Node) []river.JobArgs {
	out := []river.JobArgs{SyncNodeArgs{NodeID: n.ID}, PowerArgs{NodeID: n.ID, Action: "reset", Actor: "tok-test"}}
	switch n.ProvisionState {
	case baremetal.StateEnroll:
		out = append(out, VerifyArgs{NodeID: n.ID})
	case baremetal.StateDeploying:
		out = append(out, DeployArgs{NodeID: n.ID, InstanceID: n.InstanceID})
	case baremetal.StateCleaning, baremetal.StateDeployFailed:
		out = append(out, CleanupArgs{NodeID: n.ID})
	case baremetal.StateDeleting:
		out = append(out, RetireArgs{NodeID: n.ID})
	}
	return out
}

// The single write path refuses a maintenance change, so a future bug
// cannot set it silently.
func TestUpdateNodeRefusesMaintenance(t *testing.T) {
	h, sys := newSimHarness(t, openSQLite(t), 1)
	n := h.addNode("n-guard", sys[0], baremetal.StateAvailable, false)
	_, err := h.r.ledger.Update(h.ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		n.Maintenance, n.MaintenanceReason = true, "controller gave up"
		return nil
	})
	if err == nil {
		t.Fatal("updateNode wrote maintenance")
	}
	if got := h.node(n.ID); got.Maintenance || got.Version != n.Version {
		t.Fatalf("node changed: maintenance=%v version %d→%d", got.Maintenance, n.Version, got.Version)
	}
}
