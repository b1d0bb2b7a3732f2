package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Firmware updates (issue 30), modelled on the DMTF's UpdateService and
// SoftwareInventory schemas, DSP0266's Simple updates clause and the
// DMTF's firmware update white paper (DSP2062):
//
//   - /redfish/v1/UpdateService (linked from the service root) links its
//     FirmwareInventory and has the #UpdateService.SimpleUpdate action,
//     with TransferProtocol@Redfish.AllowableValues (HTTP, HTTPS) inline
//     and an @Redfish.ActionInfo.
//   - The FirmwareInventory holds, per system, its BIOS (the Bios
//     resource's BiosVersion attribute and the ComputerSystem's
//     BiosVersion are the same version), its BMC (the Manager's
//     FirmwareVersion) and an integrated NIC that cannot be updated
//     (Updateable false). Each entry's RelatedItem names the resource it
//     is the firmware of (the Bios, the Manager, the System), which is
//     how a client tells the systems of a multi-system service apart;
//     with more than one system the entries' ids are prefixed with the
//     system's id.
//   - POST SimpleUpdate {ImageURI, Targets?, TransferProtocol?} is checked
//     before anything starts: a missing ImageURI, a protocol the service
//     does not list, an unknown or not updateable target fail with 400
//     and a Base message naming the parameter. Then it runs as a task
//     (202, task monitor): the image is fetched as virtual media are (10
//     s timeout, no TLS verification), and an image that cannot be
//     fetched or is not a firmware image fails the task, with a message
//     naming the URL and the reason in the Task's Messages, as real BMCs
//     report it. Otherwise, TaskDelay later, the new version lands: the
//     BMC's and the NIC's at once (the BMC then "restarts": its Manager
//     answers 503 for UpdateQuirks.BMCRestart), the BIOS's at the next
//     reset or power-on of the system (pending until then; the task
//     completes with Update.1.0.AwaitToActivate).
//
// The image format is the sim's own, a small text file (so tests can
// serve images from httptest):
//
//	component=BIOS      BIOS, BMC or NIC.Integrated.1
//	version=2.1.0       the version it installs
//	fail=bad signature  optional: the BMC refuses to apply it (the task
//	                    fails with this message)
//
// Blank lines and lines starting with # are ignored. Without Targets the
// image's component is updated on every system of the fleet (a shared
// front end with one UpdateService, as a chassis manager has); with
// Targets, on the systems of the targets, which must be that component.
//
// UpdateQuirks are where the dialects differ.

const (
	updateServicePath    = rootPath + "/UpdateService"
	firmwareInvPath      = updateServicePath + "/FirmwareInventory"
	simpleUpdatePath     = updateServicePath + "/Actions/UpdateService.SimpleUpdate"
	simpleUpdateInfoPath = updateServicePath + "/SimpleUpdateActionInfo"
	// sushyTaskPath is the one Task sushy-tools names after a SimpleUpdate.
	sushyTaskPath = tasksPath + "/42"

	// The firmware components every system has (image component names).
	CompBIOS = "BIOS"
	CompBMC  = "BMC"
	CompNIC  = "NIC.Integrated.1"

	// defaultFirmwareVersion is every component's version at start; it
	// is also the Bios's BiosVersion attribute (bios.go).
	defaultFirmwareVersion = "1.0.0-sim"
	// defaultBMCRestart is how long a Manager is away after its firmware
	// was updated (UpdateQuirks.BMCRestart 0).
	defaultBMCRestart = time.Second
	// maxFirmwareImage bounds what is read of an image as text.
	maxFirmwareImage = 64 << 10
)

