package jobs

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/riverqueue/river/rivertype"
)

// wait bounds every wait of these tests; jobs here take milliseconds, the
// margin is for a loaded 2-core CI machine.
const wait = 15 * time.Second

func TestVerify(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 2)
		ok := h.addNode("n-ok", sys[0], baremetal.StateEnroll, false)
		dead := h.addNode("n-dead", sys[1], baremetal.StateEnroll, false)
		h.fault(sys[1], sim.FaultDown)
		h.start()
		h.enqueue(VerifyArgs{NodeID: ok.ID})
		h.enqueue(VerifyArgs{NodeID: dead.ID})

		n := h.waitNode(ok.ID, wait, "available", func(n *baremetal.Node) bool {
			return n.ProvisionState == baremetal.StateAvailable
		})
		if n.PowerState != baremetal.PowerOff || n.Fault != "" || n.LastSeenAt == nil {
			t.Errorf("verified node: power=%s fault=%q last_seen=%v", n.PowerState, n.Fault, n.LastSeenAt)
		}
		if h.inventory && (n.Properties.CPUs == 0 || n.Properties.MemoryMB == 0 || n.Properties.CPUArch == "") {
			t.Errorf("properties not filled from inventory: %+v", n.Properties)
		}

		// Unreachable: stays in enroll with a fault, retried with backoff.
		n = h.waitNode(dead.ID, wait, "faulted", func(n *baremetal.Node) bool {
			return n.Fault == baremetal.FaultBMCUnreachable
		})
		if n.ProvisionState != baremetal.StateEnroll || n.LastError == "" || n.FaultSince == nil {
			t.Fatalf("unreachable node: state=%s last_error=%q fault_since=%v", n.ProvisionState, n.LastError, n.FaultSince)
		}
		if strings.Contains(n.LastError, "password") {
			t.Errorf("last_error leaks credentials: %q", n.LastError)
		}
		// The BMC heals: the node becomes available on its own.
		h.fault(sys[1], sim.FaultNone)
		n = h.waitNode(dead.ID, wait, "available after heal", func(n *baremetal.Node) bool {
			return n.ProvisionState == baremetal.StateAvailable
		})
		if n.Fault != "" || n.BMCFailures != 0 || n.NextCheckAt != nil || n.LastError != "" {
			t.Errorf("healed node keeps fault traces: fault=%q failures=%d next=%v err=%q", n.Fault, n.BMCFailures, n.NextCheckAt, n.LastError)
		}
		evs := h.events(dead.ID)
		if findEvent(evs, "fault", "BMC reachable again after") == nil {
			t.Errorf("no 'reachable again' event:%s", dumpEvents(evs))
		}
		if e := findEvent(evs, "provision_state", ""); e == nil || e.Old != "enroll" || e.New != "available" || e.Actor != baremetal.ActorController {
			t.Errorf("no enroll→available event by the controller:%s", dumpEvents(evs))
		}
	})
}

func TestCleanupRetriesThroughBMCFaults(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		faults := []sim.Fault{sim.FaultDown, sim.FaultHang, sim.FaultAuth}
		h, sys := newSimHarness(t, open(t), len(faults))
		nodes := make([]*baremetal.Node, len(faults))
		for i, f := range faults {
			nodes[i] = h.addNode("n-"+string(f), sys[i], baremetal.StateCleaning, false)
			mustPower(t, h, sys[i], true)
			h.fault(sys[i], f)
		}
		h.start()
		for _, n := range nodes {
			h.enqueue(CleanupArgs{NodeID: n.ID, InstanceID: "gone-instance"})
		}
		want := map[sim.Fault]baremetal.Fault{
			sim.FaultDown: baremetal.FaultBMCUnreachable, sim.FaultHang: baremetal.FaultBMCUnreachable,
			sim.FaultAuth: baremetal.FaultBMCAuthFailed,
		}
		for i, f := range faults {
			n := h.waitNode(nodes[i].ID, wait, "faulted", func(n *baremetal.Node) bool { return n.Fault == want[f] })
			if n.ProvisionState != baremetal.StateCleaning || n.Maintenance {
				t.Errorf("%s: state=%s maintenance=%v", f, n.ProvisionState, n.Maintenance)
			}
		}
		for i := range faults {
			h.fault(sys[i], sim.FaultNone)
		}
		for i, f := range faults {
			n := h.waitNode(nodes[i].ID, wait, "available", func(n *baremetal.Node) bool {
				return n.ProvisionState == baremetal.StateAvailable
			})
			if n.Fault != "" || n.PowerState != baremetal.PowerOff || n.InstanceID != "" {
				t.Errorf("%s: after cleanup fault=%q power=%s instance=%q", f, n.Fault, n.PowerState, n.InstanceID)
			}
			if p, _ := h.bmc.Power(sys[i]); p != "Off" {
				t.Errorf("%s: BMC power %s after cleanup", f, p)
			}
		}
	})
}

