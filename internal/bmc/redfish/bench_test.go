package redfish

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// BenchmarkPowerRead measures power-sync throughput: 1,000 systems behind
// one simulated BMC endpoint answering after 50 ms, read by 64 workers
// through one Opener (64 concurrent requests per BMC). The ceiling is
// 64 / 50 ms = 1,280 nodes/s; req/read shows the steady-state cost.
//
//	go test -run '^$' -bench PowerRead -benchtime 5000x ./internal/bmc/redfish/
func BenchmarkPowerRead(b *testing.B) {
	for _, tc := range []struct {
		systems, workers int
		latency          time.Duration
	}{
		{1000, 64, 50 * time.Millisecond},
		{10000, 64, 0}, // driver + sim CPU cost per read
	} {
		b.Run(fmt.Sprintf("systems=%d/latency=%v/workers=%d", tc.systems, tc.latency, tc.workers), func(b *testing.B) {
			f := startFleet(b, sim.Options{Systems: tc.systems, Latency: tc.latency})
			o := newOpener(b, Options{MaxConcurrentRequests: tc.workers})
			clients := make([]bmc.Client, tc.systems)
			for i, id := range f.SystemIDs() {
				clients[i] = open(b, o, endpoint(f.URL(), id))
			}
			ctx := context.Background()
			if _, err := clients[0].PowerState(ctx); err != nil { // log in
				b.Fatal(err)
			}
			before := f.TotalRequests()
			var next atomic.Int64
			var errs atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range tc.workers {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						if _, err := clients[i%int64(len(clients))].PowerState(ctx); err != nil {
							errs.Add(1)
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if n := errs.Load(); n > 0 {
				b.Fatalf("%d failed reads", n)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "nodes/s")
			b.ReportMetric(float64(f.TotalRequests()-before)/float64(b.N), "req/read")
		})
	}
}