// UpdateQuirks are the ways BMCs differ in their UpdateService. The zero
// value is the DMTF's reading (see update.go).
type UpdateQuirks struct {
	// None: no UpdateService (and no link to it).
	None bool
	// NoSimpleUpdate: an UpdateService and FirmwareInventory without the
	// SimpleUpdate action (inventory only).
	NoSimpleUpdate bool
	// Protocols are TransferProtocol's allowable values (nil: HTTP,
	// HTTPS; iDRAC before 5.00 listed HTTP only,
	// dell/iDRAC-Redfish-Scripting#172).
	Protocols []string
	// TargetsIgnored: Targets are accepted and ignored, the image decides
	// what it updates (iDRAC: "Targets parameter for SimpleUpdate action
	// is not supported by iDRAC", dell/iDRAC-Redfish-Scripting#247; iLO,
	// whose SimpleUpdate flashes what the binary is, per HPE's "HPE
	// firmware updates: Part 3 - The Redfish update service").
	TargetsIgnored bool
	// ScheduledUntilReset: a BIOS update's task does not complete when
	// the image is staged: it stays Pending ("Task successfully
	// scheduled.") until the next reset applies it, then completes
	// (iDRAC's scheduled update job: dell/iDRAC-Redfish-Scripting#32,
	// #136, #166).
	ScheduledUntilReset bool
	// UnknownImageAccepted: an image the BMC cannot process is answered
	// 200 OK, with no task, and never flashed (iLO 5 with a Smart
	// Component or .fwpkg: HPE's "Part 3" blog, "Important note"). The
	// image is fetched before the answer.
	UnknownImageAccepted bool
	// Naming is how inventory entries are named: "" the sim's (ids BIOS,
	// BMC, NIC.Integrated.1), "idrac" (Installed-<component id>-<version>:
	// the id changes with the version), "ilo" (1, 2, 3: iLO 5, System ROM,
	// the NIC).
	Naming string
	// BMCRestart is how long the Manager answers 503 after its firmware
	// was updated (0: defaultBMCRestart; negative: not at all).
	BMCRestart time.Duration
	// Sushy is sushy-tools' UpdateService (controllers/update_service.py):
	// no FirmwareInventory behind its link (404), SimpleUpdate needs
	// ImageURI and Targets (400 "Missing ImageURI and/or Targets."),
	// targets are Systems (a Manager is refused), the image is neither
	// fetched nor read: the BIOS's minor version goes up by one at once
	// (the ComputerSystem's BiosVersion), answered 204 with a Location
	// that names a static, completed Task 42.
	Sushy bool
}

// fwComponent is one firmware component of every system.
type fwComponent struct {
	key        string
	updateable bool
	// atReset: a new version applies at the next reset of the system.
	atReset bool
	// dell and hpe are its names on iDRAC (component id, name) and iLO.
	dellID, dellName, hpeID, hpeName string
}

var fwComponents = []fwComponent{
	{key: CompBIOS, updateable: true, atReset: true, dellID: "159", dellName: "BIOS", hpeID: "2", hpeName: "System ROM"},
	{key: CompBMC, updateable: true, dellID: "25227", dellName: "Integrated Dell Remote Access Controller", hpeID: "1", hpeName: "iLO 5"},
	{key: CompNIC, dellID: "108255", dellName: "Broadcom Gigabit Ethernet BCM5720 - Integrated NIC 1", hpeID: "3", hpeName: "HPE Ethernet 1Gb 4-port 331i Adapter - NIC"},
}

func fwComponentOf(key string) *fwComponent {
	for i := range fwComponents {
		if strings.EqualFold(fwComponents[i].key, key) {
			return &fwComponents[i]
		}
	}
	return nil
}

// firmwareState is a system's firmware; guarded by the system's mu.
type firmwareState struct {
	current map[string]string
	// pending are versions staged, applied at the next reset.
	pending map[string]string
	// onApply run (under s.mu) when the pending versions apply: the tasks
	// that wait for it (ScheduledUntilReset).
	onApply []func()
	// bmcBackAt: the Manager answers 503 until then.
	bmcBackAt time.Time
}

func (f *Fleet) initFirmware(s *system) {
	s.fw.current = map[string]string{}
	for _, c := range fwComponents {
		s.fw.current[c.key] = defaultFirmwareVersion
	}
	s.fw.pending = map[string]string{}
}

// tasksServed: the TaskService is there (actions may answer with tasks).
func (f *Fleet) tasksServed() bool {
	return f.servesTasks() || !f.q.Update.None
}

func (q *Quirks) updateProtocols() []string {
	if q.Update.Protocols != nil {
		return q.Update.Protocols
	}
	return []string{"HTTP", "HTTPS"}
}

