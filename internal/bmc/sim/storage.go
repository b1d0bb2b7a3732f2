package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RAID: every system has one RAID controller (a Redfish Storage resource
// at <system>/Storage/<id>) with four drives and a Volumes collection
// (issue 30), modelled on the DMTF schemas (Storage v1, Drive v1,
// Volume v1; DSP0266 §12.2 task monitors and "Operation apply time") and
// on sushy-tools:
//
//   - GET <ctrl>/Volumes lists the volumes; POST creates one from
//     {"Name", "RAIDType", "Links": {"Drives": [{"@odata.id": ...}]},
//     "CapacityBytes"}, leniently as real BMCs read it: VolumeType
//     (NonRedundant, Mirrored, StripedWithParity, SpannedMirrors) for
//     RAIDType and a top-level "Drives" for Links.Drives (what Dell's
//     scripts and dell/terraform-provider-redfish send), CapacityBytes
//     absent or 0 for all the drives give, unknown properties ignored.
//   - The request is checked as a whole, each fault a 400 Base message
//     naming its property: a RAID type the controller does not list in
//     SupportedRAIDTypes, a drive it does not have, one already in a
//     volume, a drive count the level does not take (RAID0 ≥ 1, RAID1 2,
//     RAID5 ≥ 3, RAID6 ≥ 4, RAID10 an even ≥ 4), drives of different
//     media types or protocols (the sim's rule; the DMTF sets none), a
//     capacity beyond what the drives give at that level (the smallest
//     drive times the data drives).
//   - Created at once (201, Location of the volume) by the standard;
//     through a task (202 with a task monitor, done TaskDelay later,
//     failing with Quirks.TaskFails) with Quirks.TaskMonitor or
//     StorageQuirks.Jobs. DELETE of a volume likewise (204, or 202).
//   - Drives link their volume (Links.Volumes), volumes their drives.
//
// Drives sit under the controller (<ctrl>/Drives/<id>), as sushy-tools
// (templates/drive.json), iDRAC 9 and the DMTF's mockups serve them; some
// BMCs (OpenBMC, iLO) serve them under a Chassis, which the sim has none
// of. StorageQuirks say where dialects differ.

// StorageQuirks are the ways BMCs differ in their Storage and Volumes.
// The zero value is the DMTF's reading (above).
type StorageQuirks struct {
	// None: the system has no Storage link (a BMC without RAID over
	// Redfish).
	None bool
	// IDRAC: Dell iDRAC 9's names: the controller RAID.Integrated.1-1,
	// drives Disk.Bay.N:Enclosure.Internal.0-1:RAID.Integrated.1-1 and
	// volumes Disk.Virtual.N:RAID.Integrated.1-1 (Dell's
	// dellemc-openmanage-ansible-modules and terraform-provider-redfish
	// tests), volumes showing VolumeType beside RAIDType.
	IDRAC bool
	// Jobs: every volume POST and DELETE is answered 202 with a task
	// (iDRAC: a job, which dell/terraform-provider-redfish requires the
	// 202 and Location of, and waits for), whatever Quirks.TaskMonitor
	// says. The sim's task monitor stands in for iDRAC's Job resource
	// (/redfish/v1/Managers/iDRAC.Embedded.1/Jobs/JID_...).
	Jobs bool
	// ApplyTimes are the Volumes collection's
	// @Redfish.OperationApplyTimeSupport SupportedValues (nil: none
	// advertised, and only Immediate taken). A create with
	// @Redfish.OperationApplyTime OnReset is a task that waits for the
	// system's next reset or power-on, as iDRAC's staged RAID jobs do
	// (dell/terraform-provider-redfish resets the server for OnReset,
	// then waits for the job).
	ApplyTimes []string
	// Sushy: sushy-tools' Volumes (emulator/main.py, volumes driver,
	// templates): storage 1 with one SAS drive of its sample config, no
	// SupportedRAIDTypes; POST reads only Name, VolumeType and
	// CapacityBytes, checks nothing and answers 201 with a Location and
	// no body; volumes show VolumeType, no RAIDType and no drives; a
	// volume takes no DELETE (405).
	Sushy bool
	// CreateIgnored: a volume POST is answered as accepted (201, or its
	// task completes) and creates nothing: a fault for tests of the
	// driver's read-back.
	CreateIgnored bool
}

// dialectStorage is a dialect's StorageQuirks.
func dialectStorage(d Dialect) StorageQuirks {
	switch d {
	case DialectIDRAC9:
		return StorageQuirks{IDRAC: true, Jobs: true, ApplyTimes: []string{"Immediate", "OnReset"}}
	case DialectSushy:
		return StorageQuirks{Sushy: true}
	}
	return StorageQuirks{}
}

// raidTypes are the RAID types the sim's controller creates.
var raidTypes = []string{"RAID0", "RAID1", "RAID5", "RAID6", "RAID10"}

// volumeTypes maps the older Volume.VolumeType to RAIDType.
var volumeTypes = map[string]string{
	"NonRedundant": "RAID0", "Mirrored": "RAID1", "StripedWithParity": "RAID5", "SpannedMirrors": "RAID10",
}

func volumeTypeOf(raid string) string {
	for vt, r := range volumeTypes {
		if r == raid {
			return vt
		}
	}
	return ""
}

type simDrive struct {
	id, name, media, protocol string
	capacity                  int64
}

type simVolume struct {
	id, name, raid, volumeType string
	capacity                   int64
	drives                     []string // drive ids
}

// storageState is a system's controller; guarded by the system's mu.
type storageState struct {
	ctrlID, ctrlName string
	drives           []simDrive
	volumes          []*simVolume
	next             int // the next volume number
	// onReset are the operations waiting for the next reset.
	onReset []func()
}

const (
	gb960 = 960197124096  // a "960 GB" SSD
	tb4   = 4000787030016 // a "4 TB" HDD
)

func newStorage(q *Quirks) *storageState {
	sq := q.Storage
	switch {
	case sq.Sushy:
		// sushy-tools' sample configuration (doc/source/admin/emulator.rst).
		return &storageState{ctrlID: "1", ctrlName: "Local Storage Controller", next: 1,
			drives: []simDrive{{id: "32ADF365C6C1B7BD", name: "Drive Sample", media: "HDD", protocol: "SAS", capacity: 899527000000}}}
	case sq.IDRAC:
		st := &storageState{ctrlID: "RAID.Integrated.1-1", ctrlName: "PERC H755 Front"}
		for i := range 4 {
			d := simDrive{id: fmt.Sprintf("Disk.Bay.%d:Enclosure.Internal.0-1:RAID.Integrated.1-1", i)}
			st.drives = append(st.drives, d)
		}
		fillDrives(st.drives, "Solid State Disk 0:1:%d", "Physical Disk 0:1:%d")
		return st
	}
	st := &storageState{ctrlID: "1", ctrlName: "Simulated RAID Controller", next: 1}
	for i := range 4 {
		st.drives = append(st.drives, simDrive{id: "Disk" + strconv.Itoa(i)})
	}
	fillDrives(st.drives, "SSD %d", "HDD %d")
	return st
}

// fillDrives makes the first two drives 960 GB SATA SSDs and the others
// 4 TB SAS HDDs.
func fillDrives(ds []simDrive, ssdName, hddName string) {
	for i := range ds {
		if i < 2 {
			ds[i].name, ds[i].media, ds[i].protocol, ds[i].capacity = fmt.Sprintf(ssdName, i), "SSD", "SATA", gb960
		} else {
			ds[i].name, ds[i].media, ds[i].protocol, ds[i].capacity = fmt.Sprintf(hddName, i), "HDD", "SAS", tb4
		}
	}
}

// storageLocked is the system's controller, made on first use; s.mu must
// be held.
func (s *system) storageLocked() *storageState {
	if s.storage == nil {
		s.storage = newStorage(s.q)
	}
	return s.storage
}

func (s *system) storageColl() string { return s.path + "/Storage" }

func (s *system) ctrlPathLocked() string { return s.storageColl() + "/" + s.storageLocked().ctrlID }

func (st *storageState) drive(id string) *simDrive {
	for i := range st.drives {
		if st.drives[i].id == id {
			return &st.drives[i]
		}
	}
	return nil
}

func (st *storageState) volume(id string) *simVolume {
	for _, v := range st.volumes {
		if v.id == id {
			return v
		}
	}
	return nil
}

// volumeOf is the volume holding drive id, or nil.
func (st *storageState) volumeOf(id string) *simVolume {
	for _, v := range st.volumes {
		if slices.Contains(v.drives, id) {
			return v
		}
	}
	return nil
}

// servesTasks: the TaskService answers (something here may start tasks).
func (f *Fleet) servesTasks() bool { return f.q.TaskMonitor || f.q.Storage.Jobs }

// volumeTasks: volume operations run as tasks.
func (f *Fleet) volumeTasks() bool {
	return (f.q.TaskMonitor || f.q.Storage.Jobs) && !f.q.Storage.Sushy
}

// ---- Redfish ----

// serveStorage serves <system>/Storage and below (rest: below Storage).
func (f *Fleet) serveStorage(w http.ResponseWriter, r *http.Request, s *system, rest []string) {
	notFound := func() {
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
	}
	s.mu.Lock()
	st := s.storageLocked()
	ctrl := s.ctrlPathLocked()
	s.mu.Unlock()
	if len(rest) == 0 {
		if allow(w, r, http.MethodGet) {
			f.writeDoc(w, http.StatusOK, collection(s.storageColl(), "#StorageCollection.StorageCollection", "Storage Collection", []any{odataID(ctrl)}), "")
		}
		return
	}
	if rest[0] != st.ctrlID {
		notFound()
		return
	}
	switch {
	case len(rest) == 1:
		if allow(w, r, http.MethodGet) {
			s.mu.Lock()
			d := s.storageJSONLocked()
			s.mu.Unlock()
			f.writeDoc(w, http.StatusOK, d, "")
		}
	case len(rest) == 3 && rest[1] == "Drives":
		if !allow(w, r, http.MethodGet) {
			return
		}
		s.mu.Lock()
		d := s.driveJSONLocked(rest[2])
		s.mu.Unlock()
		if d == nil {
			notFound()
			return
		}
		f.writeDoc(w, http.StatusOK, d, "")
	case len(rest) == 2 && rest[1] == "Volumes":
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			s.mu.Lock()
			d := s.volumesJSONLocked()
			s.mu.Unlock()
			f.writeDoc(w, http.StatusOK, d, "")
		case http.MethodPost:
			f.postVolume(w, r, s)
		default:
			methodNotAllowed(w, http.MethodGet, http.MethodPost)
		}
	case len(rest) == 3 && rest[1] == "Volumes":
		switch {
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			s.mu.Lock()
			d := s.volumeJSONLocked(rest[2])
			s.mu.Unlock()
			if d == nil {
				notFound()
				return
			}
			f.writeDoc(w, http.StatusOK, d, "")
		case r.Method == http.MethodDelete && !s.q.Storage.Sushy:
			f.deleteVolume(w, r, s, rest[2])
		case s.q.Storage.Sushy:
			methodNotAllowed(w, http.MethodGet)
		default:
			methodNotAllowed(w, http.MethodGet, http.MethodDelete)
		}
	default:
		notFound()
	}
}

