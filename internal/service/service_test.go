package service_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

type countingJobs struct{ n atomic.Int64 }

func (c *countingJobs) InsertTx(context.Context, store.Tx, river.JobArgs) (int64, error) {
	return c.n.Add(1), nil
}

var admin = service.Caller{TokenID: "t-admin", Role: baremetal.RoleAdmin}

func enrollAvailable(t *testing.T, st store.Store, svc *service.Service, name string) *baremetal.Node {
	t.Helper()
	ctx := context.Background()
	n, err := svc.CreateNode(ctx, admin, service.NodeSpec{Name: name, Driver: baremetal.DriverRedfish, ResourceClass: "gpu",
		BMC: baremetal.BMC{Address: "https://10.1.1.1", Username: "u", Password: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	n.ProvisionState = baremetal.StateAvailable
	if err := st.UpdateNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConcurrentCreatesForLastNode: many concurrent creates race for one
// schedulable node; exactly one wins and the others get no_capacity.
func TestConcurrentCreatesForLastNode(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			svc := service.New(st, &countingJobs{}, nil)
			node := enrollAvailable(t, st, svc, "last-node")
			const racers = 12
			var wg sync.WaitGroup
			var won atomic.Int32
			errs := make(chan error, racers)
			for i := 0; i < racers; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					member := service.Caller{TokenID: fmt.Sprint("m", i), Role: baremetal.RoleMember, Project: "p1"}
					_, err := svc.CreateInstance(context.Background(), member, baremetal.Instance{
						Name: fmt.Sprintf("web-%d", i), ResourceClass: "gpu", Image: baremetal.Image{URL: "https://i/x.iso"}})
					if err == nil {
						won.Add(1)
						return
					}
					errs <- err
				}(i)
			}
			wg.Wait()
			close(errs)
			if won.Load() != 1 {
				t.Fatalf("%d creates won the last node, want exactly 1", won.Load())
			}
			for err := range errs {
				if !baremetal.IsCode(err, baremetal.CodeNoCapacity) {
					t.Errorf("loser got %v, want no_capacity", err)
				}
			}
			got, err := st.GetNode(context.Background(), node.ID)
			if err != nil {
				t.Fatal(err)
			}
			insts, _, err := st.ListInstances(context.Background(), store.InstanceFilter{Page: store.Page{Limit: 100}})
			if err != nil {
				t.Fatal(err)
			}
			if len(insts) != 1 || got.InstanceID != insts[0].ID || got.ProvisionState != baremetal.StateDeploying {
				t.Fatalf("node %+v, instances %d", got, len(insts))
			}
		})
	}
}

// TestMaintenanceOnlyByAdmin: a member can never change maintenance, and
// an admin must give a reason.
func TestMaintenanceOnlyByAdmin(t *testing.T) {
	st := storetest.OpenSQLite(t)
	svc := service.New(st, &countingJobs{}, nil)
	n := enrollAvailable(t, st, svc, "m-node")
	member := service.Caller{TokenID: "m", Role: baremetal.RoleMember, Project: "p"}
	_, err := svc.UpdateNode(context.Background(), member, n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
		s := service.SpecOf(cur)
		s.Maintenance, s.MaintenanceReason = true, "x"
		return s, nil
	})
	if !baremetal.IsCode(err, baremetal.CodeForbidden) {
		t.Fatalf("member maintenance: %v", err)
	}
	got, _ := st.GetNode(context.Background(), n.ID)
	if got.Maintenance || got.Version != n.Version {
		t.Fatalf("node changed: %+v", got)
	}
}
