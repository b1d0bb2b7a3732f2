package sim

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

const (
	rootPath        = "/redfish/v1"
	systemsPath     = rootPath + "/Systems"
	managersPath    = rootPath + "/Managers"
	sessionSvcPath  = rootPath + "/SessionService"
	sessionsPath    = sessionSvcPath + "/Sessions"
	maxBody         = 64 << 10
	msgRegistryBase = "Base.1.8."
)

var (
	resetTypes   = []string{"On", "ForceOff", "GracefulShutdown", "ForceRestart", "PowerCycle"}
	bootTargets  = []string{"None", "Pxe", "Cd", "Hdd", "BiosSetup", "Usb", "UefiHttp"}
	bootEnables  = []string{"Disabled", "Once", "Continuous"}
	bootModes    = []string{"Legacy", "UEFI"}
	mediaSchemes = []string{"http", "https", "nfs", "cifs", "smb"}
)

// ServeHTTP routes Redfish and control requests.
func (f *Fleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !f.enter() {
		abort(w)
		return
	}
	defer f.inflight.Done()

	p := r.URL.Path
	if p == DemoImagePath {
		serveDemoImage(w, r)
		return
	}
	if p == "/sim" || strings.HasPrefix(p, "/sim/") {
		f.control(w, r)
		return
	}
	f.total.Add(1)
	if f.opts.TrailingSlashIDs {
		sw := &slashWriter{ResponseWriter: w}
		defer sw.flush()
		w = sw
	}
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	switch {
	case p == "/redfish":
		writeJSON(w, http.StatusOK, map[string]any{"v1": rootPath + "/"})
		return
	case p == rootPath:
		if !allow(w, r, http.MethodGet) {
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("OData-Version", "4.0")
		_, _ = w.Write(f.rootJSON)
		return
	case !strings.HasPrefix(p, rootPath+"/"):
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", p))
		return
	}
	segs := strings.Split(strings.TrimPrefix(p, rootPath+"/"), "/")
	switch segs[0] {
	case "SessionService":
		if f.opts.NoSessionService {
			writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", p))
			return
		}
		f.serveSessions(w, r, segs[1:])
	case "Systems", "Managers":
		if len(segs) == 1 {
			if !allow(w, r, http.MethodGet) || !f.checkAuth(w, r) {
				return
			}
			coll := f.sysColl
			if segs[0] == "Managers" {
				coll = f.mgrColl
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set("OData-Version", "4.0")
			_, _ = w.Write(coll)
			return
		}
		s := f.systems[segs[1]]
		if s == nil {
			if f.checkAuth(w, r) {
				writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", p))
			}
			return
		}
		if !f.systemPreamble(w, r, s) {
			return
		}
		if segs[0] == "Systems" {
			f.serveSystem(w, r, s, segs[2:])
		} else {
			f.serveManager(w, r, s, segs[2:])
		}
	default:
		if f.checkAuth(w, r) {
			writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", p))
		}
	}
}

// systemPreamble counts the request, adds latency and applies the system's
// fault. It returns false when the request has been answered (or dropped).
func (f *Fleet) systemPreamble(w http.ResponseWriter, r *http.Request, s *system) bool {
	s.requests.Add(1)
	if f.opts.Latency > 0 && !f.sleep(r.Context(), f.opts.Latency) {
		abort(w)
		return false
	}
	s.mu.Lock()
	fault := s.fault
	if fault == FaultFlap {
		if s.flapFail {
			fault = FaultDown
		} else {
			fault = FaultNone
			// A fresh connection for the next request: otherwise Go's (and
			// others') transparent retry of idempotent requests on a reused
			// connection would hide every failing turn behind a healthy one.
			w.Header().Set("Connection", "close")
		}
		s.flapFail = !s.flapFail
	}
	s.mu.Unlock()

	switch fault {
	case FaultDown:
		abort(w)
		return false
	case FaultHang:
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
		abort(w)
		return false
	case FaultSlow:
		if !f.sleep(r.Context(), f.opts.SlowDelay) {
			abort(w)
			return false
		}
	case FaultError:
		writeError(w, http.StatusInternalServerError, "InternalError",
			fmt.Sprintf("The request failed due to an internal service error on system %s (simulated fault). The service is still operational.", s.id))
		return false
	case FaultAuth:
		unauthorized(w)
		return false
	}
	return f.checkAuth(w, r)
}

// sleep waits d; false if the request or the fleet ended first.
func (f *Fleet) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-f.done:
		return false
	}
}

