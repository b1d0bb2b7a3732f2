package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// The steps the jobs that boot the deploy agent share (inspect, image
// deploys, erasing cleanups): a session per boot, booting the agent ISO
// by virtual media or the agent's kernel and initramfs from the network,
// and reading what the agent reported.

// startAgent stores a new agent session for purpose with cmd (nil: none)
// and boots node n into the agent: from the agent ISO by virtual media
// when its BMC has it, else from the network when the controller serves
// network boots (Config.AgentNetboot). The session is stored before the
// BMC sees the URL (some BMCs fetch the image as soon as it is inserted)
// or the node asks for its iPXE script; when the boot fails it is removed
// again, so the next attempt boots with a new session and token. It
// returns how the agent was booted, for the node's event.
//
// The session carries the node's identity (nodeIdentity), which the
// agent must present before it gets cmd (service.AgentHeartbeat), on
// every boot: the token travels in the boot media, which a machine other
// than the node can get hold of, by the network boot's script (anyone
// who knows the node's UUID or MAC may ask) and by the ISO's URL (on its
// way to the BMC, and in the BMC).
func (w *nodeWork) startAgent(ctx context.Context, n *baremetal.Node, purpose baremetal.AgentPurpose, cmd *api.AgentCommand) (string, error) {
	ms, err := w.ejectMediaSupported(ctx, n)
	if err != nil {
		return "", err
	}
	vm := ms.ok
	ids, err := w.nodeIdentity(ctx, n)
	if err != nil {
		return "", err
	}
	token, hash := baremetal.NewAgentToken()
	sess := &baremetal.AgentSession{NodeID: n.ID, Purpose: purpose, Token: token, TokenHash: hash, IdentityIDs: ids}
	if cmd != nil {
		b, err := json.Marshal(cmd)
		if err != nil {
			return "", err
		}
		sess.Command = string(b)
	}
	how := "from virtual media"
	if !vm {
		if !w.cfg.AgentNetboot {
			return "", &permanentError{fmt.Sprintf("the deploy agent boots from virtual media, which the %s BMC of node %s does not have, "+
				"and this controller does not boot the agent from the network (--agent-netboot, with the provisioning network's DHCP chaining iPXE to %s)",
				n.Driver, n.Name, api.AgentNetbootPath)}
		}
		// With no identity the node cannot be told from any other
		// machine booting on the network, so it is not booted: a deploy
		// agent handed to the wrong machine would write or erase the
		// wrong disks.
		if len(ids) == 0 {
			return "", &permanentError{fmt.Sprintf("node %s cannot be booted into the deploy agent from the network: "+
				"its %s BMC reports no system UUID and it has no inspected NIC MACs, so the controller could not tell it from another machine asking for its boot script", n.Name, n.Driver)}
		}
		sess.NetbootIDs = ids
		how = "from the network"
	}
	if vm && w.cfg.AgentBIOSOnly {
		if err := w.checkAgentBootMode(ctx, n); err != nil {
			return "", err
		}
	}
	if err := w.store.PutAgentSession(ctx, sess); err != nil {
		return "", err
	}
	if w.cfg.Console != nil {
		// The firmware's and the kernel's first lines say most about a
		// boot that fails: have the console open before the power goes on.
		w.cfg.Console.Record(n.ID)
		w.cfg.Console.WaitOpen(ctx, n.ID, consoleOpenWait)
	}
	if vm {
		err = w.bootFromCD(ctx, n, w.cfg.PublicURL+api.AgentBootPath(n.ID, baremetal.AgentBootKey(token)))
	} else {
		err = w.bootOnce(ctx, n, bmc.BootPXE)
	}
	if err != nil {
		_ = w.store.DeleteAgentSession(context.WithoutCancel(ctx), n.ID)
		return "", err
	}
	return how, nil
}

// consoleOpenWait bounds how long a boot waits for the node's console to
// open; a BMC without SOL, or a slow one, delays no boot by more.
const consoleOpenWait = 3 * time.Second

