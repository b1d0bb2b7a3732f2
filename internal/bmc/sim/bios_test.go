package sim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// rf sends one authenticated Redfish request and decodes the answer (nil
// for an empty body).
func rf(t *testing.T, f *sim.Fleet, method, path string, body any, hdr ...string) (int, map[string]any, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("admin", "password")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var d map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, d, resp.Header
}

func messageIDs(d map[string]any) []string {
	e, _ := d["error"].(map[string]any)
	infos, _ := e["@Message.ExtendedInfo"].([]any)
	var ids []string
	for _, i := range infos {
		m, _ := i.(map[string]any)
		id, _ := m["MessageId"].(string)
		msg, _ := m["Message"].(string)
		ids = append(ids, id+": "+msg)
	}
	return ids
}

func link(d map[string]any, keys ...string) string {
	for _, k := range keys[:len(keys)-1] {
		d, _ = d[k].(map[string]any)
	}
	l, _ := d[keys[len(keys)-1]].(map[string]any)
	s, _ := l["@odata.id"].(string)
	return s
}

// The standard Bios: linked from the system, a settings object that
// takes only what the registry allows, pending until a reset, applied by
// it and then empty.
func TestBIOSPendingAppliedAtReset(t *testing.T) {
	f := start(t, sim.Options{})
	sys := f.SystemIDs()[0]
	_, sd, _ := rf(t, f, "GET", sys, nil)
	bios := link(sd, "Bios")
	if bios != sys+"/Bios" || link(sd, "SecureBoot") != sys+"/SecureBoot" {
		t.Fatalf("system links Bios %q, SecureBoot %q", bios, link(sd, "SecureBoot"))
	}
	_, bd, _ := rf(t, f, "GET", bios, nil)
	settings := link(bd, "@Redfish.Settings", "SettingsObject")
	if settings != bios+"/Settings" || bd["AttributeRegistry"] != "BiosAttributeRegistrySim.v1_0_0" {
		t.Fatalf("bios: %v", bd)
	}
	if at := bd["@Redfish.Settings"].(map[string]any)["SupportedApplyTimes"]; !slices.Equal(toStrings(at), []string{"OnReset"}) {
		t.Fatalf("SupportedApplyTimes %v", at)
	}
	if st, _, _ := rf(t, f, "PATCH", bios, map[string]any{"Attributes": map[string]any{"MemTest": true}}); st != http.StatusMethodNotAllowed {
		t.Fatalf("PATCH of the Bios itself: %d, want 405", st)
	}

	// Refusals name the attribute and the reason; nothing is pending.
	refusals := []struct {
		attrs map[string]any
		want  string
	}{
		{map[string]any{"NoSuchThing": "x"}, "PropertyUnknown: The property NoSuchThing"},
		{map[string]any{"ProcVirtualization": "Maybe"}, `PropertyValueNotInList: The value "Maybe" for the property ProcVirtualization`},
		{map[string]any{"NumaNodesPerSocket": "2"}, `PropertyValueTypeError: The value "2" for the property NumaNodesPerSocket`},
		{map[string]any{"NumaNodesPerSocket": 9}, "PropertyValueOutOfRange: The value 9 for the property NumaNodesPerSocket"},
		{map[string]any{"MemTest": "true"}, "PropertyValueTypeError"},
		{map[string]any{"AssetTag": strings.Repeat("x", 33)}, "StringValueTooLong"},
		{map[string]any{"BiosVersion": "9"}, "PropertyNotWritable: The property BiosVersion is a read only property"},
	}
	for _, c := range refusals {
		st, d, _ := rf(t, f, "PATCH", settings, map[string]any{"Attributes": c.attrs})
		if ids := messageIDs(d); st != http.StatusBadRequest || len(ids) != 1 || !strings.Contains(ids[0], c.want) {
			t.Fatalf("%v: %d %v, want 400 %q", c.attrs, st, ids, c.want)
		}
	}
	// Two faults, two messages, and the valid value of the same PATCH is
	// not taken either.
	st, d, _ := rf(t, f, "PATCH", settings, map[string]any{"Attributes": map[string]any{"LogicalProc": "Off", "MemTest": 1, "SriovGlobalEnable": "Enabled"}})
	if ids := messageIDs(d); st != http.StatusBadRequest || len(ids) != 2 {
		t.Fatalf("two faults: %d %v", st, ids)
	}
	if _, p, _ := f.BIOS(sys); len(p) != 0 {
		t.Fatalf("pending after refusals: %v", p)
	}

	body := map[string]any{
		"Attributes":                 map[string]any{"ProcVirtualization": "Disabled", "NumaNodesPerSocket": 2, "MemTest": true, "AssetTag": "rack-7"},
		"@Redfish.SettingsApplyTime": map[string]any{"ApplyTime": "OnReset"},
	}
	if st, d, _ := rf(t, f, "PATCH", settings, body); st != http.StatusNoContent {
		t.Fatalf("PATCH settings: %d %v", st, d)
	}
	_, sdoc, _ := rf(t, f, "GET", settings, nil)
	if got := sdoc["Attributes"].(map[string]any); len(got) != 4 || got["NumaNodesPerSocket"] != float64(2) {
		t.Fatalf("settings object shows %v", got)
	}
	attrs, pending, _ := f.BIOS(sys)
	if attrs["ProcVirtualization"] != "Enabled" || len(pending) != 4 {
		t.Fatalf("before the reset: in effect %v, pending %v", attrs, pending)
	}
	// Power on from off is a reset.
	if st, _, _ := rf(t, f, "POST", sys+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "On"}); st != http.StatusNoContent {
		t.Fatalf("reset: %d", st)
	}
	attrs, pending, _ = f.BIOS(sys)
	if attrs["ProcVirtualization"] != "Disabled" || attrs["NumaNodesPerSocket"] != int64(2) || attrs["MemTest"] != true ||
		attrs["AssetTag"] != "rack-7" || len(pending) != 0 {
		t.Fatalf("after the reset: in effect %v, pending %v", attrs, pending)
	}
	_, sdoc, _ = rf(t, f, "GET", settings, nil)
	if got := sdoc["Attributes"].(map[string]any); len(got) != 0 {
		t.Fatalf("settings object after the reset: %v", got)
	}
	_, bd, _ = rf(t, f, "GET", bios, nil)
	if bd["Attributes"].(map[string]any)["AssetTag"] != "rack-7" {
		t.Fatalf("Bios after the reset: %v", bd["Attributes"])
	}

	// A pending value survives a power off and lands at the next restart.
	rf(t, f, "PATCH", settings, map[string]any{"Attributes": map[string]any{"LogicalProc": "Disabled"}})
	rf(t, f, "POST", sys+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "ForceOff"})
	if attrs, _, _ := f.BIOS(sys); attrs["LogicalProc"] != "Enabled" {
		t.Fatal("applied at power off")
	}
	rf(t, f, "POST", sys+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "On"})
	rf(t, f, "POST", sys+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "ForceRestart"})
	if attrs, _, _ := f.BIOS(sys); attrs["LogicalProc"] != "Disabled" {
		t.Fatal("not applied at the next power-on")
	}
	if st, _, _ := rf(t, f, "PATCH", settings, map[string]any{"Attributes": map[string]any{}, "@Redfish.SettingsApplyTime": map[string]any{"ApplyTime": "Immediate"}}); st != http.StatusBadRequest {
		t.Fatalf("an apply time not offered: %d", st)
	}
}