func TestCleanupWaitsForMaintenance(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1)
		n := h.addNode("n-maint", sys[0], baremetal.StateCleaning, true)
		mustPower(t, h, sys[0], true)
		h.start()
		h.enqueue(CleanupArgs{NodeID: n.ID})

		// Several maintenance polls go by: the job waits, it does not fail.
		time.Sleep(10 * h.r.cfg.MaintenancePoll)
		cur := h.node(n.ID)
		if cur.ProvisionState != baremetal.StateCleaning {
			t.Fatalf("cleanup acted on a node in maintenance: state=%s", cur.ProvisionState)
		}
		if p, _ := h.bmc.Power(sys[0]); p != "On" {
			t.Fatalf("cleanup powered off a node in maintenance")
		}
		jobs, err := h.r.ListJobs(h.ctx, n.ID, "")
		if err != nil || len(jobs) != 1 {
			t.Fatalf("jobs: %v %v", jobs, err)
		}
		if s := jobs[0].State; s == "discarded" || s == "cancelled" || s == "completed" || jobs[0].LastError != "" {
			t.Fatalf("cleanup job in maintenance: state=%s error=%q", s, jobs[0].LastError)
		}

		h.setNode(n.ID, func(n *baremetal.Node) { n.Maintenance, n.MaintenanceReason = false, "" })
		h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool {
			return n.ProvisionState == baremetal.StateAvailable
		})
		if p, _ := h.bmc.Power(sys[0]); p != "Off" {
			t.Errorf("BMC power %s after cleanup", p)
		}
	})
}

func TestDeploy(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 2)
		ok := h.addNode("n-ok", sys[0], baremetal.StateDeploying, false)
		okInst := h.addInstance(ok, "web-1")
		stuck := h.addNode("n-stuck", sys[1], baremetal.StateDeploying, false)
		stuckInst := h.addInstance(stuck, "web-2")
		if err := h.bmc.SetIgnorePower(sys[1], true); err != nil {
			t.Fatal(err)
		}
		h.start()
		h.enqueue(DeployArgs{NodeID: ok.ID, InstanceID: okInst.ID})
		h.enqueue(DeployArgs{NodeID: stuck.ID, InstanceID: stuckInst.ID})

		n := h.waitNode(ok.ID, wait, "active", func(n *baremetal.Node) bool {
			return n.ProvisionState == baremetal.StateActive
		})
		if n.PowerState != baremetal.PowerOn || n.Fault != "" {
			t.Errorf("deployed node: power=%s fault=%q", n.PowerState, n.Fault)
		}
		if p, _ := h.bmc.Power(sys[0]); p != "On" {
			t.Errorf("BMC power %s after deploy", p)
		}
		inst, err := h.st.GetInstance(h.ctx, okInst.ID)
		if err != nil || inst.State != baremetal.InstanceActive {
			t.Errorf("instance: %+v %v", inst, err)
		}
		h.checkBoot(t, sys[0], okInst.Image.URL)

		// The BMC accepts power on but the power never comes: power_mismatch.
		n = h.waitNode(stuck.ID, wait, "deploy_failed", func(n *baremetal.Node) bool {
			return n.ProvisionState == baremetal.StateDeployFailed
		})
		if n.Fault != baremetal.FaultPowerMismatch || n.LastError == "" {
			t.Errorf("stuck node: fault=%q last_error=%q", n.Fault, n.LastError)
		}
		inst, err = h.st.GetInstance(h.ctx, stuckInst.ID)
		if err != nil || inst.State != baremetal.InstanceError || inst.LastError == "" {
			t.Errorf("stuck instance: %+v %v", inst, err)
		}
	})
}

