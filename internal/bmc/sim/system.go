package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// ---- ComputerSystem ----

func (f *Fleet) serveSystem(w http.ResponseWriter, r *http.Request, s *system, rest []string) {
	switch {
	case len(rest) == 0:
		switch r.Method {
		case http.MethodGet:
			doc, etag := s.systemJSON(r.Context())
			f.writeDoc(w, http.StatusOK, doc, etag)
		case http.MethodPatch:
			if !f.checkETag(w, r, s.etag()) {
				return
			}
			if s.sushy {
				f.patchSystemSushy(w, r, s)
			} else {
				f.patchSystem(w, r, s)
			}
		default:
			methodNotAllowed(w, http.MethodGet, http.MethodPatch)
		}
	case s.mediaOnSystem() && len(rest) >= 1 && rest[0] == "VirtualMedia":
		// sushy-tools and newer firmware keep virtual media under the system.
		f.serveMedia(w, r, s, s.path+"/VirtualMedia", rest[1:])
	case len(rest) == 1 && rest[0] == "Settings" && s.q.BootViaSettings:
		f.serveSettings(w, r, s)
	case len(rest) >= 1 && rest[0] == s.biosSegment() && !s.q.BIOS.None:
		f.serveBIOS(w, r, s, rest[1:])
	case len(rest) == 1 && rest[0] == "SecureBoot" && !s.q.BIOS.NoSecureBoot:
		f.serveSecureBoot(w, r, s)
	case len(rest) >= 1 && rest[0] == "LogServices" && !s.q.Health.NoLog && !s.q.Health.LogOnManager:
		f.serveLogServices(w, r, s, rest[1:])
	case len(rest) >= 1 && rest[0] == "Storage" && !s.q.Storage.None:
		f.serveStorage(w, r, s, rest[1:])
	case len(rest) == 2 && rest[0] == "Actions" && rest[1] == "ComputerSystem.Reset":
		if !allow(w, r, http.MethodPost) {
			return
		}
		f.reset(w, r, s)
	case len(rest) == 1 && rest[0] == "ResetActionInfo" && s.q.ResetAllowable == "actioninfo":
		if !allow(w, r, http.MethodGet) {
			return
		}
		f.writeDoc(w, http.StatusOK, map[string]any{
			"@odata.id":   s.path + "/ResetActionInfo",
			"@odata.type": "#ActionInfo.v1_1_2.ActionInfo",
			"Id":          "ResetActionInfo",
			"Name":        "Reset Action Info",
			"Parameters": []any{map[string]any{
				"Name": "ResetType", "Required": true, "DataType": "String",
				"AllowableValues": s.resetTypes(),
			}},
		}, "")
	case len(rest) == 1 && rest[0] == "Processors":
		if !allow(w, r, http.MethodGet) {
			return
		}
		members := s.processorLinks(r.Context())
		if r.URL.Query().Has("$expand") {
			switch f.q.Expand {
			case ExpandRefused:
				writeError(w, http.StatusBadRequest, "QueryNotSupported", "Querying is not supported by the implementation.")
				return
			case ExpandHonored:
				for i, m := range members {
					link := m.(map[string]any)["@odata.id"].(string)
					id := link[strings.LastIndex(link, "/")+1:]
					if doc := s.processorJSON(id); doc != nil {
						members[i] = doc
					}
				}
			}
		}
		f.writeDoc(w, http.StatusOK, collection(s.path+"/Processors", "#ProcessorCollection.ProcessorCollection", "Processors Collection", members), "")
	case len(rest) == 2 && rest[0] == "Processors":
		if !allow(w, r, http.MethodGet) {
			return
		}
		doc := s.processorJSON(rest[1])
		if doc == nil {
			writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
			return
		}
		f.writeDoc(w, http.StatusOK, doc, "")
	default:
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
	}
}

// mediaOnSystem: the system's VirtualMedia collection is its own (linked
// from the System), not its Manager's.
func (s *system) mediaOnSystem() bool {
	return !s.noMedia && (s.sushy || s.q.MediaOnSystem)
}

// etag is the system's current ETag; s.mu must not be held.
func (s *system) etag() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.etagLocked()
}

