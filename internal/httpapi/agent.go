package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
)

// AgentImages makes the deploy agent's per-boot ISO (agentboot.Builder).
type AgentImages interface {
	ISO(ctx context.Context, cfg agent.Config) ([]byte, error)
}

// inspectNode boots the deploy agent on a node to report its hardware.
func (s *Server) inspectNode(w http.ResponseWriter, r *http.Request, c service.Caller) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
	jobID, err := s.svc.InspectNode(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.InspectAccepted{JobID: jobID,
		Message: "inspection queued: the node boots the deploy agent and is available again once it has reported its hardware"})
}

// nodeInventory is a node's hardware as the agent last reported it.
func (s *Server) nodeInventory(w http.ResponseWriter, r *http.Request, c service.Caller) {
	n, inv, err := s.svc.NodeInventory(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.NodeInventory{NodeID: n.ID, InspectedAt: inv.InspectedAt.UTC().Format(time.RFC3339)}
	if err := decodeStrict([]byte(inv.Data), &out.Inventory); err != nil {
		s.writeError(w, r, &baremetal.Error{Code: baremetal.CodeInternal, Message: "the stored inventory could not be read", Err: err})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// agentHeartbeat is the deploy agent's report. It is not behind the API's
// token auth: the caller is the agent, holding only its per-boot token.
func (s *Server) agentHeartbeat(w http.ResponseWriter, r *http.Request, _ service.Caller) {
	token, ok := bearerToken(r)
	if !ok {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeUnauthorized, "an Authorization: Bearer <agent token> header is required"))
		return
	}
	var hb api.AgentHeartbeat
	if !s.decode(w, r, &hb) {
		return
	}
	reply, err := s.svc.AgentHeartbeat(r.Context(), token, hb, remoteHost(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

// agentBoot serves the agent ISO of one boot to the node's BMC. The key in
// the path is the credential (BMCs fetch virtual media without our
// headers); the ISO carries the per-boot token by design.
func (s *Server) agentBoot(w http.ResponseWriter, r *http.Request, _ service.Caller) {
	if s.agentImages == nil {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeNotFound, "no such agent image"))
		return
	}
	sess, err := s.svc.AgentSessionForBoot(r.Context(), r.PathValue("id"), r.PathValue("key"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	iso, err := s.agentImages.ISO(r.Context(), agent.Config{API: s.agentURL, Token: sess.Token})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		s.writeError(w, r, &baremetal.Error{Code: baremetal.CodeInternal, Message: "could not build the agent image", Err: err})
		return
	}
	w.Header().Set("Content-Type", "application/x-iso9660-image")
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, "agent.iso", sess.CreatedAt.Truncate(time.Second), bytes.NewReader(iso))
}
