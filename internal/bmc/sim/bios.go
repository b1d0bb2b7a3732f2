package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
)

// BIOS settings and UEFI Secure Boot (issue 30), modelled on the DMTF
// schemas (Bios v1, AttributeRegistry v1, SecureBoot v1, the Settings
// annotation of DSP0266 §9.10) and on how sushy-tools emulates them:
//
//   - <system>/Bios shows the attributes in effect, names its
//     AttributeRegistry, and links its settings object with
//     @Redfish.Settings (SettingsObject, SupportedApplyTimes). PATCH of
//     the Bios itself is 405, as on real BMCs.
//   - PATCH of the settings object with {"Attributes": {...}} (and
//     optionally "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"})
//     is checked against the registry as a whole: an unknown attribute,
//     a value of the wrong JSON type, not in the enumeration, out of
//     bounds or too long, or a read-only attribute fail it with 400 and
//     one Base message per fault, naming the attribute. Accepted values
//     are pending: GET of the settings object shows them, and the next
//     reset (ForceRestart, GracefulRestart, PowerCycle, or power on from
//     off) applies them and empties the settings object.
//   - The attribute registry is a MessageRegistryFile under
//     /redfish/v1/Registries/<name> whose Location points at the
//     AttributeRegistry document.
//   - <system>/SecureBoot: SecureBootEnable is the setting for the next
//     boot (PATCH; UEFI only: enabling it on a system in Legacy boot mode
//     is 400), SecureBootCurrentBoot follows it at the next boot.
//
// BootMode is the one attribute with a meaning to the sim: it is the
// system's boot mode (BootSourceOverrideMode) seen through the BIOS, so
// applying BootMode Bios puts the system (and its simulated machine) in
// Legacy mode, and Secure Boot is off in it. BIOSQuirks say where
// dialects differ.

// biosAttr is one attribute of the sim's registry.
type biosAttr struct {
	name, display string
	typ           string // Enumeration, String, Integer, Boolean
	values        []string
	readOnly      bool
	lower, upper  int64
	bounded       bool
	maxLen        int
	def           any
}

// simAttrs is the standard registry: a small, realistic set (names as
// Dell, sushy-tools and the DMTF examples use them).
var simAttrs = []biosAttr{
	{name: "BootMode", display: "Boot Mode", typ: "Enumeration", values: []string{"Uefi", "Bios"}},
	{name: "ProcVirtualization", display: "Virtualization Technology", typ: "Enumeration", values: []string{"Enabled", "Disabled"}, def: "Enabled"},
	{name: "SriovGlobalEnable", display: "SR-IOV Global Enable", typ: "Enumeration", values: []string{"Enabled", "Disabled"}, def: "Disabled"},
	{name: "LogicalProc", display: "Logical Processor", typ: "Enumeration", values: []string{"Enabled", "Disabled"}, def: "Enabled"},
	{name: "ProcTurboMode", display: "Turbo Boost", typ: "Enumeration", values: []string{"Enabled", "Disabled"}, def: "Enabled"},
	{name: "NumaNodesPerSocket", display: "NUMA Nodes Per Socket", typ: "Integer", lower: 1, upper: 4, bounded: true, def: int64(1)},
	{name: "MemTest", display: "System Memory Testing", typ: "Boolean", def: false},
	{name: "AssetTag", display: "Asset Tag", typ: "String", maxLen: 32, def: ""},
	{name: "SystemModelName", display: "System Model Name", typ: "String", readOnly: true, def: "SimServer 1000"},
	{name: "BiosVersion", display: "System BIOS Version", typ: "String", readOnly: true, def: "1.0.0-sim"},
}

// sushyAttrs is sushy-tools' registry (templates/bios_registry.json) and
// its libvirt driver's default attributes.
var sushyAttrs = []biosAttr{
	{name: "ProcTurboMode", display: "Turbo Boost", typ: "Enumeration", values: []string{"Enabled", "Disabled"}, def: "Enabled"},
	{name: "BootMode", display: "Boot Mode", typ: "Enumeration", values: []string{"Bios", "Uefi"}},
	{name: "EmbeddedSata", display: "Embedded SATA", typ: "Enumeration", values: []string{"Ata", "Ahci", "Raid", "Off"}, def: "Raid"},
	{name: "NicBoot1", display: "Embedded NIC 1 Boot", typ: "Enumeration", values: []string{"NetworkBoot", "Disabled"}, def: "NetworkBoot"},
}

