package jobs

import (
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Cleanup and retire finish on a sushy-tools BMC, which refuses the
// standard way of clearing a boot override and always reports one
// (issue #9, item 1).
func TestCleanupAndRetireOnSushy(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarnessWith(t, open(t), sim.Options{Systems: 2, Dialect: sim.DialectSushy})
		clean := h.addNode("n-clean", sys[0], baremetal.StateCleaning, false)
		gone := h.addNode("n-gone", sys[1], baremetal.StateDeleting, false)
		for _, s := range sys {
			mustPower(t, h, s, true)
			// What a deploy leaves behind: a CD boot (read back Continuous).
			c, err := h.r.cfg.BMC.Open(h.ctx, bmc.Endpoint{Driver: "redfish", Address: h.address, Username: "admin", Password: "password", SystemID: s})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.SetBootDevice(h.ctx, bmc.BootCD, false); err != nil {
				t.Fatal(err)
			}
		}
		h.start()
		h.enqueue(CleanupArgs{NodeID: clean.ID, InstanceID: "gone-instance"})
		h.enqueue(RetireArgs{NodeID: gone.ID})

		n := h.waitNode(clean.ID, wait, "available", func(n *baremetal.Node) bool {
			return n.ProvisionState == baremetal.StateAvailable
		})
		if n.Fault != "" || n.LastError != "" || n.PowerState != baremetal.PowerOff {
			t.Errorf("cleaned node: fault=%q last_error=%q power=%s", n.Fault, n.LastError, n.PowerState)
		}
		if target, enabled, _ := h.fleet.BootOverride(sys[0]); target != "Hdd" || enabled != "Continuous" {
			t.Errorf("boot override after cleanup %s/%s, want the disk", target, enabled)
		}
		h.waitGone(gone.ID, wait)
		if p, _ := h.fleet.Power(sys[1]); p != "Off" {
			t.Errorf("retired system left %s", p)
		}
	})
}

// A BMC that refuses every form of a request cleanup needs: the node
// says so (bmc_refused, last_error naming the field), keeps its observed
// power state and its BMC failure count at zero, is retried slowly, and
// finishes once the BMC takes the request. A successful power read in
// between does not hide the refusal.
func TestCleanupAndRetireRefusedByBMC(t *testing.T) {
	h, sys := newFakeHarness(t, openSQLite(t), 2)
	h.fake.media = true
	clean := h.addNode("n-clean", sys[0], baremetal.StateCleaning, false)
	gone := h.addNode("n-gone", sys[1], baremetal.StateDeleting, false)
	for i, id := range []string{clean.ID, gone.ID} {
		h.setNode(id, func(n *baremetal.Node) { n.PowerState = baremetal.PowerOn })
		mustPower(t, h, sys[i], true)
		h.fake.mu.Lock()
		h.fake.systems[sys[i]].refuseClear = true
		h.fake.mu.Unlock()
	}
	h.start()
	h.enqueue(CleanupArgs{NodeID: clean.ID})
	h.enqueue(RetireArgs{NodeID: gone.ID})

	for i, id := range []string{clean.ID, gone.ID} {
		state := []baremetal.ProvisionState{baremetal.StateCleaning, baremetal.StateDeleting}[i]
		n := h.waitNode(id, wait, "bmc_refused", func(n *baremetal.Node) bool { return n.Fault == baremetal.FaultBMCRefused })
		if n.ProvisionState != state || n.Maintenance {
			t.Errorf("%s: state=%s maintenance=%v", n.Name, n.ProvisionState, n.Maintenance)
		}
		if !strings.Contains(n.LastError, "Boot.BootSourceOverrideEnabled") || !strings.Contains(n.LastError, "refused") {
			t.Errorf("%s: last_error does not say what was refused: %q", n.Name, n.LastError)
		}
		if n.PowerState == baremetal.PowerUnknown || n.BMCFailures != 0 || n.NextCheckAt != nil {
			t.Errorf("%s: a BMC that answered counted as unreachable: power=%s failures=%d next=%v", n.Name, n.PowerState, n.BMCFailures, n.NextCheckAt)
		}
		if err := h.r.Sync(h.ctx, id); err != nil {
			t.Fatal(err)
		}
		if n := h.node(id); n.Fault != baremetal.FaultBMCRefused || n.LastError == "" {
			t.Errorf("%s: a power read cleared the refusal: fault=%q last_error=%q", n.Name, n.Fault, n.LastError)
		}
	}
	evs := h.events(clean.ID)
	if findEvent(evs, "fault", "fault bmc_refused: cleanup: ") == nil {
		t.Errorf("no bmc_refused event:%s", dumpEvents(evs))
	}

	h.fake.mu.Lock()
	for _, s := range sys {
		h.fake.systems[s].refuseClear = false
	}
	h.fake.mu.Unlock()
	n := h.waitNode(clean.ID, wait, "available", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
	if n.Fault != "" || n.LastError != "" {
		t.Errorf("cleaned node keeps fault=%q last_error=%q", n.Fault, n.LastError)
	}
	if findEvent(h.events(clean.ID), "fault", "fault bmc_refused cleared") == nil {
		t.Errorf("no 'cleared' event:%s", dumpEvents(h.events(clean.ID)))
	}
	h.waitGone(gone.ID, wait)
}
