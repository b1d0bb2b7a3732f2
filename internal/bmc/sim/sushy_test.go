package sim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// The sushy dialect answers as sushy-tools was measured to answer.
func TestSushyDialect(t *testing.T) {
	f := start(t, sim.Options{Systems: 1, Dialect: sim.DialectSushy})
	const sys = "/redfish/v1/Systems/1"

	getBoot := func() map[string]any {
		t.Helper()
		st, body := redfish(t, f, http.MethodGet, sys, "")
		if st != http.StatusOK {
			t.Fatalf("GET system: %d %s", st, body)
		}
		var d struct {
			Boot         map[string]any
			VirtualMedia map[string]string
		}
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatal(err)
		}
		if d.VirtualMedia["@odata.id"] != sys+"/VirtualMedia" {
			t.Fatalf("VirtualMedia link %v, want it under the system", d.VirtualMedia)
		}
		return d.Boot
	}
	b := getBoot()
	if b["BootSourceOverrideEnabled"] != "Continuous" || b["BootSourceOverrideTarget"] != "Hdd" {
		t.Fatalf("fresh boot override %v", b)
	}
	allowed, _ := json.Marshal(b["BootSourceOverrideTarget@Redfish.AllowableValues"])
	if string(allowed) != `["Pxe","Cd","Hdd"]` {
		t.Fatalf("allowable targets %s", allowed)
	}

	// Enabled alone is refused, in sushy's error shape.
	st, body := redfish(t, f, http.MethodPatch, sys, `{"Boot":{"BootSourceOverrideEnabled":"Disabled"}}`)
	if st != http.StatusBadRequest || !strings.Contains(body, "Missing the BootSourceOverrideTarget and/or BootSourceOverrideMode element") ||
		!strings.Contains(body, `"code":"Base.1.0.GeneralError"`) {
		t.Fatalf("Disabled alone: %d %s", st, body)
	}
	// "Once" reads back Continuous; a target is taken whatever Enabled says.
	for _, tc := range []struct{ patch, target string }{
		{`{"Boot":{"BootSourceOverrideEnabled":"Once","BootSourceOverrideTarget":"Cd"}}`, "Cd"},
		{`{"Boot":{"BootSourceOverrideEnabled":"Disabled","BootSourceOverrideTarget":"Hdd"}}`, "Hdd"},
	} {
		if st, body := redfish(t, f, http.MethodPatch, sys, tc.patch); st != http.StatusNoContent {
			t.Fatalf("%s: %d %s", tc.patch, st, body)
		}
		if b := getBoot(); b["BootSourceOverrideEnabled"] != "Continuous" || b["BootSourceOverrideTarget"] != tc.target {
			t.Fatalf("after %s: %v", tc.patch, b)
		}
	}
	if st, _ := redfish(t, f, http.MethodPatch, sys, `{"Boot":{"BootSourceOverrideEnabled":"Disabled","BootSourceOverrideTarget":"None"}}`); st != http.StatusBadRequest {
		t.Fatalf("target None: %d, want 400 (sushy lists no None)", st)
	}

	// Virtual media: Cd and Floppy under the system, none under the Manager.
	st, body = redfish(t, f, http.MethodGet, sys+"/VirtualMedia", "")
	if st != http.StatusOK || !strings.Contains(body, sys+"/VirtualMedia/Cd") || !strings.Contains(body, sys+"/VirtualMedia/Floppy") {
		t.Fatalf("system VirtualMedia: %d %s", st, body)
	}
	if st, _ := redfish(t, f, http.MethodGet, "/redfish/v1/Managers/1/VirtualMedia", ""); st != http.StatusNotFound {
		t.Fatalf("Manager VirtualMedia: %d, want 404", st)
	}
	if _, body := redfish(t, f, http.MethodGet, "/redfish/v1/Managers/1", ""); strings.Contains(body, "VirtualMedia") {
		t.Fatalf("the Manager links virtual media: %s", body)
	}

	// InsertMedia fetches the image: 500 GeneralError when it cannot.
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/boot.iso" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("not much of an ISO"))
	}))
	defer img.Close()
	insert := func(image string) (int, string) {
		b, _ := json.Marshal(map[string]string{"Image": image})
		return redfish(t, f, http.MethodPost, sys+"/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia", string(b))
	}
	st, body = insert(img.URL + "/nope.iso")
	if st != http.StatusInternalServerError || !strings.Contains(body, "Failed fetching image from URL "+img.URL+"/nope.iso: 404 Client Error") {
		t.Fatalf("unfetchable image: %d %s", st, body)
	}
	if _, in, _ := f.Media("1"); in {
		t.Fatal("a failed insert left the CD inserted")
	}
	if st, body := insert(img.URL + "/boot.iso"); st != http.StatusNoContent {
		t.Fatalf("fetchable image: %d %s", st, body)
	}
	if got, in, _ := f.Media("1"); !in || got != img.URL+"/boot.iso" {
		t.Fatalf("CD holds %q inserted=%v", got, in)
	}

	// Reset: sushy's types, no PowerCycle.
	if st, _ := redfish(t, f, http.MethodPost, sys+"/Actions/ComputerSystem.Reset", `{"ResetType":"PowerCycle"}`); st != http.StatusBadRequest {
		t.Fatalf("PowerCycle: %d, want 400", st)
	}
	reset(t, f, "1", "ForceOn")
	if p, _ := f.Power("1"); p != "On" {
		t.Fatalf("power %s after ForceOn", p)
	}
}

func TestParseDialect(t *testing.T) {
	for in, want := range map[string]sim.Dialect{"": sim.DialectStandard, "standard": sim.DialectStandard, " Sushy ": sim.DialectSushy} {
		if got, err := sim.ParseDialect(in); err != nil || got != want {
			t.Errorf("ParseDialect(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := sim.ParseDialect("idrac"); err == nil {
		t.Error("unknown dialect accepted")
	}
	if _, err := sim.Start(sim.Options{Dialect: "idrac"}); err == nil {
		t.Error("Start accepted an unknown dialect")
	}
}
