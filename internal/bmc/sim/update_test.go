package sim_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// images serves firmware images by path (the sim's text format).
func images(t *testing.T, files map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// followMonitor polls a task monitor until it stops answering 202 and
// returns that answer.
func followMonitor(t *testing.T, f *sim.Fleet, monitor string) (int, map[string]any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, d, _ := rf(t, f, "GET", monitor, nil)
		if st != http.StatusAccepted {
			return st, d
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still running: %v", monitor, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func taskMessages(d map[string]any) string {
	var out []string
	msgs, _ := d["Messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		out = append(out, mm["MessageId"].(string)+": "+mm["Message"].(string))
	}
	return strings.Join(out, "; ")
}

func quickTasks(q *sim.Quirks) { q.TaskDelay = 20 * time.Millisecond }

// The UpdateService is linked from the root; its SimpleUpdate action
// lists the transfer protocols inline and in its ActionInfo; every
// system has BIOS, BMC and an integrated NIC (not updateable), related
// to its Bios, Manager and System; requests that cannot work are refused
// before any task, naming the parameter.
func TestSimpleUpdateValidation(t *testing.T) {
	f := start(t, sim.Options{Tweak: quickTasks})
	_, root, _ := rf(t, f, "GET", "/redfish/v1/", nil)
	if link(root, "UpdateService") != "/redfish/v1/UpdateService" {
		t.Fatalf("root: %v", root)
	}
	_, us, _ := rf(t, f, "GET", "/redfish/v1/UpdateService", nil)
	action, _ := us["Actions"].(map[string]any)["#UpdateService.SimpleUpdate"].(map[string]any)
	if action["target"] != "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate" ||
		strings.Join(toStrings(action["TransferProtocol@Redfish.AllowableValues"]), ",") != "HTTP,HTTPS" {
		t.Fatalf("action %v", action)
	}
	if st, info, _ := rf(t, f, "GET", action["@Redfish.ActionInfo"].(string), nil); st != http.StatusOK || len(info["Parameters"].([]any)) != 3 {
		t.Fatalf("ActionInfo %d %v", st, info)
	}
	_, inv, _ := rf(t, f, "GET", link(us, "FirmwareInventory"), nil)
	if n := len(inv["Members"].([]any)); n != 3 {
		t.Fatalf("inventory %v", inv)
	}
	want := map[string]struct {
		updateable bool
		related    string
	}{
		"BIOS": {true, "/redfish/v1/Systems/1/Bios"}, "BMC": {true, "/redfish/v1/Managers/1"}, "NIC.Integrated.1": {false, "/redfish/v1/Systems/1"},
	}
	for id, w := range want {
		_, e, _ := rf(t, f, "GET", "/redfish/v1/UpdateService/FirmwareInventory/"+id, nil)
		rel, _ := e["RelatedItem"].([]any)
		if e["Version"] != "1.0.0-sim" || e["Updateable"] != w.updateable || len(rel) != 1 || rel[0].(map[string]any)["@odata.id"] != w.related {
			t.Fatalf("%s: %v", id, e)
		}
	}

	const target = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"
	for _, c := range []struct {
		body any
		want string
	}{
		{map[string]any{}, "ActionParameterMissing: The action UpdateService.SimpleUpdate requires the parameter ImageURI"},
		{map[string]any{"ImageURI": "http://x/fw.bin", "TransferProtocol": "FTP"}, "ActionParameterValueNotInList: The value FTP for the parameter TransferProtocol"},
		{map[string]any{"ImageURI": "ftp://x/fw.bin"}, "ActionParameterValueNotInList: The protocol ftp of the parameter ImageURI"},
		{map[string]any{"ImageURI": "x/fw.bin"}, "ActionParameterValueFormatError: The value for the parameter ImageURI"},
		{map[string]any{"ImageURI": "http://x/fw.bin", "Targets": []string{"/redfish/v1/Systems/1"}}, "ActionParameterValueNotInList: The value /redfish/v1/Systems/1 for the parameter Targets"},
		{map[string]any{"ImageURI": "http://x/fw.bin", "Targets": []string{"/redfish/v1/UpdateService/FirmwareInventory/NIC.Integrated.1"}}, "ActionParameterValueError: The value /redfish/v1/UpdateService/FirmwareInventory/NIC.Integrated.1 for the parameter Targets"},
		{map[string]any{"ImageURI": "http://x/fw.bin", "Targets": "BIOS"}, "ActionParameterValueTypeError: The value \"BIOS\" for the parameter Targets"},
		{map[string]any{"ImageURI": "http://x/fw.bin", "Force": true}, "ActionParameterUnknown: The action UpdateService.SimpleUpdate was submitted with the invalid parameter Force"},
	} {
		st, d, _ := rf(t, f, "POST", target, c.body)
		if ids := strings.Join(messageIDs(d), "; "); st != http.StatusBadRequest || !strings.Contains(ids, c.want) {
			t.Errorf("%v: %d %s, want 400 %q", c.body, st, ids, c.want)
		}
	}
}

// A BIOS image runs as a task: the version is staged when it completes
// (Update.1.0.AwaitToActivate) and applies at the next power-on, where
// the inventory, the ComputerSystem and the Bios all show it. A host and
// path with TransferProtocol is an URL of that protocol.
func TestSimpleUpdateBIOSPendingUntilReset(t *testing.T) {
	img := images(t, map[string]string{"/bios.txt": "# BIOS\ncomponent=BIOS\nversion=2.1.0\n"})
	f := start(t, sim.Options{Tweak: quickTasks})
	sys := f.SystemIDs()[0]
	st, task, hdr := rf(t, f, "POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate", map[string]any{
		"ImageURI": strings.TrimPrefix(img.URL, "http://") + "/bios.txt", "TransferProtocol": "HTTP",
		"Targets": []string{"/redfish/v1/UpdateService/FirmwareInventory/BIOS"},
	})
	if st != http.StatusAccepted || hdr.Get("Location") == "" || task["TaskState"] != "Running" {
		t.Fatalf("SimpleUpdate: %d %v %v", st, hdr, task)
	}
	if st, _ := followMonitor(t, f, hdr.Get("Location")); st != http.StatusNoContent {
		t.Fatalf("outcome %d", st)
	}
	_, task, _ = rf(t, f, "GET", "/redfish/v1/TaskService/Tasks/"+task["Id"].(string), nil)
	if task["TaskState"] != "Completed" || !strings.Contains(taskMessages(task), "Update.1.0.AwaitToActivate: Awaiting for an action to proceed with activating image bios.txt on BIOS") {
		t.Fatalf("task %v", task)
	}
	cur, pending, _ := f.Firmware(sys)
	if cur["BIOS"] != "1.0.0-sim" || pending["BIOS"] != "2.1.0" {
		t.Fatalf("before the reset: %v pending %v", cur, pending)
	}
	if _, e, _ := rf(t, f, "GET", "/redfish/v1/UpdateService/FirmwareInventory/BIOS", nil); e["Version"] != "1.0.0-sim" {
		t.Fatalf("inventory shows %v before the reset", e["Version"])
	}
	if st, _, _ := rf(t, f, "POST", sys+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "On"}); st != http.StatusNoContent {
		t.Fatalf("reset %d", st)
	}
	cur, pending, _ = f.Firmware(sys)
	_, e, _ := rf(t, f, "GET", "/redfish/v1/UpdateService/FirmwareInventory/BIOS", nil)
	_, sd, _ := rf(t, f, "GET", sys, nil)
	attrs, _, _ := f.BIOS(sys)
	if cur["BIOS"] != "2.1.0" || len(pending) != 0 || e["Version"] != "2.1.0" || sd["BiosVersion"] != "2.1.0" || attrs["BiosVersion"] != "2.1.0" {
		t.Fatalf("after the reset: %v pending %v, inventory %v, system %v, attribute %v", cur, pending, e["Version"], sd["BiosVersion"], attrs["BiosVersion"])
	}
}

// A BMC image lands when its task completes, and the Manager is away
// (503, Retry-After) for a moment: the BMC restarts. Without Targets
// the image applies to every system.
func TestSimpleUpdateBMCRestarts(t *testing.T) {
	img := images(t, map[string]string{"/bmc.txt": "component=BMC\nversion=3.0.0"})
	f := start(t, sim.Options{Systems: 2, Tweak: func(q *sim.Quirks) { quickTasks(q); q.Update.BMCRestart = 400 * time.Millisecond }})
	_, inv, _ := rf(t, f, "GET", "/redfish/v1/UpdateService/FirmwareInventory", nil)
	if n := len(inv["Members"].([]any)); n != 6 || link(map[string]any{"m": inv["Members"].([]any)[0]}, "m") != "/redfish/v1/UpdateService/FirmwareInventory/1-BIOS" {
		t.Fatalf("two systems' inventory: %v", inv)
	}
	_, _, hdr := rf(t, f, "POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate", map[string]any{"ImageURI": img.URL + "/bmc.txt"})
	if st, _ := followMonitor(t, f, hdr.Get("Location")); st != http.StatusNoContent {
		t.Fatalf("outcome %d", st)
	}
	st, _, h := rf(t, f, "GET", "/redfish/v1/Managers/1", nil)
	if st != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Fatalf("Manager right after its update: %d %v", st, h)
	}
	time.Sleep(450 * time.Millisecond)
	for _, id := range []string{"1", "2"} {
		st, m, _ := rf(t, f, "GET", "/redfish/v1/Managers/"+id, nil)
		cur, _, _ := f.Firmware(id)
		if st != http.StatusOK || m["FirmwareVersion"] != "3.0.0" || cur["BMC"] != "3.0.0" || cur["BIOS"] != "1.0.0-sim" {
			t.Fatalf("system %s: %d %v, firmware %v", id, st, m["FirmwareVersion"], cur)
		}
	}
}

