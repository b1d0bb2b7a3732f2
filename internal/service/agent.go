package service

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/jobs"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// agentHeartbeatSeconds is how often an agent with nothing to do reports;
// one with a command running reports sooner (its progress).
const (
	agentHeartbeatSeconds = 10
	agentBusySeconds      = 3
)

var errBadAgentToken = baremetal.Errorf(baremetal.CodeUnauthorized,
	"the bearer token is not the token of a running agent boot (each boot of the agent gets its own)")

// EnableAgent tells the service that the controller serves the deploy
// agent's image, so inspection can be asked for.
func (s *Service) EnableAgent() { s.agent = true }

// InspectNode boots the deploy agent on an available node to report its
// hardware; the node is inspecting (out of scheduling) until it has, then
// available again with its inventory. It returns the inspect job's id.
func (s *Service) InspectNode(ctx context.Context, c Caller, idOrName string) (int64, error) {
	if err := requireAdmin(c, "inspect nodes"); err != nil {
		return 0, err
	}
	if !s.agent {
		return 0, baremetal.Errorf(baremetal.CodeInvalidState,
			"inspection boots the deploy agent, and this controller serves no agent image: start it with --agent-kernel (and --public-url)")
	}
	var jobID int64
	err := s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		_, _, err := tx.Mutate(ctx, idOrName, c.Actor(), func(_ store.Tx, n *baremetal.Node, ch *ledger.Change) error {
			switch {
			case n.Maintenance:
				return baremetal.Errorf(baremetal.CodeInvalidState, "node %s is in maintenance (%s): jobs wait until it is cleared; clear it to inspect", n.Name, n.MaintenanceReason)
			case n.ProvisionState != baremetal.StateAvailable || n.InstanceID != "":
				return baremetal.Errorf(baremetal.CodeInvalidState, "node %s is %s: only an available node without an instance can be inspected", n.Name, n.ProvisionState)
			}
			ch.Reason = "inspection requested; booting the deploy agent"
			return n.Transition(baremetal.StateInspecting)
		})
		if err != nil {
			return err
		}
		n, err := tx.GetNode(ctx, idOrName)
		if err != nil {
			return err
		}
		jobID, err = s.jobs.InsertTx(ctx, tx, jobs.InspectArgs{NodeID: n.ID})
		return err
	})
	return jobID, err
}

// NodeInventory returns a node's inventory as the agent last reported it.
func (s *Service) NodeInventory(ctx context.Context, c Caller, idOrName string) (*baremetal.Node, *baremetal.Inventory, error) {
	if err := requireAdmin(c, "read node inventories"); err != nil {
		return nil, nil, err
	}
	n, err := s.store.GetNode(ctx, idOrName)
	if err != nil {
		return nil, nil, err
	}
	inv, err := s.store.GetInventory(ctx, n.ID)
	return n, inv, err
}

// agentStates are the provision states in which the controller boots the
// deploy agent on a node; a session found with a node in another state
// is the leftover of work that ended, not anything the agent is doing.
var agentStates = []baremetal.ProvisionState{baremetal.StateDeploying, baremetal.StateCleaning, baremetal.StateInspecting}

// AgentActivity returns what the deploy agents of nodes (a page of a
// node list, or one node) are doing, by node id: in one query, and none
// when no node is in a state that boots the agent. Nobody's secret is in
// it, so every caller may see it (a member follows its deploy).
func (s *Service) AgentActivity(ctx context.Context, nodes ...*baremetal.Node) (map[string]*baremetal.AgentActivity, error) {
	from, to := "", ""
	for _, n := range nodes {
		if !slices.Contains(agentStates, n.ProvisionState) {
			continue
		}
		if from == "" || n.ID < from {
			from = n.ID
		}
		to = max(to, n.ID)
	}
	if from == "" {
		return nil, nil
	}
	// Ids compare as bytes in both stores (PostgreSQL's are COLLATE "C"),
	// as in Go: the range holds every node above.
	acts, err := s.store.ListAgentActivity(ctx, from, to)
	if err != nil {
		return nil, err
	}
	busy := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		busy[n.ID] = slices.Contains(agentStates, n.ProvisionState)
	}
	out := make(map[string]*baremetal.AgentActivity, len(acts))
	for _, a := range acts {
		if busy[a.NodeID] {
			out[a.NodeID] = a
		}
	}
	return out, nil
}

// AgentSessionForBoot returns the agent session whose boot key is key:
// the BMC fetching the agent ISO. Anything else is not found (a wrong URL
// should look like a wrong URL).
func (s *Service) AgentSessionForBoot(ctx context.Context, nodeID, key string) (*baremetal.AgentSession, error) {
	notFound := baremetal.Errorf(baremetal.CodeNotFound, "no such agent image")
	sess, err := s.store.GetAgentSession(ctx, nodeID)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(baremetal.AgentBootKey(sess.Token)), []byte(key)) != 1 {
		return nil, notFound
	}
	return sess, nil
}

