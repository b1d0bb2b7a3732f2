package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

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
		op := redfish.NewOpener(redfish.Options{Timeout: 5 * time.Second})
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