// Tasks fail, with a message naming the image, when the image cannot be
// fetched (nothing listening, 404), is no firmware image, is refused
// (fail=), or is not firmware of the target; nothing changes.
func TestSimpleUpdateTaskFailures(t *testing.T) {
	img := images(t, map[string]string{
		"/junk.bin": "\x7fELF not a firmware image",
		"/bad.txt":  "component=BIOS\nversion=9\nfail=signature check failed",
		"/bmc.txt":  "component=BMC\nversion=3.0.0",
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/fw.txt"
	ln.Close()
	f := start(t, sim.Options{Tweak: quickTasks})
	for _, c := range []struct {
		image, target, want string
	}{
		{dead, "", "The image at " + dead + " could not be fetched: "},
		{img.URL + "/missing.txt?key=secret", "", "The image at " + img.URL + "/missing.txt could not be fetched: it answered HTTP 404 Not Found."},
		{img.URL + "/junk.bin", "", "The image at " + img.URL + "/junk.bin is not a firmware image this BMC can apply."},
		{img.URL + "/bad.txt", "", "The BMC did not apply the image at " + img.URL + "/bad.txt (BIOS): signature check failed"},
		{img.URL + "/bmc.txt", "/redfish/v1/UpdateService/FirmwareInventory/BIOS", "is BMC firmware and does not apply to BIOS"},
	} {
		body := map[string]any{"ImageURI": c.image}
		if c.target != "" {
			body["Targets"] = []string{c.target}
		}
		st, task, hdr := rf(t, f, "POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate", body)
		if st != http.StatusAccepted {
			t.Fatalf("%s: %d", c.image, st)
		}
		st, out := followMonitor(t, f, hdr.Get("Location"))
		_, task, _ = rf(t, f, "GET", "/redfish/v1/TaskService/Tasks/"+task["Id"].(string), nil)
		if st != http.StatusInternalServerError || task["TaskState"] != "Exception" || !strings.Contains(taskMessages(task), c.want) ||
			!strings.Contains(strings.Join(messageIDs(out), ";"), c.want) || strings.Contains(taskMessages(task), "secret") {
			t.Errorf("%s: outcome %d %v, task %s %s; want %q", c.image, st, messageIDs(out), task["TaskState"], taskMessages(task), c.want)
		}
	}
	if cur, pending, _ := f.Firmware("1"); cur["BIOS"] != "1.0.0-sim" || cur["BMC"] != "1.0.0-sim" || len(pending) != 0 {
		t.Fatalf("firmware after failed updates: %v pending %v", cur, pending)
	}
}

// Versions changed out of band show everywhere at once; the control API
// shows and sets them.
func TestFirmwareOutOfBand(t *testing.T) {
	f := start(t, sim.Options{})
	if err := f.SetFirmwareVersion("1", "BIOS", "1.5.0"); err != nil {
		t.Fatal(err)
	}
	if err := f.SetFirmwareVersion("1", "GPU", "1"); err == nil || !strings.Contains(err.Error(), `no firmware component "GPU"`) {
		t.Fatalf("unknown component: %v", err)
	}
	attrs, _, _ := f.BIOS("1")
	_, e, _ := rf(t, f, "GET", "/redfish/v1/UpdateService/FirmwareInventory/BIOS", nil)
	if attrs["BiosVersion"] != "1.5.0" || e["Version"] != "1.5.0" {
		t.Fatalf("attribute %v, inventory %v", attrs["BiosVersion"], e["Version"])
	}
	resp, err := http.Post(f.URL()+"/sim/systems/1/firmware", "application/json", strings.NewReader(`{"component":"BMC","version":"4.0"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, st, _ := rf(t, f, "GET", "/sim/systems/1", nil)
	fw, _ := st["firmware"].(map[string]any)
	if resp.StatusCode != http.StatusOK || fw["BMC"] != "4.0" || fw["BIOS"] != "1.5.0" {
		t.Fatalf("control API: %d %v", resp.StatusCode, st["firmware"])
	}
}

// iDRAC ignores Targets, names entries by component id and version, and
// keeps a BIOS update's task Pending ("Task successfully scheduled.")
// until the reset that applies it.
func TestSimpleUpdateIDRAC(t *testing.T) {
	img := images(t, map[string]string{"/bios.txt": "component=BIOS\nversion=2.1.0"})
	f := start(t, sim.Options{Dialect: sim.DialectIDRAC9, Tweak: quickTasks})
	sys := f.SystemIDs()[0]
	if st, e, _ := rf(t, f, "GET", "/redfish/v1/UpdateService/FirmwareInventory/Installed-159-1.0.0-sim", nil); st != http.StatusOK || e["Name"] != "BIOS" {
		t.Fatalf("iDRAC BIOS entry: %d %v", st, e)
	}
	st, task, hdr := rf(t, f, "POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate", map[string]any{
		"ImageURI": img.URL + "/bios.txt", "Targets": []string{"/redfish/v1/no/such/thing"},
	})
	if st != http.StatusAccepted {
		t.Fatalf("Targets are ignored: %d", st)
	}
	time.Sleep(200 * time.Millisecond)
	st, d, _ := rf(t, f, "GET", hdr.Get("Location"), nil)
	if st != http.StatusAccepted || d["TaskState"] != "Pending" || !strings.Contains(taskMessages(d), "Task successfully scheduled.") {
		t.Fatalf("scheduled BIOS update: %d %v", st, d)
	}
	if st, _, _ := rf(t, f, "POST", sys+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "On"}); st != http.StatusNoContent {
		t.Fatalf("reset %d", st)
	}
	if st, _ := followMonitor(t, f, hdr.Get("Location")); st != http.StatusNoContent {
		t.Fatalf("outcome after the reset %d", st)
	}
	_, task, _ = rf(t, f, "GET", "/redfish/v1/TaskService/Tasks/"+task["Id"].(string), nil)
	st, e, _ := rf(t, f, "GET", "/redfish/v1/UpdateService/FirmwareInventory/Installed-159-2.1.0", nil)
	if task["TaskState"] != "Completed" || st != http.StatusOK || e["Version"] != "2.1.0" {
		t.Fatalf("task %v, entry %d %v", task["TaskState"], st, e)
	}
}

// iLO answers an image it cannot process 200, with no task, and flashes
// nothing; a firmware image gets a task.
func TestSimpleUpdateILO(t *testing.T) {
	img := images(t, map[string]string{"/cp0123.fwpkg": "PK\x03\x04 a smart component", "/ilo.bin": "component=BMC\nversion=2.72"})
	f := start(t, sim.Options{Dialect: sim.DialectILO5, Tweak: func(q *sim.Quirks) { quickTasks(q); q.Update.BMCRestart = -1 }})
	st, _, hdr := rf(t, f, "POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate/", map[string]any{"ImageURI": img.URL + "/cp0123.fwpkg"})
	if st != http.StatusOK || hdr.Get("Location") != "" {
		t.Fatalf("smart component: %d %v", st, hdr)
	}
	st, _, hdr = rf(t, f, "POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate/", map[string]any{"ImageURI": img.URL + "/ilo.bin"})
	if st != http.StatusAccepted || !strings.HasSuffix(hdr.Get("Location"), "/") {
		t.Fatalf("iLO binary: %d %v", st, hdr)
	}
	followMonitor(t, f, hdr.Get("Location"))
	_, e, _ := rf(t, f, "GET", "/redfish/v1/UpdateService/FirmwareInventory/1/", nil)
	if e["Name"] != "iLO 5" || e["Version"] != "2.72" || e["@odata.id"] != "/redfish/v1/UpdateService/FirmwareInventory/1/" {
		t.Fatalf("iLO entry %v", e)
	}
}

// sushy-tools: no inventory behind the link, Targets (Systems) required,
// a Manager refused, the BIOS's minor version bumped at once, 204.
func TestSimpleUpdateSushy(t *testing.T) {
	f := start(t, sim.Options{Dialect: sim.DialectSushy})
	sys := f.SystemIDs()[0]
	if st, _, _ := rf(t, f, "GET", "/redfish/v1/UpdateService/FirmwareInventory", nil); st != http.StatusNotFound {
		t.Fatalf("sushy FirmwareInventory: %d", st)
	}
	const target = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"
	if st, d, _ := rf(t, f, "POST", target, map[string]any{"ImageURI": "http://x/fw"}); st != http.StatusBadRequest || d["error"].(map[string]any)["message"] != "Missing ImageURI and/or Targets." {
		t.Fatalf("without Targets: %d %v", st, d)
	}
	if st, _, _ := rf(t, f, "POST", target, map[string]any{"ImageURI": "http://x/fw", "Targets": []string{"/redfish/v1/Managers/" + strings.TrimPrefix(sys, "/redfish/v1/Systems/")}}); st != http.StatusBadRequest {
		t.Fatalf("Manager target: %d", st)
	}
	st, _, hdr := rf(t, f, "POST", target, map[string]any{"ImageURI": "http://x/fw", "Targets": []string{sys}})
	_, sd, _ := rf(t, f, "GET", sys, nil)
	if st != http.StatusNoContent || hdr.Get("Location") != "/redfish/v1/TaskService/Tasks/42" || sd["BiosVersion"] != "1.1.0-sim" {
		t.Fatalf("sushy update: %d %v, BiosVersion %v", st, hdr, sd["BiosVersion"])
	}
}