func (s *system) etagLocked() string { return fmt.Sprintf(`W/"sys-%d"`, s.version) }

// changedLocked records a change of the system's state (a new ETag).
func (s *system) changedLocked() { s.version++ }

// checkETag applies If-Match to a PATCH when the dialect demands it: 428
// without one, 412 with one that is not current ("*" matches any).
func (f *Fleet) checkETag(w http.ResponseWriter, r *http.Request, current string) bool {
	if !f.q.ETagRequired {
		return true
	}
	got := strings.TrimSpace(r.Header.Get("If-Match"))
	switch {
	case got == "":
		writeError(w, http.StatusPreconditionRequired, "PreconditionRequired",
			"A precondition header or annotation is required to change a resource: send If-Match with the resource's ETag.")
		return false
	case got == "*":
		return true
	case !slices.Contains(strings.Split(strings.ReplaceAll(got, " ", ""), ","), current):
		writeError(w, http.StatusPreconditionFailed, "PreconditionFailed",
			"The ETag supplied did not match the ETag required to change this resource.")
		return false
	}
	return true
}

// resetTypes are the reset types the system takes.
func (s *system) resetTypes() []string {
	switch {
	case s.sushy:
		return sushyResetTypes
	case len(s.q.ResetTypes) > 0:
		return s.q.ResetTypes
	}
	return resetTypes
}

func (s *system) systemJSON(ctx context.Context) (map[string]any, string) {
	s.mu.Lock()
	power, bootTarget, bootEnabled, bootMode, etag := powerString(s.power), s.bootTarget, s.bootEnabled, s.bootMode, s.etagLocked()
	on := s.power
	biosVersion := s.fw.current[CompBIOS]
	status := s.systemStatusLocked()
	s.mu.Unlock()
	c := s.cpu
	var procs map[string]any
	switch c.Summary {
	case "sockets":
		procs = map[string]any{"Count": c.Sockets}
	case "cores":
		procs = map[string]any{"Count": c.Sockets, "CoreCount": c.Sockets * c.CoresPerSocket}
	case "x10":
		procs = map[string]any{"Count": c.Sockets * c.CoresPerSocket}
	default:
		procs = map[string]any{"Count": c.Sockets, "CoreCount": c.Sockets * c.CoresPerSocket, "LogicalProcessorCount": c.Threads()}
	}
	procs["Model"] = "Sim Xeon"
	memGiB := s.q.MemoryGiB
	if s.vm != nil {
		// What qemu really runs, so an inspection can be checked against it.
		power = s.vm.powerState(ctx)
		cpus := s.vm.opts.CPUs
		procs = map[string]any{"Count": 1, "CoreCount": cpus, "LogicalProcessorCount": cpus, "Model": "QEMU TCG"}
		memGiB = float64(s.vm.opts.MemoryMB) / 1024
	} else if s.q.ZeroInventoryWhenOff && !on {
		// The host's inventory is read from the host (OpenBMC).
		procs = map[string]any{"Count": 0, "Model": ""}
		memGiB = 0
	}
	reset := map[string]any{"target": s.path + "/Actions/ComputerSystem.Reset"}
	if s.q.ResetAllowable == "actioninfo" {
		reset["@Redfish.ActionInfo"] = s.path + "/ResetActionInfo"
	} else {
		reset["ResetType@Redfish.AllowableValues"] = s.q.resetAllowable(s.resetTypes())
	}
	d := map[string]any{
		"@odata.id":        s.path,
		"@odata.type":      "#ComputerSystem.v1_20_0.ComputerSystem",
		"Id":               s.id,
		"Name":             "Simulated System " + s.id,
		"SystemType":       "Physical",
		"Manufacturer":     "baremetal-sim",
		"Model":            "SimServer 1000",
		"SerialNumber":     s.serial,
		"UUID":             s.uuid,
		"PowerState":       power,
		"BiosVersion":      biosVersion,
		"Status":           status,
		"ProcessorSummary": procs,
		"MemorySummary":    map[string]any{"TotalSystemMemoryGiB": memGiB},
		"Boot": map[string]any{
			"BootSourceOverrideTarget":                         bootTarget,
			"BootSourceOverrideEnabled":                        bootEnabled,
			"BootSourceOverrideMode":                           bootMode,
			"BootSourceOverrideTarget@Redfish.AllowableValues": s.bootTargets(),
		},
		"Processors": odataID(s.path + "/Processors"),
		"Links": map[string]any{
			"ManagedBy": []any{odataID(s.mgrPath)},
		},
		"Actions": map[string]any{"#ComputerSystem.Reset": reset},
	}
	if s.mediaOnSystem() {
		d["VirtualMedia"] = odataID(s.path + "/VirtualMedia")
	}
	if !s.q.BIOS.None {
		d["Bios"] = odataID(s.biosPath())
	}
	if !s.q.BIOS.NoSecureBoot {
		d["SecureBoot"] = odataID(s.path + "/SecureBoot")
	}
	if !s.q.Storage.None {
		d["Storage"] = odataID(s.storageColl())
	}
	if !s.q.Health.NoChassis {
		d["Links"].(map[string]any)["Chassis"] = []any{odataID(s.chassisPath())}
	}
	if !s.q.Health.NoLog && !s.q.Health.LogOnManager {
		d["LogServices"] = odataID(s.logServicesPath())
	}
	if s.q.BootViaSettings {
		d["@Redfish.Settings"] = map[string]any{"@odata.type": "#Settings.v1_3_5.Settings", "SettingsObject": odataID(s.path + "/Settings")}
	}
	return d, etag
}

