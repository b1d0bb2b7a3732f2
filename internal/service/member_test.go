package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// TestMembersSeeNothingOfOthers: a member sees its own instance ids on
// nodes, never another project's (node views, the no-capacity error of a
// pinned create), and a BMC failure in its instance's last_error as a
// summary; admins see everything.
func TestMembersSeeNothingOfOthers(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			svc := service.New(st, &countingJobs{}, nil)
			ctx := context.Background()
			n1 := enrollAvailable(t, st, svc, "n1")
			n2 := enrollAvailable(t, st, svc, "n2")
			p1 := service.Caller{TokenID: "p1", Role: baremetal.RoleMember, Project: "p1"}
			p2 := service.Caller{TokenID: "p2", Role: baremetal.RoleMember, Project: "p2"}
			i1, err := svc.CreateInstance(ctx, p1, baremetal.Instance{Name: "web", NodeID: n1.ID, Image: baremetal.Image{URL: "https://i/x.iso"}})
			if err != nil {
				t.Fatal(err)
			}
			i2, err := svc.CreateInstance(ctx, p2, baremetal.Instance{Name: "db", NodeID: n2.ID, Image: baremetal.Image{URL: "https://i/x.iso"}})
			if err != nil {
				t.Fatal(err)
			}

			// Node views.
			want := map[string]string{n1.ID: i1.ID, n2.ID: ""}
			for id, w := range want {
				n, err := svc.GetNode(ctx, p1, id)
				if err != nil || n.InstanceID != w {
					t.Errorf("p1: GetNode(%s).InstanceID = %q (%v), want %q", id, n.InstanceID, err, w)
				}
			}
			nodes, _, err := svc.ListNodes(ctx, p1, store.NodeFilter{Page: store.Page{Limit: 10}})
			if err != nil || len(nodes) != 2 {
				t.Fatalf("ListNodes: %d nodes, %v", len(nodes), err)
			}
			for _, n := range nodes {
				if n.InstanceID != want[n.ID] {
					t.Errorf("p1: ListNodes: node %s instance_id %q, want %q", n.Name, n.InstanceID, want[n.ID])
				}
			}
			if n, _ := svc.GetNode(ctx, admin, n2.ID); n.InstanceID != i2.ID {
				t.Errorf("admin: instance_id %q, want %q", n.InstanceID, i2.ID)
			}

			// The no-capacity error of a create pinned to a taken node.
			_, err = svc.CreateInstance(ctx, p1, baremetal.Instance{Name: "web2", NodeID: n2.ID, Image: baremetal.Image{URL: "https://i/x.iso"}})
			if !baremetal.IsCode(err, baremetal.CodeNoCapacity) || strings.Contains(err.Error(), i2.ID) || !strings.Contains(err.Error(), "already hosts an instance") {
				t.Errorf("p1 pinned to p2's node: %v", err)
			}
			_, err = svc.CreateInstance(ctx, p1, baremetal.Instance{Name: "web3", NodeID: n1.ID, Image: baremetal.Image{URL: "https://i/x.iso"}})
			if !baremetal.IsCode(err, baremetal.CodeNoCapacity) || !strings.Contains(err.Error(), "already hosts instance "+i1.ID) {
				t.Errorf("p1 pinned to its own node: %v", err)
			}

			// last_error: a summary for members, the detail for admins.
			const detail = `gave up after 5 attempts: deploy node n1: bmc set boot device: unreachable: Patch "https://10.1.1.1/redfish/v1/Systems/1": dial tcp 10.1.1.1:443: connect: connection refused`
			stored, err := st.GetInstance(ctx, i1.ID)
			if err != nil {
				t.Fatal(err)
			}
			stored.State, stored.LastError = baremetal.InstanceError, detail
			if err := st.UpdateInstance(ctx, stored); err != nil {
				t.Fatal(err)
			}
			const summary = "gave up after 5 attempts: deploy node n1: the node's BMC did not answer (set boot device); an admin can see the details on the node"
			got, err := svc.GetInstance(ctx, p1, i1.ID)
			if err != nil || got.LastError != summary {
				t.Errorf("p1: GetInstance last_error = %q (%v)", got.LastError, err)
			}
			list, _, err := svc.ListInstances(ctx, p1, store.InstanceFilter{Page: store.Page{Limit: 10}})
			if err != nil || len(list) != 1 || list[0].LastError != summary {
				t.Errorf("p1: ListInstances = %+v (%v)", list, err)
			}
			md := map[string]string{"k": "v"}
			upd, err := svc.UpdateInstance(ctx, p1, i1.ID, 0, nil, &md)
			if err != nil || upd.LastError != summary {
				t.Errorf("p1: UpdateInstance last_error = %q (%v)", upd.LastError, err)
			}
			if got, _ := svc.GetInstance(ctx, admin, i1.ID); got.LastError != detail {
				t.Errorf("admin: last_error = %q, want the detail", got.LastError)
			}
			if got, _ := st.GetInstance(ctx, i1.ID); got.LastError != detail {
				t.Errorf("the stored last_error changed: %q", got.LastError)
			}
		})
	}
}