func TestDeployRetriesUnreachableBMC(t *testing.T) {
	h, sys := newSimHarness(t, openSQLite(t), 1)
	n := h.addNode("n-flaky", sys[0], baremetal.StateDeploying, false)
	inst := h.addInstance(n, "db-1")
	h.fault(sys[0], sim.FaultDown)
	h.start()
	h.enqueue(DeployArgs{NodeID: n.ID, InstanceID: inst.ID})
	h.waitNode(n.ID, wait, "failing", func(n *baremetal.Node) bool { return n.BMCFailures >= 2 })
	h.fault(sys[0], sim.FaultNone)
	got := h.waitNode(n.ID, wait, "active", func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateActive
	})
	if got.Fault != "" || got.BMCFailures != 0 {
		t.Errorf("fault traces after deploy: %q %d", got.Fault, got.BMCFailures)
	}
}

// A deploy overtaken by the instance's deletion stops, and the cleanup
// queued behind it returns the node to the pool.
func TestCleanupOvertakesDeploy(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1, func(c *Config) { c.PowerChangeTimeout = 5 * time.Second })
		n := h.addNode("n-race", sys[0], baremetal.StateDeploying, false)
		inst := h.addInstance(n, "short-lived")
		// Power never comes on: the deploy keeps polling until stopped.
		if err := h.bmc.SetIgnorePower(sys[0], true); err != nil {
			t.Fatal(err)
		}
		h.start()
		h.enqueue(DeployArgs{NodeID: n.ID, InstanceID: inst.ID})
		waitJob(t, h, n.ID, "deploy", "running")
		// At power_on, polling (the step's start is the deploy's last
		// write until it stops: the version-checked write below must not
		// race it).
		h.waitNode(n.ID, wait, "at power_on", func(n *baremetal.Node) bool { return n.Flow != nil && n.Flow.Step == "power_on" })

		// The user deletes the instance: what the service layer does.
		h.inTx(func(tx store.Tx) error {
			cur, err := tx.GetNode(h.ctx, n.ID)
			if err != nil {
				return err
			}
			if err := cur.Transition(baremetal.StateCleaning); err != nil {
				return err
			}
			cur.InstanceID = ""
			if err := tx.UpdateNode(h.ctx, cur); err != nil {
				return err
			}
			i, err := tx.GetInstance(h.ctx, inst.ID)
			if err != nil {
				return err
			}
			if err := tx.DeleteInstance(h.ctx, i.ID, i.Version); err != nil {
				return err
			}
			_, err = h.r.InsertTx(h.ctx, tx, CleanupArgs{NodeID: n.ID, InstanceID: inst.ID})
			return err
		})
		if err := h.bmc.SetIgnorePower(sys[0], false); err != nil {
			t.Fatal(err)
		}
		got := h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool {
			return n.ProvisionState == baremetal.StateAvailable
		})
		if got.PowerState != baremetal.PowerOff {
			t.Errorf("power %s after cleanup", got.PowerState)
		}
		waitJob(t, h, n.ID, "deploy", "completed")
	})
}

