package sim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// storageOf walks from the system to its controller: the Storage
// collection's one member, its drives and Volumes collection.
func storageOf(t *testing.T, f *sim.Fleet) (ctrl string, drives []string, volumes string) {
	t.Helper()
	_, sd, _ := rf(t, f, "GET", f.SystemIDs()[0], nil)
	coll := link(sd, "Storage")
	if coll == "" {
		t.Fatalf("system without Storage: %v", sd)
	}
	_, cd, _ := rf(t, f, "GET", coll, nil)
	members, _ := cd["Members"].([]any)
	if len(members) != 1 {
		t.Fatalf("storage collection %v", cd)
	}
	ctrl, _ = members[0].(map[string]any)["@odata.id"].(string)
	_, st, _ := rf(t, f, "GET", ctrl, nil)
	for _, d := range st["Drives"].([]any) {
		drives = append(drives, d.(map[string]any)["@odata.id"].(string))
	}
	return ctrl, drives, link(st, "Volumes")
}

func driveLinks(ids ...string) map[string]any {
	var ls []any
	for _, id := range ids {
		ls = append(ls, map[string]any{"@odata.id": id})
	}
	return map[string]any{"Drives": ls}
}

// The standard controller: RAID types listed, four drives (two SSDs, two
// HDDs), a volume created at once (201 and its Location), shown with its
// RAID type, capacity and drives, its drives linking it; deleted (204).
func TestVolumesStandard(t *testing.T) {
	f := start(t, sim.Options{})
	ctrl, drives, vols := storageOf(t, f)
	_, st, _ := rf(t, f, "GET", ctrl, nil)
	sc := st["StorageControllers"].([]any)[0].(map[string]any)
	if got := strings.Join(toStrings(sc["SupportedRAIDTypes"]), ","); got != "RAID0,RAID1,RAID5,RAID6,RAID10" {
		t.Fatalf("SupportedRAIDTypes %s", got)
	}
	if len(drives) != 4 {
		t.Fatalf("drives %v", drives)
	}
	_, d0, _ := rf(t, f, "GET", drives[0], nil)
	_, d3, _ := rf(t, f, "GET", drives[3], nil)
	if d0["MediaType"] != "SSD" || d0["Protocol"] != "SATA" || d3["MediaType"] != "HDD" || d3["Protocol"] != "SAS" {
		t.Fatalf("drives %v %v", d0, d3)
	}

	code, v, hdr := rf(t, f, "POST", vols, map[string]any{"Name": "os", "RAIDType": "RAID1", "Links": driveLinks(drives[0], drives[1])})
	if code != http.StatusCreated || hdr.Get("Location") == "" || v["@odata.id"] != hdr.Get("Location") {
		t.Fatalf("create: %d %v %v", code, hdr, v)
	}
	if v["RAIDType"] != "RAID1" || v["CapacityBytes"].(float64) != 960197124096 || v["Name"] != "os" {
		t.Fatalf("volume %v", v)
	}
	if got := len(v["Links"].(map[string]any)["Drives"].([]any)); got != 2 {
		t.Fatalf("volume drives %v", v["Links"])
	}
	_, d0, _ = rf(t, f, "GET", drives[0], nil)
	if len(d0["Links"].(map[string]any)["Volumes"].([]any)) != 1 {
		t.Fatalf("drive does not link its volume: %v", d0)
	}
	_, coll, _ := rf(t, f, "GET", vols, nil)
	if coll["Members@odata.count"].(float64) != 1 {
		t.Fatalf("volumes %v", coll)
	}
	// The older VolumeType and a top-level Drives, as Dell's scripts send.
	code, v, _ = rf(t, f, "POST", vols, map[string]any{"VolumeType": "NonRedundant", "Drives": driveLinks(drives[2])["Drives"], "CapacityBytes": 1e12})
	if code != http.StatusCreated || v["RAIDType"] != "RAID0" || v["CapacityBytes"].(float64) != 1e12 {
		t.Fatalf("create with VolumeType: %d %v", code, v)
	}
	if code, _, _ := rf(t, f, "DELETE", hdr.Get("Location"), nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code, _, _ := rf(t, f, "GET", hdr.Get("Location"), nil); code != http.StatusNotFound {
		t.Fatalf("deleted volume: %d", code)
	}
	if code, _, _ := rf(t, f, "DELETE", hdr.Get("Location"), nil); code != http.StatusNotFound {
		t.Fatalf("delete again: %d", code)
	}
}

// Each fault of a create is a 400 naming its property, and nothing is
// created.
func TestVolumesRefused(t *testing.T) {
	f := start(t, sim.Options{})
	_, drives, vols := storageOf(t, f)
	if code, _, _ := rf(t, f, "POST", vols, map[string]any{"RAIDType": "RAID1", "Links": driveLinks(drives[2], drives[3])}); code != http.StatusCreated {
		t.Fatalf("setup: %d", code)
	}
	for _, tc := range []struct {
		name string
		body map[string]any
		want string // message id and the property it names
	}{
		{"no RAID type", map[string]any{"Links": driveLinks(drives[0])}, "CreateFailedMissingReqProperties: The create operation failed because the required property RAIDType"},
		{"unknown RAID type", map[string]any{"RAIDType": "RAID50", "Links": driveLinks(drives[0], drives[1])}, "PropertyValueNotInList: The value RAID50 for the property RAIDType"},
		{"unknown VolumeType", map[string]any{"VolumeType": "SpannedStripesWithParity", "Links": driveLinks(drives[0], drives[1])}, "PropertyValueNotInList: The value SpannedStripesWithParity for the property VolumeType"},
		{"no drives", map[string]any{"RAIDType": "RAID0"}, "required property Links/Drives"},
		{"unknown drive", map[string]any{"RAIDType": "RAID0", "Links": driveLinks(drives[0] + "x")}, "ResourceMissingAtURI"},
		{"drive in use", map[string]any{"RAIDType": "RAID1", "Links": driveLinks(drives[0], drives[2])}, "ResourceInUse"},
		{"RAID1 of 1", map[string]any{"RAIDType": "RAID1", "Links": driveLinks(drives[0])}, "RAID1 cannot be made of 1 drives (exactly 2)"},
		{"RAID5 of 2", map[string]any{"RAIDType": "RAID5", "Links": driveLinks(drives[0], drives[1])}, "RAID5 cannot be made of 2 drives"},
		{"too large", map[string]any{"RAIDType": "RAID1", "CapacityBytes": 2e12, "Links": driveLinks(drives[0], drives[1])}, "PropertyValueOutOfRange: The value 2000000000000 for the property CapacityBytes"},
		{"apply time", map[string]any{"RAIDType": "RAID1", "@Redfish.OperationApplyTime": "OnReset", "Links": driveLinks(drives[0], drives[1])}, "@Redfish.OperationApplyTime"},
	} {
		code, d, _ := rf(t, f, "POST", vols, tc.body)
		got := strings.Join(messageIDs(d), " | ")
		if code != http.StatusBadRequest || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %d %s", tc.name, code, got)
		}
	}
	if vs, _ := f.Volumes(f.SystemIDs()[0]); len(vs) != 1 {
		t.Fatalf("volumes after refusals: %+v", vs)
	}
	// Mixed media: an SSD with an HDD, once the HDDs are free.
	if err := f.DeleteVolumeOOB(f.SystemIDs()[0], "1"); err != nil {
		t.Fatal(err)
	}
	code, d, _ := rf(t, f, "POST", vols, map[string]any{"RAIDType": "RAID1", "Links": driveLinks(drives[0], drives[2])})
	if code != http.StatusBadRequest || !strings.Contains(strings.Join(messageIDs(d), ""), "does not mix drives") {
		t.Fatalf("mixed media: %d %v", code, messageIDs(d))
	}
}

