package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/redfish"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/postgres"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// Two replicas on one PostgreSQL database: the periodic pass is enqueued
// once (by the leader) and fanned out into batches that both replicas
// work, each node read by exactly one replica.
func TestPowerSyncDistributedAcrossReplicas(t *testing.T) {
	url := storetest.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const nodes = 60
	// Latency makes a batch last long enough for both replicas to get some.
	fleet, err := sim.Start(sim.Options{Systems: nodes, Latency: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })

	var replicas []*harness
	for i := range 2 {
		st, err := postgres.Open(ctx, url, storetest.Box())
		if err != nil {
			t.Fatalf("replica %d: open store: %v", i, err)
		}
		t.Cleanup(func() { _ = st.Close() })
		// The fleet is one endpoint for its 60 systems (a BMC takes 2).
		op := redfish.NewOpener(redfish.Options{Timeout: 5 * time.Second, MaxConcurrentRequests: 64})
		t.Cleanup(op.Close)
		h := newHarness(t, st, bmc.Drivers{"redfish": op}, fleet, fleet.URL(), func(c *Config) {
			// One pass per hour: the test sees exactly the RunOnStart pass.
			c.PowerSyncInterval = time.Hour
			c.PowerSyncBatchSize = 5
			c.BMCTimeout = 2 * time.Second
		})
		replicas = append(replicas, h)
	}
	a := replicas[0]
	sys := fleet.SystemIDs()
	var ids []string
	for i, s := range sys {
		ids = append(ids, a.addNode(fmt.Sprintf("n-%02d", i), s, baremetal.StateAvailable, i%3 == 0).ID)
	}
	for _, h := range replicas {
		h.start()
	}
	for _, id := range ids {
		a.waitNode(id, wait, "synced", func(n *baremetal.Node) bool { return n.PowerState == baremetal.PowerOff })
	}
	var batches []*rivertype.JobRow
	deadline := time.Now().Add(wait)
	for {
		res, err := a.r.q.JobList(ctx, river.NewJobListParams().Kinds(PowerSyncBatchArgs{}.Kind()).First(1000))
		if err != nil {
			t.Fatal(err)
		}
		batches = res.Jobs
		done := 0
		for _, j := range batches {
			if j.State == rivertype.JobStateCompleted {
				done++
			}
		}
		if done == len(batches) && done > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batches not completed: %d of %d", done, len(batches))
		}
		time.Sleep(20 * time.Millisecond)
	}
	passes, err := a.r.q.JobList(ctx, river.NewJobListParams().Kinds(PowerSyncArgs{}.Kind()).First(10))
	if err != nil || len(passes.Jobs) != 1 {
		t.Fatalf("power_sync jobs: %d (%v), want exactly one pass", len(passes.Jobs), err)
	}

	seen := map[string]int{}
	workers := map[string]int{}
	for _, j := range batches {
		var args PowerSyncBatchArgs
		if err := unmarshalArgs(j, &args); err != nil {
			t.Fatal(err)
		}
		for _, id := range args.NodeIDs {
			seen[id]++
		}
		for _, w := range j.AttemptedBy {
			workers[w]++
		}
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("node %s in %d batches, want 1", id, seen[id])
		}
	}
	// Exactly one read per node: the system saw one request.
	for _, s := range sys {
		if n := fleet.Requests(s); n != 1 {
			t.Errorf("system %s: %d requests in one pass, want 1", s, n)
		}
	}
	t.Logf("%d batches worked by %d replicas: %v", len(batches), len(workers), workers)
	if len(workers) < 2 {
		t.Logf("note: one replica took every batch this time")
	}
}