// bootFromCD inserts url as virtual media, sets a one-time CD boot and
// powers the node on (or resets it), waiting until on is observed.
func (w *nodeWork) bootFromCD(ctx context.Context, n *baremetal.Node, url string) error {
	if err := w.mediaCall(ctx, n, "insert agent media", func(ctx context.Context, c bmc.Client) error {
		vm, err := bmc.Capability[bmc.VirtualMedia](c)
		if err != nil {
			return err
		}
		return vm.InsertMedia(ctx, url)
	}); err != nil {
		return err
	}
	return w.bootOnce(ctx, n, bmc.BootCD)
}

// bootOnce sets a one-time boot from dev and powers the node on (or
// resets it), waiting until on is observed.
func (w *nodeWork) bootOnce(ctx context.Context, n *baremetal.Node, dev bmc.BootDevice) error {
	if err := w.bmcCall(ctx, n, "set boot device", func(ctx context.Context, c bmc.Client) error {
		return c.SetBootDevice(ctx, dev, false)
	}); err != nil {
		return err
	}
	ps, err := w.readPower(ctx, n)
	if err != nil {
		return err
	}
	action := bmc.ActionOn
	if ps == bmc.PowerOn {
		action = bmc.ActionReset
	}
	if err := w.setPower(ctx, n, action); err != nil {
		return err
	}
	_, err = w.waitPower(ctx, n, bmc.PowerOn, nil)
	return err
}