func TestFaultThresholdAndSelfHeal(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1, func(c *Config) { c.MaxBackoff = 20 * time.Millisecond })
		n := h.addNode("n-sync", sys[0], baremetal.StateAvailable, false)
		mustPower(t, h, sys[0], true)
		pass := func() PassStats {
			t.Helper()
			time.Sleep(25 * time.Millisecond) // let the backoff expire
			st, err := h.r.SyncPass(h.ctx)
			if err != nil {
				t.Fatalf("SyncPass: %v", err)
			}
			return st
		}
		if st := pass(); st.OK != 1 || st.Changed != 1 {
			t.Fatalf("first pass: %+v", st)
		}
		if got := h.node(n.ID); got.PowerState != baremetal.PowerOn {
			t.Fatalf("power %s", got.PowerState)
		}
		h.fault(sys[0], sim.FaultDown)
		for i := 1; i < h.r.cfg.FaultThreshold; i++ {
			pass()
			got := h.node(n.ID)
			if got.BMCFailures != i || got.Fault != "" || got.PowerState != baremetal.PowerOn || got.NextCheckAt == nil || got.LastError == "" {
				t.Fatalf("after %d failures: failures=%d fault=%q power=%s next=%v err=%q",
					i, got.BMCFailures, got.Fault, got.PowerState, got.NextCheckAt, got.LastError)
			}
		}
		pass()
		got := h.node(n.ID)
		if got.Fault != baremetal.FaultBMCUnreachable || got.PowerState != baremetal.PowerUnknown || got.FaultSince == nil {
			t.Fatalf("at threshold: fault=%q power=%s since=%v", got.Fault, got.PowerState, got.FaultSince)
		}
		if got.Maintenance {
			t.Fatal("a fault set maintenance")
		}
		h.fault(sys[0], sim.FaultNone)
		pass()
		got = h.node(n.ID)
		if got.Fault != "" || got.FaultSince != nil || got.BMCFailures != 0 || got.NextCheckAt != nil || got.LastError != "" || got.PowerState != baremetal.PowerOn {
			t.Fatalf("after heal: %+v", got)
		}
		evs := h.events(n.ID)
		for _, want := range []struct{ typ, sub string }{
			{"fault", "fault bmc_unreachable after 3 consecutive failed BMC calls"},
			{"fault", "BMC reachable again after"},
			{"power_state", "unknown"},
			{"power_state", "observed on"},
		} {
			if findEvent(evs, want.typ, want.sub) == nil {
				t.Errorf("no %s event %q:%s", want.typ, want.sub, dumpEvents(evs))
			}
		}
		// A healthy pass with nothing new writes nothing.
		v := h.node(n.ID).Version
		pass()
		if h.node(n.ID).Version != v {
			t.Error("an unchanged observation bumped the node's version")
		}
	})
}

func TestSyncSkipsBackedOffNodes(t *testing.T) {
	h, sys := newSimHarness(t, openSQLite(t), 2, func(c *Config) {
		c.RetryBase, c.MaxBackoff = time.Hour, time.Hour
	})
	dead := h.addNode("n-dead", sys[0], baremetal.StateAvailable, false)
	h.addNode("n-ok", sys[1], baremetal.StateAvailable, false)
	h.fault(sys[0], sim.FaultHang)
	st, err := h.r.SyncPass(h.ctx)
	if err != nil || st.Failed != 1 || st.OK != 1 {
		t.Fatalf("first pass: %+v %v", st, err)
	}
	if n := h.node(dead.ID); n.NextCheckAt == nil || time.Until(*n.NextCheckAt) < 30*time.Minute {
		t.Fatalf("next check at %v", n.NextCheckAt)
	}
	before := h.requests(sys[0])
	st, err = h.r.SyncPass(h.ctx)
	if err != nil || st.Skipped != 1 || st.OK != 1 || st.Failed != 0 {
		t.Fatalf("second pass: %+v %v", st, err)
	}
	if st.Duration > h.r.cfg.BMCTimeout {
		t.Logf("note: pass took %s", st.Duration)
	}
	if after := h.requests(sys[0]); after != before {
		t.Errorf("backed-off BMC was asked again: %d → %d requests", before, after)
	}
	// An explicit sync ignores the backoff.
	if err := h.r.Sync(h.ctx, dead.ID); err == nil {
		t.Error("Sync of a hanging BMC succeeded")
	}
	if n := h.node(dead.ID); n.BMCFailures != 2 {
		t.Errorf("failures after explicit sync: %d", n.BMCFailures)
	}
}

func TestRetire(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 2)
		on := h.addNode("n-on", sys[0], baremetal.StateDeleting, false)
		mustPower(t, h, sys[0], true)
		maint := h.addNode("n-maint", sys[1], baremetal.StateDeleting, true)
		mustPower(t, h, sys[1], true)
		h.start()
		h.enqueue(RetireArgs{NodeID: on.ID})
		h.enqueue(RetireArgs{NodeID: maint.ID})
		h.waitGone(on.ID, wait)
		if p, _ := h.bmc.Power(sys[0]); p != "Off" {
			t.Errorf("retired node left powered %s", p)
		}
		// In maintenance the retire waits.
		time.Sleep(5 * h.r.cfg.MaintenancePoll)
		if _, err := h.st.GetNode(h.ctx, maint.ID); err != nil {
			t.Fatalf("node in maintenance retired: %v", err)
		}
		h.setNode(maint.ID, func(n *baremetal.Node) { n.Maintenance, n.MaintenanceReason = false, "" })
		h.waitGone(maint.ID, wait)
	})
}

