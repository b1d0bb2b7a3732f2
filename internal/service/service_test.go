package service_test

import (
	"context"
	"fmt"
	"reflect"
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

// enrollIPMI enrolls an available IPMI node of class gpu.
func enrollIPMI(t testing.TB, st store.Store, svc *service.Service, name, address string) *baremetal.Node {
	t.Helper()
	ctx := context.Background()
	n, err := svc.CreateNode(ctx, admin, service.NodeSpec{Name: name, Driver: baremetal.DriverIPMI, ResourceClass: "gpu",
		BMC: baremetal.BMC{Address: address, Username: "u", Password: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	n.ProvisionState = baremetal.StateAvailable
	if err := st.UpdateNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A live deploy that needs a config drive is never placed on an IPMI
// node (no virtual media): the scheduler passes over them and says so
// when nothing else is left; pinning one is refused naming the node.
func TestConfigDriveInstancesAvoidIPMINodes(t *testing.T) {
	st := storetest.OpenSQLite(t)
	svc := service.New(st, &countingJobs{}, nil)
	ctx := context.Background()
	n := enrollIPMI(t, st, svc, "ipmi-1", "ipmi://10.1.1.2")
	member := service.Caller{TokenID: "m", Role: baremetal.RoleMember, Project: "p1"}
	withUserData := baremetal.Instance{Name: "web", ResourceClass: "gpu", Image: baremetal.Image{URL: "https://i/x.iso"}, UserData: "#cloud-config\n"}

	_, err := svc.CreateInstance(ctx, member, withUserData)
	if !baremetal.IsCode(err, baremetal.CodeNoCapacity) ||
		!strings.Contains(err.Error(), "1 available but ipmi (no virtual media for the config drive its user_data needs with deploy_method live)") {
		t.Fatalf("by class: %v", err)
	}
	if c := baremetal.ErrorCapacity(err); c == nil || c.UnsuitableDriver != 1 || c.Pending != 0 {
		t.Fatalf("by class: counts %+v, want 1 unsuitable_driver and nothing pending", c)
	}
	pinned := withUserData
	pinned.ResourceClass, pinned.NodeID, pinned.UserData, pinned.DeployTimeout = "", n.ID, "", 10*time.Minute
	_, err = svc.CreateInstance(ctx, member, pinned)
	if baremetal.ErrorField(err) != "node_id" || !strings.Contains(err.Error(), "node ipmi-1 is managed over ipmi") ||
		!strings.Contains(err.Error(), "deploy_timeout") || !strings.Contains(err.Error(), "pin a redfish node") {
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

// TestConcurrentCreatesFillEveryNode: more concurrent creates than free
// nodes of a class place one instance on every node, never two on one,
// and only the creates left over get no_capacity. On PostgreSQL every
// create saw the same free nodes in the same order, and the losers of
// the race for the first one were refused while 34 others were free.
func TestConcurrentCreatesFillEveryNode(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			svc := service.New(st, &countingJobs{}, nil)
			ctx := context.Background()
			const nodes, creates = 35, 40
			for i := range nodes {
				enrollAvailable(t, st, svc, fmt.Sprintf("c%02d", i))
			}
			var wg sync.WaitGroup
			var placed, refused atomic.Int32
			start := make(chan struct{})
			for i := range creates {
				wg.Go(func() {
					member := service.Caller{TokenID: fmt.Sprint("m", i), Role: baremetal.RoleMember, Project: "p1"}
					<-start
					_, err := svc.CreateInstance(ctx, member, baremetal.Instance{
						Name: fmt.Sprintf("vm-%02d", i), ResourceClass: "gpu", Image: baremetal.Image{URL: "https://i/x.iso"}})
					switch {
					case err == nil:
						placed.Add(1)
					case baremetal.IsCode(err, baremetal.CodeNoCapacity):
						refused.Add(1)
						if !strings.Contains(err.Error(), `no node of class "gpu" is available`) {
							t.Errorf("create %d refused for another reason: %v", i, err)
						}
					default:
						t.Errorf("create %d: %v", i, err)
					}
				})
			}
			close(start)
			wg.Wait()
			t.Logf("%d creates on %d free nodes: %d placed, %d no_capacity", creates, nodes, placed.Load(), refused.Load())
			if placed.Load() != nodes || refused.Load() != creates-nodes {
				t.Errorf("%d placed and %d refused; want %d and %d", placed.Load(), refused.Load(), nodes, creates-nodes)
			}
			// Every instance on its own node, and that node records it.
			insts, _, err := st.ListInstances(ctx, store.InstanceFilter{Page: store.Page{Limit: 100}})
			if err != nil {
				t.Fatal(err)
			}
			on := map[string]string{}
			for _, inst := range insts {
				if other, ok := on[inst.NodeID]; ok {
					t.Errorf("instances %s and %s both on node %s", other, inst.Name, inst.NodeID)
				}
				on[inst.NodeID] = inst.Name
				n, err := st.GetNode(ctx, inst.NodeID)
				if err != nil {
					t.Fatal(err)
				}
				if n.InstanceID != inst.ID || n.ProvisionState != baremetal.StateDeploying {
					t.Errorf("node %s: instance %q, state %s; want instance %s (%s), deploying", n.Name, n.InstanceID, n.ProvisionState, inst.ID, inst.Name)
				}
			}
			if len(insts) != int(placed.Load()) {
				t.Errorf("%d instances stored, %d creates succeeded", len(insts), placed.Load())
			}
		})
	}
}

// TestImageDeploysWithConfigDriveUseIPMINodes: an image deploy's agent
// writes the config drive to disk as a partition (and boots by network
// where the BMC has no virtual media), so user_data and deploy_timeout
// need no virtual media: IPMI nodes take such instances, by class and
// pinned. A live deploy with user_data is still refused on them, and the
// refusal says that deploy_method image would fit.
func TestImageDeploysWithConfigDriveUseIPMINodes(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			svc := service.New(st, &countingJobs{}, nil)
			svc.EnableAgent()
			ctx := context.Background()
			var ipmi []*baremetal.Node
			for i := range 3 {
				ipmi = append(ipmi, enrollIPMI(t, st, svc, fmt.Sprintf("ipmi-%d", i), fmt.Sprintf("ipmi://10.1.1.%d", i+2)))
			}
			free := map[string]bool{ipmi[0].ID: true, ipmi[1].ID: true, ipmi[2].ID: true}
			member := service.Caller{TokenID: "m", Role: baremetal.RoleMember, Project: "p1"}
			img := baremetal.Image{URL: "https://i/disk.qcow2"}

			// The default method (image, as the agent is served) with user_data, by class.
			web, err := svc.CreateInstance(ctx, member, baremetal.Instance{Name: "web", ResourceClass: "gpu", Image: img, UserData: "#cloud-config\n"})
			if err != nil {
				t.Fatalf("image deploy with user_data by class: %v", err)
			}
			if web.DeployMethod != baremetal.DeployImage || !free[web.NodeID] {
				t.Fatalf("image deploy with user_data placed %s on %s", web.DeployMethod, web.NodeID)
			}
			delete(free, web.NodeID)
			// deploy_timeout (the readiness callback), pinned.
			var pin, last string
			for id := range free {
				pin, last = last, id
			}
			db, err := svc.CreateInstance(ctx, member, baremetal.Instance{Name: "db", NodeID: pin, Image: img,
				DeployMethod: baremetal.DeployImage, DeployTimeout: 10 * time.Minute})
			if err != nil || db.NodeID != pin {
				t.Fatalf("image deploy with deploy_timeout pinned to %s: %+v, %v", pin, db, err)
			}

			// A live deploy with user_data cannot have its drive on the node left.
			live := baremetal.Instance{Name: "live", ResourceClass: "gpu", Image: baremetal.Image{URL: "https://i/x.iso"},
				DeployMethod: baremetal.DeployLive, UserData: "#cloud-config\n"}
			_, err = svc.CreateInstance(ctx, member, live)
			if !baremetal.IsCode(err, baremetal.CodeNoCapacity) ||
				!strings.Contains(err.Error(), "1 available but ipmi (no virtual media for the config drive its user_data needs with deploy_method live)") {
				t.Fatalf("live deploy with user_data by class: %v", err)
			}
			live.ResourceClass, live.NodeID = "", last
			_, err = svc.CreateInstance(ctx, member, live)
			if baremetal.ErrorField(err) != "node_id" || !strings.Contains(err.Error(), "use deploy_method image") {
				t.Fatalf("live deploy with user_data pinned: %v", err)
			}
		})
	}
}

// TestInspectingNodesArePending: a node being inspected is available
// again once the agent has reported (or the inspection gave up), without
// anyone acting: a create that finds only such nodes gets no_capacity
// with them counted as inspecting and pending (so that the provider
// waits), by class and pinned, not as busy.
func TestInspectingNodesArePending(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			svc := service.New(st, &countingJobs{}, nil)
			ctx := context.Background()
			n := enrollAvailable(t, st, svc, "inspected")
			n.ProvisionState = baremetal.StateInspecting
			if err := st.UpdateNode(ctx, n); err != nil {
				t.Fatal(err)
			}
			member := service.Caller{TokenID: "m", Role: baremetal.RoleMember, Project: "p1"}
			for _, inst := range []baremetal.Instance{
				{Name: "by-class", ResourceClass: "gpu", Image: baremetal.Image{URL: "https://i/x.iso"}},
				{Name: "pinned", NodeID: n.ID, Image: baremetal.Image{URL: "https://i/x.iso"}},
			} {
				_, err := svc.CreateInstance(ctx, member, inst)
				if !baremetal.IsCode(err, baremetal.CodeNoCapacity) || !strings.Contains(err.Error(), "inspecting") {
					t.Fatalf("%s: %v, want no_capacity saying inspecting", inst.Name, err)
				}
				want := baremetal.Capacity{Nodes: 1, Inspecting: 1, Pending: 1}
				if c := baremetal.ErrorCapacity(err); c == nil || !reflect.DeepEqual(*c, want) {
					t.Errorf("%s: counts %+v, want %+v", inst.Name, c, want)
				}
			}
		})
	}
}