// AgentSessionForNetboot returns the agent session of the machine that
// presents ids (baremetal.NetbootID forms: its system UUID and MAC as
// iPXE reports them) when it boots from the network, while that session
// still waits for its agent: once the agent has called in, its boot files
// are no longer handed out, so the window in which a machine on the
// provisioning network could ask for another's is the boot itself. No
// session, or one already called in, is not found (the machine boots from
// its next device); more than one node matching is refused, as the
// agent's commands (erase, write) must never reach the wrong machine.
func (s *Service) AgentSessionForNetboot(ctx context.Context, ids []string) (*baremetal.AgentSession, error) {
	notFound := baremetal.Errorf(baremetal.CodeNotFound, "no deploy agent boot is due for this machine")
	found := map[string]*baremetal.AgentSession{}
	for _, id := range ids {
		if !baremetal.ValidNetbootID(id) {
			continue
		}
		sessions, err := s.store.FindAgentSessionsByNetbootID(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, sess := range sessions {
			found[sess.NodeID] = sess
		}
	}
	switch len(found) {
	case 0:
		return nil, notFound
	case 1:
		for _, sess := range found {
			if sess.LastSeenAt != nil {
				return nil, notFound
			}
			return sess, nil
		}
	}
	nodes := make([]string, 0, len(found))
	for id := range found {
		nodes = append(nodes, id)
	}
	slices.Sort(nodes)
	return nil, baremetal.Errorf(baremetal.CodeConflict,
		"this machine's identities (%s) match the agent boots of %d nodes (%s): check the nodes' inventories for duplicate MACs or UUIDs",
		strings.Join(ids, ", "), len(nodes), strings.Join(nodes, ", "))
}

// errAgentRefused answers a heartbeat that holds a boot's token but is
// not taken (agentRefusal): it says no more than that, and where to look,
// to a caller that may not be the node.
var errAgentRefused = baremetal.Errorf(baremetal.CodeForbidden,
	"this deploy agent boot's work is not handed to this machine: its identity (system UUID, NIC MACs) is not the node's, "+
		"or the boot's reports come from another address; the node's events say which")

// agentRefusal says why a heartbeat of sess's agent from address from is
// refused ("" takes it). The boot's token travels in its boot media, which
// a machine other than the node may get hold of (the network boot's
// script serves whoever presents the node's UUID or MAC; the ISO's URL
// passes through the BMC), so the token alone gets no work:
//
//   - the first report taken must present, in its inventory, the node's
//     system UUID or one of its NICs' MACs (sess.IdentityIDs: the BMC's
//     UUID in every byte order BMCs use, the last inspection's UUID and
//     MACs); a boot of a node with no identity known (virtual media, never
//     inspected, a BMC without a UUID) is taken on its first report, as
//     its BMC booted only its own machine;
//   - the session is then bound to that report's source address: every
//     later report must come from it (behind NAT or a proxy, every agent
//     has that one address, and the binding tells no two apart).
//
// Nothing the agent reports about itself is a secret (a MAC is on the
// wire, a UUID in the BMC): this keeps the work from a machine that is
// not the node and from a second holder of the token once the agent has
// reported; it does not make the provisioning network safe to share.
func agentRefusal(sess *baremetal.AgentSession, hb api.AgentHeartbeat, from string) (refusal, checked string) {
	if sess.AgentAddr != "" {
		if from != sess.AgentAddr {
			return fmt.Sprintf("a report from %s, while this boot's agent reports from %s (the session is bound to the address of its first report)", from, sess.AgentAddr), ""
		}
		return "", ""
	}
	if len(sess.IdentityIDs) == 0 {
		return "", "its identity not checked: the node had none known when the agent was booted (no system UUID from its BMC, never inspected)"
	}
	if hb.Inventory == nil {
		return fmt.Sprintf("a first report from %s without an inventory: the machine's identity (system UUID, NIC MACs) cannot be checked against the node's", from), ""
	}
	presented := baremetal.InventoryIDs(hb.Inventory.System.UUID, nicMACs(hb.Inventory)...)
	for _, id := range presented {
		if slices.Contains(sess.IdentityIDs, id) {
			return "", "its identity checked: " + id + " is the node's"
		}
	}
	shown := "no system UUID and no NIC MAC"
	if len(presented) > 0 {
		shown = strings.Join(presented, ", ")
	}
	return fmt.Sprintf("a report from %s of a machine that is not the node: it presents %s, and the node is %s", from, shown, strings.Join(sess.IdentityIDs, ", ")), ""
}

func nicMACs(inv *api.AgentInventory) []string {
	macs := make([]string, 0, len(inv.NICs))
	for _, nic := range inv.NICs {
		macs = append(macs, nic.MAC)
	}
	return macs
}

// AgentHeartbeat records a heartbeat of the agent holding token (from
// the address from) and answers with the command it is to run, if any.
// A heartbeat agentRefusal refuses changes nothing but the session's
// last refusal, told once in the node's events, and is answered
// errAgentRefused: no command, no inventory taken.
func (s *Service) AgentHeartbeat(ctx context.Context, token string, hb api.AgentHeartbeat, from string) (api.AgentReply, error) {
	if !strings.HasPrefix(token, baremetal.AgentTokenPrefix) {
		return api.AgentReply{}, errBadAgentToken
	}
	hash := baremetal.AgentTokenHash(token)
	// A plain read first: a junk token must not queue for the writer.
	if _, err := s.store.GetAgentSessionByTokenHash(ctx, hash); err != nil {
		if baremetal.IsCode(err, baremetal.CodeNotFound) {
			return api.AgentReply{}, errBadAgentToken
		}
		return api.AgentReply{}, err
	}
	if err := checkHeartbeat(&hb); err != nil {
		return api.AgentReply{}, err
	}
	var (
		reply   api.AgentReply
		first   bool
		nodeID  string
		refusal string
		told    bool // the refusal is new: logged, and an event
	)
	err := s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		reply, first, refusal, told = api.AgentReply{NextHeartbeatSeconds: agentHeartbeatSeconds}, false, "", false
		sess, err := tx.GetAgentSessionByTokenHash(ctx, hash)
		if baremetal.IsCode(err, baremetal.CodeNotFound) {
			return errBadAgentToken // replaced by a new boot meanwhile
		}
		if err != nil {
			return err
		}
		nodeID = sess.NodeID
		var checked string
		if refusal, checked = agentRefusal(sess, hb, from); refusal != "" {
			if sess.Refused == refusal {
				return nil // told already
			}
			sess.Refused, told = refusal, true
			if err := tx.UpdateAgentSession(ctx, sess); err != nil {
				return err
			}
			_, _, err := tx.Mutate(ctx, sess.NodeID, ledger.Actor("agent:"+sess.NodeID), func(_ store.Tx, _ *baremetal.Node, c *ledger.Change) error {
				c.Events = append(c.Events, &baremetal.Event{Type: "agent",
					Message: fmt.Sprintf("refused a report of the deploy agent booted for %s, and handed it no work: %s", sess.Purpose, refusal)})
				return nil
			})
			return err
		}
		now := s.now()
		first = sess.AgentAddr == ""
		if first {
			sess.AgentAddr = from
		}
		sess.LastSeenAt, sess.BootID = &now, hb.BootID
		if hb.Inventory != nil {
			b, err := json.Marshal(hb.Inventory)
			if err != nil {
				return err
			}
			sess.Inventory = string(b)
		}
		if sess.Command != "" {
			var cmd api.AgentCommand
			if err := json.Unmarshal([]byte(sess.Command), &cmd); err != nil {
				return fmt.Errorf("agent session of node %s: command: %w", sess.NodeID, err)
			}
			if hb.Command != nil && hb.Command.ID == cmd.ID {
				b, err := json.Marshal(hb.Command)
				if err != nil {
					return err
				}
				sess.Status = string(b)
			}
			reply.Command = &cmd
			reply.NextHeartbeatSeconds = agentBusySeconds
		}
		if err := tx.UpdateAgentSession(ctx, sess); err != nil {
			return err
		}
		if !first {
			return nil
		}
		// The first report of a boot: an agent of an earlier boot that
		// was lost (agent_lost) is replaced by one that works.
		_, _, err = tx.Mutate(ctx, sess.NodeID, ledger.Actor("agent:"+sess.NodeID), func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
			baremetal.AgentReported(n)
			c.Events = append(c.Events, &baremetal.Event{Type: "agent",
				Message: fmt.Sprintf("deploy agent %s booted for %s, reporting from %s (%s): %s", hb.AgentVersion, sess.Purpose, from, checked, jobs.InventorySummary(hb.Inventory))})
			return nil
		})
		return err
	})
	if err != nil {
		return api.AgentReply{}, err
	}
	if refusal != "" {
		if told {
			s.log.WarnContext(ctx, "deploy agent report refused", "node_id", nodeID, "from", from, "reason", refusal)
		}
		return api.AgentReply{}, errAgentRefused
	}
	if first {
		s.log.InfoContext(ctx, "deploy agent reporting", "node_id", nodeID, "from", from, "version", hb.AgentVersion)
	}
	return reply, nil
}

// NodeConsoleLog returns what the node's serial console printed while the
// controller recorded it (admin only: a console shows what the machine
// does, a login prompt's answers included).
func (s *Service) NodeConsoleLog(ctx context.Context, c Caller, idOrName string) (*baremetal.Node, *baremetal.ConsoleLog, error) {
	if err := requireAdmin(c, "read node console logs"); err != nil {
		return nil, nil, err
	}
	n, err := s.store.GetNode(ctx, idOrName)
	if err != nil {
		return nil, nil, err
	}
	log, err := s.store.GetConsoleLog(ctx, n.ID)
	return n, log, err
}