// setFirmwareLocked puts a version in effect; the BIOS's shows as the
// Bios's BiosVersion attribute too. s.mu must be held.
func (s *system) setFirmwareLocked(comp, version string) {
	s.fw.current[comp] = version
	delete(s.fw.pending, comp)
	if comp == CompBIOS && s.q.biosAttr("BiosVersion") != nil {
		s.bios["BiosVersion"] = version
		s.biosVersion++
	}
	s.changedLocked()
}

// applyFirmwareLocked applies the staged versions at a reset or power-on
// and completes the tasks waiting for it; s.mu must be held.
func (s *system) applyFirmwareLocked() {
	for comp, v := range s.fw.pending {
		s.setFirmwareLocked(comp, v)
	}
	for _, fn := range s.fw.onApply {
		fn()
	}
	s.fw.onApply = nil
}

// fwEntry is one FirmwareInventory member.
type fwEntry struct {
	s    *system
	c    *fwComponent
	id   string
	name string
}

// entryLocked names component c of s as the dialect does (the iDRAC id
// holds the version); s.mu must be held.
func (f *Fleet) entryLocked(s *system, c *fwComponent) fwEntry {
	e := fwEntry{s: s, c: c, id: c.key, name: c.key}
	switch f.q.Update.Naming {
	case "idrac":
		e.id, e.name = "Installed-"+c.dellID+"-"+s.fw.current[c.key], c.dellName
	case "ilo":
		e.id, e.name = c.hpeID, c.hpeName
	}
	if len(f.order) > 1 {
		e.id = s.id + "-" + e.id
	}
	return e
}

// entries lists the inventory, system by system.
func (f *Fleet) entries() []fwEntry {
	out := make([]fwEntry, 0, len(f.order)*len(fwComponents))
	for _, s := range f.order {
		s.mu.Lock()
		for i := range fwComponents {
			out = append(out, f.entryLocked(s, &fwComponents[i]))
		}
		s.mu.Unlock()
	}
	return out
}

// entryByID finds an inventory member by id (the last segment of its
// path).
func (f *Fleet) entryByID(id string) *fwEntry {
	for _, e := range f.entries() {
		if e.id == id {
			return &e
		}
	}
	return nil
}

func (e fwEntry) related() string {
	switch e.c.key {
	case CompBIOS:
		if !e.s.q.BIOS.None {
			return e.s.biosPath()
		}
	case CompBMC:
		return e.s.mgrPath
	}
	return e.s.path
}

func (f *Fleet) entryJSON(e fwEntry) map[string]any {
	e.s.mu.Lock()
	v := e.s.fw.current[e.c.key]
	e.s.mu.Unlock()
	return map[string]any{
		"@odata.id":               firmwareInvPath + "/" + e.id,
		"@odata.type":             "#SoftwareInventory.v1_10_0.SoftwareInventory",
		"Id":                      e.id,
		"Name":                    e.name,
		"Version":                 v,
		"SoftwareId":              e.c.key,
		"Updateable":              e.c.updateable,
		"Status":                  map[string]any{"State": "Enabled", "Health": "OK"},
		"RelatedItem":             []any{odataID(e.related())},
		"RelatedItem@odata.count": 1,
	}
}

// serveUpdate serves the UpdateService (rest: the path below it).
func (f *Fleet) serveUpdate(w http.ResponseWriter, r *http.Request, rest []string) {
	uq := f.q.Update
	notFound := func() {
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
	}
	if !f.checkAuth(w, r) {
		return
	}
	switch {
	case uq.None:
		notFound()
	case len(rest) == 0:
		if allow(w, r, http.MethodGet) {
			f.writeDoc(w, http.StatusOK, f.updateServiceJSON(), "")
		}
	case len(rest) == 2 && rest[0] == "Actions" && rest[1] == "UpdateService.SimpleUpdate" && !uq.NoSimpleUpdate:
		if !allow(w, r, http.MethodPost) {
			return
		}
		if uq.Sushy {
			f.sushySimpleUpdate(w, r)
			return
		}
		f.simpleUpdate(w, r)
	case len(rest) == 1 && rest[0] == "SimpleUpdateActionInfo" && !uq.NoSimpleUpdate && !uq.Sushy:
		if allow(w, r, http.MethodGet) {
			f.writeDoc(w, http.StatusOK, f.simpleUpdateInfoJSON(), "")
		}
	case rest[0] == "FirmwareInventory" && !uq.Sushy && len(rest) <= 2:
		if !allow(w, r, http.MethodGet) {
			return
		}
		if len(rest) == 1 {
			entries := f.entries()
			members := make([]any, len(entries))
			for i, e := range entries {
				members[i] = odataID(firmwareInvPath + "/" + e.id)
			}
			f.writeDoc(w, http.StatusOK, collection(firmwareInvPath, "#SoftwareInventoryCollection.SoftwareInventoryCollection", "Firmware Inventory Collection", members), "")
			return
		}
		e := f.entryByID(rest[1])
		if e == nil {
			notFound()
			return
		}
		f.writeDoc(w, http.StatusOK, f.entryJSON(*e), "")
	default:
		notFound()
	}
}

