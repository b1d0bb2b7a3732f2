package store

// One machine, one node, beyond what the unique bmc_key can see. A Redfish
// node without system_id is "the BMC's only system", and which system that
// is only the BMC can say: the controller asks it at enroll and keeps the
// answer (the @odata.id the BMC serves) as the node's system_id. Until it
// has, such a node and any other node on the same BMC may well be one
// machine. The rules below decide that from the nodes on the BMC
// (NodesOnBMC) and, where the BMC was asked, the systems it lists; the
// service refuses the second node with them, the jobs keep a node found to
// be a second one from acting.

import (
	"fmt"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// SameMachine returns the nodes among others (NodesOnBMC of n's BMC) that
// are n's machine, oldest first, n itself (self: its id, "" for a node not
// stored yet) left out. members are the systems the BMC lists, nil when it
// was not asked. A node is n's machine when it names the same system (in
// any spelling), when n names none (the BMC's only system: every other
// node on the BMC is on it, or names a system n cannot tell apart), or
// when it names none and the BMC is not known to have several systems.
func SameMachine(n *baremetal.Node, self string, others []BMCHolder, members []string) []BMCHolder {
	var out []BMCHolder
	for _, o := range others {
		if o.ID == self || (self == "" && o.ID == n.ID && n.ID != "") {
			continue
		}
		switch {
		case baremetal.SameSystemID(o.SystemID, n.BMC.SystemID):
		case n.BMC.SystemID == "":
		case o.SystemID == "" && len(members) <= 1:
		default:
			continue
		}
		out = append(out, o)
	}
	return out
}

// MachineKeys returns the BMC keys that the nodes SameMachine may find
// for n hold (members as there), so that those nodes can be read by key
// (NodesWithBMCKeys) instead of every node on n's BMC (NodesOnBMC): the
// key of n's system (any spelling of one system keys the same), and the
// BMC's own key (nodes without system_id) unless the BMC is known to
// have several systems. It returns false when n names no system (every
// node on the BMC is then its machine) or has no key: read NodesOnBMC.
func MachineKeys(n *baremetal.Node, members []string) ([]string, bool) {
	if n.BMC.SystemID == "" {
		return nil, false
	}
	key, err := baremetal.BMCKey(n.Driver, n.BMC)
	if err != nil {
		return nil, false
	}
	ep, err := baremetal.BMCEndpointKey(n.Driver, n.BMC.Address)
	if err != nil {
		return nil, false
	}
	keys := []string{key}
	if len(members) <= 1 && ep != key {
		keys = append(keys, ep)
	}
	return keys, true
}

// SameMachineConflict is the 409 of a write that would make n a second
// node of h's machine (found by SameMachine): it names h, says why the two
// are one machine, and what to do if they are not. It is on bmc.system_id,
// the setting that tells two systems of one BMC apart.
func SameMachineConflict(n *baremetal.Node, h *BMCHolder) error {
	var why string
	switch {
	case baremetal.SameSystemID(h.SystemID, n.BMC.SystemID):
		why = fmt.Sprintf("manages the same system of this BMC (bmc.address %s, bmc.system_id %s)", h.Address, orNone(h.SystemID))
	case n.BMC.SystemID == "":
		why = fmt.Sprintf("manages system %s of this BMC (bmc.address %s), and a node without bmc.system_id is the BMC's only system: "+
			"if the BMC has several, set this node's bmc.system_id to its own", orNone(h.SystemID), h.Address)
	default:
		why = fmt.Sprintf("manages this BMC (bmc.address %s) without bmc.system_id, which is the BMC's only system: "+
			"if the BMC has several, set that node's bmc.system_id first", h.Address)
	}
	msg := fmt.Sprintf("node %q (id %s) %s; a physical server can be enrolled only once", h.Name, h.ID, why)
	if h.State == baremetal.StateDeleting {
		msg += "; that node is still being deleted: wait for its retire job to finish or delete it with force=true"
	}
	return Duplicate("bmc.system_id", msg, nil)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
