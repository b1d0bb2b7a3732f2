package jobs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/redfish"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlite"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

const (
	benchSystems    = 10_000
	benchLatency    = 50 * time.Millisecond
	benchBMCTimeout = 2 * time.Second
	benchHangShare  = 10 // percent of systems hanging in the second case
)

// BenchmarkPowerSync measures one in-process power-sync pass over 10,000
// nodes on the embedded SQLite store, each a system of one simulated
// Redfish fleet answering after 50 ms, read through the real redfish
// driver with the default 64 sync workers:
//
//	go test -run '^$' -bench PowerSync -benchtime 3x ./internal/jobs/
//
// "healthy" is the steady state (every node known, nothing to write).
// "hang10pct" has 10% of the systems never answering (BMCTimeout 2s) and
// reports its pass duration relative to the healthy pass: "fresh" is the
// first pass after those BMCs went dark (the worst case), "known" a later
// one with backoff disabled (with backoff they would simply be skipped).
// All report
// nodes/s, CPU seconds per 1,000 nodes (user+system, this process, which
// also serves the simulated fleet) and the peak RSS of the process.
//
// The 10,000 nodes are enrolled once and reused by every pass.
func BenchmarkPowerSync(b *testing.B) {
	ctx := context.Background()
	fleet, err := sim.Start(sim.Options{Systems: benchSystems, Latency: benchLatency})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = fleet.Close() })
	// All systems share one endpoint here, so the per-BMC request cap must
	// admit the sync's slots and stragglers together.
	op := redfish.NewOpener(redfish.Options{Timeout: benchBMCTimeout, MaxConcurrentRequests: 2048})
	b.Cleanup(op.Close)

	dir, err := os.MkdirTemp("", "jobs-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	st, err := sqlite.Open(ctx, filepath.Join(dir, "bench.db"), storetest.Box())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })

	ids := fleet.SystemIDs()
	start := time.Now()
	nodeIDs := enroll(b, st, fleet.URL(), ids)
	b.Logf("enrolled %d nodes in %s", len(ids), time.Since(start).Round(time.Millisecond))

	r, err := New(Config{
		Store: st, BMC: bmc.Drivers{"redfish": op},
		BMCTimeout: benchBMCTimeout,
		// Backoff off: a hanging BMC is asked on every pass (worst case).
		RetryBase: time.Millisecond, MaxBackoff: time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	// Warm-up: log in, store every node's power state once.
	start = time.Now()
	if st, err := r.SyncPass(ctx); err != nil || st.OK != len(ids) {
		b.Fatalf("warm-up pass: %+v %v", st, err)
	}
	b.Logf("warm-up pass (writes every node's power state) %s", time.Since(start).Round(time.Millisecond))

	var healthy time.Duration
	b.Run("healthy", func(b *testing.B) {
		healthy = benchPasses(b, r, len(ids), 0, nil)
	})
	hung := ids[:len(ids)*benchHangShare/100]
	hungNodes := nodeIDs[:len(hung)]
	for _, id := range hung {
		if err := fleet.SetFault(id, sim.FaultHang); err != nil {
			b.Fatal(err)
		}
	}
	ratio := func(b *testing.B, d time.Duration) {
		if healthy > 0 {
			b.ReportMetric(d.Seconds()/healthy.Seconds(), "x_healthy")
			b.Logf("pass %.2fs vs healthy %.2fs: ratio %.2f (healthy + one BMCTimeout: %.2f)",
				d.Seconds(), healthy.Seconds(), d.Seconds()/healthy.Seconds(), (healthy+benchBMCTimeout).Seconds()/healthy.Seconds())
		}
	}
	// fresh: the hung BMCs were healthy on the last pass (their failures
	// are reset before each pass, untimed): the pass must find out.
	b.Run(fmt.Sprintf("hang%dpct/fresh", benchHangShare), func(b *testing.B) {
		ratio(b, benchPasses(b, r, len(ids), len(hung), func() { resetFaults(b, st, hungNodes) }))
	})
	// known: they failed before, so the pass starts them first, off the
	// worker slots (backoff is disabled, else they would be skipped).
	b.Run(fmt.Sprintf("hang%dpct/known", benchHangShare), func(b *testing.B) {
		ratio(b, benchPasses(b, r, len(ids), len(hung), nil))
	})
}

// resetFaults forgets the BMC failures of nodes, as if their BMCs had
// answered on the last pass.
func resetFaults(b *testing.B, st store.Store, ids []string) {
	ctx := context.Background()
	err := st.InTx(ctx, func(tx store.Tx) error {
		for _, id := range ids {
			n, err := tx.GetNode(ctx, id)
			if err != nil {
				return err
			}
			n.BMCFailures, n.NextCheckAt, n.Fault, n.FaultSince, n.LastError = 0, nil, "", nil, ""
			n.PowerState = baremetal.PowerOff
			if err := tx.UpdateNode(ctx, n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatalf("reset faults: %v", err)
	}
}

// benchPasses times b.N passes and reports the per-pass figures; it
// returns the mean pass duration.
func benchPasses(b *testing.B, r *Runner, nodes, wantFailed int, before func()) time.Duration {
	ctx := context.Background()
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		if before != nil {
			b.StopTimer()
			before()
			b.StartTimer()
		}
		cpu0 := cpuTime()
		st, err := r.SyncPass(ctx)
		cpu += cpuTime() - cpu0
		if err != nil {
			b.Fatal(err)
		}
		if st.OK+st.Failed != nodes || st.Failed != wantFailed {
			b.Fatalf("pass: %+v, want %d failed of %d", st, wantFailed, nodes)
		}
	}
	b.StopTimer()
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(nodes)/per.Seconds(), "nodes/s")
	b.ReportMetric(cpu.Seconds()/float64(b.N)/float64(nodes)*1000, "cpu-s/1k-nodes")
	b.ReportMetric(float64(maxRSS())/(1<<20), "peak-rss-MiB")
	b.ReportMetric(per.Seconds(), "s/pass")
	return per
}

// enroll stores one available node per system, a thousand per
// transaction.
func enroll(b *testing.B, st store.Store, url string, ids []string) []string {
	ctx := context.Background()
	nodeIDs := make([]string, len(ids))
	for i := 0; i < len(ids); i += 1000 {
		err := st.InTx(ctx, func(tx store.Tx) error {
			for j := i; j < min(i+1000, len(ids)); j++ {
				n := &baremetal.Node{
					Name: fmt.Sprintf("bench-%05d", j), Driver: baremetal.DriverRedfish,
					BMC:            baremetal.BMC{Address: url, Username: "admin", Password: "password", SystemID: ids[j]},
					ResourceClass:  "bench",
					PowerState:     baremetal.PowerUnknown,
					ProvisionState: baremetal.StateAvailable,
				}
				if err := tx.InsertNode(ctx, n); err != nil {
					return err
				}
				nodeIDs[j] = n.ID
			}
			return nil
		})
		if err != nil {
			b.Fatalf("enroll: %v", err)
		}
	}
	return nodeIDs
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// maxRSS is the process's peak resident set in bytes (Linux reports KiB).
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

// BenchmarkReconcile is the power-sync pass's safety net over 1,000 nodes
// in enroll whose verify jobs are all still queued (a large enroll in
// progress, or BMCs down while nodes wait): every insert is dropped by
// uniqueness, so what it measures is the cost of finding that out. It
// prints the time and this process's CPU per node.
//
//	go test -run '^$' -bench Reconcile -benchtime 5x ./internal/jobs/
func BenchmarkReconcile(b *testing.B) {
	const nodes = 1000
	for _, name := range []string{"sqlite", "postgres"} {
		open := map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres}[name]
		b.Run(name, func(b *testing.B) {
			h, sys := newFakeHarness(b, open(b), nodes)
			var listed []*baremetal.Node
			for i := range nodes {
				n := h.addNode(fmt.Sprintf("n-%04d", i), sys[i], baremetal.StateEnroll, false)
				h.enqueue(VerifyArgs{NodeID: n.ID})
				listed = append(listed, n)
			}
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				h.r.reconcile(h.ctx, listed)
			}
			cpu := cpuTime() - cpu0
			b.StopTimer()
			perNode := float64(b.N * nodes)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/perNode, "µs/node")
			b.ReportMetric(float64(cpu.Microseconds())/perNode, "cpu-µs/node")
		})
	}
}
