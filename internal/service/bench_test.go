package service_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/jobs"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// noBMC is the opener of a runner that only inserts jobs: nothing here
// starts it, so no job runs and no BMC is called.
type noBMC struct{}

func (noBMC) Open(context.Context, bmc.Endpoint) (bmc.Client, error) {
	return nil, errors.New("benchmark: no BMC")
}

// BenchmarkDeleteInstance measures the delete transaction alone (instance
// gone, node to cleaning, event, cleanup job through River's unique
// insert), without HTTP and without job workers competing for the
// database: the cost every DELETE pays before any contention. Run with
// parallelism 1 it is the CPU (SQLite) or round-trip (PostgreSQL) cost
// per delete; its -cpuprofile shows where that goes.
//
//	go test -run '^$' -bench DeleteInstance -benchtime 2000x ./internal/service
func BenchmarkDeleteInstance(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		open := map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres}[name]
		b.Run(name, func(b *testing.B) {
			st := open(b)
			runner, err := jobs.New(jobs.Config{Store: st, BMC: noBMC{}})
			if err != nil {
				b.Fatal(err)
			}
			svc := service.New(st, runner, slog.New(slog.DiscardHandler))
			ctx := context.Background()
			member := service.Caller{TokenID: "t-bench", Role: baremetal.RoleMember, Project: "bench"}
			// One node and instance per iteration, made before the timer.
			ids := make([]string, b.N)
			for i := range b.N {
				n := enrollAvailable(b, st, svc, fmt.Sprintf("bench-%06d", i))
				inst, err := svc.CreateInstance(ctx, member, baremetal.Instance{Name: fmt.Sprintf("vm-%06d", i),
					NodeID: n.ID, Image: baremetal.Image{URL: "https://images.example/x.iso"}})
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = inst.ID
			}
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := svc.DeleteInstance(ctx, member, ids[next.Add(1)-1], 0); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deletes/s")
		})
	}
}

// BenchmarkCreateInstance measures a create placed by resource class
// (quota check, the node claimed, instance inserted, node to deploying,
// event, deploy job through River's unique insert) on a class with as
// many free nodes as creates, made before the timer. clients=1 is the
// cost of one create; clients=8 has creates race for the same free
// nodes, as a terraform apply of many instances does.
//
//	go test -run '^$' -bench CreateInstance -benchtime 1000x ./internal/service
func BenchmarkCreateInstance(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		open := map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres}[name]
		for _, clients := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/clients=%d", name, clients), func(b *testing.B) {
				st := open(b)
				runner, err := jobs.New(jobs.Config{Store: st, BMC: noBMC{}})
				if err != nil {
					b.Fatal(err)
				}
				svc := service.New(st, runner, slog.New(slog.DiscardHandler))
				ctx := context.Background()
				member := service.Caller{TokenID: "t-bench", Role: baremetal.RoleMember, Project: "bench"}
				for i := range b.N {
					enrollAvailable(b, st, svc, fmt.Sprintf("bench-%06d", i))
				}
				var next atomic.Int64
				work := func() {
					i := next.Add(1) - 1
					if _, err := svc.CreateInstance(ctx, member, baremetal.Instance{Name: fmt.Sprintf("vm-%06d", i),
						ResourceClass: "gpu", Image: baremetal.Image{URL: "https://images.example/x.iso"}}); err != nil {
						b.Error(err)
					}
				}
				b.ReportAllocs()
				cpu0, _ := storetest.ProcessCPU()
				b.ResetTimer()
				if clients == 1 {
					for range b.N {
						work()
					}
				} else {
					b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							work()
						}
					})
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
				// The process's CPU per create (on PostgreSQL the client's
				// alone): steadier than ns/op on a busy machine.
				if cpu1, ok := storetest.ProcessCPU(); ok {
					b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
				}
			})
		}
	}
}
