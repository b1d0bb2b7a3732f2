package httpapi

import (
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
)

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request, c service.Caller) {
	p, err := page(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	toks, next, err := s.svc.ListTokens(r.Context(), c, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.TokenList{Items: make([]api.Token, 0, len(toks)), NextCursor: next}
	for _, t := range toks {
		out.Items = append(out.Items, tokenOut(t))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, c service.Caller) {
	if !c.Admin() {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeForbidden, "only an admin may manage tokens"))
		return
	}
	var in api.TokenCreate
	if !s.decode(w, r, &in) {
		return
	}
	t, secret, err := s.svc.CreateToken(r.Context(), c, service.TokenInput{Name: in.Name, Role: baremetal.Role(in.Role), Project: in.Project, ExpiresAt: in.ExpiresAt})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.TokenCreated{Token: tokenOut(t), Secret: secret})
}

func (s *Server) deleteToken(w http.ResponseWriter, r *http.Request, c service.Caller) {
	if err := s.svc.DeleteToken(r.Context(), c, r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getQuota(w http.ResponseWriter, r *http.Request, c service.Caller) {
	q, used, err := s.svc.GetQuota(r.Context(), c, r.PathValue("project"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Quota{Project: q.Project, Instances: q.Instances, Used: used})
}

func (s *Server) putQuota(w http.ResponseWriter, r *http.Request, c service.Caller) {
	if !c.Admin() {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeForbidden, "only an admin may set quotas"))
		return
	}
	var in struct {
		Instances *int `json:"instances"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	if in.Instances == nil {
		s.writeError(w, r, baremetal.FieldErrorf("instances", "instances is required (-1 for unlimited)"))
		return
	}
	project := r.PathValue("project")
	if err := s.svc.SetQuota(r.Context(), c, baremetal.Quota{Project: project, Instances: *in.Instances}); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.getQuota(w, r, c)
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, c service.Caller) {
	if !c.Admin() {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeForbidden, "only an admin may list jobs"))
		return
	}
	limit, _, err := limitParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	if jobStates := api.JobStates(); state != "" && !slices.Contains(jobStates, state) {
		s.writeError(w, r, baremetal.FieldErrorf("state", "state %q must be one of %v", state, jobStates))
		return
	}
	nodeID := q.Get("node_id")
	if nodeID != "" {
		n, err := s.svc.GetNode(r.Context(), c, nodeID)
		switch {
		case err == nil:
			nodeID = n.ID
		case baremetal.IsCode(err, baremetal.CodeNotFound) && uuid.Validate(nodeID) == nil:
			// A retired node's record is gone but its jobs are kept a
			// while (River keeps finished jobs 24 h): its id still finds
			// them, which is how an operator learns how its retire went.
			// A name no longer resolves, so it stays a 404.
		default:
			s.writeError(w, r, err)
			return
		}
	}
	jobs, err := s.jobs.ListJobs(r.Context(), nodeID, state)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if limit > 0 && len(jobs) > limit {
		jobs = jobs[:limit] // newest first: the most recent ones
	}
	if jobs == nil {
		jobs = []api.Job{}
	}
	writeJSON(w, http.StatusOK, api.JobList{Items: jobs})
}