func (f *Fleet) updateServiceJSON() map[string]any {
	d := map[string]any{
		"@odata.id":         updateServicePath,
		"@odata.type":       "#UpdateService.v1_11_0.UpdateService",
		"Id":                "UpdateService",
		"Name":              "Update Service",
		"ServiceEnabled":    true,
		"FirmwareInventory": odataID(firmwareInvPath),
	}
	if !f.q.Update.NoSimpleUpdate {
		action := map[string]any{
			"target": simpleUpdatePath,
			"TransferProtocol@Redfish.AllowableValues": f.q.updateProtocols(),
		}
		if !f.q.Update.Sushy {
			action["@Redfish.ActionInfo"] = simpleUpdateInfoPath
		}
		d["Actions"] = map[string]any{"#UpdateService.SimpleUpdate": action}
	}
	return d
}

func (f *Fleet) simpleUpdateInfoJSON() map[string]any {
	return map[string]any{
		"@odata.id":   simpleUpdateInfoPath,
		"@odata.type": "#ActionInfo.v1_3_0.ActionInfo",
		"Id":          "SimpleUpdateActionInfo",
		"Name":        "SimpleUpdate Action Info",
		"Parameters": []any{
			map[string]any{"Name": "ImageURI", "Required": true, "DataType": "String"},
			map[string]any{"Name": "TransferProtocol", "Required": false, "DataType": "String", "AllowableValues": f.q.updateProtocols()},
			map[string]any{"Name": "Targets", "Required": false, "DataType": "StringArray"},
		},
	}
}

// updateFault is a 400 to SimpleUpdate naming the parameter.
func updateFault(w http.ResponseWriter, id, param, msg string) {
	writeFaults(w, []biosFault{{id: id, prop: param, args: []string{param}, msg: msg}})
}

// simpleUpdateBody is a SimpleUpdate request as checked.
type simpleUpdateBody struct {
	image   string // with the scheme TransferProtocol gave it, if it had none
	shown   string // image without userinfo, query and fragment
	targets []*fwEntry
}