// processorLinks lists the system's processors: a socket each (and an
// empty socket with AbsentSocket); none while an OpenBMC host is off.
func (s *system) processorLinks(ctx context.Context) []any {
	n := s.cpu.Sockets
	if s.vm != nil {
		n = 1
	} else if s.q.ZeroInventoryWhenOff {
		s.mu.Lock()
		on := s.power
		s.mu.Unlock()
		if !on {
			return []any{}
		}
	}
	if s.cpu.AbsentSocket && s.vm == nil {
		n++
	}
	out := make([]any, n)
	for i := range out {
		out[i] = odataID(fmt.Sprintf("%s/Processors/CPU%d", s.path, i+1))
	}
	_ = ctx
	return out
}

// processorJSON is processor id ("CPU1", ...), nil if there is none.
func (s *system) processorJSON(id string) map[string]any {
	var i int
	if _, err := fmt.Sscanf(id, "CPU%d", &i); err != nil || fmt.Sprintf("CPU%d", i) != id || i < 1 {
		return nil
	}
	path := s.path + "/Processors/" + id
	cores, threads, model, maker := s.cpu.CoresPerSocket, s.cpu.CoresPerSocket*s.cpu.ThreadsPerCore, "Sim Xeon", "Simulated"
	switch {
	case s.vm != nil:
		if i != 1 {
			return nil
		}
		cores, threads, model, maker = s.vm.opts.CPUs, s.vm.opts.CPUs, "QEMU TCG", "QEMU"
	case i == s.cpu.Sockets+1 && s.cpu.AbsentSocket:
		// Cisco lists an empty socket with nothing but its id.
		return map[string]any{
			"@odata.id": path, "@odata.type": "#Processor.v1_0_0.Processor", "Id": id,
			"Status": map[string]any{"State": "Absent"},
		}
	case i > s.cpu.Sockets:
		return nil
	}
	return map[string]any{
		"@odata.id":             path,
		"@odata.type":           "#Processor.v1_18_0.Processor",
		"Id":                    id,
		"Name":                  "Processor",
		"Socket":                id,
		"ProcessorType":         "CPU",
		"ProcessorArchitecture": "x86",
		"InstructionSet":        "x86-64",
		"Manufacturer":          maker,
		"Model":                 model,
		"TotalCores":            cores,
		"TotalThreads":          threads,
		"Status":                map[string]any{"State": "Enabled", "Health": "OK"},
	}
}

// bootTargets are the override targets the system advertises and takes.
func (s *system) bootTargets() []string {
	switch {
	case s.sushy:
		return sushyBootTargets
	case s.vm != nil:
		return vmBootTargets
	}
	return bootTargets
}

