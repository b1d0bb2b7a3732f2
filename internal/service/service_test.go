package service_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

func enrollAvailable(t testing.TB, st store.Store, svc *service.Service, name string) *baremetal.Node {
	t.Helper()
	ctx := context.Background()
	n, err := svc.CreateNode(ctx, admin, service.NodeSpec{Name: name, Driver: baremetal.DriverRedfish, ResourceClass: "gpu",
		BMC: baremetal.BMC{Address: "https://10.1.1.1", Username: "u", Password: "p", SystemID: "/redfish/v1/Systems/" + name}})
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

// TestInstanceNamesPerProject: two projects may both have an instance
// "db"; each member resolves the name within its own project and learns
// nothing about the other's.
func TestInstanceNamesPerProject(t *testing.T) {
	st := storetest.OpenSQLite(t)
	svc := service.New(st, &countingJobs{}, nil)
	ctx := context.Background()
	enrollAvailable(t, st, svc, "n1")
	enrollAvailable(t, st, svc, "n2")
	ids := map[string]string{}
	for _, p := range []string{"p1", "p2"} {
		m := service.Caller{TokenID: p, Role: baremetal.RoleMember, Project: p}
		inst, err := svc.CreateInstance(ctx, m, baremetal.Instance{Name: "db", ResourceClass: "gpu", Image: baremetal.Image{URL: "https://i/x.iso"}})
		if err != nil {
			t.Fatal(err)
		}
		ids[p] = inst.ID
	}
	for _, p := range []string{"p1", "p2"} {
		m := service.Caller{TokenID: p, Role: baremetal.RoleMember, Project: p}
		got, err := svc.GetInstance(ctx, m, "db")
		if err != nil || got.ID != ids[p] {
			t.Fatalf("%s: GetInstance(db) = %+v, %v; want %s", p, got, err, ids[p])
		}
	}
	p3 := service.Caller{TokenID: "p3", Role: baremetal.RoleMember, Project: "p3"}
	if _, err := svc.GetInstance(ctx, p3, "db"); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Fatalf("p3 looking up db: %v, want not_found", err)
	}
	if _, err := svc.GetInstance(ctx, p3, ids["p1"]); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Fatalf("p3 looking up p1's id: %v, want not_found", err)
	}
	if _, err := svc.DeleteInstance(ctx, service.Caller{TokenID: "p2", Role: baremetal.RoleMember, Project: "p2"}, "db", 0); err != nil {
		t.Fatal(err)
	}
	if got, err := svc.GetInstance(ctx, service.Caller{TokenID: "p1", Role: baremetal.RoleMember, Project: "p1"}, "db"); err != nil || got.ID != ids["p1"] {
		t.Fatalf("p2's delete touched p1's instance: %+v %v", got, err)
	}
}

// TestQuotaUnderConcurrency: concurrent creates in one project never
// exceed its quota, on either store.
func TestQuotaUnderConcurrency(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			svc := service.New(st, &countingJobs{}, nil)
			ctx := context.Background()
			for i := 0; i < 6; i++ {
				enrollAvailable(t, st, svc, fmt.Sprintf("q%d", i))
			}
			if err := svc.SetQuota(ctx, admin, baremetal.Quota{Project: "p1", Instances: 2}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var won atomic.Int32
			for i := 0; i < 6; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					m := service.Caller{TokenID: "m", Role: baremetal.RoleMember, Project: "p1"}
					_, err := svc.CreateInstance(ctx, m, baremetal.Instance{Name: fmt.Sprintf("q-%d", i), ResourceClass: "gpu", Image: baremetal.Image{URL: "https://i/x.iso"}})
					if err == nil {
						won.Add(1)
					} else if !baremetal.IsCode(err, baremetal.CodeQuotaExceeded) {
						t.Errorf("create %d: %v", i, err)
					}
				}(i)
			}
			wg.Wait()
			if won.Load() != 2 {
				t.Fatalf("%d creates succeeded under a quota of 2", won.Load())
			}
		})
	}
}

// An instance that needs a config drive is never placed on an IPMI node
// (no virtual media): the scheduler passes over them and says so when
// nothing else is left; pinning one is refused naming the node.
func TestConfigDriveInstancesAvoidIPMINodes(t *testing.T) {
	st := storetest.OpenSQLite(t)
	svc := service.New(st, &countingJobs{}, nil)
	ctx := context.Background()
	n, err := svc.CreateNode(ctx, admin, service.NodeSpec{Name: "ipmi-1", Driver: baremetal.DriverIPMI, ResourceClass: "gpu",
		BMC: baremetal.BMC{Address: "ipmi://10.1.1.2", Username: "u", Password: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	n.ProvisionState = baremetal.StateAvailable
	if err := st.UpdateNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	member := service.Caller{TokenID: "m", Role: baremetal.RoleMember, Project: "p1"}
	withUserData := baremetal.Instance{Name: "web", ResourceClass: "gpu", Image: baremetal.Image{URL: "https://i/x.iso"}, UserData: "#cloud-config\n"}

	_, err = svc.CreateInstance(ctx, member, withUserData)
	if !baremetal.IsCode(err, baremetal.CodeNoCapacity) || !strings.Contains(err.Error(), "1 available but ipmi (no virtual media for the config drive its user_data needs)") {
		t.Fatalf("by class: %v", err)
	}
	pinned := withUserData
	pinned.ResourceClass, pinned.NodeID, pinned.UserData, pinned.DeployTimeout = "", n.ID, "", 10*time.Minute
	_, err = svc.CreateInstance(ctx, member, pinned)
	if baremetal.ErrorField(err) != "node_id" || !strings.Contains(err.Error(), "node ipmi-1 is managed over ipmi") || !strings.Contains(err.Error(), "deploy_timeout") {
		t.Fatalf("pinned: %v", err)
	}
	// A Redfish node of the class takes it; the IPMI node takes plain instances.
	redfish := enrollAvailable(t, st, svc, "redfish-1")
	inst, err := svc.CreateInstance(ctx, member, withUserData)
	if err != nil || inst.NodeID != redfish.ID {
		t.Fatalf("with a redfish node: %+v %v", inst, err)
	}
	plain, err := svc.CreateInstance(ctx, member, baremetal.Instance{Name: "plain", ResourceClass: "gpu", Image: baremetal.Image{URL: "https://i/x.iso"}})
	if err != nil || plain.NodeID != n.ID {
		t.Fatalf("plain instance: %+v %v", plain, err)
	}
}