// abort drops the connection without an answer, as a crashing BMC would.
func abort(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // RST rather than FIN: "connection reset by peer"
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// ---- authentication and sessions ----

func (f *Fleet) authorized(r *http.Request) bool {
	if tok := r.Header.Get("X-Auth-Token"); tok != "" {
		f.sessMu.RLock()
		_, ok := f.sessions[tok]
		f.sessMu.RUnlock()
		return ok
	}
	u, p, ok := r.BasicAuth()
	return ok && f.credentialsOK(u, p)
}

func (f *Fleet) credentialsOK(u, p string) bool {
	uok := subtle.ConstantTimeCompare([]byte(u), []byte(f.opts.Username)) == 1
	pok := subtle.ConstantTimeCompare([]byte(p), []byte(f.opts.Password)) == 1
	return uok && pok
}

func (f *Fleet) checkAuth(w http.ResponseWriter, r *http.Request) bool {
	if f.authorized(r) {
		return true
	}
	unauthorized(w)
	return false
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Basic realm="Redfish"`)
	writeError(w, http.StatusUnauthorized, "InsufficientPrivilege",
		"There are insufficient privileges for the account or credentials associated with the current session to perform the requested operation.")
}

func (f *Fleet) serveSessions(w http.ResponseWriter, r *http.Request, segs []string) {
	switch {
	case len(segs) == 0:
		if !allow(w, r, http.MethodGet) || !f.checkAuth(w, r) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.id":      sessionSvcPath,
			"@odata.type":    "#SessionService.v1_1_8.SessionService",
			"Id":             "SessionService",
			"Name":           "Session Service",
			"ServiceEnabled": true,
			"SessionTimeout": 1800,
			"Sessions":       odataID(sessionsPath),
		})
	case len(segs) == 1 && segs[0] == "Sessions":
		switch r.Method {
		case http.MethodPost:
			f.login(w, r)
		case http.MethodGet:
			if !f.checkAuth(w, r) {
				return
			}
			f.sessMu.RLock()
			members := make([]any, 0, len(f.sessionByID))
			for id := range f.sessionByID {
				members = append(members, odataID(sessionsPath+"/"+id))
			}
			f.sessMu.RUnlock()
			writeJSON(w, http.StatusOK, collection(sessionsPath, "#SessionCollection.SessionCollection", "Session Collection", members))
		default:
			methodNotAllowed(w, http.MethodGet, http.MethodPost)
		}
	case len(segs) == 2 && segs[0] == "Sessions":
		if !f.checkAuth(w, r) {
			return
		}
		f.sessMu.Lock()
		s := f.sessionByID[segs[1]]
		if s != nil && r.Method == http.MethodDelete {
			delete(f.sessionByID, s.id)
			delete(f.sessions, s.token)
		}
		f.sessMu.Unlock()
		if s == nil {
			writeError(w, http.StatusNotFound, "ResourceMissingAtURI", "The session was not found.")
			return
		}
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, sessionJSON(s))
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			methodNotAllowed(w, http.MethodGet, http.MethodDelete)
		}
	default:
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", "The resource was not found.")
	}
}

func (f *Fleet) login(w http.ResponseWriter, r *http.Request) {
	var body struct {
		UserName string
		Password string
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON.")
		return
	}
	if !f.credentialsOK(body.UserName, body.Password) {
		unauthorized(w)
		return
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	f.sessMu.Lock()
	f.nextSession++
	s := &session{id: fmt.Sprint(f.nextSession), token: hex.EncodeToString(b[:]), user: body.UserName, created: time.Now()}
	f.sessions[s.token] = s
	f.sessionByID[s.id] = s
	f.sessMu.Unlock()
	f.logins.Add(1)
	w.Header().Set("X-Auth-Token", s.token)
	w.Header().Set("Location", sessionsPath+"/"+s.id)
	writeJSON(w, http.StatusCreated, sessionJSON(s))
}

func sessionJSON(s *session) map[string]any {
	return map[string]any{
		"@odata.id":   sessionsPath + "/" + s.id,
		"@odata.type": "#Session.v1_3_0.Session",
		"Id":          s.id,
		"Name":        "User Session",
		"UserName":    s.user,
		"CreatedTime": s.created.UTC().Format(time.RFC3339),
	}
}

// ---- static documents ----

func (f *Fleet) buildStatic() {
	root := map[string]any{
		"@odata.id":      rootPath + "/",
		"@odata.type":    "#ServiceRoot.v1_15_0.ServiceRoot",
		"Id":             "RootService",
		"Name":           "Root Service",
		"RedfishVersion": "1.15.0",
		"UUID":           f.uuid,
		"Product":        "baremetal-sim",
		"Vendor":         "baremetal-tf",
		"Systems":        odataID(systemsPath),
		"Managers":       odataID(managersPath),
		"Links":          map[string]any{},
	}
	if !f.opts.NoSessionService {
		root["SessionService"] = odataID(sessionSvcPath)
		root["Links"] = map[string]any{"Sessions": odataID(sessionsPath)}
	}
	f.rootJSON = mustJSON(root)

	sys := make([]any, len(f.order))
	mgr := make([]any, len(f.order))
	for i, s := range f.order {
		sys[i] = odataID(s.path)
		mgr[i] = odataID(s.mgrPath)
	}
	f.sysColl = mustJSON(collection(systemsPath, "#ComputerSystemCollection.ComputerSystemCollection", "Computer System Collection", sys))
	f.mgrColl = mustJSON(collection(managersPath, "#ManagerCollection.ManagerCollection", "Manager Collection", mgr))
}

// ---- ComputerSystem ----

func (f *Fleet) serveSystem(w http.ResponseWriter, r *http.Request, s *system, rest []string) {
	switch {
	case len(rest) == 0:
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, s.systemJSON(r.Context()))
		case http.MethodPatch:
			if s.sushy {
				f.patchSystemSushy(w, r, s)
			} else {
				f.patchSystem(w, r, s)
			}
		default:
			methodNotAllowed(w, http.MethodGet, http.MethodPatch)
		}
	case s.sushy && !s.noMedia && len(rest) >= 1 && rest[0] == "VirtualMedia":
		// sushy-tools keeps virtual media under the system.
		f.serveMedia(w, r, s, s.path+"/VirtualMedia", rest[1:])
	case len(rest) == 2 && rest[0] == "Actions" && rest[1] == "ComputerSystem.Reset":
		if !allow(w, r, http.MethodPost) {
			return
		}
		f.reset(w, r, s)
	case len(rest) == 1 && rest[0] == "Processors":
		if !allow(w, r, http.MethodGet) {
			return
		}
		members := []any{odataID(s.path + "/Processors/CPU1"), odataID(s.path + "/Processors/CPU2")}
		if s.vm != nil {
			members = members[:1]
		}
		writeJSON(w, http.StatusOK, collection(s.path+"/Processors", "#ProcessorCollection.ProcessorCollection", "Processors Collection", members))
	case s.vm != nil && len(rest) == 2 && rest[0] == "Processors" && rest[1] == "CPU1":
		if !allow(w, r, http.MethodGet) {
			return
		}
		cpus := s.vm.opts.CPUs
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.id":             s.path + "/Processors/CPU1",
			"@odata.type":           "#Processor.v1_18_0.Processor",
			"Id":                    "CPU1",
			"Name":                  "Processor",
			"Socket":                "CPU1",
			"ProcessorType":         "CPU",
			"ProcessorArchitecture": "x86",
			"InstructionSet":        "x86-64",
			"Manufacturer":          "QEMU",
			"Model":                 "QEMU TCG",
			"TotalCores":            cpus,
			"TotalThreads":          cpus,
			"Status":                map[string]any{"State": "Enabled", "Health": "OK"},
		})
	case s.vm == nil && len(rest) == 2 && rest[0] == "Processors" && (rest[1] == "CPU1" || rest[1] == "CPU2"):
		if !allow(w, r, http.MethodGet) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.id":             s.path + "/Processors/" + rest[1],
			"@odata.type":           "#Processor.v1_18_0.Processor",
			"Id":                    rest[1],
			"Name":                  "Processor",
			"Socket":                rest[1],
			"ProcessorType":         "CPU",
			"ProcessorArchitecture": "x86",
			"InstructionSet":        "x86-64",
			"Manufacturer":          "Simulated",
			"Model":                 "Sim Xeon 8C",
			"TotalCores":            8,
			"TotalThreads":          16,
			"Status":                map[string]any{"State": "Enabled", "Health": "OK"},
		})
	default:
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
	}
}

func (s *system) systemJSON(ctx context.Context) map[string]any {
	s.mu.Lock()
	power, bootTarget, bootEnabled, bootMode := powerString(s.power), s.bootTarget, s.bootEnabled, s.bootMode
	s.mu.Unlock()
	targets, resets := s.bootTargets(), resetTypes
	if s.sushy {
		resets = sushyResetTypes
	}
	procs := map[string]any{"Count": 2, "CoreCount": 16, "LogicalProcessorCount": 32, "Model": "Sim Xeon 8C"}
	var memGiB float64 = 64
	if s.vm != nil {
		// What qemu really runs, so an inspection can be checked against it.
		power = s.vm.powerState(ctx)
		cpus := s.vm.opts.CPUs
		procs = map[string]any{"Count": 1, "CoreCount": cpus, "LogicalProcessorCount": cpus, "Model": "QEMU TCG"}
		memGiB = float64(s.vm.opts.MemoryMB) / 1024
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
		"Status":           map[string]any{"State": "Enabled", "Health": "OK"},
		"ProcessorSummary": procs,
		"MemorySummary":    map[string]any{"TotalSystemMemoryGiB": memGiB},
		"Boot": map[string]any{
			"BootSourceOverrideTarget":                         bootTarget,
			"BootSourceOverrideEnabled":                        bootEnabled,
			"BootSourceOverrideMode":                           bootMode,
			"BootSourceOverrideTarget@Redfish.AllowableValues": targets,
		},
		"Processors": odataID(s.path + "/Processors"),
		"Links": map[string]any{
			"ManagedBy": []any{odataID(s.mgrPath)},
		},
		"Actions": map[string]any{
			"#ComputerSystem.Reset": map[string]any{
				"target":                            s.path + "/Actions/ComputerSystem.Reset",
				"ResetType@Redfish.AllowableValues": resets,
			},
		},
	}
	if s.sushy && !s.noMedia {
		d["VirtualMedia"] = odataID(s.path + "/VirtualMedia")
	}
	return d
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
	var body map[string]json.RawMessage
	if !decodeBody(w, r, &body) {
		return
	}
	for k := range body {
		if k != "Boot" && k != "@odata.etag" {
			writeError(w, http.StatusBadRequest, "PropertyNotWritable", fmt.Sprintf("The property %s is a read only property and cannot be assigned a value.", k))
			return
		}
	}
	raw, ok := body["Boot"]
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var boot map[string]json.RawMessage
	if err := json.Unmarshal(raw, &boot); err != nil {
		writeError(w, http.StatusBadRequest, "PropertyValueTypeError", "The value for the property Boot is of a different type than the property can accept.")
		return
	}
	var target, enabled, mode string
	for k, v := range boot {
		var dst *string
		var allowed []string
		switch k {
		case "BootSourceOverrideTarget":
			dst, allowed = &target, s.bootTargets()
		case "BootSourceOverrideEnabled":
			dst, allowed = &enabled, bootEnables
		case "BootSourceOverrideMode":
			dst, allowed = &mode, bootModes
		default:
			writeError(w, http.StatusBadRequest, "PropertyNotWritable", fmt.Sprintf("The property Boot/%s is a read only property and cannot be assigned a value.", k))
			return
		}
		if err := json.Unmarshal(v, dst); err != nil || !slices.Contains(allowed, *dst) {
			writeError(w, http.StatusBadRequest, "PropertyValueNotInList",
				fmt.Sprintf("The value %s for the property Boot/%s is not in the list of acceptable values.", bytes.TrimSpace(v), k))
			return
		}
	}
	if !s.checkBootMode(w, mode) {
		return
	}
	s.mu.Lock()
	if target != "" {
		s.bootTarget = target
	}
	if enabled != "" {
		s.bootEnabled = enabled
		if enabled == "Disabled" && target == "" {
			s.bootTarget = "None"
		}
	} else if target != "" && target != "None" && s.bootEnabled == "Disabled" {
		s.bootEnabled = "Once"
	}
	if mode != "" {
		s.bootMode = mode
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
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
	allowed := resetTypes
	if s.sushy {
		allowed = sushyResetTypes
	}
	if !slices.Contains(allowed, rt) {
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
	if rt == "Nmi" {
		w.WriteHeader(http.StatusNoContent) // a diagnostic interrupt: power stays
		return
	}
	on := rt != "ForceOff" && rt != "GracefulShutdown"
	restart := rt == "ForceRestart" || rt == "PowerCycle" || rt == "GracefulRestart"
	s.mu.Lock()
	if !s.ignorePower {
		s.cancelPendingLocked()
		if f.opts.PowerDelay <= 0 {
			f.applyPowerLocked(s, on, restart)
		} else {
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
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
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
	if !s.sushy && !s.noMedia && len(rest) >= 1 && rest[0] == "VirtualMedia" {
		f.serveMedia(w, r, s, vmPath, rest[1:])
		return
	}
	switch {
	case len(rest) == 0:
		if !allow(w, r, http.MethodGet) {
			return
		}
		mgr := map[string]any{
			"@odata.id":       s.mgrPath,
			"@odata.type":     "#Manager.v1_19_0.Manager",
			"Id":              s.id,
			"Name":            "Simulated BMC " + s.id,
			"ManagerType":     "BMC",
			"FirmwareVersion": "1.0.0-sim",
			"UUID":            nameUUID("manager/" + s.id),
			"PowerState":      "On",
			"Status":          map[string]any{"State": "Enabled", "Health": "OK"},
			"Links": map[string]any{
				"ManagerForServers": []any{odataID(s.path)},
			},
		}
		if !s.sushy && !s.noMedia {
			mgr["VirtualMedia"] = odataID(vmPath)
		}
		writeJSON(w, http.StatusOK, mgr)
	default:
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
	}
}

// serveMedia serves a VirtualMedia collection at vmPath (under the Manager,
// or under the system for sushy-tools) and its slots; rest is the path
// below the collection.
func (f *Fleet) serveMedia(w http.ResponseWriter, r *http.Request, s *system, vmPath string, rest []string) {
	if len(rest) >= 1 {
		m := s.slot(rest[0])
		if m == nil {
			writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
			return
		}
		f.serveSlot(w, r, s, m, vmPath+"/"+m.id, rest[1:])
		return
	}
	if !allow(w, r, http.MethodGet) {
		return
	}
	members := make([]any, len(s.slots))
	for i, m := range s.slots {
		members[i] = odataID(vmPath + "/" + m.id)
	}
	writeJSON(w, http.StatusOK, collection(vmPath, "#VirtualMediaCollection.VirtualMediaCollection", "Virtual Media Services", members))
}

// serveSlot serves one VirtualMedia resource: GET, PATCH (Image/Inserted,
// as some BMCs take instead of the actions) and the Insert/Eject actions.
func (f *Fleet) serveSlot(w http.ResponseWriter, r *http.Request, s *system, m *mediaSlot, path string, rest []string) {
	var body struct {
		Image          *string
		Inserted       *bool
		WriteProtected *bool
	}
	switch {
	case len(rest) == 0:
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, s.mediaJSON(m, path))
		case http.MethodPatch:
			if !decodeBody(w, r, &body) {
				return
			}
			eject := (body.Inserted != nil && !*body.Inserted) || (body.Image != nil && *body.Image == "")
			if eject {
				f.eject(w, r, s, m)
				return
			}
			if body.Image == nil {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			f.insert(w, r, s, m, *body.Image, body.WriteProtected)
		default:
			methodNotAllowed(w, http.MethodGet, http.MethodPatch)
		}
	case len(rest) == 2 && rest[0] == "Actions":
		if !allow(w, r, http.MethodPost) {
			return
		}
		switch rest[1] {
		case "VirtualMedia.InsertMedia":
			if !decodeBody(w, r, &body) {
				return
			}
			if body.Image == nil {
				writeError(w, http.StatusBadRequest, "ActionParameterMissing", "The action VirtualMedia.InsertMedia requires the parameter Image to be present in the request body.")
				return
			}
			f.insert(w, r, s, m, *body.Image, body.WriteProtected)
		case "VirtualMedia.EjectMedia":
			f.eject(w, r, s, m)
		default:
			writeError(w, http.StatusNotFound, "ActionNotSupported", fmt.Sprintf("The action %s is not supported by the resource.", rest[1]))
		}
	default:
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
	}
}

// ---- HTTP helpers ----

func odataID(p string) map[string]any { return map[string]any{"@odata.id": p} }

func collection(path, typ, name string, members []any) map[string]any {
	return map[string]any{
		"@odata.id":           path,
		"@odata.type":         typ,
		"Name":                name,
		"Members":             members,
		"Members@odata.count": len(members),
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b := mustJSON(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("OData-Version", "4.0")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError answers with a Redfish extended error (DSP0266 §9.5.2.2).
func writeError(w http.ResponseWriter, status int, msgID, msg string) {
	id := msgRegistryBase + msgID
	code := id
	if status >= 500 {
		code = msgRegistryBase + "GeneralError"
	}
	writeJSON(w, status, map[string]any{
		"error": map[string]any{
			"code":    code,
			"message": msg,
			"@Message.ExtendedInfo": []any{map[string]any{
				"@odata.type": "#Message.v1_1_1.Message",
				"MessageId":   id,
				"Message":     msg,
				"Severity":    "Critical",
				"Resolution":  "None.",
			}},
		},
	})
}

func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method || (method == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	methodNotAllowed(w, method)
	return false
}

func methodNotAllowed(w http.ResponseWriter, methods ...string) {
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, "OperationNotAllowed", "The HTTP method is not allowed on this resource.")
}

// decodeBody decodes a small JSON body; an empty body decodes as {}.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		abort(w)
		return false
	}
	if len(b) > maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, "GeneralError", "The request body is too large.")
		return false
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	if err := json.Unmarshal(b, v); err != nil {
		writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed by the receiving service.")
		return false
	}
	return true
}