// checkBootMode refuses UEFI on a VM-backed system without UEFI firmware
// (the PATCH would otherwise be accepted and the next power-on fail).
func (s *system) checkBootMode(w http.ResponseWriter, mode string) bool {
	if s.vm != nil && mode == "UEFI" && !s.vm.opts.uefiAvailable() {
		writeError(w, http.StatusBadRequest, "PropertyValueNotInList",
			"The value UEFI for the property Boot/BootSourceOverrideMode is not in the list of acceptable values: this system has no UEFI firmware (the simulator needs OVMF).")
		return false
	}
	return true
}

func (f *Fleet) patchSystem(w http.ResponseWriter, r *http.Request, s *system) {
	b, ok := s.readBootPatch(w, r)
	if !ok {
		return
	}
	if b != nil && s.q.BootViaSettings {
		// iDRAC 10: Boot is read-only on the system, written through its
		// @Redfish.Settings object.
		writeError(w, http.StatusBadRequest, "PropertyNotWritable", "Boot is a read-only property and cannot be assigned a value.")
		return
	}
	if b != nil && b.mode != "" && s.q.BootModeReadOnly {
		writeError(w, http.StatusBadRequest, "PropertyNotWritable",
			"The property BootSourceOverrideMode is a read only property and cannot be assigned a value.")
		return
	}
	if b != nil {
		s.mu.Lock()
		s.applyBootLocked(*b)
		s.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

// bootPatch is a PATCH's Boot: the values given ("" for absent).
type bootPatch struct{ target, enabled, mode string }

// readBootPatch decodes and checks a PATCH of a system (or its settings
// object); nil without a Boot. false: answered with the error.
func (s *system) readBootPatch(w http.ResponseWriter, r *http.Request) (*bootPatch, bool) {
	var body map[string]json.RawMessage
	if !decodeBody(w, r, &body) {
		return nil, false
	}
	for k := range body {
		if k != "Boot" && k != "@odata.etag" {
			writeError(w, http.StatusBadRequest, "PropertyNotWritable", fmt.Sprintf("The property %s is a read only property and cannot be assigned a value.", k))
			return nil, false
		}
	}
	raw, ok := body["Boot"]
	if !ok {
		return nil, true
	}
	var boot map[string]json.RawMessage
	if err := json.Unmarshal(raw, &boot); err != nil {
		writeError(w, http.StatusBadRequest, "PropertyValueTypeError", "The value for the property Boot is of a different type than the property can accept.")
		return nil, false
	}
	var b bootPatch
	for k, v := range boot {
		var dst *string
		var allowed []string
		switch k {
		case "BootSourceOverrideTarget":
			dst, allowed = &b.target, s.bootTargets()
		case "BootSourceOverrideEnabled":
			dst, allowed = &b.enabled, bootEnables
		case "BootSourceOverrideMode":
			dst, allowed = &b.mode, bootModes
		default:
			writeError(w, http.StatusBadRequest, "PropertyNotWritable", fmt.Sprintf("The property Boot/%s is a read only property and cannot be assigned a value.", k))
			return nil, false
		}
		if err := json.Unmarshal(v, dst); err != nil || !slices.Contains(allowed, *dst) {
			writeError(w, http.StatusBadRequest, "PropertyValueNotInList",
				fmt.Sprintf("The value %s for the property Boot/%s is not in the list of acceptable values.", bytes.TrimSpace(v), k))
			return nil, false
		}
	}
	if !s.checkBootMode(w, b.mode) {
		return nil, false
	}
	return &b, true
}

// applyBootLocked sets the boot override as a PATCH asked; s.mu must be
// held. ModeResetWithoutMode: a target without a mode puts the system in
// Legacy mode (as Supermicro BMCs were seen to).
func (s *system) applyBootLocked(b bootPatch) {
	if b.target != "" {
		s.bootTarget = b.target
	}
	if b.enabled != "" {
		s.bootEnabled = b.enabled
		if b.enabled == "Disabled" && b.target == "" {
			s.bootTarget = "None"
		}
	} else if b.target != "" && b.target != "None" && s.bootEnabled == "Disabled" {
		s.bootEnabled = "Once"
	}
	switch {
	case b.mode != "":
		s.bootMode = b.mode
	case b.target != "" && s.q.ModeResetWithoutMode:
		s.bootMode = "Legacy"
	}
	s.changedLocked()
}

// serveSettings serves the system's @Redfish.Settings object
// (BootViaSettings): GET shows the pending Boot (the system's own until
// one is pending), PATCH makes it pending; it applies at the next reset or
// power-on, as a BIOS-style settings object does.
func (f *Fleet) serveSettings(w http.ResponseWriter, r *http.Request, s *system) {
	switch r.Method {
	case http.MethodGet:
		s.mu.Lock()
		boot := map[string]any{"BootSourceOverrideTarget": s.bootTarget, "BootSourceOverrideEnabled": s.bootEnabled, "BootSourceOverrideMode": s.bootMode}
		if p := s.pendingBoot; p != nil {
			for k, v := range map[string]string{"BootSourceOverrideTarget": p.target, "BootSourceOverrideEnabled": p.enabled, "BootSourceOverrideMode": p.mode} {
				if v != "" {
					boot[k] = v
				}
			}
		}
		s.mu.Unlock()
		f.writeDoc(w, http.StatusOK, map[string]any{
			"@odata.id": s.path + "/Settings", "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
			"Id": "Settings", "Name": "Pending settings of system " + s.id, "Boot": boot,
		}, "")
	case http.MethodPatch:
		b, ok := s.readBootPatch(w, r)
		if !ok {
			return
		}
		if b != nil {
			s.mu.Lock()
			s.pendingBoot = b
			s.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, http.MethodGet, http.MethodPatch)
	}
}

// applyPendingLocked applies a pending boot override (BootViaSettings) at
// a reset or power-on; s.mu must be held.
func (s *system) applyPendingLocked() {
	if s.pendingBoot != nil {
		s.applyBootLocked(*s.pendingBoot)
		s.pendingBoot = nil
	}
	s.applyBIOSLocked()
	s.applyFirmwareLocked()
	s.applyVolumeJobsLocked()
}

func (f *Fleet) reset(w http.ResponseWriter, r *http.Request, s *system) {
	var body struct{ ResetType *string }
	if !decodeBody(w, r, &body) {
		return
	}
	if body.ResetType == nil {
		writeError(w, http.StatusBadRequest, "ActionParameterMissing", "The action ComputerSystem.Reset requires the parameter ResetType to be present in the request body.")
		return
	}
	rt := *body.ResetType
	if !slices.Contains(s.resetTypes(), rt) {
		writeError(w, http.StatusBadRequest, "ActionParameterNotSupported",
			fmt.Sprintf("The parameter ResetType with the value %q is not supported by the action ComputerSystem.Reset.", rt))
		return
	}
	if s.vm != nil {
		s.mu.Lock()
		ignore := s.ignorePower
		s.mu.Unlock()
		if ignore {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		f.resetVM(w, r, s, rt)
		return
	}
	if f.q.TaskMonitor {
		f.startTask(w, "ComputerSystem.Reset", func() { f.applyReset(s, rt) })
		return
	}
	f.applyReset(s, rt)
	w.WriteHeader(http.StatusNoContent)
}

// applyReset carries out a reset type on a simulated (not VM) system, at
// once or Options.PowerDelay later.
func (f *Fleet) applyReset(s *system, rt string) {
	if rt == "Nmi" {
		return // a diagnostic interrupt: power stays
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ignorePower {
		return
	}
	on := rt != "ForceOff" && rt != "GracefulShutdown"
	if rt == "PushPowerButton" {
		on = !s.power
	}
	restart := rt == "ForceRestart" || rt == "PowerCycle" || rt == "GracefulRestart"
	s.cancelPendingLocked()
	if f.opts.PowerDelay <= 0 {
		f.applyPowerLocked(s, on, restart)
		return
	}
	seq := s.powerSeq
	s.pending = time.AfterFunc(f.opts.PowerDelay, func() {
		s.mu.Lock()
		if s.powerSeq == seq {
			f.applyPowerLocked(s, on, restart)
			s.pending = nil
		}
		s.mu.Unlock()
	})
}

// cancelPendingLocked drops a delayed power change; s.mu must be held.
func (s *system) cancelPendingLocked() {
	s.powerSeq++
	if s.pending != nil {
		s.pending.Stop()
		s.pending = nil
	}
}

// ---- Manager and VirtualMedia ----

func (f *Fleet) serveManager(w http.ResponseWriter, r *http.Request, s *system, rest []string) {
	vmPath := s.mgrPath + "/VirtualMedia"
	mediaHere := !s.noMedia && !s.mediaOnSystem()
	if mediaHere && len(rest) >= 1 && rest[0] == "VirtualMedia" {
		f.serveMedia(w, r, s, vmPath, rest[1:])
		return
	}
	switch {
	case len(rest) == 0:
		if !allow(w, r, http.MethodGet) {
			return
		}
		id := s.mgrPath[strings.LastIndex(s.mgrPath, "/")+1:]
		s.mu.Lock()
		bmcVersion := s.fw.current[CompBMC]
		s.mu.Unlock()
		mgr := map[string]any{
			"@odata.id":       s.mgrPath,
			"@odata.type":     "#Manager.v1_19_0.Manager",
			"Id":              id,
			"Name":            "Simulated BMC " + id,
			"ManagerType":     "BMC",
			"FirmwareVersion": bmcVersion,
			"UUID":            nameUUID("manager/" + s.id),
			"PowerState":      "On",
			"Status":          map[string]any{"State": "Enabled", "Health": "OK"},
			"Links": map[string]any{
				"ManagerForServers": []any{odataID(s.path)},
			},
		}
		if mediaHere {
			mgr["VirtualMedia"] = odataID(vmPath)
		}
		if !s.q.Health.NoLog && s.q.Health.LogOnManager {
			mgr["LogServices"] = odataID(s.logServicesPath())
		}
		f.writeDoc(w, http.StatusOK, mgr, "")
	case len(rest) >= 1 && rest[0] == "LogServices" && !s.q.Health.NoLog && s.q.Health.LogOnManager:
		f.serveLogServices(w, r, s, rest[1:])
	default:
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
	}
}

// serveMedia serves a VirtualMedia collection at vmPath (under the Manager,
// or under the system) and its slots; rest is the path below the
// collection.
func (f *Fleet) serveMedia(w http.ResponseWriter, r *http.Request, s *system, vmPath string, rest []string) {
	if len(rest) >= 1 {
		m := s.slot(rest[0])
		if m == nil || s.q.EmptyMediaCollection {
			writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
			return
		}
		f.serveSlot(w, r, s, m, vmPath+"/"+m.id, rest[1:])
		return
	}
	if !allow(w, r, http.MethodGet) {
		return
	}
	members := make([]any, 0, len(s.slots))
	if !s.q.EmptyMediaCollection {
		for _, m := range s.slots {
			members = append(members, odataID(vmPath+"/"+m.id))
		}
	}
	f.writeDoc(w, http.StatusOK, collection(vmPath, "#VirtualMediaCollection.VirtualMediaCollection", "Virtual Media Services", members), "")
}

// insertBody is what InsertMedia and a PATCH of a slot may carry.
type insertBody struct {
	Image                *string
	Inserted             *bool
	WriteProtected       *bool
	TransferProtocolType *string
	TransferMethod       *string
	// imageNull: the body had "Image": null (an eject by PATCH).
	imageNull bool
}

func decodeInsert(w http.ResponseWriter, r *http.Request) (insertBody, bool) {
	var raw map[string]json.RawMessage
	if !decodeBody(w, r, &raw) {
		return insertBody{}, false
	}
	var b insertBody
	for k, v := range raw {
		var err error
		switch k {
		case "Image":
			if string(bytes.TrimSpace(v)) == "null" {
				b.imageNull = true
				continue
			}
			err = json.Unmarshal(v, &b.Image)
		case "Inserted":
			err = json.Unmarshal(v, &b.Inserted)
		case "WriteProtected":
			err = json.Unmarshal(v, &b.WriteProtected)
		case "TransferProtocolType":
			err = json.Unmarshal(v, &b.TransferProtocolType)
		case "TransferMethod":
			err = json.Unmarshal(v, &b.TransferMethod)
		case "@odata.etag", "MediaType", "UserName", "Password":
		default:
			writeError(w, http.StatusBadRequest, "PropertyUnknown", fmt.Sprintf("The property %s is not in the list of valid properties for the resource.", k))
			return b, false
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "PropertyValueTypeError", fmt.Sprintf("The value for the property %s is of a different type than the property can accept.", k))
			return b, false
		}
	}
	return b, true
}

// serveSlot serves one VirtualMedia resource: GET, PATCH (Image/Inserted,
// as some BMCs take instead of the actions) and the Insert/Eject actions.
func (f *Fleet) serveSlot(w http.ResponseWriter, r *http.Request, s *system, m *mediaSlot, path string, rest []string) {
	switch {
	case len(rest) == 0:
		switch r.Method {
		case http.MethodGet:
			doc, etag := s.mediaJSON(m, path)
			f.writeDoc(w, http.StatusOK, doc, etag)
		case http.MethodPatch:
			if !f.checkETag(w, r, s.slotETag(m)) {
				return
			}
			body, ok := decodeInsert(w, r)
			if !ok {
				return
			}
			eject := (body.Inserted != nil && !*body.Inserted) || body.imageNull || (body.Image != nil && *body.Image == "")
			if eject {
				f.eject(w, r, s, m)
				return
			}
			if body.Image == nil {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			f.insert(w, r, s, m, body)
		default:
			methodNotAllowed(w, http.MethodGet, http.MethodPatch)
		}
	case len(rest) == 2 && rest[0] == "Actions" && !s.q.PatchOnlyMedia:
		if !allow(w, r, http.MethodPost) {
			return
		}
		switch rest[1] {
		case "VirtualMedia.InsertMedia":
			body, ok := decodeInsert(w, r)
			if !ok {
				return
			}
			if body.Image == nil {
				writeError(w, http.StatusBadRequest, "ActionParameterMissing", "The action VirtualMedia.InsertMedia requires the parameter Image to be present in the request body.")
				return
			}
			if s.q.InsertRejectsFlags && (body.Inserted != nil || body.WriteProtected != nil) {
				// Supermicro takes Image (and the transfer parameters) only.
				writeError(w, http.StatusBadRequest, "ActionParameterUnknown",
					"The action VirtualMedia.InsertMedia was submitted with the invalid parameter Inserted or WriteProtected.")
				return
			}
			if s.q.TransferParams && !checkTransfer(w, body) {
				return
			}
			f.insert(w, r, s, m, body)
		case "VirtualMedia.EjectMedia":
			f.eject(w, r, s, m)
		default:
			writeError(w, http.StatusNotFound, "ActionNotSupported", fmt.Sprintf("The action %s is not supported by the resource.", rest[1]))
		}
	default:
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
	}
}

// transferProtocols are the TransferProtocolType values a CIMC-like
// InsertMedia lists.
var transferProtocols = []string{"CIFS", "HTTP", "HTTPS", "NFS"}

// checkTransfer wants TransferProtocolType matching the image URL's
// scheme, and a TransferMethod (if any) of Stream, as Cisco CIMC does.
func checkTransfer(w http.ResponseWriter, b insertBody) bool {
	if b.TransferProtocolType == nil {
		writeError(w, http.StatusBadRequest, "ActionParameterMissing",
			"The action VirtualMedia.InsertMedia requires the parameter TransferProtocolType to be present in the request body.")
		return false
	}
	scheme := ""
	if i := strings.Index(*b.Image, "://"); i > 0 {
		scheme = strings.ToUpper((*b.Image)[:i])
	}
	if !slices.Contains(transferProtocols, *b.TransferProtocolType) || *b.TransferProtocolType != scheme {
		writeError(w, http.StatusBadRequest, "ActionParameterValueConflict",
			fmt.Sprintf("The value %s of the parameter TransferProtocolType conflicts with the image URI's scheme.", *b.TransferProtocolType))
		return false
	}
	if b.TransferMethod != nil && *b.TransferMethod != "Stream" {
		writeError(w, http.StatusBadRequest, "ActionParameterValueNotInList",
			fmt.Sprintf("The value %s for the parameter TransferMethod is not in the list of acceptable values.", *b.TransferMethod))
		return false
	}
	return true
}