func (s *system) storageJSONLocked() map[string]any {
	st := s.storageLocked()
	ctrl := s.ctrlPathLocked()
	drives := make([]any, len(st.drives))
	for i, d := range st.drives {
		drives[i] = odataID(ctrl + "/Drives/" + d.id)
	}
	sc := map[string]any{
		"@odata.id": ctrl + "#/StorageControllers/0",
		"MemberId":  "0",
		"Name":      st.ctrlName,
		"Status":    map[string]any{"State": "Enabled", "Health": "OK"},
		// sushy-tools' template lists these two.
		"SupportedControllerProtocols": []string{"PCIe"},
		"SupportedDeviceProtocols":     []string{"SAS", "SATA"},
	}
	if !s.q.Storage.Sushy {
		sc["SupportedRAIDTypes"] = raidTypes
	}
	return map[string]any{
		"@odata.id":          ctrl,
		"@odata.type":        "#Storage.v1_13_0.Storage",
		"Id":                 st.ctrlID,
		"Name":               st.ctrlName,
		"Status":             map[string]any{"State": "Enabled", "Health": "OK", "HealthRollup": "OK"},
		"StorageControllers": []any{sc},
		"Drives":             drives,
		"Drives@odata.count": len(drives),
		"Volumes":            odataID(ctrl + "/Volumes"),
	}
}