func toStrings(v any) []string {
	a, _ := v.([]any)
	out := make([]string, len(a))
	for i, x := range a {
		out[i], _ = x.(string)
	}
	return out
}

// The registry is served as a MessageRegistryFile whose Location has the
// AttributeRegistry; a dialect may serve none.
func TestBIOSRegistry(t *testing.T) {
	f := start(t, sim.Options{})
	_, root, _ := rf(t, f, "GET", "/redfish/v1", nil)
	_, coll, _ := rf(t, f, "GET", link(root, "Registries"), nil)
	members := coll["Members"].([]any)
	if len(members) != 1 {
		t.Fatalf("registries %v", coll)
	}
	_, file, _ := rf(t, f, "GET", members[0].(map[string]any)["@odata.id"].(string), nil)
	if file["Id"] != "BiosAttributeRegistrySim.v1_0_0" {
		t.Fatalf("registry file %v", file)
	}
	uri := file["Location"].([]any)[0].(map[string]any)["Uri"].(string)
	st, reg, _ := rf(t, f, "GET", uri, nil)
	if st != http.StatusOK || reg["Id"] != "BiosAttributeRegistrySim.v1_0_0" {
		t.Fatalf("registry at %s: %d %v", uri, st, reg)
	}
	byName := map[string]map[string]any{}
	for _, a := range reg["RegistryEntries"].(map[string]any)["Attributes"].([]any) {
		m := a.(map[string]any)
		byName[m["AttributeName"].(string)] = m
	}
	if n := byName["NumaNodesPerSocket"]; n["Type"] != "Integer" || n["LowerBound"] != float64(1) || n["UpperBound"] != float64(4) {
		t.Fatalf("NumaNodesPerSocket %v", n)
	}
	if b := byName["BootMode"]; b["Type"] != "Enumeration" || len(b["Value"].([]any)) != 2 {
		t.Fatalf("BootMode %v", b)
	}
	if byName["SystemModelName"]["ReadOnly"] != true || byName["AssetTag"]["MaxLength"] != float64(32) {
		t.Fatal("read-only or max length missing")
	}

	none := start(t, sim.Options{Tweak: func(q *sim.Quirks) { q.BIOS.NoRegistry = true }})
	_, coll, _ = rf(t, none, "GET", "/redfish/v1/Registries", nil)
	if len(coll["Members"].([]any)) != 0 {
		t.Fatalf("NoRegistry lists %v", coll["Members"])
	}
	if st, _, _ := rf(t, none, "GET", "/redfish/v1/Registries/BiosAttributeRegistrySim.v1_0_0", nil); st != http.StatusNotFound {
		t.Fatalf("NoRegistry serves the file: %d", st)
	}
}

