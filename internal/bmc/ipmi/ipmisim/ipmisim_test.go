package ipmisim

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestStartStop(t *testing.T) {
	sim := Start(t)
	if !strings.HasPrefix(sim.Address(), "ipmi://127.0.0.1:") || sim.Username == "" || sim.Password == "" {
		t.Fatalf("sim = %+v, address %s", sim, sim.Address())
	}
	if on, err := sim.Power(); err != nil || on {
		t.Fatalf("Power() = %v, %v; want off", on, err)
	}
	if _, err := exec.LookPath("ipmitool"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if out, err := sim.IPMITool(ctx, "chassis", "power", "on"); err != nil {
			t.Fatalf("ipmitool: %v\n%s", err, out)
		}
		if on, err := sim.Power(); err != nil || !on {
			t.Fatalf("after ipmitool power on: Power() = %v, %v", on, err)
		}
		if err := sim.SetPower(false); err != nil {
			t.Fatal(err)
		}
		if out, err := sim.IPMITool(ctx, "chassis", "power", "status"); err != nil || !strings.Contains(out, "is off") {
			t.Fatalf("ipmitool power status = %q, %v; want off", out, err)
		}
	}
	if err := ping(sim.Port, time.Second); err != nil {
		t.Fatalf("running simulator does not answer a ping: %v", err)
	}
	sim.Stop()
	sim.Stop()
	if err := ping(sim.Port, 200*time.Millisecond); err == nil {
		t.Fatal("stopped simulator still answers")
	}
}

func TestTwoSimulators(t *testing.T) {
	a := StartWith(t, Config{Username: "root", Password: "calvin-1"})
	b := Start(t)
	if a.Port == b.Port {
		t.Fatalf("both simulators on port %d", a.Port)
	}
	if a.Username != "root" || a.Password != "calvin-1" || b.Password == a.Password {
		t.Fatalf("credentials: %s/%s and %s/%s", a.Username, a.Password, b.Username, b.Password)
	}
}
