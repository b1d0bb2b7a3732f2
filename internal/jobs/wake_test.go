package jobs

import (
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// wakeBackoff is the retry backoff of the tests below: the retire waiting
// behind a dead BMC would run again only this long after it failed, so a
// retire that ends within wakeWait was woken.
var wakeBackoff = time.Hour

// wakeWait bounds the wait for a woken retire (a job picked up at once:
// milliseconds, seconds on a loaded machine). The periodic pass of
// TestBMCBackWakesThroughBatches needs River's leader first, whose
// election waited past 20 s once under the whole suite's PostgreSQL load;
// a minute still tells a woken retire from one waiting out its hour.
const wakeWait = time.Minute

// retireBehindDeadBMC stores node name on system sys in state deleting,
// powered on, takes its BMC down and has its retire fail once: the retire
// then waits out wakeBackoff, and so does the node's next power-sync read.
func retireBehindDeadBMC(t *testing.T, h *harness, name, sys string) *baremetal.Node {
	t.Helper()
	n := h.addNode(name, sys, baremetal.StateDeleting, false)
	mustPower(t, h, sys, true)
	h.fault(sys, sim.FaultDown)
	h.enqueue(RetireArgs{NodeID: n.ID})
	waitJobs(t, h, n.ID, "retryable", 1)
	got := h.node(n.ID)
	if got.BMCFailures == 0 || got.NextCheckAt == nil || time.Until(*got.NextCheckAt) < wakeBackoff/2 {
		t.Fatalf("after the failed retire: failures %d, next check %v; want a failure and a check in about %s",
			got.BMCFailures, got.NextCheckAt, wakeBackoff)
	}
	return got
}

// TestPowerSyncWakesRetire: when the power sync reaches the BMC of a node
// being retired again, the node's fault clears and its retire, waiting out
// its backoff, runs at once: the record and its name go within seconds,
// not after the backoff. (The power sync used to leave nodes being retired
// out altogether: only the retire itself could find their BMC back.)
func TestPowerSyncWakesRetire(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1, func(c *Config) { c.RetryBase, c.MaxBackoff = wakeBackoff, wakeBackoff })
		h.start()
		n := retireBehindDeadBMC(t, h, "n-retired", sys[0])

		// The BMC is back, and the node's next check has come.
		h.fault(sys[0], sim.FaultNone)
		h.setNode(n.ID, func(n *baremetal.Node) { n.NextCheckAt = nil })
		start := time.Now()
		st, err := h.r.SyncPass(h.ctx)
		if err != nil || st.OK != 1 {
			t.Fatalf("pass: %+v, %v; want the node being retired read", st, err)
		}
		h.waitGone(n.ID, wakeWait)
		t.Logf("retire done %s after the power sync reached the BMC (its own retry was due in about %s)",
			time.Since(start).Round(time.Millisecond), wakeBackoff)
		if p, _ := h.bmc.Power(sys[0]); p != "Off" {
			t.Errorf("retired node left powered %s", p)
		}
	})
}

// TestBMCBackWakesItsOtherSystems: one BMC manages several systems (a
// chassis, the simulated fleet). When it answers the power sync again for
// one of them, the others that back off behind it are read at once, not
// after their backoff: their faults clear and their waiting work (here a
// retire) runs. A system that is still dead is read once for that
// recovery, not at every pass.
func TestBMCBackWakesItsOtherSystems(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 3, func(c *Config) { c.RetryBase, c.MaxBackoff = wakeBackoff, wakeBackoff })
		h.start()
		retired := retireBehindDeadBMC(t, h, "n-retired", sys[0])
		peer := h.addNode("n-peer", sys[1], baremetal.StateAvailable, false)
		dead := h.addNode("n-dead", sys[2], baremetal.StateAvailable, false)
		h.fault(sys[1], sim.FaultDown)
		h.fault(sys[2], sim.FaultDown)
		for range h.r.cfg.FaultThreshold {
			h.setNode(peer.ID, func(n *baremetal.Node) { n.NextCheckAt = nil })
			h.setNode(dead.ID, func(n *baremetal.Node) { n.NextCheckAt = nil })
			if _, err := h.r.SyncPass(h.ctx); err != nil {
				t.Fatal(err)
			}
		}
		if n := h.node(peer.ID); n.Fault != baremetal.FaultBMCUnreachable {
			t.Fatalf("peer: fault %q, want bmc_unreachable", n.Fault)
		}

		// The BMC answers again, but for system 2; the peer's check comes.
		h.fault(sys[0], sim.FaultNone)
		h.fault(sys[1], sim.FaultNone)
		h.setNode(peer.ID, func(n *baremetal.Node) { n.NextCheckAt = nil })
		deadBefore := h.requests(sys[2])
		start := time.Now()
		st, err := h.r.SyncPass(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		h.waitGone(retired.ID, wakeWait)
		t.Logf("retire done %s after the BMC answered the power sync for another system; pass %+v",
			time.Since(start).Round(time.Millisecond), st)
		if st.Woken != 2 || st.OK != 2 || st.Failed != 1 {
			t.Errorf("pass: %+v; want the peer read, and both systems behind it woken (one answers, one is still dead)", st)
		}
		if n := h.node(peer.ID); n.Fault != baremetal.FaultNone {
			t.Errorf("peer: fault %q after its BMC answered", n.Fault)
		}
		if h.requests(sys[2]) == deadBefore {
			t.Error("the dead system behind the BMC that came back was not tried")
		}

		// Nothing recovers any more: the dead system waits out its backoff.
		deadBefore = h.requests(sys[2])
		if st, err := h.r.SyncPass(h.ctx); err != nil || st.Woken != 0 {
			t.Fatalf("next pass: %+v, %v; want no system woken", st, err)
		}
		if got := h.requests(sys[2]); got != deadBefore {
			t.Errorf("the dead system was asked again without a recovery: %d → %d requests", deadBefore, got)
		}
	})
}

// TestBMCBackWakesThroughBatches is TestBMCBackWakesItsOtherSystems
// through the periodic power sync (power_sync fanning out
// power_sync_batch jobs), as a controller runs it: the batch that reads
// the peer carries the node being retired behind the same BMC.
func TestBMCBackWakesThroughBatches(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 2, func(c *Config) {
			c.RetryBase, c.MaxBackoff = wakeBackoff, wakeBackoff
			c.PowerSyncInterval = 100 * time.Millisecond
		})
		h.start()
		retired := retireBehindDeadBMC(t, h, "n-retired", sys[0])
		h.fault(sys[1], sim.FaultDown)
		peer := h.addNode("n-peer", sys[1], baremetal.StateAvailable, false)
		h.waitNode(peer.ID, wait, "failing", func(n *baremetal.Node) bool { return n.BMCFailures > 0 })

		h.fault(sys[0], sim.FaultNone)
		h.fault(sys[1], sim.FaultNone)
		start := time.Now()
		h.setNode(peer.ID, func(n *baremetal.Node) { n.NextCheckAt = nil })
		h.waitGone(retired.ID, wakeWait)
		t.Logf("retire done %s after the peer's check came (passes every %s)",
			time.Since(start).Round(time.Millisecond), h.r.cfg.PowerSyncInterval)
	})
}