// A hung BMC must not hold its batch: a pass is many batches, and if each
// waited for its slowest read, every batch with one hung BMC would cost a
// whole BMCTimeout (a pass over 10,000 nodes with 1% hung took minutes).
// Here the hung reads are held open until the test releases them: every
// batch, and the pass, must finish while they are still open, and their
// observations must still be written (by the late writer) when they end.
func TestPowerSyncBatchesDoNotWaitForHungBMCs(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		const nodes = 20
		reg := prometheus.NewRegistry()
		h, sys := newFakeHarness(t, open(t), nodes, func(c *Config) {
			c.PowerSyncInterval = time.Hour // the test sees the RunOnStart pass only
			c.PowerSyncBatchSize = 5
			c.BMCTimeout = 10 * time.Minute // only release ends a hung read
			c.Metrics = reg
		})
		h.fake.release = make(chan struct{})
		released := false
		release := func() {
			if !released {
				released = true
				close(h.fake.release)
			}
		}
		t.Cleanup(release) // let Stop finish however the test ends
		hung := map[string]bool{sys[3]: true, sys[12]: true}
		var ids []string
		byID := map[string]string{}
		for i, s := range sys {
			id := h.addNode(fmt.Sprintf("n-%02d", i), s, baremetal.StateAvailable, false).ID
			ids = append(ids, id)
			byID[id] = s
			if hung[s] {
				h.fault(s, sim.FaultHang)
			}
		}
		h.start()

		// The pass job finishes only after all its batches did. The hung
		// reads last until release (BMCTimeout is 10 minutes), so any bound
		// well under that shows the batches did not wait for them. (It
		// failed at 60 s on loaded machines while a hung read that began
		// before any healthy answer kept its slot for the no-data straggler
		// threshold, a minute here: see the next test.)
		deadline := time.Now().Add(wait)
		for {
			res, err := h.r.q.JobList(h.ctx, river.NewJobListParams().Kinds(PowerSyncArgs{}.Kind()).First(10))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Jobs) == 1 && res.Jobs[0].State == rivertype.JobStateCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the power sync pass did not finish while two BMCs hung (its batches waited for them?)")
			}
			time.Sleep(20 * time.Millisecond)
		}
		batches, err := h.r.q.JobList(h.ctx, river.NewJobListParams().Kinds(PowerSyncBatchArgs{}.Kind()).First(100))
		if err != nil {
			t.Fatal(err)
		}
		if len(batches.Jobs) != nodes/5 {
			t.Fatalf("%d batches, want %d", len(batches.Jobs), nodes/5)
		}
		for _, j := range batches.Jobs {
			if j.State != rivertype.JobStateCompleted {
				t.Fatalf("batch %d is %s after the pass finished", j.ID, j.State)
			}
		}
		for _, id := range ids {
			n := h.node(id)
			switch {
			case hung[byID[id]] && (n.BMCFailures != 0 || n.PowerState != baremetal.PowerUnknown):
				t.Fatalf("hung node %s was written before its read ended: failures=%d power=%s", n.Name, n.BMCFailures, n.PowerState)
			case !hung[byID[id]] && n.PowerState != baremetal.PowerOff:
				t.Fatalf("healthy node %s not observed by the pass: power=%s", n.Name, n.PowerState)
			}
		}
		if got := histogramCount(t, reg, "baremetal_power_sync_pass_duration_seconds"); got != 1 {
			t.Fatalf("pass duration observed %d times, want 1", got)
		}

		// The BMCs give up: the detached reads end and are recorded.
		release()
		for _, id := range ids {
			if hung[byID[id]] {
				h.waitNode(id, wait, "failure recorded", func(n *baremetal.Node) bool {
					return n.BMCFailures == 1 && n.LastError != ""
				})
			}
		}
	})
}