func TestPowerAction(t *testing.T) {
	h, sys := newSimHarness(t, openSQLite(t), 1)
	n := h.addNode("n-pow", sys[0], baremetal.StateAvailable, false)
	h.start()
	h.enqueue(PowerArgs{NodeID: n.ID, Action: "on", Actor: "tok-admin"})
	h.waitNode(n.ID, wait, "on", func(n *baremetal.Node) bool { return n.PowerState == baremetal.PowerOn })
	if p, _ := h.bmc.Power(sys[0]); p != "On" {
		t.Fatalf("BMC power %s", p)
	}
	waitJob(t, h, n.ID, "power", "completed")
	if findEvent(h.events(n.ID), "power", "power on requested by tok-admin: observed on") == nil {
		t.Errorf("no power outcome event:%s", dumpEvents(h.events(n.ID)))
	}
	h.enqueue(PowerArgs{NodeID: n.ID, Action: "off", Actor: "tok-admin"})
	h.waitNode(n.ID, wait, "off", func(n *baremetal.Node) bool { return n.PowerState == baremetal.PowerOff })
	waitJobs(t, h, n.ID, "completed", 2)

	// Queued while in maintenance, "on" then "off" both wait, neither is
	// dropped as a duplicate of the other, and they run in order.
	h.setNode(n.ID, func(n *baremetal.Node) { n.Maintenance, n.MaintenanceReason = true, "rack move" })
	on := h.enqueue(PowerArgs{NodeID: n.ID, Action: "on", Actor: "tok-admin"})
	off := h.enqueue(PowerArgs{NodeID: n.ID, Action: "off", Actor: "tok-admin"})
	if on == off {
		t.Fatal("power off was dropped as a duplicate of power on")
	}
	time.Sleep(3 * h.r.cfg.MaintenancePoll)
	if p, _ := h.bmc.Power(sys[0]); p != "Off" {
		t.Fatal("power action ran in maintenance")
	}
	h.setNode(n.ID, func(n *baremetal.Node) { n.Maintenance, n.MaintenanceReason = false, "" })
	waitJobs(t, h, n.ID, "completed", 4)
	evs := h.events(n.ID)
	iOn, iOff := -1, -1
	for i, e := range evs {
		switch {
		case e.Type == "power" && strings.HasPrefix(e.Message, "power on"):
			iOn = i
		case e.Type == "power" && strings.HasPrefix(e.Message, "power off"):
			iOff = i
		}
	}
	if iOn < 0 || iOff < iOn {
		t.Errorf("power actions out of order (last on at %d, last off at %d):%s", iOn, iOff, dumpEvents(evs))
	}
	if p, _ := h.bmc.Power(sys[0]); p != "Off" {
		t.Errorf("BMC power %s, want Off (the last request)", p)
	}
}

func TestSyncNodeJob(t *testing.T) {
	h, sys := newSimHarness(t, openSQLite(t), 1)
	n := h.addNode("n-creds", sys[0], baremetal.StateAvailable, true)
	h.fault(sys[0], sim.FaultAuth)
	for range h.r.cfg.FaultThreshold {
		_ = h.r.Sync(h.ctx, n.ID)
	}
	if got := h.node(n.ID); got.Fault != baremetal.FaultBMCAuthFailed {
		t.Fatalf("fault %q", got.Fault)
	}
	h.start()
	// The admin fixes the credentials; the API enqueues sync_node.
	h.fault(sys[0], sim.FaultNone)
	h.enqueue(SyncNodeArgs{NodeID: n.ID})
	got := h.waitNode(n.ID, wait, "healthy", func(n *baremetal.Node) bool { return n.Fault == "" })
	if !got.Maintenance || got.PowerState != baremetal.PowerOff {
		t.Errorf("after sync: maintenance=%v power=%s", got.Maintenance, got.PowerState)
	}
}

