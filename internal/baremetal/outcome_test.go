package baremetal

import (
	"errors"
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

func TestStartRebuild(t *testing.T) {
	active := func() (*Node, *Instance) {
		inst := &Instance{ID: "i-1", Name: "web", NodeID: "n-1", ResourceClass: "gpu", State: InstanceActive, Ready: true,
			Image: Image{URL: "https://images.example/a.img"}, UserData: "#cloud-config\n", DeployMethod: DeployImage, Rebuilds: 1,
			BootedAt: new(time.Time), LastError: "old"}
		n := &Node{ID: "n-1", Name: "n1", Driver: DriverRedfish, ProvisionState: StateActive, InstanceID: inst.ID}
		return n, inst
	}
	img := &Image{URL: "https://images.example/b.img", Checksum: "sha256:" + strings.Repeat("a", 64)}
	n, inst := active()
	if err := StartRebuild(n, inst, Rebuild{Image: img}); err != nil {
		t.Fatal(err)
	}
	if n.ProvisionState != StateDeploying || inst.State != InstanceDeploying || inst.Image != *img || inst.UserData != "#cloud-config\n" ||
		inst.Rebuilds != 2 || inst.Ready || inst.BootedAt != nil || inst.LastError != "" {
		t.Fatalf("after StartRebuild: node %s, instance %+v", n.ProvisionState, inst)
	}

	// A failed rebuild (deploy_failed, error) is retried the same way.
	n, inst = active()
	n.ProvisionState, inst.State = StateDeployFailed, InstanceError
	empty := ""
	if err := StartRebuild(n, inst, Rebuild{UserData: &empty}); err != nil || inst.UserData != "" || n.ProvisionState != StateDeploying {
		t.Fatalf("retry: %v, %+v", err, inst)
	}

	for name, tc := range map[string]struct {
		change func(*Node, *Instance)
		ch     Rebuild
		code   Code
		field  string
	}{
		"deploying":       {change: func(n *Node, i *Instance) { n.ProvisionState, i.State = StateDeploying, InstanceDeploying }, code: CodeConflict},
		"node given back": {change: func(n *Node, i *Instance) { n.ProvisionState, n.InstanceID, i.State = StateCleaning, "", InstanceError }, code: CodeConflict},
		"other instance":  {change: func(n *Node, _ *Instance) { n.InstanceID = "i-2" }, code: CodeConflict},
		"maintenance":     {change: func(n *Node, _ *Instance) { n.Maintenance, n.MaintenanceReason = true, "disk swap" }, code: CodeConflict},
		"bad url":         {ch: Rebuild{Image: &Image{URL: "ftp://x/y"}}, code: CodeInvalid, field: "image.url"},
		"bad checksum":    {ch: Rebuild{Image: &Image{URL: "https://x/y", Checksum: "sha256:zz"}}, code: CodeInvalid},
		"live user data on ipmi": {change: func(n *Node, i *Instance) { n.Driver, i.DeployMethod, i.UserData = DriverIPMI, DeployLive, "" },
			ch: Rebuild{UserData: new(string)}, code: ""},
	} {
		t.Run(name, func(t *testing.T) {
			n, inst := active()
			if tc.change != nil {
				tc.change(n, inst)
			}
			before, beforeNode := *inst, *n
			err := StartRebuild(n, inst, tc.ch)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("StartRebuild: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code || (tc.field != "" && e.Field != tc.field) {
				t.Fatalf("StartRebuild = %v; want code %s field %q", err, tc.code, tc.field)
			}
			if inst.Rebuilds != before.Rebuilds || inst.State != before.State || inst.Image != before.Image || n.ProvisionState != beforeNode.ProvisionState {
				t.Errorf("a refused rebuild changed node %s / instance %+v", n.ProvisionState, inst)
			}
		})
	}
	// User data on a live deploy needs virtual media for its config drive.
	n, inst = active()
	n.Driver, inst.DeployMethod = DriverIPMI, DeployLive
	ud := "#cloud-config\n"
	if err := StartRebuild(n, inst, Rebuild{UserData: &ud}); !IsCode(err, CodeInvalid) {
		t.Fatalf("live rebuild with user data on IPMI: %v", err)
	}
}