func (s *system) driveJSONLocked(id string) map[string]any {
	st := s.storageLocked()
	d := st.drive(id)
	if d == nil {
		return nil
	}
	ctrl := s.ctrlPathLocked()
	vols := []any{}
	if v := st.volumeOf(id); v != nil {
		vols = append(vols, odataID(ctrl+"/Volumes/"+v.id))
	}
	return map[string]any{
		"@odata.id":     ctrl + "/Drives/" + d.id,
		"@odata.type":   "#Drive.v1_9_0.Drive",
		"Id":            d.id,
		"Name":          d.name,
		"MediaType":     d.media,
		"Protocol":      d.protocol,
		"CapacityBytes": d.capacity,
		"Status":        map[string]any{"State": "Enabled", "Health": "OK"},
		"Links":         map[string]any{"Volumes": vols},
	}
}

func (s *system) volumesJSONLocked() map[string]any {
	st := s.storageLocked()
	ctrl := s.ctrlPathLocked()
	members := make([]any, len(st.volumes))
	for i, v := range st.volumes {
		members[i] = odataID(ctrl + "/Volumes/" + v.id)
	}
	d := collection(ctrl+"/Volumes", "#VolumeCollection.VolumeCollection", "Volume Collection", members)
	if at := s.q.Storage.ApplyTimes; len(at) > 0 {
		d["@Redfish.OperationApplyTimeSupport"] = map[string]any{
			"@odata.type":     "#Settings.v1_3_5.OperationApplyTimeSupport",
			"SupportedValues": at,
		}
	}
	return d
}

