package baremetal

import (
	"fmt"
	"time"
)

// The outcomes of the controller's work on a node, as pure functions of
// node and instance: the jobs (after their BMC calls) and the service (on
// the OS's readiness callback) apply them inside a ledger mutation, so one
// outcome is written the same way whoever observes it.

// MaxLastError bounds LastError: a BMC can answer with an HTML page.
const MaxLastError = 512

// ClipError bounds s for LastError.
func ClipError(s string) string {
	if len(s) > MaxLastError {
		return s[:MaxLastError-3] + "..."
	}
	return s
}

// BMC reports whether f is about reaching the BMC at all: the kind of
// fault a successful BMC call disproves. power_mismatch, deploy_timeout,
// clean_failed and bmc_refused are about the outcome of an action and
// clear when that action succeeds.
func (f Fault) BMC() bool {
	switch f {
	case FaultBMCUnreachable, FaultBMCAuthFailed, FaultBMCError:
		return true
	}
	return false
}

// ClearFault clears the node's fault if it is one of f: the action it was
// about worked since (a later power change was observed, say).
func (n *Node) ClearFault(f ...Fault) {
	for _, x := range f {
		if n.Fault == x {
			n.Fault = FaultNone
			n.FaultSince = nil
			n.LastError = ""
		}
	}
	n.RestoreHealthFault(time.Now())
}

// SetActionFault records a fault about an action's outcome with msg
// (already free of secrets). A BMC fault already present stays: not
// reaching the BMC explains the outcome better.
func (n *Node) SetActionFault(f Fault, msg string, now time.Time) {
	n.LastError = ClipError(msg)
	if n.Fault.BMC() {
		return
	}
	n.Fault = f
	if n.FaultSince == nil {
		n.FaultSince = &now
	}
}

// deployFaults are the faults a finished deploy disproves (clean_failed:
// a rebuild's erase, which must have worked for the rebuild to finish).
var deployFaults = []Fault{FaultPowerMismatch, FaultDeployTimeout, FaultBMCRefused, FaultAgentLost, FaultCleanFailed}

// FinishDeploy makes node and instance active: the image booted (and the
// OS called back, when it was asked to). The faults about the deploy's own
// actions clear; a BMC fault stays for the power sync to disprove.
func FinishDeploy(n *Node, inst *Instance) error {
	if err := n.Transition(StateActive); err != nil {
		return err
	}
	n.ClearFault(deployFaults...)
	inst.State, inst.LastError = InstanceActive, ""
	return nil
}

// BootedAwaitingReady records that the instance booted at now and waits
// for its OS's readiness callback: the node stays deploying, and the
// faults the boot disproves clear.
func BootedAwaitingReady(n *Node, inst *Instance, now time.Time) {
	n.ClearFault(deployFaults...)
	inst.BootedAt = &now
}

// FailDeploy records a deploy that failed for good with msg: node
// deploy_failed (deleting the instance cleans it), instance error. The
// caller sets any fault first.
func FailDeploy(n *Node, inst *Instance, msg string) error {
	if err := n.Transition(StateDeployFailed); err != nil {
		return err
	}
	inst.State = InstanceError
	inst.LastError = ClipError(msg)
	return nil
}

// FinishCleaning returns a cleaned node to the pool: no instance, the
// faults about the cleanup's actions (and any left by the deploy) cleared.
func FinishCleaning(n *Node) error {
	n.InstanceID = ""
	n.ClearFault(FaultPowerMismatch, FaultCleanFailed, FaultDeployTimeout, FaultBMCRefused, FaultAgentLost)
	return n.Transition(StateAvailable)
}

// AgentLost records that the deploy agent booted on n to write its disk
// stopped reporting (msg says how that was seen, free of secrets): an
// agent_lost fault, unless a BMC fault explains more. The work retries
// with a fresh boot of the agent.
func AgentLost(n *Node, msg string, now time.Time) {
	n.SetActionFault(FaultAgentLost, msg, now)
}

// AgentReported records that a freshly booted deploy agent called in on
// n: the agent_lost fault of an earlier boot is disproven.
func AgentReported(n *Node) {
	n.ClearFault(FaultAgentLost)
}

// HumanDuration renders a duration for events and messages: "4m12s",
// "2.3s", "850ms".
func HumanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}

// Rebuild is what a rebuild in place changes: the image, the user data
// and the network (nil keeps each). The instance keeps its id, node and everything else.
type Rebuild struct {
	Image    *Image
	UserData *string
	// Network replaces the network when set; an empty Network removes it.
	Network *Network
}

// StartRebuild starts rebuilding inst in place on its node n: the node
// goes back to deploying (its deploy job erases the disks as the node's
// policy says, writes the image and config drive and boots them), the
// instance to deploying with what ch changes, its readiness and boot
// forgotten and Rebuilds counted up. The caller gives the instance a new
// ready token (a new config drive URL) and queues the deploy.
//
// Only an instance that is done deploying can be rebuilt: active, or in
// error after a failed deploy or rebuild (which is how a failed rebuild is
// retried), and only on the node it holds: an instance whose first deploy
// failed on its image gave its node back, and is replaced, not rebuilt. A
// node in maintenance is left alone: an operator took it out of service.
func StartRebuild(n *Node, inst *Instance, ch Rebuild) error {
	if inst.State == InstanceDeploying {
		return &Error{Code: CodeConflict, Message: fmt.Sprintf(
			"instance %s is still deploying; rebuild it once it is active or in error (or delete it)", inst.Name)}
	}
	if n.InstanceID != inst.ID {
		return &Error{Code: CodeConflict, Message: fmt.Sprintf(
			"instance %s no longer holds node %s (its deploy failed on its image and the node was given back): "+
				"it cannot be rebuilt in place; delete it and create it again", inst.Name, n.Name)}
	}
	if n.ProvisionState != StateActive && n.ProvisionState != StateDeployFailed {
		return &Error{Code: CodeConflict, Message: fmt.Sprintf(
			"instance %s's node %s is %s: it is rebuilt only when active or after a failed deploy", inst.Name, n.Name, n.ProvisionState)}
	}
	if n.Maintenance {
		return &Error{Code: CodeConflict, Message: fmt.Sprintf(
			"instance %s's node %s is in maintenance (%s): it is rebuilt once an operator ends the maintenance", inst.Name, n.Name, n.MaintenanceReason)}
	}
	next := *inst
	if ch.Image != nil {
		next.Image = *ch.Image
	}
	if ch.UserData != nil {
		next.UserData = *ch.UserData
	}
	if ch.Network != nil {
		next.Network = ch.Network
		if len(ch.Network.Interfaces) == 0 && len(ch.Network.Addresses) == 0 && len(ch.Network.DNSServers) == 0 && len(ch.Network.SearchDomains) == 0 {
			next.Network = nil
		}
	}
	if err := next.ValidateRebuildable(); err != nil {
		return err
	}
	if next.NeedsMediaDrive() && n.Driver != DriverRedfish {
		field := "user_data"
		if next.UserData == "" && next.HasNetwork() {
			field = "network"
		}
		return FieldErrorf(field, "a live deploy delivers %s on a config drive in virtual media, which node %s's %s BMC does not have", field, n.Name, n.Driver)
	}
	if err := n.Transition(StateDeploying); err != nil {
		return err
	}
	next.State, next.LastError = InstanceDeploying, ""
	next.Ready, next.BootedAt = false, nil
	next.Rebuilds++
	*inst = next
	return nil
}
