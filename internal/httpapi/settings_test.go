package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// TestHardwareSettingsAPI: bios_settings and secure_boot are taken on
// POST (applied once the node is verified) and by PATCH, where naming
// them applies them (configuring, with its job) and a null stops
// managing one attribute; they are admin detail, hidden from members;
// every change is an event; bad names and IPMI nodes are refused by
// field, changing nothing.
func TestHardwareSettingsAPI(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			body := func(name, driver, extra string) string {
				return fmt.Sprintf(`{"name":%q,"driver":%q,"resource_class":"gpu",
					"bmc":{"address":"%s://10.0.2.%d","username":"admin","password":%q}%s}`, name, driver, map[string]string{"redfish": "https", "ipmi": "ipmi"}[driver], len(name), bmcPassword, extra)
			}
			var n api.Node
			e.mustJSON("POST", "/v1/nodes", adminSecret, body("hw", "redfish", `,"bios_settings":{"ProcVirtualization":"Disabled"},"secure_boot":true`), 201, &n)
			if n.BIOSSettings["ProcVirtualization"] != "Disabled" || n.SecureBoot == nil || !*n.SecureBoot || n.Hardware == nil ||
				!n.Hardware.Waiting || !slices.Equal(n.Hardware.Unmet, []string{"bios_settings.ProcVirtualization: want Disabled, is (not read)", "secure_boot: want true, is (not read)"}) {
				t.Fatalf("created: %+v %+v", n, n.Hardware)
			}
			var m api.Node
			e.mustJSON("GET", "/v1/nodes/hw", e.member, "", 200, &m)
			if len(m.BIOSSettings) != 0 || m.SecureBoot != nil || m.Hardware != nil {
				t.Fatalf("a member sees hardware settings: %+v %v %+v", m.BIOSSettings, m.SecureBoot, m.Hardware)
			}
			e.makeAvailable(n.ID)
			before := len(e.jobs.kinds())
			e.mustJSON("PATCH", "/v1/nodes/hw", adminSecret, `{"bios_settings":{"LogicalProc":"Disabled"}}`, 200, &n)
			if n.ProvisionState != api.StateConfiguring || len(n.BIOSSettings) != 2 || n.BIOSSettings["LogicalProc"] != "Disabled" {
				t.Fatalf("patched: %s %v", n.ProvisionState, n.BIOSSettings)
			}
			if k := e.jobs.kinds()[before:]; !slices.Contains(k, "configure") {
				t.Fatalf("jobs queued by the patch: %v", k)
			}
			n = api.Node{} // decoding into a map adds to it
			e.mustJSON("PATCH", "/v1/nodes/hw", adminSecret, `{"bios_settings":{"ProcVirtualization":null},"secure_boot":null}`, 200, &n)
			if len(n.BIOSSettings) != 1 || n.SecureBoot != nil {
				t.Fatalf("stopped managing: %v %v", n.BIOSSettings, n.SecureBoot)
			}
			// An unrelated change does not apply settings.
			e.makeAvailable(n.ID)
			e.mustJSON("PATCH", "/v1/nodes/hw", adminSecret, `{"resource_class":"cpu"}`, 200, &n)
			if n.ProvisionState != api.StateAvailable {
				t.Fatalf("an unrelated patch moved the node to %s", n.ProvisionState)
			}
			var evs api.EventList
			e.mustJSON("GET", "/v1/nodes/hw/events", adminSecret, "", 200, &evs)
			if !slices.ContainsFunc(evs.Items, func(ev api.Event) bool {
				return ev.Field == "bios_settings" && ev.New == "LogicalProc=Disabled ProcVirtualization=Disabled"
			}) {
				t.Fatalf("no bios_settings event: %+v", evs.Items)
			}
			for _, c := range []struct{ driver, extra, field string }{
				{"redfish", `,"bios_settings":{"1bad":"x"}`, "bios_settings"},
				{"redfish", `,"bios_settings":{"A":2}`, "bios_settings.A"},
				{"redfish", `,"bios_settings":{"A":"` + strings.Repeat("x", 1025) + `"}`, "bios_settings.A"},
				{"ipmi", `,"bios_settings":{"A":"x"}`, "bios_settings"},
				{"ipmi", `,"secure_boot":false`, "secure_boot"},
			} {
				r := e.do("POST", "/v1/nodes", adminSecret, body("bad", c.driver, c.extra))
				if p := r.problem(t); r.status != 400 || p.Field != c.field {
					t.Errorf("create with %s: %d %+v, want 400 on %s", c.extra, r.status, p, c.field)
				}
			}
			if r := e.do("GET", "/v1/nodes/bad", adminSecret, ""); r.status != 404 {
				t.Errorf("a refused create left a node: %d", r.status)
			}
		})
	}
}
