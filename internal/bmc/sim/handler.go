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
	"strings"
	"time"
)

const (
	rootPath        = "/redfish/v1"
	systemsPath     = rootPath + "/Systems"
	chassisPath     = rootPath + "/Chassis"
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
	if f.opts.ServiceLatency > 0 && !f.sleep(r.Context(), f.opts.ServiceLatency) {
		return
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
	case "SessionService", "Sessions":
		atRoot := segs[0] == "Sessions"
		if f.opts.NoSessionService || atRoot != f.q.SessionsAtRoot && (atRoot || len(segs) > 1) {
			writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", p))
			return
		}
		if atRoot {
			f.serveSessions(w, r, segs)
		} else {
			f.serveSessions(w, r, segs[1:])
		}
	case "TaskService":
		f.serveTasks(w, r, segs[1:])
	case "UpdateService":
		f.serveUpdate(w, r, segs[1:])
	case "Registries":
		f.serveRegistries(w, r, segs[1:])
	case "Chassis":
		if f.q.Health.NoChassis {
			if f.checkAuth(w, r) {
				writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", p))
			}
			return
		}
		if len(segs) == 1 {
			if allow(w, r, http.MethodGet) && f.checkAuth(w, r) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				w.Header().Set("OData-Version", "4.0")
				_, _ = w.Write(f.chassisColl)
			}
			return
		}
		// A chassis is its system's: its id is the system's, and the
		// system's fault applies to it.
		s := f.systems[segs[1]]
		if s == nil {
			if f.checkAuth(w, r) {
				writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", p))
			}
			return
		}
		if f.systemPreamble(w, r, s) {
			f.serveChassis(w, r, s, segs[2:])
		}
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
		if segs[0] == "Systems" && len(segs) == 3 && segs[1]+"/"+segs[2] == "Bios/BiosRegistry" && f.systems["Bios"] == nil &&
			f.q.BIOS.RegistryElsewhere && !f.q.BIOS.NoRegistry && !f.q.BIOS.None {
			// sushy-tools serves its BIOS registry here.
			if allow(w, r, http.MethodGet) && f.checkAuth(w, r) {
				f.writeDoc(w, http.StatusOK, f.registryJSON(sushyRegistryDoc), "")
			}
			return
		}
		s := f.systems[segs[1]]
		if segs[0] == "Managers" {
			s = f.managers[segs[1]]
		}
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
	if f.managerRestarting(w, r, s) {
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
		f.writeDoc(w, http.StatusOK, map[string]any{
			"@odata.id":      sessionSvcPath,
			"@odata.type":    "#SessionService.v1_1_8.SessionService",
			"Id":             "SessionService",
			"Name":           "Session Service",
			"ServiceEnabled": true,
			"SessionTimeout": 1800,
			"Sessions":       odataID(f.sessionsPath()),
		}, "")
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
				members = append(members, odataID(f.sessionsPath()+"/"+id))
			}
			f.sessMu.RUnlock()
			f.writeDoc(w, http.StatusOK, collection(f.sessionsPath(), "#SessionCollection.SessionCollection", "Session Collection", members), "")
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
			f.writeDoc(w, http.StatusOK, f.sessionJSON(s), "")
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
	if m := f.q.MaxSessions; m > 0 && len(f.sessions) >= m {
		f.sessMu.Unlock()
		// iDRAC's answer when its session slots are full.
		writeError(w, http.StatusBadRequest, "SessionLimitExceeded",
			"RAC0218: The maximum number of user sessions is reached.")
		return
	}
	f.nextSession++
	s := &session{id: fmt.Sprint(f.nextSession), token: hex.EncodeToString(b[:]), user: body.UserName, created: time.Now()}
	f.sessions[s.token] = s
	f.sessionByID[s.id] = s
	f.sessMu.Unlock()
	f.logins.Add(1)
	w.Header().Set("X-Auth-Token", s.token)
	w.Header().Set("Location", f.q.withSlash(f.sessionsPath()+"/"+s.id))
	f.writeDoc(w, http.StatusCreated, f.sessionJSON(s), "")
}

func (f *Fleet) sessionJSON(s *session) map[string]any {
	return map[string]any{
		"@odata.id":   f.sessionsPath() + "/" + s.id,
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
		"Registries":     odataID(registriesPath),
		"Links":          map[string]any{},
	}
	if !f.opts.NoSessionService {
		root["SessionService"] = odataID(sessionSvcPath)
		root["Links"] = map[string]any{"Sessions": odataID(f.sessionsPath())}
	}
	if f.tasksServed() {
		root["Tasks"] = odataID(taskServicePath)
	}
	if !f.q.Update.None {
		root["UpdateService"] = odataID(updateServicePath)
	}
	if !f.q.Health.NoChassis {
		root["Chassis"] = odataID(chassisPath)
	}
	if f.q.Expand != ExpandNone {
		root["ProtocolFeaturesSupported"] = map[string]any{
			"ExpandQuery": map[string]any{"ExpandAll": true, "Levels": true, "Links": true, "NoLinks": true, "MaxLevels": 1},
		}
	}
	f.q.fixIDs(root)
	f.rootJSON = mustJSON(root)

	sys := make([]any, len(f.order))
	mgr := make([]any, len(f.order))
	for i, s := range f.order {
		sys[i] = odataID(s.path)
		mgr[i] = odataID(s.mgrPath)
	}
	ch := make([]any, len(f.order))
	for i, s := range f.order {
		ch[i] = odataID(s.chassisPath())
	}
	cc := collection(chassisPath, "#ChassisCollection.ChassisCollection", "Chassis Collection", ch)
	f.q.fixIDs(cc)
	f.chassisColl = mustJSON(cc)
	sc := collection(systemsPath, "#ComputerSystemCollection.ComputerSystemCollection", "Computer System Collection", sys)
	mc := collection(managersPath, "#ManagerCollection.ManagerCollection", "Manager Collection", mgr)
	f.q.fixIDs(sc)
	f.q.fixIDs(mc)
	f.sysColl = mustJSON(sc)
	f.mgrColl = mustJSON(mc)
}

// sessionsPath is where the session collection lives.
func (f *Fleet) sessionsPath() string {
	if f.q.SessionsAtRoot {
		return rootPath + "/Sessions"
	}
	return sessionsPath
}

// writeDoc answers a Redfish resource: its links as the dialect writes
// them, and its ETag (also as @odata.etag) when etag is not "".
func (f *Fleet) writeDoc(w http.ResponseWriter, status int, doc map[string]any, etag string) {
	if etag != "" {
		doc["@odata.etag"] = etag
		w.Header().Set("ETag", etag)
	}
	f.q.fixIDs(doc)
	writeJSON(w, status, doc)
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
