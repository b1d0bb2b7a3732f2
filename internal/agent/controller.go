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
)

// HeartbeatPath is the endpoint the agent reports to, relative to the
// controller's base URL. The controller side does not exist yet; this is
// the contract it will implement:
//
//	POST /v1/agent/heartbeat
//	Authorization: Bearer <per-boot token>
//	Content-Type: application/json
//	body: Heartbeat
//
//	200 {"next_heartbeat_seconds": 10}  accepted (the body is optional;
//	                                    204 is accepted too)
//	401/403                             token unknown or revoked: the agent
//	                                    keeps retrying with backoff (a
//	                                    controller restored from backup may
//	                                    learn it again)
//	anything else / no answer           retried with backoff
const HeartbeatPath = "/v1/agent/heartbeat"

// Heartbeat is what the agent reports.
type Heartbeat struct {
	AgentVersion string `json:"agent_version"`
	// BootID is the kernel's random id of this boot
	// (/proc/sys/kernel/random/boot_id): a new value means the node
	// rebooted under the agent.
	BootID        string    `json:"boot_id,omitempty"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	Inventory     Inventory `json:"inventory"`
}

// Reply is the controller's answer to a heartbeat.
type Reply struct {
	// NextHeartbeatSeconds asks for the next heartbeat after this long;
	// 0 keeps the agent's default.
	NextHeartbeatSeconds int `json:"next_heartbeat_seconds,omitempty"`
}

// Controller is the agent's view of the controller. Small on purpose: the
// poll-for-work calls join it when the controller serves them.
type Controller interface {
	Heartbeat(ctx context.Context, hb Heartbeat) (Reply, error)
}

// HTTPController talks to the controller's REST API.
type HTTPController struct {
	base   string
	token  string
	client *http.Client
}

var _ Controller = (*HTTPController)(nil)

// NewHTTPController returns a client of the controller at base.
func NewHTTPController(base, token string) *HTTPController {
	return &HTTPController{
		base:  strings.TrimRight(base, "/"),
		token: token,
		// A controller that accepts the connection and then hangs must not
		// stall the agent forever.
		client: &http.Client{Timeout: 30 * time.Second},
	}
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
func (c *HTTPController) Heartbeat(ctx context.Context, hb Heartbeat) (Reply, error) {
	body, err := json.Marshal(hb)
	if err != nil {
		return Reply{}, fmt.Errorf("encode heartbeat: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+HeartbeatPath, bytes.NewReader(body))
	if err != nil {
		return Reply{}, fmt.Errorf("heartbeat request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", "baremetal-agent/"+hb.AgentVersion)
	resp, err := c.client.Do(req)
	if err != nil {
		// net/http's errors name the URL, never the headers: no token here.
		return Reply{}, fmt.Errorf("heartbeat: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64*1024))
	if resp.StatusCode/100 != 2 {
		return Reply{}, &StatusError{Status: resp.StatusCode, Body: strings.TrimSpace(string(raw[:min(len(raw), 512)]))}
	}
	var r Reply
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &r); err != nil {
			return Reply{}, fmt.Errorf("heartbeat reply: %w", err)
		}
	}
	return r, nil
}
