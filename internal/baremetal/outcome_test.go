package baremetal

import (
	"strings"
	"testing"
	"time"
)

func TestFinishDeploy(t *testing.T) {
	since := time.Now().Add(-time.Minute)
	for _, f := range []Fault{FaultPowerMismatch, FaultDeployTimeout, FaultBMCRefused} {
		n := &Node{ProvisionState: StateDeployFailed, Fault: f, FaultSince: &since, LastError: "x", InstanceID: "i"}
		inst := &Instance{State: InstanceError, LastError: "x"}
		if err := FinishDeploy(n, inst); err != nil {
			t.Fatal(err)
		}
		if n.ProvisionState != StateActive || n.Fault != FaultNone || n.FaultSince != nil || n.LastError != "" {
			t.Errorf("%s: node %+v", f, n)
		}
		if inst.State != InstanceActive || inst.LastError != "" {
			t.Errorf("%s: instance %+v", f, inst)
		}
	}
	// A BMC fault is the power sync's to disprove, not the deploy's.
	n := &Node{ProvisionState: StateDeploying, Fault: FaultBMCUnreachable, FaultSince: &since, LastError: "dial"}
	if err := FinishDeploy(n, &Instance{}); err != nil {
		t.Fatal(err)
	}
	if n.Fault != FaultBMCUnreachable || n.LastError != "dial" {
		t.Errorf("BMC fault cleared by a deploy: %+v", n)
	}
	// Only from a state a deploy can finish in.
	if err := FinishDeploy(&Node{ProvisionState: StateAvailable}, &Instance{}); !IsCode(err, CodeInvalidState) {
		t.Errorf("finish from available: %v", err)
	}
}

func TestFailDeployAndCleaning(t *testing.T) {
	n := &Node{ProvisionState: StateDeploying, InstanceID: "i"}
	inst := &Instance{State: InstanceDeploying}
	long := strings.Repeat("e", 2*MaxLastError)
	if err := FailDeploy(n, inst, long); err != nil {
		t.Fatal(err)
	}
	if n.ProvisionState != StateDeployFailed || inst.State != InstanceError || len(inst.LastError) != MaxLastError {
		t.Fatalf("node %s, instance %s, last_error %d bytes", n.ProvisionState, inst.State, len(inst.LastError))
	}
	if err := n.Transition(StateCleaning); err != nil {
		t.Fatal(err)
	}
	n.SetActionFault(FaultCleanFailed, "power off not observed", time.Now())
	if err := FinishCleaning(n); err != nil {
		t.Fatal(err)
	}
	if n.ProvisionState != StateAvailable || n.InstanceID != "" || n.Fault != FaultNone || !n.Schedulable() {
		t.Fatalf("after cleaning: %+v", n)
	}
}

func TestSetActionFaultKeepsBMCFault(t *testing.T) {
	now := time.Now()
	n := &Node{}
	n.SetActionFault(FaultPowerMismatch, "power on not observed", now)
	if n.Fault != FaultPowerMismatch || !n.FaultSince.Equal(now) {
		t.Fatalf("%+v", n)
	}
	n.Fault = FaultBMCAuthFailed
	n.SetActionFault(FaultDeployTimeout, "no callback", now.Add(time.Hour))
	if n.Fault != FaultBMCAuthFailed || n.LastError != "no callback" || !n.FaultSince.Equal(now) {
		t.Fatalf("%+v", n)
	}
	n.ClearFault(FaultPowerMismatch)
	if n.Fault != FaultBMCAuthFailed {
		t.Fatal("ClearFault cleared another fault")
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                   "0s",
		850 * time.Millisecond:         "850ms",
		2345 * time.Millisecond:        "2.3s",
		90 * time.Second:               "1m30s",
		4*time.Minute + 12*time.Second: "4m12s",
	} {
		if got := HumanDuration(d); got != want {
			t.Errorf("HumanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
