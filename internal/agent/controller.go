package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// HeartbeatPath is the endpoint the agent reports to, relative to the
// controller's base URL (the protocol is described in internal/api):
// 2xx with an api.AgentReply (an empty body is accepted too); 401 and
// anything else, or no answer, are retried with backoff, since a
// controller restored from backup may learn the token again.
const HeartbeatPath = api.AgentHeartbeatPath

// Controller is the agent's view of the controller: one call, since the
// reply to a heartbeat is also how work reaches the agent.
type Controller interface {
	Heartbeat(ctx context.Context, hb api.AgentHeartbeat) (api.AgentReply, error)
}

// HTTPController talks to the controller's REST API.
type HTTPController struct {
	base   string
	token  string
	client *http.Client
}

var _ Controller = (*HTTPController)(nil)

// NewHTTPController returns a client of the controller at base, over
// client (nil: a default one with a 30 s timeout).
func NewHTTPController(base, token string, client *http.Client) *HTTPController {
	if client == nil {
		// A controller that accepts the connection and then hangs must not
		// stall the agent forever.
		client = &http.Client{Timeout: 30 * time.Second}
	}
	return &HTTPController{base: strings.TrimRight(base, "/"), token: token, client: client}
}

// StatusError is a heartbeat the controller answered with a non-2xx status.
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("controller answered %d: %s", e.Status, e.Body)
}

// Heartbeat posts hb.
func (c *HTTPController) Heartbeat(ctx context.Context, hb api.AgentHeartbeat) (api.AgentReply, error) {
	body, err := json.Marshal(hb)
	if err != nil {
		return api.AgentReply{}, fmt.Errorf("encode heartbeat: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+HeartbeatPath, bytes.NewReader(body))
	if err != nil {
		return api.AgentReply{}, fmt.Errorf("heartbeat request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", "baremetal-agent/"+hb.AgentVersion)
	resp, err := c.client.Do(req)
	if err != nil {
		// net/http's errors name the URL, never the headers: no token here.
		return api.AgentReply{}, fmt.Errorf("heartbeat: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64*1024))
	if resp.StatusCode/100 != 2 {
		return api.AgentReply{}, &StatusError{Status: resp.StatusCode, Body: strings.TrimSpace(string(raw[:min(len(raw), 512)]))}
	}
	var r api.AgentReply
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &r); err != nil {
			return api.AgentReply{}, fmt.Errorf("heartbeat reply: %w", err)
		}
	}
	return r, nil
}