// At start-up the first batches' reads all begin before any healthy answer
// came back, when the straggler threshold is its no-data value, a tenth of
// BMCTimeout. A hung BMC among them must hand its slot on once its
// neighbours answer, not keep it (and its batch) for that long: on a loaded
// machine that held the batch of the test above for a minute.
func TestHungReadStartedBeforeAnyAnswerHandsItsSlotOn(t *testing.T) {
	h, sys := newFakeHarness(t, openSQLite(t), 1, func(c *Config) {
		c.BMCTimeout = 10 * time.Minute // no-data threshold: 1 minute
	})
	h.fake.release = make(chan struct{})
	t.Cleanup(func() { close(h.fake.release) })
	n := h.addNode("n-hung", sys[0], baremetal.StateAvailable, false)
	h.fault(sys[0], sim.FaultHang)

	r := h.r
	r.syncSlots <- struct{}{} // readForSync's caller takes the slot
	gone := make(chan bool, 1)
	go func() {
		_, g, _ := r.readForSync(h.ctx, n, true, nil)
		gone <- g
	}()
	// Only once the read is under way does a neighbour answer.
	for deadline := time.Now().Add(wait); h.requests(sys[0]) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the read never reached the BMC")
		}
	}
	r.noteLatency(2 * time.Millisecond)
	select {
	case g := <-gone:
		if !g {
			t.Fatal("the hung read returned instead of moving to the straggler pool")
		}
	case <-time.After(wait):
		t.Fatal("the hung read kept its slot after a healthy answer set the threshold")
	}
	if len(r.syncSlots) != 0 {
		t.Fatalf("%d sync slots still held", len(r.syncSlots))
	}
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

// The periodic pass observes a power change made behind the controller's
// back, on SQLite, with a sub-second period.
func TestPeriodicPowerSync(t *testing.T) {
	h, sys := newSimHarness(t, openSQLite(t), 3, func(c *Config) { c.PowerSyncInterval = 200 * time.Millisecond })
	var ids []string
	for i, s := range sys {
		ids = append(ids, h.addNode(fmt.Sprintf("n-%d", i), s, baremetal.StateActive, i == 0).ID)
	}
	h.start()
	for _, id := range ids {
		h.waitNode(id, wait, "off", func(n *baremetal.Node) bool { return n.PowerState == baremetal.PowerOff })
	}
	mustPower(t, h, sys[0], true) // someone pressed the power button
	h.waitNode(ids[0], wait, "on", func(n *baremetal.Node) bool { return n.PowerState == baremetal.PowerOn })
	evs := h.events(ids[0])
	if e := findEvent(evs, "power_state", "observed on"); e == nil || e.Old != "off" || e.New != "on" {
		t.Errorf("no off→on event:%s", dumpEvents(evs))
	}
	// Power states are written only on change: no event storm.
	if n := countEvents(evs, "power_state"); n != 2 {
		t.Errorf("%d power_state events, want 2 (unknown→off, off→on):%s", n, dumpEvents(evs))
	}
}

func countEvents(evs []*baremetal.Event, typ string) int {
	return len(slices.DeleteFunc(slices.Clone(evs), func(e *baremetal.Event) bool { return e.Type != typ }))
}

func unmarshalArgs(j *rivertype.JobRow, v any) error {
	return json.Unmarshal(j.EncodedArgs, v)
}

// Sync passes racing with an operator's writes to the same nodes lose
// neither: the sync re-reads and retries on a version conflict instead of
// overwriting.
func TestSyncRacesOperatorWrites(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		const nodes, rounds = 20, 8
		h, sys := newSimHarness(t, open(t), nodes)
		ids := make([]string, nodes)
		for i := range ids {
			ids[i] = h.addNode(fmt.Sprintf("n-%02d", i), sys[i], baremetal.StateAvailable, false).ID
		}
		for round := 1; round <= rounds; round++ {
			on := round%2 == 1
			for _, s := range sys {
				mustPower(t, h, s, on)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, id := range ids {
					h.setNode(id, func(n *baremetal.Node) { n.Properties.CPUs = round })
				}
			}()
			if _, err := h.r.SyncPass(h.ctx); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			<-done
			want := baremetal.PowerOff
			if on {
				want = baremetal.PowerOn
			}
			for _, id := range ids {
				n := h.node(id)
				if n.Properties.CPUs != round || n.PowerState != want {
					t.Fatalf("round %d: node %s cpus=%d power=%s, want %d %s", round, n.Name, n.Properties.CPUs, n.PowerState, round, want)
				}
			}
		}
	})
}

