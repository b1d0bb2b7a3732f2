package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
)

func specFromAPI(in api.NodeCreate) service.NodeSpec {
	return service.NodeSpec{
		Name: in.Name, Driver: baremetal.Driver(in.Driver), ResourceClass: in.ResourceClass,
		BMC: baremetal.BMC{Address: in.BMC.Address, Username: in.BMC.Username, Password: in.BMC.Password,
			Insecure: in.BMC.Insecure, SystemID: in.BMC.SystemID, CipherSuite: in.BMC.CipherSuite},
		Properties:  baremetal.Properties(in.Properties),
		Maintenance: in.Maintenance, MaintenanceReason: in.MaintenanceReason,
		CleanErase: baremetal.CleanErase(in.CleanErase), InspectOnEnroll: in.InspectOnEnroll,
		Traits: in.Traits, Owner: in.Owner,
		Settings: baremetal.HardwareSettings{BIOS: in.BIOSSettings, SecureBoot: in.SecureBoot,
			RAID: volumesIn(in.RAID), Firmware: firmwareIn(in.Firmware)},
	}
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request, c service.Caller) {
	f, err := nodeFilter(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	nodes, next, err := s.svc.ListNodes(r.Context(), c, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	acts, err := s.svc.AgentActivity(r.Context(), nodes...)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ports, err := s.svc.NodePorts(r.Context(), nodes...)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.NodeList{Items: make([]api.Node, 0, len(nodes)), NextCursor: next}
	for _, n := range nodes {
		o := nodeOut(n, c)
		o.Agent = agentOut(acts[n.ID])
		o.Ports = portsOut(ports[n.ID])
		out.Items = append(out.Items, o)
	}
	writeNodeList(w, http.StatusOK, &out)
}

func (s *Server) createNode(w http.ResponseWriter, r *http.Request, c service.Caller) {
	if !c.Admin() { // before reading the body: members learn nothing else
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeForbidden, "only an admin may enroll nodes"))
		return
	}
	o, err := once(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in api.NodeCreate
	if !s.decode(w, r, &in) {
		return
	}
	n, err := s.svc.CreateNodeOnce(r.Context(), c, specFromAPI(in), o)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(n.Version))
	w.Header().Set("Location", "/v1/nodes/"+n.ID)
	out := nodeOut(n, c)
	writeNodeJSON(w, http.StatusCreated, &out)
}

func (s *Server) getNode(w http.ResponseWriter, r *http.Request, c service.Caller) {
	n, err := s.svc.GetNode(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeNode(w, r, c, n)
}

// writeNode answers with a node as it is now, with what its deploy agent
// is doing; the ETag is its version (the agent's reports do not change
// it: they are not the node's settings, which If-Match protects).
func (s *Server) writeNode(w http.ResponseWriter, r *http.Request, c service.Caller, n *baremetal.Node) {
	acts, err := s.svc.AgentActivity(r.Context(), n)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ports, err := s.svc.NodePorts(r.Context(), n)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := nodeOut(n, c)
	out.Agent = agentOut(acts[n.ID])
	out.Ports = portsOut(ports[n.ID])
	w.Header().Set("ETag", etag(n.Version))
	writeNodeJSON(w, http.StatusOK, &out)
}

// patchNode applies a JSON Merge Patch (RFC 7396) to the node's writable
// fields: nested objects merge, so {"bmc":{"password":"..."}} rotates only
// the password. The merged document is decoded strictly, so unknown or
// read-only fields are rejected by name.
func (s *Server) patchNode(w http.ResponseWriter, r *http.Request, c service.Caller) {
	if !c.Admin() {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeForbidden, "only an admin may change nodes (including maintenance)"))
		return
	}
	match, err := ifMatch(r, s.nodeVersion(r, c))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var patch any
	if !s.decode(w, r, &patch) {
		return
	}
	obj, ok := patch.(map[string]any)
	if !ok {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeInvalid, "a merge patch must be a JSON object"))
		return
	}
	if err := checkRemovals(obj); err != nil {
		s.writeError(w, r, err)
		return
	}
	n, err := s.svc.UpdateNode(r.Context(), c, r.PathValue("id"), match, func(cur *baremetal.Node) (service.NodeSpec, error) {
		spec := service.SpecOf(cur)
		doc, err := toMap(api.NodeCreate{
			Name: spec.Name, Driver: api.Driver(spec.Driver), ResourceClass: spec.ResourceClass,
			BMC: api.BMCInput{Address: spec.BMC.Address, Username: spec.BMC.Username, Insecure: spec.BMC.Insecure,
				SystemID: spec.BMC.SystemID, CipherSuite: spec.BMC.CipherSuite},
			Properties:  api.Properties(spec.Properties),
			Maintenance: spec.Maintenance, MaintenanceReason: spec.MaintenanceReason,
			CleanErase: api.CleanErase(spec.CleanErase), InspectOnEnroll: spec.InspectOnEnroll,
			Traits: spec.Traits, Owner: spec.Owner,
			BIOSSettings: spec.Settings.BIOS, SecureBoot: spec.Settings.SecureBoot,
			RAID: volumesOut(spec.Settings.RAID), Firmware: firmwareOut(spec.Settings.Firmware),
		})
		if err != nil {
			return spec, err
		}
		merged, err := json.Marshal(mergePatch(doc, deepCopy(patch)))
		if err != nil {
			return spec, err
		}
		var in api.NodeCreate
		if err := decodeStrict(merged, &in); err != nil {
			return spec, err
		}
		spec = specFromAPI(in)
		_, bios := obj["bios_settings"]
		_, sb := obj["secure_boot"]
		_, raid := obj["raid"]
		_, fw := obj["firmware"]
		spec.ApplySettings = bios || sb || raid || fw
		return spec, nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeNode(w, r, c, n)
}

// toMap turns v into the generic document a merge patch applies to;
// numbers stay exact (json.Number), as in the parsed patch.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	return m, dec.Decode(&m)
}