func (f *Fleet) readSimpleUpdate(w http.ResponseWriter, r *http.Request) (simpleUpdateBody, bool) {
	const action = "UpdateService.SimpleUpdate"
	var out simpleUpdateBody
	var body map[string]json.RawMessage
	if !decodeBody(w, r, &body) {
		return out, false
	}
	var image, proto *string
	var targets []string
	for k, v := range body {
		var err error
		switch k {
		case "ImageURI":
			err = json.Unmarshal(v, &image)
		case "TransferProtocol":
			err = json.Unmarshal(v, &proto)
		case "Targets":
			err = json.Unmarshal(v, &targets)
		case "Username", "Password", "@Redfish.OperationApplyTime":
			// Accepted; the sim's images need no credentials and it has
			// one apply time.
		default:
			updateFault(w, "ActionParameterUnknown", k, fmt.Sprintf("The action %s was submitted with the invalid parameter %s.", action, k))
			return out, false
		}
		if err != nil {
			updateFault(w, "ActionParameterValueTypeError", k,
				fmt.Sprintf("The value %s for the parameter %s in the action %s is of a different type than the parameter can accept.", bytes.TrimSpace(v), k, action))
			return out, false
		}
	}
	if image == nil || strings.TrimSpace(*image) == "" {
		updateFault(w, "ActionParameterMissing", "ImageURI", fmt.Sprintf("The action %s requires the parameter ImageURI to be present in the request body.", action))
		return out, false
	}
	protocols := f.q.updateProtocols()
	if proto != nil && !slices.ContainsFunc(protocols, func(p string) bool { return strings.EqualFold(p, *proto) }) {
		updateFault(w, "ActionParameterValueNotInList", "TransferProtocol",
			fmt.Sprintf("The value %s for the parameter TransferProtocol in the action %s is not in the list of acceptable values (%s).", *proto, action, strings.Join(protocols, ", ")))
		return out, false
	}
	out.image = strings.TrimSpace(*image)
	if !strings.Contains(out.image, "://") && proto != nil {
		// "This parameter is only used when the scheme is not encoded in
		// the ImageURI parameter" (UpdateService schema).
		out.image = strings.ToLower(*proto) + "://" + strings.TrimPrefix(out.image, "//")
	}
	u, err := url.Parse(out.image)
	if err != nil || u.Scheme == "" || u.Host == "" {
		updateFault(w, "ActionParameterValueFormatError", "ImageURI",
			fmt.Sprintf("The value for the parameter ImageURI in the action %s is of a different format than the parameter can accept (a URL, or a host and path with TransferProtocol).", action))
		return out, false
	}
	if !slices.ContainsFunc(protocols, func(p string) bool { return strings.EqualFold(p, u.Scheme) }) {
		updateFault(w, "ActionParameterValueNotInList", "ImageURI",
			fmt.Sprintf("The protocol %s of the parameter ImageURI in the action %s is not one this service fetches images with (%s).", u.Scheme, action, strings.Join(protocols, ", ")))
		return out, false
	}
	out.shown = showURL(u)
	if f.q.Update.TargetsIgnored {
		return out, true
	}
	for _, t := range targets {
		id, ok := strings.CutPrefix(strings.TrimSuffix(relativeTarget(t), "/"), firmwareInvPath+"/")
		var e *fwEntry
		if ok {
			e = f.entryByID(id)
		}
		if e == nil {
			updateFault(w, "ActionParameterValueNotInList", "Targets",
				fmt.Sprintf("The value %s for the parameter Targets in the action %s is not in the list of acceptable values: not a member of the FirmwareInventory.", t, action))
			return out, false
		}
		if !e.c.updateable {
			updateFault(w, "ActionParameterValueError", "Targets",
				fmt.Sprintf("The value %s for the parameter Targets in the action %s is invalid: %s is not updateable.", t, action, e.name))
			return out, false
		}
		out.targets = append(out.targets, e)
	}
	return out, true
}

// relativeTarget is a target URI's path (clients may send absolute URIs).
func relativeTarget(t string) string {
	if u, err := url.Parse(t); err == nil && u.Host != "" {
		return u.Path
	}
	return t
}

// firmwareImage is what an image says (see the format above).
type firmwareImage struct {
	comp, version, fail string
}

func parseFirmwareImage(data []byte) (firmwareImage, bool) {
	var img firmwareImage
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return img, false
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "component":
			img.comp = strings.TrimSpace(v)
		case "version":
			img.version = strings.TrimSpace(v)
		case "fail":
			img.fail = strings.TrimSpace(v)
		}
	}
	c := fwComponentOf(img.comp)
	if c == nil || img.version == "" {
		return img, false
	}
	img.comp = c.key
	return img, true
}

// fetchImage fetches and reads an image: failure says why it cannot be
// applied ("" it can), unrecognized that it was fetched and is no
// firmware image.
func (f *Fleet) fetchImage(req simpleUpdateBody) (img firmwareImage, failure string, unrecognized bool) {
	data, status, err := f.fetch(f.life, req.image)
	switch {
	case err != nil:
		return img, fmt.Sprintf("The image at %s could not be fetched: %v.", req.shown, err), false
	case status/100 != 2:
		return img, fmt.Sprintf("The image at %s could not be fetched: it answered HTTP %d %s.", req.shown, status, http.StatusText(status)), false
	case len(data) > maxFirmwareImage:
		data = nil
	}
	img, ok := parseFirmwareImage(data)
	if !ok {
		return img, fmt.Sprintf("The image at %s is not a firmware image this BMC can apply.", req.shown), true
	}
	return img, "", false
}

