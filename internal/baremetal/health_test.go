package baremetal

import (
	"testing"
	"time"
)

// Critical health raises hardware_critical over no other fault, and
// clears it (and only it) when the BMC reports better.
func TestRecordHealth(t *testing.T) {
	now := time.Now()
	n := &Node{}
	if n.RecordHealth(Health{State: HealthWarning, Reasons: []string{"fan Fan1: Warning"}}, now) || n.Fault != FaultNone {
		t.Fatalf("warning: fault %q", n.Fault)
	}
	if !n.RecordHealth(Health{State: HealthCritical, Reasons: []string{"power supply PSU2: Critical"}}, now) ||
		n.Fault != FaultHardwareCritical || n.LastError != "hardware health critical: power supply PSU2: Critical" || n.FaultSince == nil {
		t.Fatalf("critical: fault %q last_error %q", n.Fault, n.LastError)
	}
	if !n.RecordHealth(Health{State: HealthOK}, now) || n.Fault != FaultNone || n.LastError != "" {
		t.Fatalf("ok again: fault %q last_error %q", n.Fault, n.LastError)
	}
	// Another fault says more, and stays.
	n.Fault = FaultBMCRefused
	if n.RecordHealth(Health{State: HealthCritical}, now) || n.Fault != FaultBMCRefused {
		t.Fatalf("over bmc_refused: fault %q", n.Fault)
	}
	if n.RecordHealth(Health{State: HealthOK}, now) || n.Fault != FaultBMCRefused {
		t.Fatalf("ok clears only hardware_critical: fault %q", n.Fault)
	}
	if (Health{}).StateOrUnknown() != HealthUnknown {
		t.Error("never read is unknown")
	}
	n = &Node{ProvisionState: StateAvailable}
	n.RecordHealth(Health{State: HealthCritical}, now)
	if n.Schedulable() {
		t.Error("a node with critical health is schedulable")
	}
}

// A node whose last health read was critical gets hardware_critical back
// when another fault that had the say clears: it is not schedulable until
// a read says the hardware is better.
func TestHealthFaultRestored(t *testing.T) {
	n := &Node{ProvisionState: StateAvailable, Health: Health{State: HealthCritical, Reasons: []string{"fan Fan1: Critical"}}}
	n.Fault = FaultPowerMismatch
	n.ClearFault(FaultPowerMismatch)
	if n.Fault != FaultHardwareCritical || n.Schedulable() || n.LastError != "hardware health critical: fan Fan1: Critical" {
		t.Fatalf("after power_mismatch cleared: fault %q last_error %q", n.Fault, n.LastError)
	}
	n.Health.State = HealthOK
	n.Fault = FaultBMCRefused
	n.ClearFault(FaultBMCRefused)
	if n.Fault != FaultNone {
		t.Fatalf("healthy: fault %q", n.Fault)
	}
}