const (
	simRegistryName = "BiosAttributeRegistrySim.v1_0_0"
	registriesPath  = rootPath + "/Registries"
	// sushyRegistryFile and sushyRegistryDoc are where sushy-tools
	// serves its registry file and the registry.
	sushyRegistryFile = "BiosAttributeRegistry.v1_0_0"
	sushyRegistryDoc  = systemsPath + "/Bios/BiosRegistry"
)

func (q *Quirks) biosAttrs() []biosAttr {
	if q.BIOS.Immediate {
		return sushyAttrs
	}
	return simAttrs
}

func (q *Quirks) biosAttr(name string) *biosAttr {
	attrs := q.biosAttrs()
	for i := range attrs {
		if attrs[i].name == name {
			return &attrs[i]
		}
	}
	return nil
}

func (q *Quirks) registryName() string {
	if q.BIOS.RegistryName != "" {
		return q.BIOS.RegistryName
	}
	return simRegistryName
}

// defaultBIOS is a new system's attributes in effect (BootMode aside).
func (f *Fleet) defaultBIOS(s *system) map[string]any {
	out := map[string]any{}
	for _, a := range s.q.biosAttrs() {
		if a.name != "BootMode" {
			out[a.name] = a.def
		}
	}
	return out
}

func (s *system) biosSegment() string {
	if s.q.BIOS.Path != "" {
		return s.q.BIOS.Path
	}
	return "Bios"
}

func (s *system) biosPath() string { return s.path + "/" + s.biosSegment() }

func (s *system) biosSettingsPath() string {
	seg := s.q.BIOS.SettingsPath
	if seg == "" {
		seg = "Settings"
	}
	return s.biosPath() + "/" + seg
}

// biosBootMode is BootMode as the BIOS shows the system's boot mode.
func biosBootMode(mode string) string {
	if mode == "Legacy" {
		return "Bios"
	}
	return "Uefi"
}

// biosLocked is the attributes in effect; s.mu must be held.
func (s *system) biosLocked() map[string]any {
	out := maps.Clone(s.bios)
	out["BootMode"] = biosBootMode(s.bootMode)
	return out
}

// setBIOSLocked sets one attribute in effect; s.mu must be held.
func (s *system) setBIOSLocked(name string, v any) {
	if name == "BootMode" {
		if v == "Bios" {
			s.bootMode = "Legacy"
		} else {
			s.bootMode = "UEFI"
		}
		return
	}
	s.bios[name] = v
}

// applyBIOSLocked applies the pending attributes at a reset or power-on
// (not those iDRAC holds for want of a job) and boots with Secure Boot
// as set; s.mu must be held.
func (s *system) applyBIOSLocked() {
	if len(s.biosPending) > 0 && (!s.q.BIOS.ApplyTimeRequired || s.biosJob) {
		for k, v := range s.biosPending {
			s.setBIOSLocked(k, v)
		}
		clear(s.biosPending)
		s.biosJob = false
		s.biosVersion++
	}
	s.secureBootNow = s.secureBoot && s.bootMode == "UEFI"
}

func (s *system) biosETagLocked() string {
	return fmt.Sprintf(`W/"bios-%d-%d"`, s.version, s.biosVersion)
}

// supportedApplyTimes are the apply times the settings object takes.
func (s *system) supportedApplyTimes() []string {
	if s.q.BIOS.Immediate {
		return nil // sushy-tools lists none and ignores what it is sent
	}
	// iDRAC also lists Immediate and the maintenance windows; the sim
	// lists what it carries out.
	return []string{"OnReset"}
}

// serveBIOS serves the Bios resource (rest empty) and its settings object.
func (f *Fleet) serveBIOS(w http.ResponseWriter, r *http.Request, s *system, rest []string) {
	switch {
	case len(rest) == 0:
		if !allow(w, r, http.MethodGet) {
			return
		}
		s.mu.Lock()
		attrs, etag := s.biosLocked(), s.biosETagLocked()
		s.mu.Unlock()
		d := map[string]any{
			"@odata.id":         s.biosPath(),
			"@odata.type":       "#Bios.v1_2_0.Bios",
			"Id":                "BIOS",
			"Name":              "BIOS Configuration Current Settings",
			"AttributeRegistry": s.q.registryName(),
			"Attributes":        attrs,
		}
		if !s.q.BIOS.NoSettingsLink {
			settings := map[string]any{"@odata.type": "#Settings.v1_3_5.Settings", "SettingsObject": odataID(s.biosSettingsPath())}
			if at := s.supportedApplyTimes(); at != nil {
				settings["SupportedApplyTimes"] = at
			}
			d["@Redfish.Settings"] = settings
		}
		f.writeDoc(w, http.StatusOK, d, etag)
	case len(rest) == 1 && rest[0] == s.biosSettingsPath()[len(s.biosPath())+1:]:
		switch r.Method {
		case http.MethodGet:
			f.getBIOSSettings(w, r, s)
		case http.MethodPatch:
			f.patchBIOSSettings(w, r, s)
		default:
			methodNotAllowed(w, http.MethodGet, http.MethodPatch)
		}
	default:
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
	}
}

