package service_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