// Secure Boot: the setting reads back at once, the running boot follows
// at the next reset; a system in Legacy boot mode refuses it.
func TestSecureBoot(t *testing.T) {
	f := start(t, sim.Options{Systems: 2})
	sys := f.SystemIDs()[0]
	sb := sys + "/SecureBoot"
	if st, _, _ := rf(t, f, "PATCH", sb, map[string]any{"SecureBootEnable": true}); st != http.StatusNoContent {
		t.Fatalf("PATCH: %d", st)
	}
	_, d, _ := rf(t, f, "GET", sb, nil)
	if d["SecureBootEnable"] != true || d["SecureBootCurrentBoot"] != "Disabled" || d["SecureBootMode"] != "UserMode" {
		t.Fatalf("before the reset: %v", d)
	}
	rf(t, f, "POST", sys+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "On"})
	if on, now, _ := f.SecureBoot(sys); !on || !now {
		t.Fatalf("after the reset: enable %v current %v", on, now)
	}
	if st, _, _ := rf(t, f, "PATCH", sb, map[string]any{"SecureBootCurrentBoot": "Disabled"}); st != http.StatusBadRequest {
		t.Fatalf("SecureBootCurrentBoot written: %d", st)
	}

	// BootMode Bios (pending, applied at the reset) puts the system in
	// Legacy mode, where Secure Boot is off and cannot be enabled.
	other := f.SystemIDs()[1]
	rf(t, f, "PATCH", other+"/Bios/Settings", map[string]any{"Attributes": map[string]any{"BootMode": "Bios"}})
	rf(t, f, "POST", other+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "On"})
	if mode, _ := f.BootMode(other); mode != "Legacy" {
		t.Fatalf("boot mode %s after BootMode Bios", mode)
	}
	st, d, _ := rf(t, f, "PATCH", other+"/SecureBoot", map[string]any{"SecureBootEnable": true})
	if ids := messageIDs(d); st != http.StatusBadRequest || len(ids) != 1 || !strings.Contains(ids[0], "UEFI") {
		t.Fatalf("Secure Boot on a Legacy system: %d %v", st, ids)
	}
	if err := f.SetSecureBoot(other, true); err == nil {
		t.Fatal("out-of-band Secure Boot on a Legacy system")
	}
}