func (f *Fleet) getBIOSSettings(w http.ResponseWriter, r *http.Request, s *system) {
	bq := s.q.BIOS
	s.mu.Lock()
	pending := maps.Clone(s.biosPending)
	current := s.biosLocked()
	etag := s.biosETagLocked()
	s.mu.Unlock()
	if len(pending) == 0 && bq.SettingsMissingWhenEmpty {
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
		return
	}
	d := map[string]any{
		"@odata.id":         s.biosSettingsPath(),
		"@odata.type":       "#Bios.v1_2_0.Bios",
		"Id":                "Settings",
		"Name":              "BIOS Configuration Pending Settings",
		"AttributeRegistry": s.q.registryName(),
	}
	switch {
	case bq.SettingsFull || bq.Immediate:
		// sushy-tools shows what is in effect: nothing is ever pending.
		maps.Copy(current, pending)
		d["Attributes"] = current
	case len(pending) > 0 || !bq.SettingsOmitEmpty:
		d["Attributes"] = pending
	}
	f.writeDoc(w, http.StatusOK, d, etag)
}

// biosFault is one reason a PATCH of the settings object is refused.
type biosFault struct {
	id, msg string
	args    []string
	prop    string
}

func (f *Fleet) patchBIOSSettings(w http.ResponseWriter, r *http.Request, s *system) {
	bq := s.q.BIOS
	s.mu.Lock()
	etag, job := s.biosETagLocked(), s.biosJob
	s.mu.Unlock()
	if (f.q.ETagRequired || bq.ETagRequired) && !checkIfMatch(w, r, etag) {
		return
	}
	var body map[string]json.RawMessage
	if !decodeBody(w, r, &body) {
		return
	}
	var attrs map[string]json.RawMessage
	applyTime := ""
	for k, v := range body {
		switch k {
		case "Attributes":
			if err := json.Unmarshal(v, &attrs); err != nil {
				writeError(w, http.StatusBadRequest, "PropertyValueTypeError", "The value for the property Attributes is of a different type than the property can accept.")
				return
			}
		case "@Redfish.SettingsApplyTime":
			var at struct{ ApplyTime string }
			if err := json.Unmarshal(v, &at); err != nil {
				writeError(w, http.StatusBadRequest, "PropertyValueTypeError", "The value for the property @Redfish.SettingsApplyTime is of a different type than the property can accept.")
				return
			}
			applyTime = at.ApplyTime
		case "@odata.etag":
		default:
			writeError(w, http.StatusBadRequest, "PropertyUnknown", fmt.Sprintf("The property %s is not in the list of valid properties for the resource.", k))
			return
		}
	}
	if applyTime != "" && !bq.Immediate && !slices.Contains(s.supportedApplyTimes(), applyTime) {
		writeError(w, http.StatusBadRequest, "PropertyValueNotInList",
			fmt.Sprintf("The value %s for the property @Redfish.SettingsApplyTime/ApplyTime is not in the list of acceptable values.", applyTime))
		return
	}
	if bq.ApplyTimeRequired && job {
		// iDRAC: its BIOS configuration job is scheduled.
		writeError(w, http.StatusBadRequest, "GeneralError",
			"Pending configuration values are already committed, unable to perform another set operation.")
		return
	}
	values := make(map[string]any, len(attrs))
	var faults []biosFault
	for name, raw := range attrs {
		if bq.Immediate {
			var v any
			_ = json.Unmarshal(raw, &v)
			values[name] = v
			continue
		}
		v, fault := s.q.checkBIOSValue(name, raw)
		if fault != nil {
			faults = append(faults, *fault)
			continue
		}
		values[name] = v
	}
	if len(faults) > 0 {
		slices.SortFunc(faults, func(a, b biosFault) int { return strings.Compare(a.prop, b.prop) })
		writeFaults(w, faults)
		return
	}
	s.mu.Lock()
	for name, v := range values {
		if slices.Contains(bq.Drops, name) {
			continue
		}
		if bq.Immediate {
			s.setBIOSLocked(name, v)
			continue
		}
		s.biosPending[name] = v
	}
	if bq.ApplyTimeRequired && applyTime == "OnReset" && len(s.biosPending) > 0 {
		s.biosJob = true
	}
	s.biosVersion++
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// checkBIOSValue checks one attribute's value against the registry and
// returns it in the sim's Go form (string, int64, bool).
func (q *Quirks) checkBIOSValue(name string, raw json.RawMessage) (any, *biosFault) {
	prop := "Attributes/" + name
	a := q.biosAttr(name)
	if a == nil {
		return nil, &biosFault{id: "PropertyUnknown", prop: prop, args: []string{name},
			msg: fmt.Sprintf("The property %s is not in the list of valid properties for the resource.", name)}
	}
	if a.readOnly {
		return nil, &biosFault{id: "PropertyNotWritable", prop: prop, args: []string{name},
			msg: fmt.Sprintf("The property %s is a read only property and cannot be assigned a value.", name)}
	}
	val := string(bytes.TrimSpace(raw))
	typeErr := &biosFault{id: "PropertyValueTypeError", prop: prop, args: []string{val, name},
		msg: fmt.Sprintf("The value %s for the property %s is of a different type than the property can accept.", val, name)}
	switch a.typ {
	case "Enumeration":
		var v string
		if json.Unmarshal(raw, &v) != nil {
			return nil, typeErr
		}
		if !slices.Contains(a.values, v) {
			return nil, &biosFault{id: "PropertyValueNotInList", prop: prop, args: []string{val, name},
				msg: fmt.Sprintf("The value %s for the property %s is not in the list of acceptable values.", val, name)}
		}
		return v, nil
	case "String":
		var v string
		if json.Unmarshal(raw, &v) != nil {
			return nil, typeErr
		}
		if a.maxLen > 0 && len(v) > a.maxLen {
			return nil, &biosFault{id: "StringValueTooLong", prop: prop, args: []string{val, fmt.Sprint(a.maxLen)},
				msg: fmt.Sprintf("The string %s for the property %s exceeds the length limit %d.", val, name, a.maxLen)}
		}
		return v, nil
	case "Integer":
		var f float64
		if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, typeErr
		}
		v := int64(f)
		if a.bounded && (v < a.lower || v > a.upper) {
			return nil, &biosFault{id: "PropertyValueOutOfRange", prop: prop, args: []string{val, name},
				msg: fmt.Sprintf("The value %s for the property %s is not in the supported range of acceptable values (%d to %d).", val, name, a.lower, a.upper)}
		}
		return v, nil
	case "Boolean":
		var v bool
		if json.Unmarshal(raw, &v) != nil {
			return nil, typeErr
		}
		return v, nil
	}
	return nil, typeErr
}