// simpleUpdate serves POST SimpleUpdate (see the file's comment).
func (f *Fleet) simpleUpdate(w http.ResponseWriter, r *http.Request) {
	req, ok := f.readSimpleUpdate(w, r)
	if !ok {
		return
	}
	var pre *firmwareImage
	preFail := ""
	if f.q.Update.UnknownImageAccepted {
		// iLO reads the image before it answers; one it cannot process is
		// answered 200 and never flashed.
		img, failure, unrecognized := f.fetchImage(req)
		if unrecognized {
			writeJSON(w, http.StatusOK, map[string]any{"error": map[string]any{
				"code": msgRegistryBase + "Success", "message": "Successfully Completed Request",
				"@Message.ExtendedInfo": []any{map[string]any{"MessageId": msgRegistryBase + "Success", "Message": "Successfully Completed Request"}},
			}})
			return
		}
		pre, preFail = &img, failure
	}
	t := f.newTask("UpdateService.SimpleUpdate")
	f.writeTaskAccepted(w, t)
	work := func() {
		img, failure := firmwareImage{}, preFail
		if pre != nil {
			img = *pre
		} else {
			img, failure, _ = f.fetchImage(req)
		}
		d := f.q.TaskDelay
		if d <= 0 {
			d = defaultTaskDelay
		}
		if !sleepCtx(f.life, d) {
			return
		}
		if failure == "" && img.fail != "" {
			failure = fmt.Sprintf("The BMC did not apply the image at %s (%s): %s", req.shown, img.comp, img.fail)
		}
		if failure == "" && !f.q.TaskFails {
			failure = f.applyImage(t, req, img)
		}
		f.tasks.mu.Lock()
		if failure != "" {
			t.fail, t.done = failure, true
		} else if !t.pending {
			t.done = true
		}
		f.tasks.mu.Unlock()
	}
	if !f.goBackground(work) {
		f.tasks.mu.Lock()
		t.fail, t.done = "The service is shutting down.", true
		f.tasks.mu.Unlock()
	}
}

// applyImage lands an image on the systems it applies to and returns why
// it cannot ("" when it did).
func (f *Fleet) applyImage(t *simTask, req simpleUpdateBody, img firmwareImage) string {
	c := fwComponentOf(img.comp)
	var systems []*system
	for _, e := range req.targets {
		if e.c.key != c.key {
			return fmt.Sprintf("The image at %s is %s firmware and does not apply to %s (%s).", req.shown, c.key, e.id, e.name)
		}
		if !slices.Contains(systems, e.s) {
			systems = append(systems, e.s)
		}
	}
	if len(req.targets) == 0 {
		systems = f.order
	}
	if !c.updateable {
		return fmt.Sprintf("The image at %s is %s firmware, which this BMC cannot update.", req.shown, c.key)
	}
	restart := f.q.Update.BMCRestart
	if restart == 0 {
		restart = defaultBMCRestart
	}
	scheduled := c.atReset && f.q.Update.ScheduledUntilReset
	if c.atReset {
		f.tasks.mu.Lock()
		if scheduled {
			t.pending = true
			t.noteID, t.note = "IDRAC.2.8.JCP001", "Task successfully scheduled."
		} else {
			t.noteID = "Update.1.0.AwaitToActivate"
			t.note = fmt.Sprintf("Awaiting for an action to proceed with activating image %s on %s: reset the system.", path.Base(req.shown), c.key)
		}
		f.tasks.mu.Unlock()
	}
	waiting := len(systems) // systems yet to reset; guarded by f.tasks.mu
	for _, s := range systems {
		s.mu.Lock()
		switch {
		case c.atReset:
			s.fw.pending[c.key] = img.version
			if scheduled {
				s.fw.onApply = append(s.fw.onApply, func() {
					f.tasks.mu.Lock()
					defer f.tasks.mu.Unlock()
					if waiting--; waiting == 0 {
						t.done = true
					}
				})
			}
		default:
			s.setFirmwareLocked(c.key, img.version)
			if c.key == CompBMC && restart > 0 {
				s.fw.bmcBackAt = time.Now().Add(restart)
			}
		}
		s.mu.Unlock()
	}
	return ""
}

