package baremetal

import "testing"

func TestTransitions(t *testing.T) {
	allowed := map[[2]ProvisionState]bool{
		{StateEnroll, StateAvailable}:       true,
		{StateEnroll, StateInspecting}:      true, // inspection on enroll
		{StateAvailable, StateDeploying}:    true,
		{StateAvailable, StateEnroll}:       true,
		{StateDeploying, StateActive}:       true,
		{StateDeploying, StateDeployFailed}: true,
		{StateDeploying, StateCleaning}:     true,
		{StateActive, StateCleaning}:        true,
		{StateDeployFailed, StateCleaning}:  true,
		{StateDeployFailed, StateActive}:    true, // late readiness callback
		{StateActive, StateDeploying}:       true, // rebuild in place
		{StateDeployFailed, StateDeploying}: true, // a failed deploy or rebuild rebuilt
		{StateCleaning, StateAvailable}:     true,
		{StateAvailable, StateInspecting}:   true,
		{StateInspecting, StateAvailable}:   true,
		{StateInspecting, StateEnroll}:      true, // BMC changed meanwhile
		{StateAvailable, StateConfiguring}:  true, // hardware settings applied
		{StateConfiguring, StateAvailable}:  true,
		{StateConfiguring, StateEnroll}:     true, // BMC changed meanwhile
	}
	for _, from := range ProvisionStates {
		for _, to := range ProvisionStates {
			want := allowed[[2]ProvisionState{from, to}] || (to == StateDeleting && from != StateDeleting)
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
	n := &Node{Name: "n1", ProvisionState: StateActive}
	if err := n.Transition(StateAvailable); !IsCode(err, CodeInvalidState) {
		t.Fatalf("active -> available: got %v, want invalid_state", err)
	}
	if n.ProvisionState != StateActive {
		t.Fatalf("failed transition changed state to %s", n.ProvisionState)
	}
}

func TestSchedulable(t *testing.T) {
	base := Node{ProvisionState: StateAvailable}
	if !base.Schedulable() {
		t.Fatal("available node should be schedulable")
	}
	for name, n := range map[string]Node{
		"maintenance": {ProvisionState: StateAvailable, Maintenance: true},
		"fault":       {ProvisionState: StateAvailable, Fault: FaultBMCUnreachable},
		"cleaning":    {ProvisionState: StateCleaning},
		"taken":       {ProvisionState: StateAvailable, InstanceID: "x"},
	} {
		if n.Schedulable() {
			t.Errorf("%s node must not be schedulable", name)
		}
	}
}
