package httpapi_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// TestPropertyOverridesAPI: properties given on POST are overrides, and
// property_overrides lists them (also to members); inspected_at tells
// when the inventory was stored; a merge patch sets
// and clears them one by one (null clears, and the inspected value shows
// at once), "properties": null clears them all, bad values are refused
// by field and change nothing.
func TestPropertyOverridesAPI(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			var n api.Node
			e.mustJSON("POST", "/v1/nodes", adminSecret, fmt.Sprintf(`{"name":"ovr","driver":"redfish","resource_class":"gpu",
				"bmc":{"address":"https://10.0.0.5","username":"admin","password":%q},
				"properties":{"cpus":128,"local_gb":500}}`, bmcPassword), 201, &n)
			wantOverrides := func(what string, n api.Node, want ...api.PropertyName) {
				t.Helper()
				if want == nil {
					want = []api.PropertyName{}
				}
				if n.PropertyOverrides == nil || !slices.Equal(n.PropertyOverrides, want) {
					t.Fatalf("%s: property_overrides %#v, want %q", what, n.PropertyOverrides, want)
				}
			}
			wantOverrides("created", n, api.PropertyCPUs, api.PropertyLocalGB)

			// Inspection, as the inspect job records it.
			ctx := context.Background()
			cur, err := e.st.GetNode(ctx, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			if n.InspectedAt != nil {
				t.Fatalf("never inspected, inspected_at %v", n.InspectedAt)
			}
			cur.RecordInspection(baremetal.Properties{CPUs: 4, MemoryMB: 8192, LocalGB: 100, CPUArch: "x86_64"}, false)
			at := time.Date(2026, 12, 3, 10, 4, 5, 0, time.UTC)
			if err := e.st.InTx(ctx, func(tx store.Tx) error {
				if err := tx.SetInventory(ctx, &baremetal.Inventory{NodeID: cur.ID, Data: `{"cpus":4}`, InspectedAt: at}); err != nil {
					return err
				}
				return tx.UpdateNode(ctx, cur)
			}); err != nil {
				t.Fatal(err)
			}
			e.mustJSON("GET", "/v1/nodes/ovr", adminSecret, "", 200, &n)
			if n.InspectedAt == nil || !n.InspectedAt.Equal(at) {
				t.Fatalf("inspected_at %v, want %v", n.InspectedAt, at)
			}
			if want := (api.Properties{CPUs: 128, MemoryMB: 8192, LocalGB: 500, CPUArch: "x86_64"}); n.Properties != want {
				t.Fatalf("after inspection: %+v, want %+v", n.Properties, want)
			}
			var seen api.Node
			e.mustJSON("GET", "/v1/nodes/ovr", e.member, "", 200, &seen)
			wantOverrides("a member's view", seen, api.PropertyCPUs, api.PropertyLocalGB)

			// null clears one override; the others stay.
			e.mustJSON("PATCH", "/v1/nodes/ovr", adminSecret, `{"properties":{"cpus":null}}`, 200, &n)
			if want := (api.Properties{CPUs: 4, MemoryMB: 8192, LocalGB: 500, CPUArch: "x86_64"}); n.Properties != want {
				t.Fatalf("after clearing cpus: %+v, want %+v", n.Properties, want)
			}
			wantOverrides("cpus cleared", n, api.PropertyLocalGB)

			// A new override leaves the others alone.
			e.mustJSON("PATCH", "/v1/nodes/ovr", adminSecret, `{"properties":{"cpu_arch":"aarch64"}}`, 200, &n)
			wantOverrides("cpu_arch set", n, api.PropertyLocalGB, api.PropertyCPUArch)
			if n.Properties.CPUArch != "aarch64" || n.Properties.LocalGB != 500 {
				t.Fatalf("after overriding cpu_arch: %+v", n.Properties)
			}

			// Bad input: refused by field, nothing changes.
			r := e.do("PATCH", "/v1/nodes/ovr", adminSecret, `{"properties":{"cpus":-1,"local_gb":null}}`)
			if p := r.problem(t); r.status != 400 || p.Code != api.CodeInvalid || p.Field != "properties.cpus" {
				t.Fatalf("cpus -1: %d %+v", r.status, p)
			}
			r = e.do("PATCH", "/v1/nodes/ovr", adminSecret, `{"properties":{"gpus":2}}`)
			if p := r.problem(t); r.status != 400 || p.Code != api.CodeInvalid {
				t.Fatalf("unknown property: %d %+v", r.status, p)
			}
			var same api.Node
			e.mustJSON("GET", "/v1/nodes/ovr", adminSecret, "", 200, &same)
			if same.Version != n.Version || same.Properties != n.Properties {
				t.Fatalf("a refused patch changed the node: %+v → %+v", n, same)
			}

			// All of them at once.
			e.mustJSON("PATCH", "/v1/nodes/ovr", adminSecret, `{"properties":null}`, 200, &n)
			wantOverrides("all cleared", n)
			if want := (api.Properties{CPUs: 4, MemoryMB: 8192, LocalGB: 100, CPUArch: "x86_64"}); n.Properties != want {
				t.Fatalf("after clearing every override: %+v, want the inspected %+v", n.Properties, want)
			}
		})
	}
}