// checkAgentBootMode refuses to boot a BIOS-only agent ISO on a node
// whose BMC reports UEFI boot mode: the boot would fail at the node's
// console, and the agent timeout would say only that nothing reported.
func (w *nodeWork) checkAgentBootMode(ctx context.Context, n *baremetal.Node) error {
	mode := ""
	err := w.bmcCall(ctx, n, "read boot mode", func(ctx context.Context, c bmc.Client) error {
		g, err := bmc.Capability[bmc.BootModeGetter](c)
		if err != nil {
			return nil // the driver cannot tell
		}
		mode, err = g.BootMode(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if mode == "uefi" {
		return &permanentError{fmt.Sprintf("node %s boots UEFI (its BMC reports boot mode UEFI) and this controller's deploy agent ISO boots BIOS only: "+
			"install grub-efi-amd64-bin (or shim-signed and grub-efi-amd64-signed for Secure Boot) and restart the controller (--agent-uefi)", n.Name)}
	}
	return nil
}

// nodeIdentity is what node n is known by (NetbootID forms): the system
// UUID its BMC reports now (in every byte order BMCs use), and the UUID
// and NIC MACs of its last inspection. Its network boot finds it by them
// when it asks for its iPXE script, and its agent must present one of
// them in its first report. Empty when none is known.
func (w *nodeWork) nodeIdentity(ctx context.Context, n *baremetal.Node) ([]string, error) {
	var ids []string
	add := func(list ...string) {
		for _, id := range list {
			if id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	err := w.bmcCall(ctx, n, "read system UUID", func(ctx context.Context, c bmc.Client) error {
		var id string
		g, err := bmc.Capability[bmc.SystemUUIDGetter](c)
		if err == nil {
			id, err = g.SystemUUID(ctx)
		} else if ig, ierr := bmc.Capability[bmc.InventoryGetter](c); ierr == nil {
			var inv bmc.Inventory
			inv, err = ig.Inventory(ctx)
			id = inv.SystemUUID
		}
		// A BMC without the command may still be recognised by the
		// inspected MACs; an unreachable one is retried as any BMC call.
		if err != nil && bmc.KindOf(err) != bmc.KindUnsupported && bmc.KindOf(err) != bmc.KindBMCError {
			return err
		}
		add(baremetal.NetbootUUIDs(id)...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	stored, err := w.store.GetInventory(ctx, n.ID)
	switch {
	case baremetal.IsCode(err, baremetal.CodeNotFound):
	case err != nil:
		return nil, err
	default:
		var inv api.AgentInventory
		if err := json.Unmarshal([]byte(stored.Data), &inv); err != nil {
			return nil, fmt.Errorf("node %s: read its stored inventory: %w", n.Name, err)
		}
		add(baremetal.NetbootUUIDs(inv.System.UUID)...)
		for _, nic := range inv.NICs {
			add(baremetal.NetbootMAC(nic.MAC))
		}
	}
	return ids, nil
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
	// stalled: the agent reported, then fell silent for agentStall on a
	// machine that may still be on (a hung agent, a kernel panic, a
	// machine that lost its network); how long it has been silent.
	stalled time.Duration
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
	if !finished && !out.lost && sess.LastSeenAt != nil {
		// Silence is counted from this process's start, or from its
		// database coming back, at the earliest: while the controller or
		// its database was down the agent's heartbeats failed, and it
		// backs off before its next one.
		from := later(last, w.started)
		if back := w.storeBack.Load(); back != 0 {
			from = later(from, time.Unix(0, back))
		}
		if silent := time.Since(from); silent > w.cfg.agentStall() {
			out.stalled = silent
		}
	}
	return out, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// agentPoll is how often a step that waits for the agent looks for its
// report.
const agentPoll = 3 * time.Second

// agentSilence is how long an agent may be silent (it reports every 3 s
// while it runs a command, every 10 s otherwise, and not at all while its
// machine boots) before the jobs waiting on it ask the BMC whether its
// machine is still on. The cost of asking is one power read.
const agentSilence = 15 * time.Second

// agentGone says why the agent of sess is gone ("" while it may still
// report): silent for AgentTimeout (out.lost), silent for agentStall
// after it had reported (out.stalled: hung, whatever the power), or
// silent for agentSilence on a machine the BMC reports off, which no
// agent survives. The last is what a power loss or a crash of the
// machine looks like: the work retries within seconds instead of after
// AgentTimeout. A BMC that does not answer proves nothing (the power
// sync records its trouble).
func (w *nodeWork) agentGone(ctx context.Context, n *baremetal.Node, sess *baremetal.AgentSession, out agentOutcome, doing string) string {
	if out.lost {
		return fmt.Sprintf("the deploy agent stopped reporting for %s while %s", w.cfg.agentTimeout(), doing) + refusedNote(sess)
	}
	if out.stalled > 0 {
		return fmt.Sprintf("the deploy agent on node %s reported, then fell silent for %s while %s (it reports every few seconds): it hung, or its machine crashed or lost the network",
			n.Name, baremetal.HumanDuration(out.stalled), doing)
	}
	last := sess.CreatedAt
	if sess.LastSeenAt != nil {
		last = *sess.LastSeenAt
	}
	silent := time.Since(last)
	if silent < agentSilence {
		return ""
	}
	if ps, err := w.readPower(ctx, n); err != nil || ps != bmc.PowerOff {
		return ""
	}
	if sess.LastSeenAt == nil {
		return fmt.Sprintf("node %s is off %s after the deploy agent was booted, before it reported: its machine lost power or was turned off while %s", n.Name, baremetal.HumanDuration(silent), doing)
	}
	return fmt.Sprintf("node %s is off, and its deploy agent silent for %s: the machine lost power or was turned off while %s", n.Name, baremetal.HumanDuration(silent), doing)
}

// agentLost records on node nodeID, still in state, that the agent
// booted on it is gone (msg): the agent_lost fault.
func (w *nodeWork) agentLost(ctx context.Context, nodeID string, state baremetal.ProvisionState, msg string) error {
	_, err := w.ledger.Update(ctx, nodeID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		if n.ProvisionState != state {
			return ledger.ErrSkip
		}
		baremetal.AgentLost(n, scrub(n, msg), time.Now())
		return nil
	})
	return err
}

// commandSession is node nodeID's agent session if its agent was booted
// for purpose with the command cmdID ("" none), else nil (no session, or
// one of other work): a step that boots the agent boots it then, a step
// that waits for the agent goes back to boot it (its last boot was lost).
func (w *nodeWork) commandSession(ctx context.Context, nodeID string, purpose baremetal.AgentPurpose, cmdID string) (*baremetal.AgentSession, error) {
	sess, err := w.store.GetAgentSession(ctx, nodeID)
	switch {
	case baremetal.IsCode(err, baremetal.CodeNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case sess.Purpose != purpose || sessionCommand(sess) != cmdID:
		return nil, nil
	}
	return sess, nil
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

// refusedNote names, for a message about an agent that did not report,
// the last report of its boot the controller refused (service.agentRefusal),
// if any: a node whose BMC reports another UUID than the machine's, say,
// has its agent's reports refused until the work gives up.
func refusedNote(sess *baremetal.AgentSession) string {
	if sess.Refused == "" {
		return ""
	}
	return "; the controller refused " + sess.Refused
}