func TestListJobs(t *testing.T) {
	h, sys := newSimHarness(t, openSQLite(t), 1)
	n := h.addNode("n-jobs", sys[0], baremetal.StateEnroll, false)
	id := h.enqueue(VerifyArgs{NodeID: n.ID})
	// Unique per node while waiting: the duplicate returns the same job.
	if again := h.enqueue(VerifyArgs{NodeID: n.ID}); again != id {
		t.Errorf("duplicate verify got job %d, want %d", again, id)
	}
	jobs, err := h.r.ListJobs(h.ctx, n.ID, "available")
	if err != nil || len(jobs) != 1 || jobs[0].ID != id || jobs[0].Kind != "verify" || jobs[0].NodeID != n.ID {
		t.Fatalf("ListJobs: %+v %v", jobs, err)
	}
	// A verify retries until it succeeds: no bound is shown (River's
	// counter of 32767 is not one).
	if jobs[0].MaxAttempts != 0 {
		t.Errorf("verify job: max_attempts %d, want 0 (retries until it succeeds)", jobs[0].MaxAttempts)
	}
	if jobs, _ := h.r.ListJobs(h.ctx, "other", ""); len(jobs) != 0 {
		t.Errorf("jobs of another node: %+v", jobs)
	}
	if _, err := h.r.ListJobs(h.ctx, "", "bogus"); !baremetal.IsCode(err, baremetal.CodeInvalid) {
		t.Errorf("bad state: %v", err)
	}
	h.start()
	h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
	waitJob(t, h, n.ID, "verify", "completed")
	// Completed jobs do not block a new one (ByState leaves completed out).
	if again := h.enqueue(VerifyArgs{NodeID: n.ID}); again == id {
		t.Error("a completed verify blocked a new one")
	}
}

// TestAPIJobAttempts: a kind that gives up shows its bound; one that
// never does shows none.
func TestAPIJobAttempts(t *testing.T) {
	for _, c := range []struct{ max, want int }{{deployMaxAttempts, deployMaxAttempts}, {1, 1}, {foreverAttempts, 0}} {
		if got := toAPIJob(&rivertype.JobRow{MaxAttempts: c.max, Attempt: 1}).MaxAttempts; got != c.want {
			t.Errorf("max_attempts %d shown as %d, want %d", c.max, got, c.want)
		}
	}
}

// waitJob waits until the node has a job of kind in state.
func waitJob(t *testing.T, h *harness, nodeID, kind, state string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		jobs, err := h.r.ListJobs(h.ctx, nodeID, state)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.Kind == kind {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s job %s for node %s: %s", kind, state, nodeID, h.jobsOf(nodeID))
}

// waitJobs waits until the node has count jobs in state.
func waitJobs(t *testing.T, h *harness, nodeID, state string, count int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		jobs, err := h.r.ListJobs(h.ctx, nodeID, state)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) >= count {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs %s, want %d:%s", len(jobs), state, count, h.jobsOf(nodeID))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mustPower(t *testing.T, h *harness, sys string, on bool) {
	t.Helper()
	if err := h.bmc.SetPower(sys, on); err != nil {
		t.Fatal(err)
	}
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// Fixing a node's BMC password in the same transaction as KickNodeTx makes
// a cleanup that backs off for an hour run at once.
func TestKickNodeAfterCredentialFix(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1, func(c *Config) { c.RetryBase, c.MaxBackoff = time.Hour, time.Hour })
		n := h.addNode("n-badpw", sys[0], baremetal.StateCleaning, false)
		h.setNode(n.ID, func(n *baremetal.Node) { n.BMC.Password = "wrong-password" })
		mustPower(t, h, sys[0], true)
		h.start()
		h.enqueue(CleanupArgs{NodeID: n.ID})
		got := h.waitNode(n.ID, wait, "failing", func(n *baremetal.Node) bool { return n.BMCFailures > 0 })
		if strings.Contains(got.LastError, "wrong-password") {
			t.Errorf("last_error leaks the password: %q", got.LastError)
		}
		waitJobs(t, h, n.ID, "retryable", 1) // backing off for an hour

		h.inTx(func(tx store.Tx) error {
			cur, err := tx.GetNode(h.ctx, n.ID)
			if err != nil {
				return err
			}
			cur.BMC.Password = "password"
			if err := tx.UpdateNode(h.ctx, cur); err != nil {
				return err
			}
			return h.r.KickNodeTx(h.ctx, tx, n.ID)
		})
		got = h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool {
			return n.ProvisionState == baremetal.StateAvailable
		})
		if got.BMCFailures != 0 || got.LastError != "" || got.PowerState != baremetal.PowerOff {
			t.Errorf("after fix: failures=%d err=%q power=%s", got.BMCFailures, got.LastError, got.PowerState)
		}
	})
}
