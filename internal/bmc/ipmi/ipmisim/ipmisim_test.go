package ipmisim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
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

// recorder is a Machine that records what the bridge asks of it.
type recorder struct {
	mu    sync.Mutex
	calls []string
	on    bool
}

func (r *recorder) UUID() string { return "00112233-4455-6677-8899-aabbccddeeff" }

func (r *recorder) Powered() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.on, nil
}

func (r *recorder) SetPower(on bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = on
	r.calls = append(r.calls, fmt.Sprintf("power %t", on))
	return nil
}

func (r *recorder) Reset() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = true
	r.calls = append(r.calls, "reset")
	return nil
}

func (r *recorder) SetBootDevice(dev string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, "boot "+dev)
	return nil
}

// With a Machine every command reaches it once and in order, the same
// boot device asked twice included (a one-time boot is used up by the
// boot it served); the BMC reports the machine's power, and its system
// GUID is the machine's UUID in IPMI's byte order.
func TestMachineGetsEveryCommandInOrder(t *testing.T) {
	if _, err := exec.LookPath("ipmitool"); err != nil {
		SkipIfUnavailable(t)
		if os.Getenv("CI") == "true" {
			t.Fatal("ipmitool not found; CI must install it")
		}
		t.Skip("ipmitool not found")
	}
	m := &recorder{}
	sim := StartWith(t, Config{Machine: m})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmds := [][]string{
		{"chassis", "bootdev", "pxe"}, {"chassis", "power", "on"},
		{"chassis", "bootdev", "pxe"}, {"chassis", "power", "reset"},
		{"chassis", "power", "off"}, {"chassis", "power", "on"}, {"chassis", "power", "off"},
	}
	for _, c := range cmds {
		if out, err := sim.IPMITool(ctx, c...); err != nil {
			t.Fatalf("ipmitool %v: %v\n%s", c, err, out)
		}
	}
	want := []string{"boot pxe", "power true", "boot pxe", "reset", "power false", "power true", "power false"}
	for {
		m.mu.Lock()
		got := slices.Clone(m.calls)
		m.mu.Unlock()
		if slices.Equal(got, want) {
			break
		}
		if len(got) >= len(want) || ctx.Err() != nil {
			t.Fatalf("the machine got %q, want %q (bridge error: %v)", got, want, sim.BridgeErr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := m.SetPower(true); err != nil { // the machine's own doing
		t.Fatal(err)
	}
	for {
		if out, err := sim.IPMITool(ctx, "chassis", "power", "status"); err == nil && strings.Contains(out, "is on") {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("the BMC does not report the machine's power: %q, %v", out, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, err := sim.IPMITool(ctx, "mc", "guid")
	if err != nil {
		t.Fatalf("ipmitool mc guid: %v\n%s", err, out)
	}
	// ipmitool prints the 16 bytes as the BMC sent them: the machine's
	// UUID backwards.
	if !strings.Contains(out, "FFEEDDCCBBAA99887766554433221100") {
		t.Errorf("ipmitool mc guid:\n%s\nwant the bytes of %s reversed", out, m.UUID())
	}
	if err := sim.BridgeErr(); err != nil {
		t.Error(err)
	}
}

func TestSensorsAndSEL(t *testing.T) {
	if _, err := exec.LookPath("ipmitool"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("ipmitool not installed")
	}
	sim := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := sim.IPMITool(ctx, "sensor")
	if err != nil {
		t.Fatalf("ipmitool sensor: %v\n%s", err, out)
	}
	for _, want := range []string{CPUTempName + " ", FanName + " ", PSUName + " ", "| 45.000 ", "| 5000.000 ", "| 0x0100|"} {
		if !strings.Contains(out, want) {
			t.Fatalf("ipmitool sensor lacks %q:\n%s", want, out)
		}
	}
	if err := sim.SetTemperature(ctx, 98); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetFanRPM(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetPSU(ctx, true, true); err != nil {
		t.Fatal(err)
	}
	id, err := sim.AddSEL(ctx, SELEvent{SensorType: 0x08, SensorNumber: SensorPSU, EventType: 0x6f, Data: [3]byte{0x03, 0xff, 0xff}})
	if err != nil {
		t.Fatal(err)
	}
	out, err = sim.IPMITool(ctx, "sensor")
	if err != nil {
		t.Fatalf("ipmitool sensor: %v\n%s", err, out)
	}
	for _, want := range []string{"| 98.000 ", "| 0.000 ", "| 0x0300|", "| cr "} {
		if !strings.Contains(out, want) {
			t.Fatalf("after the changes, ipmitool sensor lacks %q:\n%s", want, out)
		}
	}
	out, err = sim.IPMITool(ctx, "sel", "elist")
	if err != nil {
		t.Fatalf("ipmitool sel elist: %v\n%s", err, out)
	}
	for _, want := range []string{"Upper Critical going high", "Lower Critical going low", "Power Supply AC lost", fmt.Sprintf("%4x |", id)} {
		if !strings.Contains(out, want) {
			t.Fatalf("SEL lacks %q:\n%s", want, out)
		}
	}
	if _, err := sim.Command(ctx, "no_such_command"); err == nil {
		t.Fatal("an unknown command did not fail")
	}
}