// With task monitors, a create and a delete answer 202 and land when the
// task completes; a failing task creates nothing; a create the BMC
// acknowledges and ignores (CreateIgnored) completes its task and
// creates nothing.
func TestVolumesTasks(t *testing.T) {
	for _, tc := range []struct {
		name          string
		fails, ignore bool
	}{{"ok", false, false}, {"task fails", true, false}, {"ignored", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, sim.Options{Tweak: func(q *sim.Quirks) {
				q.TaskMonitor, q.TaskDelay, q.TaskFails, q.Storage.CreateIgnored = true, 100*time.Millisecond, tc.fails, tc.ignore
			}})
			sys := f.SystemIDs()[0]
			_, drives, vols := storageOf(t, f)
			code, task, hdr := rf(t, f, "POST", vols, map[string]any{"RAIDType": "RAID1", "Links": driveLinks(drives[0], drives[1])})
			if code != http.StatusAccepted || hdr.Get("Location") == "" || task["TaskState"] != "Running" {
				t.Fatalf("create: %d %v %v", code, hdr, task)
			}
			if vs, _ := f.Volumes(sys); len(vs) != 0 {
				t.Fatalf("volume before its task completed: %+v", vs)
			}
			waitMonitor(t, f, hdr.Get("Location"), !tc.fails)
			vs, _ := f.Volumes(sys)
			if tc.fails || tc.ignore {
				if len(vs) != 0 {
					t.Fatalf("volumes %+v", vs)
				}
				return
			}
			if len(vs) != 1 || vs[0].RAIDType != "RAID1" || vs[0].CapacityBytes != 960197124096 {
				t.Fatalf("volumes %+v", vs)
			}
		})
	}
}