// requiredMembers are the node fields a merge patch may not remove: null
// removes a member (RFC 7396), and without these the node is unusable.
// (Removing bmc.password would read as "keep the current one", so
// without this check it would be silently ignored.)
var requiredMembers = []string{"name", "driver", "bmc", "bmc.address", "bmc.username", "bmc.password"}

// checkRemovals refuses a patch that sets a required member to null.
func checkRemovals(patch map[string]any) error {
	for _, p := range requiredMembers {
		parent, key := patch, p
		if obj, member, nested := strings.Cut(p, "."); nested {
			parent, _ = patch[obj].(map[string]any)
			key = member
		}
		if val, present := parent[key]; present && val == nil {
			return baremetal.FieldErrorf(p, "%s is required; null would remove it (to rotate bmc.password, send the new one)", p)
		}
	}
	return nil
}

// deepCopy keeps the parsed patch reusable when the update is retried.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = deepCopy(e)
		}
		return s
	default:
		return v
	}
}

func (s *Server) deleteNode(w http.ResponseWriter, r *http.Request, c service.Caller) {
	match, err := ifMatch(r, s.nodeVersion(r, c))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	force, err := boolParam(r, "force")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	isForce := force != nil && *force
	unverified, err := boolParam(r, "unverified_only")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var jobID int64
	var maint bool
	switch {
	case unverified != nil && *unverified && !isForce:
		err = baremetal.FieldErrorf("unverified_only", "unverified_only goes with force=true")
	case unverified != nil && *unverified:
		jobID, maint, err = s.svc.DeleteUnverifiedNode(r.Context(), c, r.PathValue("id"), match)
	default:
		jobID, maint, err = s.svc.DeleteNode(r.Context(), c, r.PathValue("id"), match, isForce)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	msg := "node is deleting; the retire job powers it off and removes the record"
	switch {
	case isForce:
		msg = "node record removed without touching its BMC"
	case maint:
		msg = "node is deleting; it is in maintenance, so the retire job waits until maintenance is cleared (PATCH maintenance=false) or the node is deleted with force=true"
	}
	writeJSON(w, http.StatusAccepted, api.Accepted{JobID: jobID, Message: msg})
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, c service.Caller) {
	p, err := page(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	evs, next, err := s.svc.ListEvents(r.Context(), c, r.PathValue("id"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.EventList{Items: make([]api.Event, 0, len(evs)), NextCursor: next}
	for _, e := range evs {
		out.Items = append(out.Items, eventOut(e))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) powerNode(w http.ResponseWriter, r *http.Request, c service.Caller) {
	if !c.Admin() {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeForbidden, "only an admin may change node power"))
		return
	}
	var in api.PowerRequest
	if !s.decode(w, r, &in) {
		return
	}
	jobID, err := s.svc.PowerNode(r.Context(), c, r.PathValue("id"), string(in.Target))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.Accepted{JobID: jobID, Message: "power " + string(in.Target) + " queued"})
}
