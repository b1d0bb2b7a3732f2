package baremetal

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestUnfitForAndFreesUp(t *testing.T) {
	plain := &Instance{}
	withDrive := &Instance{UserData: "#cloud-config\n"}
	withCallback := &Instance{DeployTimeout: 30 * time.Minute}
	liveDrive := &Instance{UserData: "#cloud-config\n", DeployMethod: DeployLive}
	imageDrive := &Instance{UserData: "#cloud-config\n", DeployMethod: DeployImage}
	imageCallback := &Instance{DeployTimeout: 30 * time.Minute, DeployMethod: DeployImage}
	node := func(state ProvisionState, driver Driver, edit func(*Node)) *Node {
		n := &Node{Name: "n", Driver: driver, ProvisionState: state}
		if edit != nil {
			edit(n)
		}
		return n
	}
	maint := func(n *Node) { n.Maintenance = true }
	fault := func(n *Node) { n.Fault = FaultPowerMismatch }
	hosts := func(n *Node) { n.InstanceID = "i1" }
	for _, tc := range []struct {
		n      *Node
		inst   *Instance
		unfit  Unfit
		frees  bool
		reason string
	}{
		{node(StateAvailable, DriverIPMI, nil), plain, "", false, "free node, nothing to wait for"},
		{node(StateAvailable, DriverRedfish, nil), withDrive, "", false, "redfish carries a config drive"},
		{node(StateAvailable, DriverIPMI, nil), withDrive, UnfitDriver, false, "ipmi has no virtual media"},
		{node(StateAvailable, DriverIPMI, nil), withCallback, UnfitDriver, false, "the ready token needs the drive too"},
		{node(StateAvailable, DriverIPMI, nil), liveDrive, UnfitDriver, false, "a live deploy's drive is virtual media"},
		{node(StateAvailable, DriverIPMI, nil), imageDrive, "", false, "an image deploy's agent writes the drive to disk"},
		{node(StateAvailable, DriverIPMI, nil), imageCallback, "", false, "the ready token too"},
		{node(StateCleaning, DriverIPMI, nil), imageDrive, UnfitCleaning, true, "cleaned, it takes an image deploy's drive"},
		{node(StateAvailable, DriverRedfish, maint), plain, UnfitMaintenance, false, "an operator must act"},
		{node(StateCleaning, DriverRedfish, maint), plain, UnfitMaintenance, false, "maintenance holds the cleanup"},
		{node(StateAvailable, DriverRedfish, fault), plain, UnfitFault, false, "a fault outside cleaning has no end in sight"},
		{node(StateCleaning, DriverRedfish, fault), plain, UnfitFault, true, "the cleanup's success clears the fault"},
		{node(StateCleaning, DriverRedfish, nil), plain, UnfitCleaning, true, "cleaning ends in available"},
		{node(StateCleaning, DriverIPMI, nil), withDrive, UnfitCleaning, false, "cleaned, it still cannot carry the drive"},
		{node(StateEnroll, DriverRedfish, nil), plain, UnfitEnroll, true, "being verified"},
		{node(StateEnroll, DriverRedfish, fault), plain, UnfitFault, false, "verification is failing"},
		{node(StateDeploying, DriverRedfish, hosts), plain, UnfitBusy, false, "another instance's deploy"},
		{node(StateActive, DriverRedfish, hosts), plain, UnfitBusy, false, "hosts an instance"},
		{node(StateDeployFailed, DriverRedfish, hosts), plain, UnfitBusy, false, "its instance failed, and stays until deleted"},
		{node(StateAvailable, DriverRedfish, hosts), plain, UnfitBusy, false, "an instance is still recorded on it"},
		{node(StateDeleting, DriverRedfish, nil), plain, UnfitDeleting, false, "leaving"},
		{node(StateInspecting, DriverRedfish, nil), plain, UnfitInspecting, true, "an inspection ends in available"},
		{node(StateInspecting, DriverIPMI, nil), imageDrive, UnfitInspecting, true, "inspected, it takes an image deploy's drive"},
		{node(StateInspecting, DriverIPMI, nil), withDrive, UnfitInspecting, false, "inspected, it still cannot carry a live deploy's drive"},
		{node(StateInspecting, DriverRedfish, fault), plain, UnfitFault, false, "the inspection's BMC is failing"},
		{node(StateInspecting, DriverRedfish, maint), plain, UnfitMaintenance, false, "maintenance holds the inspection"},
	} {
		name := fmt.Sprintf("%s/%s/maint=%v/fault=%s/%s", tc.n.ProvisionState, tc.n.Driver, tc.n.Maintenance, tc.n.Fault, tc.reason)
		if got := tc.n.UnfitFor(tc.inst); got != tc.unfit {
			t.Errorf("%s: UnfitFor = %q, want %q", name, got, tc.unfit)
		}
		if got := tc.n.FreesUpFor(tc.inst); got != tc.frees {
			t.Errorf("%s: FreesUpFor = %v, want %v", name, got, tc.frees)
		}
	}
}

func TestCapacityCount(t *testing.T) {
	inst := &Instance{UserData: "#cloud-config\n"}
	nodes := []*Node{
		{Driver: DriverRedfish, ProvisionState: StateAvailable, Maintenance: true},
		{Driver: DriverRedfish, ProvisionState: StateCleaning, Maintenance: true},
		{Driver: DriverRedfish, ProvisionState: StateCleaning, Fault: FaultCleanFailed},
		{Driver: DriverRedfish, ProvisionState: StateCleaning},
		{Driver: DriverIPMI, ProvisionState: StateCleaning},
		{Driver: DriverIPMI, ProvisionState: StateAvailable},
		{Driver: DriverRedfish, ProvisionState: StateEnroll},
		{Driver: DriverRedfish, ProvisionState: StateActive, InstanceID: "i1"},
		{Driver: DriverRedfish, ProvisionState: StateDeleting},
		{Driver: DriverRedfish, ProvisionState: StateInspecting},
	}
	var c Capacity
	for _, n := range nodes {
		c.Count(n, inst)
	}
	want := Capacity{Nodes: 10, Maintenance: 2, Fault: 1, UnsuitableDriver: 1, Busy: 1, Cleaning: 2, Enroll: 1, Deleting: 1,
		Inspecting: 1, Pending: 4}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("counts %+v, want %+v", c, want)
	}
	err := &Error{Code: CodeNoCapacity, Message: "none", Capacity: &c}
	if got := ErrorCapacity(fmt.Errorf("creating: %w", err)); got != &c {
		t.Fatalf("ErrorCapacity = %v", got)
	}
	if ErrorCapacity(Errorf(CodeConflict, "x")) != nil || ErrorCapacity(fmt.Errorf("plain")) != nil {
		t.Fatal("counts on an error that has none")
	}
}