// reconcile re-reads what it lists: a node listed in enroll that was
// verified since gets no new verify job (after a large enroll, a stale
// listing queued hundreds), while a node really left without its job
// still gets one, once.
func TestReconcileIgnoresStaleListing(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newFakeHarness(t, open(t), 2)
		verified := h.addNode("verified", sys[0], baremetal.StateAvailable, false)
		orphan := h.addNode("orphan", sys[1], baremetal.StateEnroll, false)
		stale := *verified
		stale.ProvisionState = baremetal.StateEnroll // as listed before its verify finished
		h.r.reconcile(h.ctx, []*baremetal.Node{&stale, orphan})
		// Again: the orphan's job, still queued, is not queued twice (the
		// inserts go in one batch; uniqueness still applies to each).
		h.r.reconcile(h.ctx, []*baremetal.Node{orphan})
		res, err := h.r.q.JobList(h.ctx, river.NewJobListParams().Kinds(VerifyArgs{}.Kind()).First(10))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range res.Jobs {
			var a VerifyArgs
			if err := unmarshalArgs(j, &a); err != nil {
				t.Fatal(err)
			}
			got = append(got, a.NodeID)
		}
		if len(got) != 1 || got[0] != orphan.ID {
			t.Fatalf("verify jobs queued for %v, want only the orphan %s (not the stale-listed %s)", got, orphan.ID, verified.ID)
		}
	})
}

// The nodes-by-state gauges are counted by the database at scrape time,
// so every replica reports the whole fleet.
func TestNodeGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, sys := newFakeHarness(t, openSQLite(t), 4, func(c *Config) { c.Metrics = reg })
	h.addNode("a", sys[0], baremetal.StateAvailable, false)
	h.addNode("b", sys[1], baremetal.StateAvailable, true)
	f := h.addNode("c", sys[2], baremetal.StateAvailable, false)
	h.setNode(f.ID, func(n *baremetal.Node) { n.Fault = baremetal.FaultBMCUnreachable })
	h.addNode("d", sys[3], baremetal.StateCleaning, false)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			got[key] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"baremetal_nodes{provision_state=available}":     3,
		"baremetal_nodes{provision_state=cleaning}":      1,
		"baremetal_nodes{provision_state=active}":        0,
		"baremetal_nodes_faulted{fault=bmc_unreachable}": 1,
		"baremetal_nodes_maintenance":                    1,
		"baremetal_nodes_schedulable":                    1,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

// The job queue gauge counts unfinished jobs by kind and state in the
// database, on both stores, with every kind and state present.
func TestJobQueueGauge(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		reg := prometheus.NewRegistry()
		h, sys := newFakeHarness(t, open(t), 2, func(c *Config) { c.Metrics = reg })
		a := h.addNode("a", sys[0], baremetal.StateCleaning, true) // in maintenance: its cleanup waits
		b := h.addNode("b", sys[1], baremetal.StateCleaning, true)
		h.enqueue(CleanupArgs{NodeID: a.ID})
		h.enqueue(CleanupArgs{NodeID: b.ID})
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != "baremetal_jobs" {
				continue
			}
			for _, m := range mf.GetMetric() {
				key := ""
				for _, l := range m.GetLabel() {
					key += l.GetName() + "=" + l.GetValue() + " "
				}
				got[key] = m.GetGauge().GetValue()
			}
		}
		if v := got["kind=cleanup state=available "]; v != 2 {
			t.Errorf("cleanup available = %v, want 2 (%v)", v, got)
		}
		if v, ok := got["kind=inspect state=running "]; !ok || v != 0 {
			t.Errorf("inspect running = %v (present %v), want 0", v, ok)
		}
		if len(got) != len(jobKinds)*len(queuedStates) {
			t.Errorf("%d series, want %d", len(got), len(jobKinds)*len(queuedStates))
		}
	})
}