// writeFaults answers 400 with one extended message per fault
// (DSP0266 §9.5.2.2), each naming its property.
func writeFaults(w http.ResponseWriter, faults []biosFault) {
	infos := make([]any, len(faults))
	for i, ft := range faults {
		infos[i] = map[string]any{
			"@odata.type":       "#Message.v1_1_1.Message",
			"MessageId":         msgRegistryBase + ft.id,
			"Message":           ft.msg,
			"MessageArgs":       ft.args,
			"RelatedProperties": []string{"#/" + ft.prop},
			"Severity":          "Warning",
			"Resolution":        "Correct the value of the property in the request body and resubmit the request.",
		}
	}
	code, msg := msgRegistryBase+faults[0].id, faults[0].msg
	if len(faults) > 1 {
		code, msg = msgRegistryBase+"GeneralError", "A general error has occurred. See ExtendedInfo for more information."
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{
		"error": map[string]any{"code": code, "message": msg, "@Message.ExtendedInfo": infos},
	})
}

// checkIfMatch applies If-Match: 428 without one, 412 when it is not
// current ("*" matches any).
func checkIfMatch(w http.ResponseWriter, r *http.Request, current string) bool {
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

// ---- attribute registry ----

// serveRegistries serves /redfish/v1/Registries, the BIOS registry's
// MessageRegistryFile and the registry itself (rest: below Registries).
func (f *Fleet) serveRegistries(w http.ResponseWriter, r *http.Request, rest []string) {
	if !allow(w, r, http.MethodGet) || !f.checkAuth(w, r) {
		return
	}
	bq := f.q.BIOS
	name := f.q.registryName()
	file := name
	if bq.RegistryElsewhere {
		file = sushyRegistryFile
	}
	served := !bq.NoRegistry && !bq.None
	notFound := func() {
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
	}
	switch {
	case len(rest) == 0:
		members := []any{}
		if served {
			members = append(members, odataID(registriesPath+"/"+file))
		}
		f.writeDoc(w, http.StatusOK, collection(registriesPath, "#MessageRegistryFileCollection.MessageRegistryFileCollection", "Registry File Collection", members), "")
	case !served || rest[0] != file:
		notFound()
	case len(rest) == 1:
		loc := registriesPath + "/" + file + "/" + name + ".json"
		registry := name
		if bq.RegistryElsewhere {
			loc, registry = sushyRegistryDoc, "BiosAttributeRegistry1.0"
		}
		f.writeDoc(w, http.StatusOK, map[string]any{
			"@odata.id":   registriesPath + "/" + file,
			"@odata.type": "#MessageRegistryFile.v1_1_3.MessageRegistryFile",
			"Id":          file,
			"Name":        "BIOS Attribute Registry File",
			"Languages":   []string{"en"},
			"Registry":    registry,
			"Location":    []any{map[string]any{"Language": "en", "Uri": loc}},
		}, "")
	case len(rest) == 2 && rest[1] == name+".json" && !bq.RegistryElsewhere:
		f.writeDoc(w, http.StatusOK, f.registryJSON(registriesPath+"/"+file+"/"+rest[1]), "")
	default:
		notFound()
	}
}

// registryJSON is the AttributeRegistry document.
func (f *Fleet) registryJSON(path string) map[string]any {
	var entries []any
	for _, a := range f.q.biosAttrs() {
		e := map[string]any{
			"AttributeName": a.name,
			"DisplayName":   a.display,
			"Type":          a.typ,
			"ReadOnly":      a.readOnly,
			"Hidden":        false,
			"Immutable":     a.readOnly,
			"ResetRequired": true,
		}
		if a.typ == "Enumeration" {
			vals := make([]any, len(a.values))
			for i, v := range a.values {
				vals[i] = map[string]any{"ValueName": v, "ValueDisplayName": v}
			}
			e["Value"] = vals
		}
		if a.bounded {
			e["LowerBound"], e["UpperBound"], e["ScalarIncrement"] = a.lower, a.upper, 1
		}
		if a.maxLen > 0 {
			e["MaxLength"], e["MinLength"] = a.maxLen, 0
		}
		entries = append(entries, e)
	}
	return map[string]any{
		"@odata.id":       path,
		"@odata.type":     "#AttributeRegistry.v1_3_8.AttributeRegistry",
		"Id":              f.q.registryName(),
		"Name":            "BIOS Attribute Registry",
		"Language":        "en",
		"OwningEntity":    "baremetal-sim",
		"RegistryVersion": "1.0.0",
		"SupportedSystems": []any{map[string]any{
			"ProductName": "SimServer 1000", "SystemId": "SIM1000", "FirmwareVersion": "1.0.0-sim",
		}},
		"RegistryEntries": map[string]any{"Attributes": entries},
	}
}

// ---- Secure Boot ----

func (f *Fleet) serveSecureBoot(w http.ResponseWriter, r *http.Request, s *system) {
	switch r.Method {
	case http.MethodGet:
		s.mu.Lock()
		enable, now, etag := s.secureBoot, s.secureBootNow, s.etagLocked()
		s.mu.Unlock()
		mode := "UserMode"
		if s.q.BIOS.Immediate {
			mode = "DeployedMode" // sushy-tools' templates/secure_boot.json
		}
		f.writeDoc(w, http.StatusOK, map[string]any{
			"@odata.id":             s.path + "/SecureBoot",
			"@odata.type":           "#SecureBoot.v1_1_0.SecureBoot",
			"Id":                    "SecureBoot",
			"Name":                  "UEFI Secure Boot",
			"SecureBootEnable":      enable,
			"SecureBootCurrentBoot": map[bool]string{true: "Enabled", false: "Disabled"}[now],
			"SecureBootMode":        mode,
		}, etag)
	case http.MethodPatch:
		if !f.checkETag(w, r, s.etag()) {
			return
		}
		var body map[string]json.RawMessage
		if !decodeBody(w, r, &body) {
			return
		}
		var enable *bool
		for k, v := range body {
			switch k {
			case "SecureBootEnable":
				if err := json.Unmarshal(v, &enable); err != nil || enable == nil {
					writeError(w, http.StatusBadRequest, "PropertyValueTypeError",
						fmt.Sprintf("The value %s for the property SecureBootEnable is of a different type than the property can accept.", bytes.TrimSpace(v)))
					return
				}
			case "@odata.etag":
			case "SecureBootCurrentBoot", "SecureBootMode":
				writeError(w, http.StatusBadRequest, "PropertyNotWritable", fmt.Sprintf("The property %s is a read only property and cannot be assigned a value.", k))
				return
			default:
				writeError(w, http.StatusBadRequest, "PropertyUnknown", fmt.Sprintf("The property %s is not in the list of valid properties for the resource.", k))
				return
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if enable != nil && *enable && s.bootMode != "UEFI" {
			// "This property can be enabled in UEFI boot mode only."
			// (SecureBoot v1 schema).
			writeError(w, http.StatusBadRequest, "PropertyValueConflict",
				"The property SecureBootEnable could not be written because its value would conflict with the value of the BootMode attribute (Bios): Secure Boot needs UEFI boot mode.")
			return
		}
		if enable != nil {
			s.secureBoot = *enable
			s.changedLocked()
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, http.MethodGet, http.MethodPatch)
	}
}

// ---- out-of-band control ----

// BIOS returns a system's BIOS attributes in effect and those pending
// (written, applied at the next reset). Integers are int64.
func (f *Fleet) BIOS(system string) (attrs, pending map[string]any, err error) {
	s, err := f.lookup(system)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.biosLocked(), maps.Clone(s.biosPending), nil
}

// SetBIOSAttribute changes an attribute in effect at once, as an operator
// at the console would (an out-of-band change: drift). The value must
// be one the registry allows (string, an integer type, bool); a pending
// value of the attribute stays pending.
func (f *Fleet) SetBIOSAttribute(system, name string, value any) error {
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("sim: BIOS attribute %s: %w", name, err)
	}
	v := any(nil)
	if s.q.BIOS.Immediate {
		_ = json.Unmarshal(raw, &v)
	} else {
		var fault *biosFault
		if v, fault = s.q.checkBIOSValue(name, raw); fault != nil {
			return fmt.Errorf("sim: system %s: %s", s.id, fault.msg)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setBIOSLocked(name, v)
	s.biosVersion++
	s.changedLocked()
	return nil
}

// SecureBoot returns SecureBootEnable and SecureBootCurrentBoot.
func (f *Fleet) SecureBoot(system string) (enabled, current bool, err error) {
	s, err := f.lookup(system)
	if err != nil {
		return false, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.secureBoot, s.secureBootNow, nil
}

// SetSecureBoot sets Secure Boot in effect at once (the setting and the
// running boot's), as an operator at the console followed by a reboot
// would; on needs UEFI boot mode.
func (f *Fleet) SetSecureBoot(system string, on bool) error {
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if on && s.bootMode != "UEFI" {
		return fmt.Errorf("sim: system %s boots in %s mode: Secure Boot needs UEFI", s.id, s.bootMode)
	}
	s.secureBoot, s.secureBootNow = on, on
	s.changedLocked()
	return nil
}

// restoreBIOSLocked restores the BIOS and Secure Boot of a state file:
// values as JSON decoded them (numbers float64) go back to the sim's form
// through the registry; an attribute it no longer has is dropped. s.mu
// must be held.
func (s *system) restoreBIOSLocked(ss systemState) {
	restore := func(from map[string]any, into map[string]any) {
		for k, v := range from {
			if s.q.BIOS.Immediate {
				into[k] = v
				continue
			}
			raw, err := json.Marshal(v)
			if err != nil {
				continue
			}
			// Read-only attributes are the registry's, not the file's.
			if x, fault := s.q.checkBIOSValue(k, raw); fault == nil {
				into[k] = x
			}
		}
	}
	restore(ss.BIOS, s.bios)
	restore(ss.BIOSPending, s.biosPending)
	// BootMode is the boot mode, restored with it.
	delete(s.bios, "BootMode")
	s.biosJob = ss.BIOSJob && len(s.biosPending) > 0
	s.secureBoot, s.secureBootNow = ss.SecureBoot, ss.SecureBootNow
}
