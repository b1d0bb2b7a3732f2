package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// The steps the jobs that boot the deploy agent share (inspect, image
// deploys, erasing cleanups): a session per boot, booting the agent ISO
// by virtual media, and reading what the agent reported.

// startAgent stores a new agent session for purpose with cmd (nil: none)
// and boots node n from the agent ISO. The session is stored before the
// BMC sees the URL (some BMCs fetch the image as soon as it is inserted);
// when the boot fails it is removed again, so the next attempt boots with
// a new session and token.
func (w *nodeWork) startAgent(ctx context.Context, n *baremetal.Node, purpose baremetal.AgentPurpose, cmd *api.AgentCommand) error {
	token, hash := baremetal.NewAgentToken()
	sess := &baremetal.AgentSession{NodeID: n.ID, Purpose: purpose, Token: token, TokenHash: hash}
	if cmd != nil {
		b, err := json.Marshal(cmd)
		if err != nil {
			return err
		}
		sess.Command = string(b)
	}
	if err := w.store.PutAgentSession(ctx, sess); err != nil {
		return err
	}
	url := w.cfg.PublicURL + api.AgentBootPath(n.ID, baremetal.AgentBootKey(token))
	if err := w.bootFromCD(ctx, n, url); err != nil {
		_ = w.store.DeleteAgentSession(context.WithoutCancel(ctx), n.ID)
		return err
	}
	return nil
}

// agentURL is the API's base URL as booted nodes reach it.
func (c Config) agentURL() string {
	if c.AgentURL != "" {
		return c.AgentURL
	}
	return c.PublicURL
}

// agentOutcome is where the command of an agent session stands.
type agentOutcome struct {
	status *api.AgentCommandStatus // nil: no report on it yet
	// lost: the agent has not reported for AgentTimeout (or never, that
	// long after the boot).
	lost bool
}

// commandOutcome reads the agent's last report on the session's command
// (whose id must be id).
func (w *nodeWork) commandOutcome(sess *baremetal.AgentSession, id string) (agentOutcome, error) {
	var out agentOutcome
	if sess.Status != "" {
		var st api.AgentCommandStatus
		if err := json.Unmarshal([]byte(sess.Status), &st); err != nil {
			return out, fmt.Errorf("agent session of node %s: status: %w", sess.NodeID, err)
		}
		if st.ID == id {
			out.status = &st
		}
	}
	last := sess.CreatedAt
	if sess.LastSeenAt != nil {
		last = *sess.LastSeenAt
	}
	finished := out.status != nil && out.status.State != api.AgentCommandRunning
	out.lost = !finished && time.Since(last) > w.cfg.agentTimeout()
	return out, nil
}

// sessionCommand is the id of the command a session carries ("" none).
func sessionCommand(sess *baremetal.AgentSession) string {
	if sess.Command == "" {
		return ""
	}
	var c api.AgentCommand
	if json.Unmarshal([]byte(sess.Command), &c) != nil {
		return ""
	}
	return c.ID
}

// agentBooted records on the node, still in state, that its agent booted
// (power on observed) with an event of type typ saying msg.
func (w *nodeWork) agentBooted(ctx context.Context, nodeID string, state baremetal.ProvisionState, typ, msg string) error {
	_, err := w.ledger.Update(ctx, nodeID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
		if n.ProvisionState != state {
			return ledger.ErrSkip
		}
		now := time.Now()
		w.observePower(n, bmc.PowerOn, nil, now)
		touchSeen(n, now)
		c.Events = append(c.Events, &baremetal.Event{Type: typ, Message: msg})
		return nil
	})
	return err
}