func (s *system) volumeJSONLocked(id string) map[string]any {
	st := s.storageLocked()
	v := st.volume(id)
	if v == nil {
		return nil
	}
	ctrl := s.ctrlPathLocked()
	d := map[string]any{
		"@odata.id":     ctrl + "/Volumes/" + v.id,
		"@odata.type":   "#Volume.v1_9_0.Volume",
		"Id":            v.id,
		"Name":          v.name,
		"CapacityBytes": v.capacity,
		"Encrypted":     false,
		"Status":        map[string]any{"State": "Enabled", "Health": "OK"},
	}
	if s.q.Storage.Sushy {
		// sushy-tools' templates/volume.json: what was POSTed, as it was.
		d["VolumeType"] = nilIfEmpty(v.volumeType)
		return d
	}
	drives := make([]any, len(v.drives))
	for i, id := range v.drives {
		drives[i] = odataID(ctrl + "/Drives/" + id)
	}
	d["RAIDType"] = v.raid
	d["Links"] = map[string]any{"Drives": drives, "Drives@odata.count": len(drives)}
	if s.q.Storage.IDRAC {
		d["VolumeType"] = nilIfEmpty(volumeTypeOf(v.raid))
	}
	return d
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// volumeRequest is a volume to create, as read from a POST or given
// out of band.
type volumeRequest struct {
	name      string
	raid      string
	capacity  int64
	drives    []string // drive ids
	applyTime string
	// sushy: VolumeType as sushy-tools stores it.
	volumeType string
}

// readVolumeRequest reads a POST body leniently (see the top of the
// file); faults are what it cannot read.
func (s *system) readVolumeRequest(body map[string]json.RawMessage, ctrl string) (volumeRequest, []biosFault) {
	var req volumeRequest
	var faults []biosFault
	typeErr := func(prop string, raw json.RawMessage) {
		faults = append(faults, biosFault{id: "PropertyValueTypeError", prop: prop, args: []string{string(raw), prop},
			msg: fmt.Sprintf("The value %s for the property %s is of a different type than the property can accept.", raw, prop)})
	}
	str := func(k string) (string, bool) {
		raw, ok := body[k]
		if !ok || string(raw) == "null" {
			return "", false
		}
		var v string
		if json.Unmarshal(raw, &v) != nil {
			typeErr(k, raw)
			return "", false
		}
		return v, true
	}
	req.name, _ = str("Name")
	if raw, ok := body["CapacityBytes"]; ok && string(raw) != "null" {
		var c float64
		if json.Unmarshal(raw, &c) != nil || c != float64(int64(c)) {
			typeErr("CapacityBytes", raw)
		} else {
			req.capacity = int64(c)
		}
	}
	vt, hasVT := str("VolumeType")
	req.volumeType = vt
	if s.q.Storage.Sushy {
		// sushy-tools reads nothing else and checks nothing.
		return req, faults
	}
	if raid, ok := str("RAIDType"); ok {
		req.raid = raid
	} else if hasVT {
		req.raid = volumeTypes[vt]
		if req.raid == "" {
			faults = append(faults, biosFault{id: "PropertyValueNotInList", prop: "VolumeType", args: []string{vt, "VolumeType"},
				msg: fmt.Sprintf("The value %s for the property VolumeType is not in the list of acceptable values.", vt)})
		}
	} else {
		faults = append(faults, biosFault{id: "CreateFailedMissingReqProperties", prop: "RAIDType", args: []string{"RAIDType"},
			msg: "The create operation failed because the required property RAIDType was missing from the request."})
	}
	req.applyTime, _ = str("@Redfish.OperationApplyTime")
	// Links.Drives (Volume v1.x), or Drives at the top (Dell's scripts).
	prop := "Links/Drives"
	var links []json.RawMessage
	var linksObj struct{ Drives []json.RawMessage }
	if raw, ok := body["Links"]; ok && json.Unmarshal(raw, &linksObj) == nil && linksObj.Drives != nil {
		links = linksObj.Drives
	} else if raw, ok := body["Drives"]; ok {
		prop = "Drives"
		if json.Unmarshal(raw, &links) != nil {
			typeErr(prop, raw)
		}
	}
	for i, raw := range links {
		var l struct {
			ID string `json:"@odata.id"`
		}
		p := fmt.Sprintf("%s/%d", prop, i)
		if json.Unmarshal(raw, &l) != nil || l.ID == "" {
			typeErr(p, raw)
			continue
		}
		id, ok := strings.CutPrefix(strings.TrimSuffix(l.ID, "/"), ctrl+"/Drives/")
		if !ok || strings.Contains(id, "/") {
			id = "" // not a drive of this controller
		}
		req.drives = append(req.drives, id)
		if id == "" {
			faults = append(faults, biosFault{id: "ResourceMissingAtURI", prop: p, args: []string{l.ID},
				msg: fmt.Sprintf("The resource at the URI %s was not found.", l.ID)})
		}
	}
	return req, faults
}

// checkVolumeLocked checks a request against the controller and returns
// the volume it makes; s.mu must be held.
func (s *system) checkVolumeLocked(req volumeRequest, drivesProp string) (*simVolume, []biosFault) {
	st := s.storageLocked()
	v := &simVolume{name: req.name, raid: req.raid, capacity: req.capacity, volumeType: req.volumeType}
	if s.q.Storage.Sushy {
		return v, nil
	}
	var faults []biosFault
	fault := func(id, prop, msg string, args ...string) {
		faults = append(faults, biosFault{id: id, prop: prop, msg: msg, args: args})
	}
	if req.applyTime != "" && req.applyTime != "Immediate" && !slices.Contains(s.q.Storage.ApplyTimes, req.applyTime) {
		fault("PropertyValueNotInList", "@Redfish.OperationApplyTime",
			fmt.Sprintf("The value %s for the property @Redfish.OperationApplyTime is not in the list of acceptable values.", req.applyTime),
			req.applyTime, "@Redfish.OperationApplyTime")
	}
	if req.raid != "" && !slices.Contains(raidTypes, req.raid) {
		fault("PropertyValueNotInList", "RAIDType",
			fmt.Sprintf("The value %s for the property RAIDType is not in the list of acceptable values.", req.raid), req.raid, "RAIDType")
	}
	var ds []simDrive
	for i, id := range req.drives {
		p := fmt.Sprintf("%s/%d", drivesProp, i)
		if id == "" {
			continue // refused when read
		}
		d := st.drive(id)
		switch {
		case d == nil:
			fault("ResourceMissingAtURI", p, fmt.Sprintf("The resource at the URI %s/Drives/%s was not found.", s.ctrlPathLocked(), id), id)
		case slices.Contains(req.drives[:i], id):
			fault("PropertyValueConflict", p, fmt.Sprintf("The drive %s is listed twice.", d.name), id)
		case st.volumeOf(id) != nil:
			fault("ResourceInUse", p, fmt.Sprintf("The change to the requested resource failed because the resource is in use or in transition: the drive %s belongs to the volume %s.", d.name, st.volumeOf(id).name), id)
		default:
			ds = append(ds, *d)
		}
	}
	v.drives = req.drives
	if len(req.drives) == 0 {
		fault("CreateFailedMissingReqProperties", drivesProp,
			fmt.Sprintf("The create operation failed because the required property %s was missing from the request.", drivesProp), drivesProp)
	}
	if len(faults) > 0 {
		return nil, faults
	}
	n := len(ds)
	var data int
	switch req.raid {
	case "RAID0":
		data = n
	case "RAID1":
		if n == 2 {
			data = 1
		}
	case "RAID5":
		if n >= 3 {
			data = n - 1
		}
	case "RAID6":
		if n >= 4 {
			data = n - 2
		}
	case "RAID10":
		if n >= 4 && n%2 == 0 {
			data = n / 2
		}
	}
	if data == 0 {
		fault("PropertyValueConflict", drivesProp,
			fmt.Sprintf("The property %s could not be written because its value would conflict with the value of the RAIDType property: %s cannot be made of %d drives (%s).",
				drivesProp, req.raid, n, raidDriveRule(req.raid)), drivesProp, "RAIDType")
		return nil, faults
	}
	for _, d := range ds[1:] {
		if d.media != ds[0].media || d.protocol != ds[0].protocol {
			fault("PropertyValueConflict", drivesProp,
				fmt.Sprintf("The property %s could not be written: the controller does not mix drives of different media types or protocols in one volume (%s %s and %s %s).",
					drivesProp, ds[0].media, ds[0].protocol, d.media, d.protocol), drivesProp)
			return nil, faults
		}
	}
	smallest := ds[0].capacity
	for _, d := range ds {
		smallest = min(smallest, d.capacity)
	}
	most := smallest * int64(data)
	switch {
	case req.capacity < 0 || req.capacity > most:
		fault("PropertyValueOutOfRange", "CapacityBytes",
			fmt.Sprintf("The value %d for the property CapacityBytes is not in the supported range of acceptable values (1 to %d for %s on these drives).", req.capacity, most, req.raid),
			strconv.FormatInt(req.capacity, 10), "CapacityBytes")
		return nil, faults
	case req.capacity == 0:
		v.capacity = most
	}
	return v, nil
}

func raidDriveRule(raid string) string {
	switch raid {
	case "RAID0":
		return "at least 1"
	case "RAID1":
		return "exactly 2"
	case "RAID5":
		return "at least 3"
	case "RAID6":
		return "at least 4"
	case "RAID10":
		return "an even number, at least 4"
	}
	return "an unknown RAID type"
}

// addVolumeLocked adds a checked volume, naming it; s.mu must be held.
// A drive taken meanwhile (by another task) makes it fail: false.
func (s *system) addVolumeLocked(v *simVolume) bool {
	st := s.storageLocked()
	for _, id := range v.drives {
		if st.volumeOf(id) != nil {
			return false
		}
	}
	if s.q.Storage.IDRAC {
		v.id = fmt.Sprintf("Disk.Virtual.%d:%s", st.next, st.ctrlID)
		if v.name == "" {
			v.name = fmt.Sprintf("Virtual Disk %d", st.next)
		}
	} else {
		v.id = strconv.Itoa(st.next)
		if v.name == "" {
			v.name = "Volume " + v.id
		}
	}
	st.next++
	st.volumes = append(st.volumes, v)
	s.changedLocked()
	return true
}

func (s *system) removeVolumeLocked(id string) bool {
	st := s.storageLocked()
	n := len(st.volumes)
	st.volumes = slices.DeleteFunc(st.volumes, func(v *simVolume) bool { return v.id == id })
	if len(st.volumes) != n {
		s.changedLocked()
		return true
	}
	return false
}

func (f *Fleet) postVolume(w http.ResponseWriter, r *http.Request, s *system) {
	var body map[string]json.RawMessage
	if !decodeBody(w, r, &body) {
		return
	}
	s.mu.Lock()
	ctrl := s.ctrlPathLocked()
	req, faults := s.readVolumeRequest(body, ctrl)
	drivesProp := "Links/Drives"
	if _, ok := body["Links"]; !ok {
		if _, ok := body["Drives"]; ok {
			drivesProp = "Drives"
		}
	}
	var v *simVolume
	if len(faults) == 0 {
		v, faults = s.checkVolumeLocked(req, drivesProp)
	}
	s.mu.Unlock()
	if len(faults) > 0 {
		writeFaults(w, faults)
		return
	}
	ignored := s.q.Storage.CreateIgnored
	create := func() {
		if !ignored {
			s.addVolumeLocked(v)
		}
	}
	if !f.volumeTasks() {
		s.mu.Lock()
		var loc string
		var d map[string]any
		switch {
		case ignored:
			// Acknowledged, and nothing there: the id it would have had.
			loc = ctrl + "/Volumes/" + strconv.Itoa(s.storageLocked().next)
		case !s.addVolumeLocked(v):
			s.mu.Unlock()
			writeError(w, http.StatusBadRequest, "ResourceInUse", "The change to the requested resource failed because the resource is in use or in transition: a drive was taken meanwhile.")
			return
		default:
			loc, d = ctrl+"/Volumes/"+v.id, s.volumeJSONLocked(v.id)
		}
		s.mu.Unlock()
		w.Header().Set("Location", s.q.withSlash(loc))
		if d == nil || s.q.Storage.Sushy {
			// sushy-tools answers 201 with the Location and no body.
			w.WriteHeader(http.StatusCreated)
			return
		}
		f.writeDoc(w, http.StatusCreated, d, "")
		return
	}
	f.volumeTask(w, s, "Create volume", req.applyTime, create)
}

func (f *Fleet) deleteVolume(w http.ResponseWriter, _ *http.Request, s *system, id string) {
	s.mu.Lock()
	exists := s.storageLocked().volume(id) != nil
	s.mu.Unlock()
	if !exists {
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s/Volumes/%s was not found.", s.ctrlPath(), id))
		return
	}
	del := func() { s.removeVolumeLocked(id) }
	if !f.volumeTasks() {
		s.mu.Lock()
		del()
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	f.volumeTask(w, s, "Delete volume", "", del)
}

func (s *system) ctrlPath() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctrlPathLocked()
}

// volumeTask answers 202 with a task that runs op (with s.mu held):
// TaskDelay later, or at the system's next reset for OnReset.
func (f *Fleet) volumeTask(w http.ResponseWriter, s *system, name, applyTime string, op func()) {
	if applyTime != "OnReset" {
		f.startTask(w, name, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			op()
		})
		return
	}
	// A staged job: running (pending) until the next reset.
	tt := &f.tasks
	tt.mu.Lock()
	if tt.tasks == nil {
		tt.tasks = make(map[string]*simTask)
	}
	tt.next++
	t := &simTask{id: strconv.Itoa(tt.next), name: name, started: time.Now()}
	tt.tasks[t.id] = t
	doc := f.taskJSONLocked(t)
	tt.mu.Unlock()
	s.mu.Lock()
	st := s.storageLocked()
	st.onReset = append(st.onReset, func() {
		if !f.q.TaskFails {
			op()
		}
		tt.mu.Lock()
		t.done = true
		tt.mu.Unlock()
	})
	s.mu.Unlock()
	w.Header().Set("Location", f.q.withSlash(taskMonitorPath+"/"+t.id))
	f.writeDoc(w, http.StatusAccepted, doc, "")
}

