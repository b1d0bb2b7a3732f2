package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// TestPlacementAPI: node traits and owners are taken on POST and PATCH
// (bad ones refused by field, nothing changed), shown with the derived
// ones; the node list filters by them; an instance's requirements place
// it and are shown; a no_capacity answer counts the unmet requirements
// on the wire; GET /v1/capacity answers how many more fit.
func TestPlacementAPI(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			body := func(name, extra string) string {
				return fmt.Sprintf(`{"name":%q,"driver":"redfish","resource_class":"gpu",
					"bmc":{"address":"https://10.0.1.%d","username":"admin","password":%q}%s}`, name, len(name), bmcPassword, extra)
			}
			var n api.Node
			e.mustJSON("POST", "/v1/nodes", adminSecret, body("a100", `,"traits":["rack:r1","CUSTOM_GPU_A100","rack:r1"],"properties":{"memory_mb":262144,"cpu_arch":"x86_64"}`), 201, &n)
			if !slices.Equal(n.Traits, []string{"CUSTOM_GPU_A100", "rack:r1"}) || n.Owner != "" || !slices.Equal(n.DerivedTraits, []string{"HW_ARCH_X86_64"}) {
				t.Fatalf("created: traits %q derived %q owner %q", n.Traits, n.DerivedTraits, n.Owner)
			}
			e.makeAvailable(n.ID)
			var owned api.Node
			e.mustJSON("POST", "/v1/nodes", adminSecret, body("owned-by-p2", `,"owner":"p2","properties":{"memory_mb":131072}`), 201, &owned)
			e.makeAvailable(owned.ID)
			var plain api.Node
			e.mustJSON("POST", "/v1/nodes", adminSecret, body("plainnode", ""), 201, &plain)
			if plain.Traits == nil || plain.DerivedTraits == nil || !strings.Contains(string(e.do("GET", "/v1/nodes/plainnode", adminSecret, "").body), `"traits":[]`) {
				t.Fatalf("a node without traits: %q %q, want [] shown", plain.Traits, plain.DerivedTraits)
			}
			e.makeAvailable(plain.ID)

			for _, c := range []struct{ extra, field string }{
				{`,"traits":["has space"]`, "traits[0]"},
				{`,"traits":["ok","a,b"]`, "traits[1]"},
				{`,"owner":"Not A Project"`, "owner"},
				{`,"traits":"CUSTOM"`, "traits"},
			} {
				r := e.do("POST", "/v1/nodes", adminSecret, body("bad", c.extra))
				if p := r.problem(t); r.status != 400 || p.Code != api.CodeInvalid || p.Field != c.field {
					t.Errorf("create with %s: %d %+v, want 400 invalid %s", c.extra, r.status, p, c.field)
				}
			}
			e.mustJSON("PATCH", "/v1/nodes/plainnode", adminSecret, `{"traits":["CUSTOM_X"],"owner":"p1"}`, 200, &plain)
			if !slices.Equal(plain.Traits, []string{"CUSTOM_X"}) || plain.Owner != "p1" {
				t.Fatalf("patched: %q %q", plain.Traits, plain.Owner)
			}
			if r := e.do("PATCH", "/v1/nodes/plainnode", adminSecret, `{"traits":["bad trait"]}`); r.status != 400 || r.problem(t).Field != "traits[0]" {
				t.Fatalf("bad patch: %d %s", r.status, r.body)
			}
			var evs api.EventList
			e.mustJSON("GET", "/v1/nodes/plainnode/events", adminSecret, "", 200, &evs)
			if !slices.ContainsFunc(evs.Items, func(ev api.Event) bool { return ev.Field == "traits" && ev.New == "CUSTOM_X" }) ||
				!slices.ContainsFunc(evs.Items, func(ev api.Event) bool { return ev.Field == "owner" && ev.New == "p1" }) {
				t.Fatalf("no traits/owner events: %+v", evs.Items)
			}

			list := func(token, query string) []string {
				var l api.NodeList
				e.mustJSON("GET", "/v1/nodes?"+query, token, "", 200, &l)
				var names []string
				for _, n := range l.Items {
					names = append(names, n.Name)
				}
				return names
			}
			if got := list(adminSecret, "required_trait=CUSTOM_GPU_A100&min_memory_mb=200000&cpu_arch=X86_64"); !slices.Equal(got, []string{"a100"}) {
				t.Fatalf("filtered by requirements: %q", got)
			}
			if got := list(adminSecret, "forbidden_trait=CUSTOM_GPU_A100,CUSTOM_X&owner=p2"); !slices.Equal(got, []string{"owned-by-p2"}) {
				t.Fatalf("filtered by forbidden traits and owner: %q", got)
			}
			if got := list(e.member, ""); slices.Contains(got, "owned-by-p2") || len(got) != 2 {
				t.Fatalf("p1's member lists %q", got)
			}
			if r := e.do("GET", "/v1/nodes/owned-by-p2", e.member, ""); r.status != 404 {
				t.Fatalf("p1's member reads p2's node: %d", r.status)
			}
			for _, c := range []struct{ query, field string }{{"min_cpus=many", "min_cpus"}, {"required_trait=a%20b", "required_trait[0]"},
				{"schedulable=maybe", "schedulable"}, {"owner=NOPE", "owner"}} {
				if r := e.do("GET", "/v1/nodes?"+c.query, adminSecret, ""); r.status != 400 || r.problem(t).Field != c.field {
					t.Errorf("list with %s: %d %s, want 400 on %s", c.query, r.status, r.body, c.field)
				}
			}

			// Capacity: p1 may use a100 and its own node, not p2's.
			capa := func(token, query string) api.CapacityReport {
				var c api.CapacityReport
				e.mustJSON("GET", "/v1/capacity?"+query, token, "", 200, &c)
				return c
			}
			// Which project owns the node p1 may not use is not said to p1.
			if raw := e.do("GET", "/v1/capacity?resource_class=gpu", e.member, ""); strings.Contains(string(raw.body), "p2") ||
				!strings.Contains(string(raw.body), `"message":"1 node is owned by another project"`) {
				t.Fatalf("p1's capacity names p2, or not the owned node: %s", raw.body)
			}
			c := capa(e.member, "resource_class=gpu")
			if c.Project != "p1" || c.Placeable != 2 || c.Capacity.Available != 2 || c.Capacity.Unsuited != 1 || c.QuotaRemaining != nil {
				t.Fatalf("p1 capacity: %+v", c)
			}
			c = capa(adminSecret, "project=p1&required_trait=CUSTOM_GPU_H100&min_memory_mb=300000")
			if c.Placeable != 0 || len(c.Capacity.Unmet) != 3 || c.Capacity.Unmet[1].Message != "3 nodes lack trait CUSTOM_GPU_H100" ||
				!strings.Contains(c.Message, "no node fits the instance's requirements: of 3 nodes, 3 have less than 300000 MB memory (or unknown), 3 lack trait CUSTOM_GPU_H100, 1 is owned by another project") {
				t.Fatalf("capacity for a shape nothing fits: %+v", c)
			}

			// An instance with requirements goes where they are met; one no
			// node meets is refused with the counts.
			var inst api.Instance
			e.mustJSON("POST", "/v1/instances", e.member, `{"name":"gpu","image":{"url":"https://i/x.iso"},
				"requirements":{"required_traits":["CUSTOM_GPU_A100"],"min_memory_mb":100000}}`, 201, &inst)
			if inst.NodeID != n.ID || !slices.Equal(inst.Requirements.RequiredTraits, []string{"CUSTOM_GPU_A100"}) || inst.Requirements.MinMemoryMB != 100000 || inst.ResourceClass != "gpu" {
				t.Fatalf("placed: %+v", inst)
			}
			r := e.do("POST", "/v1/instances", e.member, `{"name":"gpu2","resource_class":"gpu","image":{"url":"https://i/x.iso"},
				"requirements":{"required_traits":["CUSTOM_GPU_A100"]}}`)
			p := r.problem(t)
			if r.status != 409 || p.Code != api.CodeNoCapacity || p.Capacity == nil || p.Capacity.Unsuited != 2 ||
				!strings.Contains(p.Detail, "2 lack trait CUSTOM_GPU_A100") || !strings.Contains(p.Detail, "the 1 that fit cannot take it now: 1 deploying") {
				t.Fatalf("no fit: %d %s", r.status, r.body)
			}
			for _, c := range []struct{ req, field string }{
				{`{"required_traits":["A"],"forbidden_traits":["A"]}`, "forbidden_traits"},
				{`{"min_cpus":-1}`, "min_cpus"},
				{`{"cpu_arch":"x 86"}`, "cpu_arch"},
				{`{"nope":1}`, "requirements.nope"},
			} {
				r := e.do("POST", "/v1/instances", e.member, `{"name":"bad","resource_class":"gpu","image":{"url":"https://i/x.iso"},"requirements":`+c.req+`}`)
				if p := r.problem(t); r.status != 400 || p.Field != c.field {
					t.Errorf("requirements %s: %d %+v, want 400 on %s", c.req, r.status, p, c.field)
				}
			}
			if r := e.do("GET", "/v1/instances/bad", e.member, ""); r.status != 404 {
				t.Errorf("a refused create left an instance: %d", r.status)
			}
		})
	}
}
