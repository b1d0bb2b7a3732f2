package baremetal

import "slices"

// ProvisionState is where a node is in its life cycle.
type ProvisionState string

const (
	StateEnroll       ProvisionState = "enroll"
	StateAvailable    ProvisionState = "available"
	StateDeploying    ProvisionState = "deploying"
	StateActive       ProvisionState = "active"
	StateDeployFailed ProvisionState = "deploy_failed"
	StateCleaning     ProvisionState = "cleaning"
	StateDeleting     ProvisionState = "deleting"
	// StateInspecting: the deploy agent is booted on the node to report
	// its hardware; out of scheduling until it has (or gave up).
	StateInspecting ProvisionState = "inspecting"
	// StateConfiguring: the controller applies the node's hardware
	// settings (BIOS, Secure Boot) through its BMC, resetting it; out of
	// scheduling until they are applied and read back (or refused).
	StateConfiguring ProvisionState = "configuring"
)

// ProvisionStates lists every state, for filters and validation.
var ProvisionStates = []ProvisionState{StateEnroll, StateAvailable, StateDeploying, StateActive, StateDeployFailed, StateCleaning, StateDeleting, StateInspecting, StateConfiguring}

// transitions is the one table of allowed provision-state changes. Any
// state may go to deleting; deleting goes nowhere (the record is removed
// when the retire job finishes).
var transitions = map[ProvisionState][]ProvisionState{
	// enroll → inspecting: inspection on enroll, once the BMC answered.
	StateEnroll:    {StateAvailable, StateInspecting, StateDeleting},
	StateAvailable: {StateDeploying, StateEnroll, StateInspecting, StateConfiguring, StateDeleting},
	// configuring → enroll: the operator changed the BMC meanwhile.
	StateConfiguring: {StateAvailable, StateEnroll, StateDeleting},
	// inspecting → enroll: the operator changed the BMC meanwhile.
	StateInspecting: {StateAvailable, StateEnroll, StateDeleting},
	StateDeploying:  {StateActive, StateDeployFailed, StateCleaning, StateDeleting},
	// active → deploying: the instance is rebuilt in place (StartRebuild).
	StateActive: {StateCleaning, StateDeleting, StateDeploying},
	// deploy_failed → active: the booted OS's readiness callback came
	// after its deadline (deploy_timeout); the instance works after all.
	// deploy_failed → deploying: a failed deploy or rebuild is rebuilt.
	StateDeployFailed: {StateActive, StateCleaning, StateDeleting, StateDeploying},
	StateCleaning:     {StateAvailable, StateDeleting},
	StateDeleting:     {},
}

// CanTransition reports whether a node may move from one state to another.
func CanTransition(from, to ProvisionState) bool {
	return slices.Contains(transitions[from], to)
}

// Transition moves n to state to, or returns an invalid_state error that
// names both states. The flow the node was in ends with its state: it was
// that state's work (finished, failed, or overtaken by the change).
func (n *Node) Transition(to ProvisionState) error {
	if !CanTransition(n.ProvisionState, to) {
		return &Error{Code: CodeInvalidState, Field: "provision_state",
			Message: "node " + n.Name + " cannot go from " + string(n.ProvisionState) + " to " + string(to)}
	}
	n.ProvisionState = to
	n.Flow = nil
	return nil
}