// applyVolumeJobsLocked runs the operations staged for a reset (it is
// one); s.mu must be held.
func (s *system) applyVolumeJobsLocked() {
	if s.storage == nil {
		return
	}
	jobs := s.storage.onReset
	s.storage.onReset = nil
	for _, j := range jobs {
		j()
	}
}

// ---- out-of-band control ----

// VolumeStatus is a volume as Fleet.Volumes reports it.
type VolumeStatus struct {
	ID            string   `json:"id"`
	Path          string   `json:"path"`
	Name          string   `json:"name"`
	RAIDType      string   `json:"raid_type"`
	CapacityBytes int64    `json:"capacity_bytes"`
	Drives        []string `json:"drives"` // drive @odata.ids
}

// DriveStatus is a drive as Fleet.Storage reports it.
type DriveStatus struct {
	ID            string `json:"id"`
	Path          string `json:"path"`
	Name          string `json:"name"`
	MediaType     string `json:"media_type"`
	Protocol      string `json:"protocol"`
	CapacityBytes int64  `json:"capacity_bytes"`
	// Volume is the @odata.id of the volume holding it ("" none).
	Volume string `json:"volume,omitempty"`
}

// StorageStatus is a system's RAID controller as Fleet.Storage reports it.
type StorageStatus struct {
	Path    string         `json:"path"`
	Drives  []DriveStatus  `json:"drives"`
	Volumes []VolumeStatus `json:"volumes"`
	// StagedJobs are volume operations waiting for the next reset.
	StagedJobs int `json:"staged_jobs"`
}

