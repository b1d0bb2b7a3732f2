package service_test

import (
	"context"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// TestNodeCleanInspectSettings: a node's clean_erase and
// inspect_on_enroll come from the spec on create and update, SpecOf gives
// them back, a bad erase mode is refused by field and changes nothing,
// and a node being deleted (whose spec may only change maintenance)
// still takes a maintenance change with its settings set, while a change
// of the settings is refused. On both stores.
func TestNodeCleanInspectSettings(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			svc := service.New(st, &countingJobs{}, nil)
			yes := true
			spec := service.NodeSpec{Name: "own", Driver: baremetal.DriverRedfish, ResourceClass: "gpu",
				BMC:        baremetal.BMC{Address: "https://10.1.1.2", Username: "u", Password: "p"},
				CleanErase: baremetal.CleanEraseFull, InspectOnEnroll: &yes}
			n, err := svc.CreateNode(ctx, admin, spec)
			if err != nil {
				t.Fatal(err)
			}
			got := service.SpecOf(n)
			if got.CleanErase != baremetal.CleanEraseFull || got.InspectOnEnroll == nil || !*got.InspectOnEnroll {
				t.Fatalf("SpecOf after create: clean_erase %q, inspect_on_enroll %v", got.CleanErase, got.InspectOnEnroll)
			}

			bad := spec
			bad.Name, bad.BMC.Address, bad.CleanErase = "bad", "https://10.1.1.3", "shred"
			if _, err := svc.CreateNode(ctx, admin, bad); baremetal.ErrorCode(err) != baremetal.CodeInvalid || baremetal.ErrorField(err) != "clean_erase" {
				t.Fatalf("create with clean_erase shred: %v (field %q), want invalid clean_erase", err, baremetal.ErrorField(err))
			}
			_, err = svc.UpdateNode(ctx, admin, n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
				s := service.SpecOf(cur)
				s.CleanErase = "shred"
				return s, nil
			})
			if baremetal.ErrorField(err) != "clean_erase" {
				t.Fatalf("update to clean_erase shred: %v, want invalid clean_erase", err)
			}
			if cur, _ := svc.GetNode(ctx, admin, n.ID); cur.Version != n.Version || cur.CleanErase != baremetal.CleanEraseFull {
				t.Fatalf("a refused update changed the node: version %d → %d, clean_erase %q", n.Version, cur.Version, cur.CleanErase)
			}

			upd, err := svc.UpdateNode(ctx, admin, n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
				s := service.SpecOf(cur)
				no := false
				s.CleanErase, s.InspectOnEnroll = baremetal.CleanEraseOff, &no
				return s, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if upd.CleanErase != baremetal.CleanEraseOff || upd.InspectOnEnroll == nil || *upd.InspectOnEnroll {
				t.Fatalf("after update: clean_erase %q, inspect_on_enroll %v; want off, false", upd.CleanErase, upd.InspectOnEnroll)
			}

			// Being deleted: maintenance still changes (the settings
			// compared by value, not by pointer), the settings do not.
			if _, _, err := svc.DeleteNode(ctx, admin, n.ID, 0, false); err != nil {
				t.Fatal(err)
			}
			_, err = svc.UpdateNode(ctx, admin, n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
				s := service.SpecOf(cur)
				s.Maintenance, s.MaintenanceReason = true, "hold the retire"
				same := false // a new pointer to the same value, as a decoded PATCH gives
				s.InspectOnEnroll = &same
				return s, nil
			})
			if err != nil {
				t.Fatalf("maintenance on a node being deleted, with its settings set: %v", err)
			}
			_, err = svc.UpdateNode(ctx, admin, n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
				s := service.SpecOf(cur)
				s.InspectOnEnroll = nil
				return s, nil
			})
			if baremetal.ErrorCode(err) != baremetal.CodeInvalidState {
				t.Fatalf("inspect_on_enroll changed on a node being deleted: %v, want invalid_state", err)
			}
		})
	}
}