// Out-of-band changes are in effect at once (drift), checked like a PATCH,
// shown by the control API, and kept in the state file.
func TestBIOSOutOfBand(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	f, err := sim.Start(sim.Options{StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	sys := f.SystemIDs()[0]
	if err := f.SetBIOSAttribute(sys, "SriovGlobalEnable", "Enabled"); err != nil {
		t.Fatal(err)
	}
	if err := f.SetBIOSAttribute(sys, "NumaNodesPerSocket", 5); err == nil {
		t.Fatal("out of bounds taken")
	}
	if err := f.SetBIOSAttribute(sys, "Nope", 1); err == nil {
		t.Fatal("unknown attribute taken")
	}
	resp, err := http.Post(f.URL()+"/sim/systems/1/bios", "application/json", strings.NewReader(`{"Attributes":{"NumaNodesPerSocket":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	var st sim.SystemStatus
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || st.BIOS["NumaNodesPerSocket"] != float64(3) || st.BIOS["SriovGlobalEnable"] != "Enabled" {
		t.Fatalf("control API: %d %v", resp.StatusCode, st.BIOS)
	}
	resp, _ = http.Post(f.URL()+"/sim/systems/1/bios", "application/json", strings.NewReader(`{"Attributes":{"MemTest":"yes"}}`))
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("control API took a wrong type: %d", resp.StatusCode)
	}
	resp, _ = http.Post(f.URL()+"/sim/systems/1/secure-boot", "application/json", strings.NewReader(`{"enabled":true}`))
	resp.Body.Close()
	_, bd, _ := rf(t, f, "GET", sys+"/Bios", nil)
	if bd["Attributes"].(map[string]any)["NumaNodesPerSocket"] != float64(3) {
		t.Fatalf("Bios does not show the change: %v", bd["Attributes"])
	}
	rf(t, f, "PATCH", sys+"/Bios/Settings", map[string]any{"Attributes": map[string]any{"LogicalProc": "Disabled"}})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	g := start(t, sim.Options{StateFile: state})
	attrs, pending, _ := g.BIOS(sys)
	if attrs["NumaNodesPerSocket"] != int64(3) || attrs["SriovGlobalEnable"] != "Enabled" || pending["LogicalProc"] != "Disabled" {
		t.Fatalf("after a restart of the fleet: %v, pending %v", attrs, pending)
	}
	if on, now, _ := g.SecureBoot(sys); !on || !now {
		t.Fatal("Secure Boot not kept")
	}
}

// Dialects: where the settings object is and what it shows.
func TestBIOSDialects(t *testing.T) {
	cases := []struct {
		d        sim.Dialect
		settings string // relative to the Bios; "" no link
		full     bool
	}{
		{sim.DialectIDRAC9, "Settings", false},
		{sim.DialectILO5, "settings/", true},
		{sim.DialectXCC, "Pending", true},
		{sim.DialectX12, "SD", false},
		{sim.DialectAMI, "", false},
		{sim.DialectSushy, "Settings", true},
	}
	for _, c := range cases {
		t.Run(string(c.d), func(t *testing.T) {
			f := start(t, sim.Options{Dialect: c.d})
			sys := f.SystemIDs()[0]
			_, sd, _ := rf(t, f, "GET", sys, nil)
			bios := link(sd, "Bios")
			_, bd, hdr := rf(t, f, "GET", bios, nil)
			got := link(bd, "@Redfish.Settings", "SettingsObject")
			if c.settings == "" {
				if got != "" {
					t.Fatalf("settings link %q, want none", got)
				}
				got = strings.TrimSuffix(bios, "/") + "/SD"
			} else if got != strings.TrimSuffix(bios, "/")+"/"+c.settings {
				t.Fatalf("settings object %q, want .../%s", got, c.settings)
			}
			_, sdoc, _ := rf(t, f, "GET", got, nil)
			attrs, _ := sdoc["Attributes"].(map[string]any)
			if c.full != (len(attrs) > 0) {
				t.Fatalf("settings object with nothing pending: %v", sdoc)
			}
			hdrs := []string{"If-Match", hdr.Get("ETag")}
			name := "ProcTurboMode"
			st, d, _ := rf(t, f, "PATCH", got, map[string]any{"Attributes": map[string]any{name: "Disabled"}}, hdrs...)
			if st == http.StatusPreconditionFailed {
				// The settings object has its own ETag where the Bios has another.
				st, d, _ = rf(t, f, "PATCH", got, map[string]any{"Attributes": map[string]any{name: "Disabled"}}, "If-Match", "*")
			}
			if st != http.StatusNoContent {
				t.Fatalf("PATCH %s: %d %v", got, st, d)
			}
			a, p, _ := f.BIOS(sys)
			if c.d == sim.DialectSushy {
				if a[name] != "Disabled" || len(p) != 0 {
					t.Fatalf("sushy-tools applies at once: %v pending %v", a, p)
				}
				return
			}
			if p[name] != "Disabled" {
				t.Fatalf("pending %v", p)
			}
			rf(t, f, "POST", sys+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "On"})
			a, p, _ = f.BIOS(sys)
			if c.d == sim.DialectIDRAC9 {
				// Without @Redfish.SettingsApplyTime iDRAC schedules no job:
				// the value stays pending across resets.
				if a[name] != "Enabled" || p[name] != "Disabled" {
					t.Fatalf("iDRAC applied without a job: %v pending %v", a, p)
				}
				st, _, _ := rf(t, f, "PATCH", got, map[string]any{"Attributes": map[string]any{name: "Disabled"}, "@Redfish.SettingsApplyTime": map[string]any{"ApplyTime": "OnReset"}})
				if st != http.StatusNoContent {
					t.Fatalf("PATCH with an apply time: %d", st)
				}
				if st, _, _ := rf(t, f, "PATCH", got, map[string]any{"Attributes": map[string]any{"MemTest": true}}); st != http.StatusBadRequest {
					t.Fatalf("a PATCH while the job is scheduled: %d, want 400", st)
				}
				rf(t, f, "POST", sys+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "ForceRestart"})
				a, p, _ = f.BIOS(sys)
			}
			if a[name] != "Disabled" || len(p) != 0 {
				t.Fatalf("after the reset: %v pending %v", a, p)
			}
			if c.d == sim.DialectAMI {
				if st, _, _ := rf(t, f, "GET", got, nil); st != http.StatusNotFound {
					t.Fatalf("AMI's SD with nothing pending: %d, want 404", st)
				}
			}
		})
	}
}
