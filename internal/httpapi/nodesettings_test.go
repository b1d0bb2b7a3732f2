package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// TestNodeCleanInspectSettingsAPI: clean_erase and inspect_on_enroll are
// taken on POST and shown (unset as "" and null), a merge patch changes
// them and unsets them ("" and null), each change is an event, and bad
// values are refused as problems naming the field and change nothing.
func TestNodeCleanInspectSettingsAPI(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			body := func(name, extra string) string {
				return fmt.Sprintf(`{"name":%q,"driver":"redfish","resource_class":"gpu",
					"bmc":{"address":"https://10.0.0.%d","username":"admin","password":%q}%s}`, name, len(name), bmcPassword, extra)
			}
			var n api.Node
			e.mustJSON("POST", "/v1/nodes", adminSecret, body("plain", ""), 201, &n)
			if n.CleanErase != api.CleanEraseDefault || n.InspectOnEnroll != nil {
				t.Fatalf("a node without settings: clean_erase %q, inspect_on_enroll %v; want \"\", null", n.CleanErase, n.InspectOnEnroll)
			}
			raw := e.do("GET", "/v1/nodes/plain", adminSecret, "")
			if !strings.Contains(string(raw.body), `"inspect_on_enroll":null`) || !strings.Contains(string(raw.body), `"clean_erase":""`) {
				t.Errorf("unset settings are not shown as \"\" and null: %s", raw.body)
			}

			e.mustJSON("POST", "/v1/nodes", adminSecret, body("own", `,"clean_erase":"full","inspect_on_enroll":false`), 201, &n)
			if n.CleanErase != api.CleanEraseFull || n.InspectOnEnroll == nil || *n.InspectOnEnroll {
				t.Fatalf("created: clean_erase %q, inspect_on_enroll %v; want full, false", n.CleanErase, n.InspectOnEnroll)
			}

			// Bad values on create: refused by field, no node.
			for _, c := range []struct{ extra, field string }{
				{`,"clean_erase":"wipe"`, "clean_erase"},
				{`,"clean_erase":true`, "clean_erase"},
				{`,"inspect_on_enroll":"yes"`, "inspect_on_enroll"},
			} {
				r := e.do("POST", "/v1/nodes", adminSecret, body("bad", c.extra))
				if p := r.problem(t); r.status != 400 || p.Code != api.CodeInvalid || p.Field != c.field {
					t.Errorf("create with %s: %d %+v, want 400 invalid %s", c.extra, r.status, p, c.field)
				}
			}
			if r := e.do("GET", "/v1/nodes/bad", adminSecret, ""); r.status != 404 {
				t.Errorf("a refused create left a node: %d", r.status)
			}

			// Changes, each an event.
			e.mustJSON("PATCH", "/v1/nodes/own", adminSecret, `{"clean_erase":"off","inspect_on_enroll":true}`, 200, &n)
			if n.CleanErase != api.CleanEraseOff || n.InspectOnEnroll == nil || !*n.InspectOnEnroll {
				t.Fatalf("patched: clean_erase %q, inspect_on_enroll %v; want off, true", n.CleanErase, n.InspectOnEnroll)
			}
			e.mustJSON("PATCH", "/v1/nodes/own", adminSecret, `{"inspect_on_enroll":null}`, 200, &n)
			if n.CleanErase != api.CleanEraseOff || n.InspectOnEnroll != nil {
				t.Fatalf("inspect_on_enroll unset: clean_erase %q, inspect_on_enroll %v; want off, null", n.CleanErase, n.InspectOnEnroll)
			}

			// Bad values on patch: refused by field, nothing changes.
			for _, c := range []struct{ patch, field string }{
				{`{"clean_erase":"Full"}`, "clean_erase"},
				{`{"clean_erase":"full","inspect_on_enroll":1}`, "inspect_on_enroll"},
			} {
				r := e.do("PATCH", "/v1/nodes/own", adminSecret, c.patch)
				if p := r.problem(t); r.status != 400 || p.Code != api.CodeInvalid || p.Field != c.field {
					t.Errorf("patch %s: %d %+v, want 400 invalid %s", c.patch, r.status, p, c.field)
				}
			}
			var same api.Node
			e.mustJSON("GET", "/v1/nodes/own", adminSecret, "", 200, &same)
			if same.Version != n.Version || same.CleanErase != api.CleanEraseOff {
				t.Fatalf("a refused patch changed the node: version %d → %d, clean_erase %q", n.Version, same.Version, same.CleanErase)
			}

			e.mustJSON("PATCH", "/v1/nodes/own", adminSecret, `{"clean_erase":""}`, 200, &n)
			if n.CleanErase != api.CleanEraseDefault {
				t.Fatalf("clean_erase unset: %q", n.CleanErase)
			}

			var evs api.EventList
			e.mustJSON("GET", "/v1/nodes/own/events", adminSecret, "", 200, &evs)
			var got []string
			for _, ev := range evs.Items {
				if ev.Type == "updated" && (ev.Field == "clean_erase" || ev.Field == "inspect_on_enroll") {
					got = append(got, ev.Field+":"+ev.Old+"→"+ev.New+" by "+ev.Actor)
				}
			}
			want := []string{"clean_erase:full→off", "inspect_on_enroll:false→true", "inspect_on_enroll:true→", "clean_erase:off→"}
			if len(got) != len(want) {
				t.Fatalf("setting events %q, want %q", got, want)
			}
			for i, w := range want {
				if !strings.HasPrefix(got[i], w+" by ") || strings.HasSuffix(got[i], " by ") {
					t.Errorf("event %d: %q, want %q by the admin's token", i, got[i], w)
				}
			}
		})
	}
}