// newTask registers a running task (done by whoever runs it).
func (f *Fleet) newTask(name string) *simTask {
	tt := &f.tasks
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.tasks == nil {
		tt.tasks = make(map[string]*simTask)
	}
	tt.next++
	t := &simTask{id: strconv.Itoa(tt.next), name: name, started: time.Now()}
	tt.tasks[t.id] = t
	return t
}

// writeTaskAccepted answers 202 with t's monitor (Location) and the Task.
func (f *Fleet) writeTaskAccepted(w http.ResponseWriter, t *simTask) {
	f.tasks.mu.Lock()
	doc := f.taskJSONLocked(t)
	f.tasks.mu.Unlock()
	w.Header().Set("Location", f.q.withSlash(taskMonitorPath+"/"+t.id))
	f.writeDoc(w, http.StatusAccepted, doc, "")
}

// sushySimpleUpdate is sushy-tools' SimpleUpdate (UpdateQuirks.Sushy).
func (f *Fleet) sushySimpleUpdate(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ImageURI string
		Targets  []string
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.ImageURI == "" || len(body.Targets) == 0 {
		sushyError(w, http.StatusBadRequest, "Missing ImageURI and/or Targets.")
		return
	}
	var systems []*system
	for _, t := range body.Targets {
		if strings.Contains(t, "Manager") {
			sushyError(w, http.StatusBadRequest, "Manager is not currently a supported Target.")
			return
		}
		s := f.systems[path.Base(strings.TrimSuffix(t, "/"))]
		if s == nil {
			sushyError(w, http.StatusNotFound, fmt.Sprintf("System %s not found", t))
			return
		}
		systems = append(systems, s)
	}
	for _, s := range systems {
		s.mu.Lock()
		s.setFirmwareLocked(CompBIOS, bumpMinor(s.fw.current[CompBIOS]))
		s.mu.Unlock()
	}
	w.Header().Set("Location", sushyTaskPath)
	w.WriteHeader(http.StatusNoContent)
}

// bumpMinor adds one to a version's second dot-separated field, as
// sushy-tools does to its BIOS version.
func bumpMinor(v string) string {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return v + ".1"
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		return v + ".1"
	}
	parts[1] = strconv.Itoa(n + 1)
	return strings.Join(parts, ".")
}

// managerRestarting answers a request to a Manager whose firmware was
// just updated with 503, as a restarting BMC's front end does; false
// when the request goes on.
func (f *Fleet) managerRestarting(w http.ResponseWriter, r *http.Request, s *system) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	if p != s.mgrPath && !strings.HasPrefix(p, s.mgrPath+"/") {
		return false
	}
	s.mu.Lock()
	back := s.fw.bmcBackAt
	s.mu.Unlock()
	if !time.Now().Before(back) {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(time.Until(back).Seconds()+0.5))))
	writeError(w, http.StatusServiceUnavailable, "ServiceTemporarilyUnavailable",
		"The BMC is restarting after a firmware update; retry later.")
	return true
}

// firmwareStatusLocked is the control API's view; s.mu must be held.
func (s *system) firmwareStatusLocked() (current, pending map[string]string) {
	return maps.Clone(s.fw.current), maps.Clone(s.fw.pending)
}

// ---- out-of-band control ----

// Firmware returns a system's firmware versions in effect and those
// staged for the next reset, by component (CompBIOS, CompBMC, CompNIC).
func (f *Fleet) Firmware(system string) (current, pending map[string]string, err error) {
	s, err := f.lookup(system)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	current, pending = s.firmwareStatusLocked()
	return current, pending, nil
}

// SetFirmwareVersion puts a component's version in effect at once, as an
// operator flashing it out of band would (drift). A version staged for
// the component is dropped.
func (f *Fleet) SetFirmwareVersion(system, component, version string) error {
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	c := fwComponentOf(component)
	if c == nil {
		return fmt.Errorf("sim: no firmware component %q (want %s, %s or %s)", component, CompBIOS, CompBMC, CompNIC)
	}
	if strings.TrimSpace(version) == "" {
		return fmt.Errorf("sim: firmware %s: empty version", c.key)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setFirmwareLocked(c.key, strings.TrimSpace(version))
	return nil
}
