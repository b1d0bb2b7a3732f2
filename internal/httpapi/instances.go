package httpapi

import (
	"net/http"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// observedPower is the power state of the instance's node, for drift
// detection on the instance's desired power_state.
func (s *Server) observedPower(r *http.Request, c service.Caller, i *baremetal.Instance) baremetal.PowerState {
	n, err := s.svc.GetNode(r.Context(), c, i.NodeID)
	if err != nil {
		return baremetal.PowerUnknown
	}
	return n.PowerState
}

func (s *Server) listInstances(w http.ResponseWriter, r *http.Request, c service.Caller) {
	p, err := page(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	if project := q.Get("project"); project != "" {
		if err := baremetal.ValidateProject("project", project); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	insts, next, err := s.svc.ListInstances(r.Context(), c, store.InstanceFilter{Page: p, Project: q.Get("project"), NodeID: q.Get("node_id")})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.InstanceList{Items: make([]api.Instance, 0, len(insts)), NextCursor: next}
	for _, i := range insts {
		out.Items = append(out.Items, instanceOut(i, s.observedPower(r, c, i)))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createInstance(w http.ResponseWriter, r *http.Request, c service.Caller) {
	o, err := once(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in api.InstanceCreate
	if !s.decode(w, r, &in) {
		return
	}
	var timeout time.Duration
	if in.DeployTimeout != "" {
		var err error
		if timeout, err = time.ParseDuration(in.DeployTimeout); err != nil || timeout <= 0 {
			s.writeError(w, r, baremetal.FieldErrorf("deploy_timeout", "deploy_timeout %q must be a positive duration such as \"30m\" or \"1h30m\"", in.DeployTimeout))
			return
		}
	}
	network, err := networkIn(in.Network)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	inst, err := s.svc.CreateInstanceOnce(r.Context(), c, baremetal.Instance{
		Name: in.Name, Project: in.Project, ResourceClass: in.ResourceClass, NodeID: in.NodeID,
		Image: baremetal.Image(in.Image), UserData: in.UserData, Metadata: in.Metadata,
		PowerState: baremetal.PowerState(in.PowerState), DeployTimeout: timeout,
		DeployMethod: baremetal.DeployMethod(in.DeployMethod), RootDevice: in.RootDevice, Network: network,
		Requirements: requirementsIn(in.Requirements),
	}, o)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(inst.Version))
	w.Header().Set("Location", "/v1/instances/"+inst.ID)
	writeJSON(w, http.StatusCreated, instanceOut(inst, s.observedPower(r, c, inst)))
}

func (s *Server) getInstance(w http.ResponseWriter, r *http.Request, c service.Caller) {
	inst, err := s.svc.GetInstance(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(inst.Version))
	writeJSON(w, http.StatusOK, instanceOut(inst, s.observedPower(r, c, inst)))
}

func (s *Server) patchInstance(w http.ResponseWriter, r *http.Request, c service.Caller) {
	match, err := ifMatch(r, s.instanceVersion(r, c))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Both fields are pointers (absent: unchanged), so null would be
	// silently ignored: refuse it. "" clears power_state, {} metadata.
	var in api.InstanceUpdate
	if !s.decodeWith(w, r, &in, true) {
		return
	}
	var power *string
	if in.PowerState != nil {
		p := string(*in.PowerState)
		power = &p
	}
	inst, err := s.svc.UpdateInstance(r.Context(), c, r.PathValue("id"), match, power, in.Metadata)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(inst.Version))
	writeJSON(w, http.StatusOK, instanceOut(inst, s.observedPower(r, c, inst)))
}

// rebuildInstance rebuilds an instance in place: 202 with the instance,
// now deploying again; it is active when the rebuild is done.
func (s *Server) rebuildInstance(w http.ResponseWriter, r *http.Request, c service.Caller) {
	match, err := ifMatch(r, s.instanceVersion(r, c))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	o, err := once(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// An empty body is a reinstall of what the instance has.
	var in api.InstanceRebuild
	if r.ContentLength != 0 && !s.decodeWith(w, r, &in, true) {
		return
	}
	var ch baremetal.Rebuild
	if in.Image != nil {
		img := baremetal.Image(*in.Image)
		ch.Image = &img
	}
	ch.UserData = in.UserData
	if ch.Network, err = networkIn(in.Network); err != nil {
		s.writeError(w, r, err)
		return
	}
	inst, err := s.svc.RebuildInstance(r.Context(), c, r.PathValue("id"), match, ch, o)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(inst.Version))
	writeJSON(w, http.StatusAccepted, instanceOut(inst, s.observedPower(r, c, inst)))
}

func (s *Server) deleteInstance(w http.ResponseWriter, r *http.Request, c service.Caller) {
	match, err := ifMatch(r, s.instanceVersion(r, c))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jobID, err := s.svc.DeleteInstance(r.Context(), c, r.PathValue("id"), match)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.Accepted{JobID: jobID, Message: "instance deleted; its node is being cleaned"})
}