// Storage returns a system's controller, drives and volumes.
func (f *Fleet) Storage(system string) (StorageStatus, error) {
	s, err := f.lookup(system)
	if err != nil {
		return StorageStatus{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.storageLocked()
	ctrl := s.ctrlPathLocked()
	out := StorageStatus{Path: ctrl, Drives: []DriveStatus{}, Volumes: s.volumesLocked(), StagedJobs: len(st.onReset)}
	for _, d := range st.drives {
		ds := DriveStatus{ID: d.id, Path: ctrl + "/Drives/" + d.id, Name: d.name, MediaType: d.media, Protocol: d.protocol, CapacityBytes: d.capacity}
		if v := st.volumeOf(d.id); v != nil {
			ds.Volume = ctrl + "/Volumes/" + v.id
		}
		out.Drives = append(out.Drives, ds)
	}
	return out, nil
}

// Volumes returns a system's volumes.
func (f *Fleet) Volumes(system string) ([]VolumeStatus, error) {
	s, err := f.lookup(system)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.volumesLocked(), nil
}

func (s *system) volumesLocked() []VolumeStatus {
	st := s.storageLocked()
	ctrl := s.ctrlPathLocked()
	out := []VolumeStatus{}
	for _, v := range st.volumes {
		vs := VolumeStatus{ID: v.id, Path: ctrl + "/Volumes/" + v.id, Name: v.name, RAIDType: v.raid, CapacityBytes: v.capacity, Drives: []string{}}
		for _, id := range v.drives {
			vs.Drives = append(vs.Drives, ctrl+"/Drives/"+id)
		}
		out = append(out, vs)
	}
	return out
}

// CreateVolumeOOB creates a volume at once, as an operator in the
// controller's own setup utility would (an out-of-band change: drift),
// checked like a POST. drives are drive ids or @odata.ids; capacity 0
// is all the drives give.
func (f *Fleet) CreateVolumeOOB(system, name, raidType string, capacity int64, drives []string) (VolumeStatus, error) {
	s, err := f.lookup(system)
	if err != nil {
		return VolumeStatus{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ctrl := s.ctrlPathLocked()
	req := volumeRequest{name: name, raid: raidType, capacity: capacity, volumeType: volumeTypeOf(raidType)}
	for _, d := range drives {
		req.drives = append(req.drives, strings.TrimPrefix(strings.TrimSuffix(d, "/"), ctrl+"/Drives/"))
	}
	if req.raid == "" && !s.q.Storage.Sushy {
		return VolumeStatus{}, fmt.Errorf("sim: system %s: a volume needs a RAID type", s.id)
	}
	v, faults := s.checkVolumeLocked(req, "Drives")
	if len(faults) > 0 {
		msgs := make([]string, len(faults))
		for i, ft := range faults {
			msgs[i] = ft.msg
		}
		return VolumeStatus{}, fmt.Errorf("sim: system %s: %s", s.id, strings.Join(msgs, "; "))
	}
	if !s.addVolumeLocked(v) {
		return VolumeStatus{}, fmt.Errorf("sim: system %s: a drive is in use", s.id)
	}
	for _, vs := range s.volumesLocked() {
		if vs.ID == v.id {
			return vs, nil
		}
	}
	return VolumeStatus{}, fmt.Errorf("sim: system %s: volume %s vanished", s.id, v.id)
}

// DeleteVolumeOOB deletes a volume (by id or @odata.id) at once.
func (f *Fleet) DeleteVolumeOOB(system, volume string) error {
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := volume
	if i := strings.LastIndex(strings.TrimSuffix(volume, "/"), "/Volumes/"); i >= 0 {
		id = strings.TrimSuffix(volume, "/")[i+len("/Volumes/"):]
	}
	if !s.removeVolumeLocked(id) {
		return fmt.Errorf("sim: system %s has no volume %q", s.id, volume)
	}
	return nil
}

// controlStorage serves the control API's storage routes (rest: below
// /sim/systems/{id}).
func (f *Fleet) controlStorage(w http.ResponseWriter, r *http.Request, s *system, rest []string, fail func(int, string)) {
	switch {
	case len(rest) == 1 && rest[0] == "storage" && r.Method == http.MethodGet:
		st, err := f.Storage(s.id)
		if err != nil {
			fail(http.StatusNotFound, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, st)
	case len(rest) == 1 && rest[0] == "volumes" && r.Method == http.MethodPost:
		var body struct {
			Name          string   `json:"name"`
			RAIDType      string   `json:"raid_type"`
			CapacityBytes int64    `json:"capacity_bytes"`
			Drives        []string `json:"drives"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&body); err != nil {
			fail(http.StatusBadRequest, `want {"name":"os","raid_type":"RAID1","drives":["Disk0","Disk1"],"capacity_bytes":0}`)
			return
		}
		v, err := f.CreateVolumeOOB(s.id, body.Name, body.RAIDType, body.CapacityBytes, body.Drives)
		if err != nil {
			fail(http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, http.StatusCreated, v)
	case len(rest) == 2 && rest[0] == "volumes" && r.Method == http.MethodDelete:
		if err := f.DeleteVolumeOOB(s.id, rest[1]); err != nil {
			fail(http.StatusNotFound, err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(http.StatusNotFound, "unknown control request")
	}
}
