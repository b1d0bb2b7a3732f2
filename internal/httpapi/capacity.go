package httpapi

import (
	"net/http"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
)

// getCapacity answers GET /v1/capacity: how many instances of a shape
// (resource_class and the requirements' query parameters) the project
// could place now, and why not more.
func (s *Server) getCapacity(w http.ResponseWriter, r *http.Request, c service.Caller) {
	q := r.URL.Query()
	req, err := requirementsParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	method := baremetal.DeployMethod(q.Get("deploy_method"))
	switch method {
	case "", baremetal.DeployImage, baremetal.DeployLive:
	default:
		s.writeError(w, r, baremetal.FieldErrorf("deploy_method", "deploy_method %q must be image or live", method))
		return
	}
	p := baremetal.Placement{ResourceClass: q.Get("resource_class"), Requirements: req, Project: q.Get("project")}
	capa, msg, placeable, left, err := s.svc.Capacity(r.Context(), c, p, method)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	project := p.Project
	if !c.Admin() {
		project = c.Project
	}
	writeJSON(w, http.StatusOK, api.CapacityReport{Project: project, ResourceClass: p.ResourceClass,
		Requirements: requirementsOut(req), Placeable: placeable, QuotaRemaining: left,
		Capacity: capacityOut(capa), Message: msg})
}