// waitMonitor polls a task monitor until it stops answering 202 and
// checks the outcome.
func waitMonitor(t *testing.T, f *sim.Fleet, mon string, ok bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _, _ := rf(t, f, "GET", mon, nil)
		if code != http.StatusAccepted {
			if (code == http.StatusNoContent) != ok {
				t.Fatalf("task outcome %d, want ok %v", code, ok)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still running", mon)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// iDRAC: names of its own, jobs for every create and delete, the
// OperationApplyTime it supports advertised; an OnReset create waits for
// the next reset.
func TestVolumesIDRAC(t *testing.T) {
	f := start(t, sim.Options{Dialect: sim.DialectIDRAC9, Tweak: func(q *sim.Quirks) { q.TaskDelay = 50 * time.Millisecond }})
	sys := f.SystemIDs()[0]
	ctrl, drives, vols := storageOf(t, f)
	if !strings.HasSuffix(ctrl, "/Storage/RAID.Integrated.1-1") || !strings.HasSuffix(drives[0], "/Drives/Disk.Bay.0:Enclosure.Internal.0-1:RAID.Integrated.1-1") {
		t.Fatalf("ids %s %v", ctrl, drives)
	}
	_, coll, _ := rf(t, f, "GET", vols, nil)
	if got := toStrings(coll["@Redfish.OperationApplyTimeSupport"].(map[string]any)["SupportedValues"]); strings.Join(got, ",") != "Immediate,OnReset" {
		t.Fatalf("apply times %v", got)
	}
	code, _, hdr := rf(t, f, "POST", vols, map[string]any{"VolumeType": "Mirrored", "Drives": driveLinks(drives[0], drives[1])["Drives"], "@Redfish.OperationApplyTime": "Immediate"})
	if code != http.StatusAccepted {
		t.Fatalf("create: %d", code)
	}
	waitMonitor(t, f, hdr.Get("Location"), true)
	vs, _ := f.Volumes(sys)
	if len(vs) != 1 || !strings.HasSuffix(vs[0].Path, "/Volumes/Disk.Virtual.0:RAID.Integrated.1-1") || vs[0].Name != "Virtual Disk 0" {
		t.Fatalf("volumes %+v", vs)
	}
	_, v, _ := rf(t, f, "GET", vs[0].Path, nil)
	if v["VolumeType"] != "Mirrored" || v["RAIDType"] != "RAID1" {
		t.Fatalf("volume %v", v)
	}

	// Staged: pending until the system resets.
	code, _, hdr = rf(t, f, "POST", vols, map[string]any{"RAIDType": "RAID0", "Links": driveLinks(drives[2], drives[3]), "@Redfish.OperationApplyTime": "OnReset"})
	if code != http.StatusAccepted {
		t.Fatalf("staged create: %d", code)
	}
	time.Sleep(150 * time.Millisecond)
	if code, _, _ := rf(t, f, "GET", hdr.Get("Location"), nil); code != http.StatusAccepted {
		t.Fatalf("staged job before the reset: %d", code)
	}
	if st, _ := f.Storage(sys); st.StagedJobs != 1 || len(st.Volumes) != 1 {
		t.Fatalf("storage %+v", st)
	}
	if code, _, _ := rf(t, f, "POST", sys+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "On"}); code != http.StatusNoContent {
		t.Fatalf("power on: %d", code)
	}
	waitMonitor(t, f, hdr.Get("Location"), true)
	if vs, _ := f.Volumes(sys); len(vs) != 2 || vs[1].RAIDType != "RAID0" || vs[1].CapacityBytes != 2*4000787030016 {
		t.Fatalf("volumes after reset %+v", vs)
	}

	code, _, hdr = rf(t, f, "DELETE", vs[0].Path, nil)
	if code != http.StatusAccepted {
		t.Fatalf("delete: %d", code)
	}
	waitMonitor(t, f, hdr.Get("Location"), true)
	if vs, _ := f.Volumes(sys); len(vs) != 1 {
		t.Fatalf("volumes after delete %+v", vs)
	}
}

// sushy-tools: one drive, no RAID types listed, a POST that stores Name,
// VolumeType and CapacityBytes unchecked (201, Location, no body), no
// DELETE.
func TestVolumesSushy(t *testing.T) {
	f := start(t, sim.Options{Dialect: sim.DialectSushy})
	ctrl, drives, vols := storageOf(t, f)
	if !strings.HasSuffix(ctrl, "/Storage/1") || len(drives) != 1 {
		t.Fatalf("storage %s %v", ctrl, drives)
	}
	code, body, hdr := rf(t, f, "POST", vols, map[string]any{"Name": "v", "VolumeType": "Mirrored", "CapacityBytes": 1e9, "RAIDType": "RAID99"})
	if code != http.StatusCreated || body != nil || hdr.Get("Location") == "" {
		t.Fatalf("create: %d %v %v", code, body, hdr)
	}
	_, v, _ := rf(t, f, "GET", hdr.Get("Location"), nil)
	if v["VolumeType"] != "Mirrored" || v["RAIDType"] != nil || v["Links"] != nil {
		t.Fatalf("volume %v", v)
	}
	if code, _, _ := rf(t, f, "DELETE", hdr.Get("Location"), nil); code != http.StatusMethodNotAllowed {
		t.Fatalf("delete: %d", code)
	}
}

// Out of band: a volume made and deleted at once, as in the controller's
// setup utility, checked like a POST; the control API does the same.
func TestVolumesOutOfBand(t *testing.T) {
	f := start(t, sim.Options{})
	sys := f.SystemIDs()[0]
	if _, err := f.CreateVolumeOOB(sys, "x", "RAID5", 0, []string{"Disk0", "Disk1"}); err == nil || !strings.Contains(err.Error(), "RAID5 cannot be made of 2 drives") {
		t.Fatalf("RAID5 of 2: %v", err)
	}
	v, err := f.CreateVolumeOOB(sys, "data", "RAID1", 0, []string{"Disk2", "Disk3"})
	if err != nil || v.CapacityBytes != 4000787030016 || len(v.Drives) != 2 {
		t.Fatalf("%+v %v", v, err)
	}
	_, _, vols := storageOf(t, f)
	_, coll, _ := rf(t, f, "GET", vols, nil)
	if coll["Members@odata.count"].(float64) != 1 {
		t.Fatalf("volumes %v", coll)
	}

	id := strings.TrimPrefix(sys, "/redfish/v1/Systems/")
	b, _ := json.Marshal(map[string]any{"name": "os", "raid_type": "RAID1", "drives": []string{"Disk0", "Disk1"}})
	resp, err := http.Post(f.URL()+"/sim/systems/"+id+"/volumes", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("control create: %d", resp.StatusCode)
	}
	resp, err = http.Get(f.URL() + "/sim/systems/" + id + "/storage")
	if err != nil {
		t.Fatal(err)
	}
	var st sim.StorageStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(st.Volumes) != 2 || st.Drives[0].Volume == "" {
		t.Fatalf("control storage %+v", st)
	}
	req, _ := http.NewRequest(http.MethodDelete, f.URL()+"/sim/systems/"+id+"/volumes/"+v.ID, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("control delete: %d", resp.StatusCode)
	}
	if vs, _ := f.Volumes(sys); len(vs) != 1 || vs[0].Name != "os" {
		t.Fatalf("volumes %+v", vs)
	}
}
