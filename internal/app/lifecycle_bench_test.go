package app_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// BenchmarkDeleteWithHungBMCs deletes 200 instances (from 1 client, 10
// concurrent clients as terraform destroy's default parallelism, and 32) while every BMC hangs, on SQLite and on
// PostgreSQL, reports the p50/p99 DELETE latency, then heals the BMCs
// and reports how long until every node is available again, in seconds
// and in power-sync intervals. One round per run (b.N is not used: the
// setup dominates).
//
//	go test -run '^$' -bench DeleteWithHungBMCs -benchtime 1x ./internal/app
func BenchmarkDeleteWithHungBMCs(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		for _, clients := range []int{1, 10, 32} {
			b.Run(fmt.Sprintf("%s/clients=%d", name, clients), func(b *testing.B) {
				benchDeleteWithHungBMCs(b, benchStores[name](b), clients, sim.FaultHang)
			})
		}
	}
}

// BenchmarkDeleteWithHealthyBMCs is the control of the benchmark above:
// the same deletes with every BMC answering. Its latencies next to the
// hung ones show whether the BMC state reaches the DELETE at all (it
// should not: what is left is the cost of the write itself).
//
//	go test -run '^$' -bench 'DeleteWith' -benchtime 1x ./internal/app
func BenchmarkDeleteWithHealthyBMCs(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		for _, clients := range []int{1, 10, 32} {
			b.Run(fmt.Sprintf("%s/clients=%d", name, clients), func(b *testing.B) {
				benchDeleteWithHungBMCs(b, benchStores[name](b), clients, sim.FaultNone)
			})
		}
	}
}

// benchStores gives each store's database URL ("" = embedded SQLite).
var benchStores = map[string]func(testing.TB) string{
	"sqlite":   func(testing.TB) string { return "" },
	"postgres": storetest.PostgresURL,
}

func benchDeleteWithHungBMCs(b *testing.B, dbURL string, clients int, fault sim.Fault) {
	const n = 200
	interval := 2 * time.Second
	env := testenv.Start(b, testenv.Options{Systems: n, PowerSyncInterval: interval, BMCTimeout: time.Second, DatabaseURL: dbURL})
	ctx := context.Background()
	nodes := env.EnrollNodes(b, n, "bench", "gpu")
	member := env.MemberToken(b, "bench")
	var ids []string
	for i := range nodes {
		inst, err := env.App.Service.CreateInstance(ctx, env.Admin(), baremetal.Instance{Name: fmt.Sprintf("vm-%d", i), Project: "bench",
			ResourceClass: "gpu", Image: baremetal.Image{URL: "https://images.example/x.iso"}})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, inst.ID)
	}
	for _, node := range nodes {
		env.WaitNode(b, node.ID, 2*time.Minute, func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateActive })
	}
	env.Sim.SetAllFaults(fault)

	b.ResetTimer()
	started := time.Now()
	lat := make([]time.Duration, len(ids))
	var wg sync.WaitGroup
	work := make(chan int)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				req, _ := http.NewRequest("DELETE", env.URL+"/v1/instances/"+ids[i], nil)
				req.Header.Set("Authorization", "Bearer "+member)
				start := time.Now()
				res, err := client.Do(req)
				lat[i] = time.Since(start)
				if err != nil {
					b.Error(err)
					continue
				}
				res.Body.Close()
				if res.StatusCode != http.StatusAccepted {
					b.Errorf("DELETE: %d", res.StatusCode)
				}
			}
		}()
	}
	for i := range ids {
		work <- i
	}
	close(work)
	wg.Wait()
	b.ReportMetric(float64(len(ids))/time.Since(started).Seconds(), "deletes/s")
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")

	// Let the cleanups fail against the hung BMCs for a while, then heal.
	time.Sleep(3 * time.Second)
	healed := time.Now()
	env.Sim.SetAllFaults(sim.FaultNone)
	no := false
	for {
		avail, _, err := env.App.Store.ListNodes(ctx, store.NodeFilter{Page: store.Page{Limit: store.MaxPageLimit},
			ProvisionState: baremetal.StateAvailable, Maintenance: &no, Fault: "none"})
		if err != nil {
			b.Fatal(err)
		}
		if len(avail) == n {
			break
		}
		if time.Since(healed) > 5*time.Minute {
			b.Fatalf("only %d of %d nodes available 5 minutes after the BMCs recovered", len(avail), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rec := time.Since(healed)
	b.ReportMetric(rec.Seconds(), "recover_s")
	b.ReportMetric(rec.Seconds()/interval.Seconds(), "recover_sync_intervals")
}
