package baremetal

import (
	"errors"
	"slices"
)

// Unfit is why a node cannot take an instance now.
type Unfit string

const (
	UnfitMaintenance Unfit = "maintenance"       // an operator took it out of service
	UnfitFault       Unfit = "fault"             // its BMC is in trouble (Node.Fault)
	UnfitDriver      Unfit = "unsuitable_driver" // free, but no virtual media for the config drive a live deploy needs
	UnfitBusy        Unfit = "busy"              // it hosts an instance
	UnfitCleaning    Unfit = "cleaning"
	UnfitEnroll      Unfit = "enroll"
	UnfitDeleting    Unfit = "deleting"
	UnfitInspecting  Unfit = "inspecting"  // the agent reports its hardware; available again after
	UnfitConfiguring Unfit = "configuring" // its hardware settings are applied; available again after
)

// UnfitFor says why n cannot take inst, or "" when it can. A node has one
// reason, the first that applies: maintenance (only an operator ends it),
// then a fault, then a driver that cannot carry the config drive inst
// needs (CanCarryConfigDrive), then its provision state.
func (n *Node) UnfitFor(inst *Instance) Unfit {
	switch {
	case n.Maintenance:
		return UnfitMaintenance
	case n.Fault != FaultNone:
		return UnfitFault
	case n.Schedulable() && !n.CanCarryConfigDrive(inst):
		return UnfitDriver
	case n.Schedulable():
		return ""
	}
	switch n.ProvisionState {
	case StateCleaning:
		return UnfitCleaning
	case StateEnroll:
		return UnfitEnroll
	case StateDeleting:
		return UnfitDeleting
	case StateInspecting:
		return UnfitInspecting
	case StateConfiguring:
		return UnfitConfiguring
	default:
		// deploying, active, deploy_failed, or available while an
		// instance is still recorded on it.
		return UnfitBusy
	}
}

// FreesUpFor reports whether n, though it cannot take inst now, will be
// able to without anyone acting: its cleanup is under way (a fault it
// carries, e.g. from the deploy that failed, clears when the cleanup
// succeeds), or its BMC is being verified, or its hardware inspected,
// without trouble so far (an inspection ends in available, the agent's
// report or not). A node in maintenance waits for an operator, and a
// driver without virtual media never carries a live deploy's config
// drive.
func (n *Node) FreesUpFor(inst *Instance) bool {
	if n.Maintenance || !n.CanCarryConfigDrive(inst) {
		return false
	}
	switch n.ProvisionState {
	case StateCleaning:
		return true
	case StateEnroll, StateInspecting, StateConfiguring:
		return n.Fault == FaultNone
	}
	return false
}

// Capacity counts, by reason, the nodes that could not take an instance;
// a no_capacity Error carries it. The API shows it as api.Capacity, field
// for field.
type Capacity struct {
	Nodes            int // nodes considered
	Maintenance      int
	Fault            int
	UnsuitableDriver int
	Busy             int
	Cleaning         int
	Enroll           int
	Deleting         int
	Inspecting       int
	Configuring      int
	// Pending counts the nodes (whatever their reason) that free up
	// without anyone acting (FreesUpFor): waiting can help only if > 0.
	Pending int
	// Unsuited counts the nodes whose hardware, traits or owner fail the
	// instance's requirements (whatever their state: no wait helps), and
	// Unmet, per requirement, how many nodes fail it (a node failing
	// several is counted under each). They are counted under no other
	// reason, and never as Pending.
	Unsuited int
	Unmet    []UnmetCount
	// Available counts the nodes that could take the instance now.
	Available int
}

// UnmetCount is how many nodes fail one requirement.
type UnmetCount struct {
	Unmet
	Nodes int
}

// CountPlacement adds n, considered for inst placed as p, to c: under the
// requirements it fails, if any, else as Count does. It returns what n
// fails, and why it cannot take inst ("" if it can).
func (c *Capacity) CountPlacement(n *Node, p Placement, inst *Instance) ([]Unmet, Unfit) {
	unmet := p.Unmet(n)
	if len(unmet) == 0 {
		u := c.Count(n, inst)
		if u == "" {
			c.Available++
		}
		return nil, u
	}
	c.Nodes++
	c.Unsuited++
	for _, u := range unmet {
		i := slices.IndexFunc(c.Unmet, func(x UnmetCount) bool { return x.Unmet == u })
		if i < 0 {
			c.Unmet = append(c.Unmet, UnmetCount{Unmet: u})
			i = len(c.Unmet) - 1
		}
		c.Unmet[i].Nodes++
	}
	return unmet, ""
}

// Count adds n, considered for inst, to c and returns why n cannot take
// inst ("" if it can: it is then counted in Nodes only).
func (c *Capacity) Count(n *Node, inst *Instance) Unfit {
	c.Nodes++
	u := n.UnfitFor(inst)
	switch u {
	case UnfitMaintenance:
		c.Maintenance++
	case UnfitFault:
		c.Fault++
	case UnfitDriver:
		c.UnsuitableDriver++
	case UnfitBusy:
		c.Busy++
	case UnfitCleaning:
		c.Cleaning++
	case UnfitEnroll:
		c.Enroll++
	case UnfitDeleting:
		c.Deleting++
	case UnfitInspecting:
		c.Inspecting++
	case UnfitConfiguring:
		c.Configuring++
	}
	if u != "" && n.FreesUpFor(inst) {
		c.Pending++
	}
	return u
}

// ErrorCapacity returns the counts a no_capacity error carries, if any.
func ErrorCapacity(err error) *Capacity {
	var e *Error
	if errors.As(err, &e) {
		return e.Capacity
	}
	return nil
}
