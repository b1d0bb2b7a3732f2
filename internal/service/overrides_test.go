package service_test

import (
	"context"
	"slices"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// TestPropertyOverrides: the properties an operator sets on create or
// update are overrides, remembered with the node; SpecOf gives back only
// those; dropping one from the spec shows the inspected value at once
// (or nothing, never inspected), in an event saying so. On both stores.
func TestPropertyOverrides(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			svc := service.New(st, &countingJobs{}, nil)
			n, err := svc.CreateNode(ctx, admin, service.NodeSpec{Name: "ovr", Driver: baremetal.DriverRedfish, ResourceClass: "gpu",
				BMC:        baremetal.BMC{Address: "https://10.1.1.1", Username: "u", Password: "p"},
				Properties: baremetal.Properties{CPUs: 128, LocalGB: 500}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(n.Overrides.Names(), []baremetal.PropertyName{baremetal.PropertyCPUs, baremetal.PropertyLocalGB}) {
				t.Fatalf("overrides after create: %q", n.Overrides.Names())
			}
			// An inspection, as the inspect job records it.
			n.RecordInspection(baremetal.Properties{CPUs: 4, MemoryMB: 8192, CPUArch: "x86_64"}, false)
			if err := st.UpdateNode(ctx, n); err != nil {
				t.Fatal(err)
			}
			got, err := svc.GetNode(ctx, admin, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := (baremetal.Properties{CPUs: 128, MemoryMB: 8192, LocalGB: 500, CPUArch: "x86_64"}); got.Properties != want {
				t.Fatalf("after inspection: %+v, want %+v", got.Properties, want)
			}
			if spec := service.SpecOf(got); spec.Properties != (baremetal.Properties{CPUs: 128, LocalGB: 500}) {
				t.Fatalf("SpecOf gives %+v, want the overrides only", spec.Properties)
			}

			// The operator drops both overrides and overrides memory.
			upd, err := svc.UpdateNode(ctx, admin, n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
				spec := service.SpecOf(cur)
				spec.Properties = baremetal.Properties{MemoryMB: 4096}
				return spec, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := (baremetal.Properties{CPUs: 4, MemoryMB: 4096, CPUArch: "x86_64"}); upd.Properties != want {
				t.Fatalf("after clearing cpus and local_gb: %+v, want %+v (cpus inspected, local_gb never)", upd.Properties, want)
			}
			if !slices.Equal(upd.Overrides.Names(), []baremetal.PropertyName{baremetal.PropertyMemoryMB}) {
				t.Fatalf("overrides after update: %q", upd.Overrides.Names())
			}
			if stored, err := st.GetNode(ctx, n.ID); err != nil || stored.Properties != upd.Properties || stored.Overrides != upd.Overrides {
				t.Fatalf("stored: %+v, %v; want %+v", stored, err, upd)
			}
			evs, _, err := st.ListEvents(ctx, n.ID, store.Page{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var told bool
			for _, e := range evs {
				told = told || e.Field == "property_overrides" && e.Old == "cpus,local_gb" && e.New == "memory_mb" && e.Actor != ""
			}
			if !told {
				t.Errorf("no event tells the overrides changed: %+v", evs)
			}

			// The same spec again changes nothing.
			again, err := svc.UpdateNode(ctx, admin, n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
				return service.SpecOf(cur), nil
			})
			if err != nil || again.Version != upd.Version {
				t.Fatalf("a no-op update wrote the node: version %d → %d, %v", upd.Version, again.Version, err)
			}
		})
	}
}
