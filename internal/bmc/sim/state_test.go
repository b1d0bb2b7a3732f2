package sim_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// A fleet with a state file comes back from a restart as it was, as
// servers behind a rebooted BMC do: power, boot override, media and
// injected faults; and a state written while it runs survives a process
// that never closes the fleet (killed).
func TestStateFileKeepsSystemsAcrossRestarts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data", "sim-state.json")
	a, err := sim.Start(sim.Options{Systems: 3, StateFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("a fresh fleet wrote its state before anything changed: %v", err)
	}
	if err := a.SetPower("1", true); err != nil {
		t.Fatal(err)
	}
	c := gofishConnect(t, a, false)
	sys, err := schemas.GetComputerSystem(c, a.SystemIDs()[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.SetBoot(&schemas.Boot{BootSourceOverrideTarget: schemas.CdBootSource, BootSourceOverrideEnabled: schemas.ContinuousBootSourceOverrideEnabled}); err != nil {
		t.Fatal(err)
	}
	mgrs, err := sys.ManagedBy()
	if err != nil || len(mgrs) != 1 {
		t.Fatalf("managers %v %v", mgrs, err)
	}
	vms, err := mgrs[0].VirtualMedia()
	if err != nil || len(vms) == 0 {
		t.Fatalf("virtual media %v %v", vms, err)
	}
	if _, err := vms[0].InsertMedia(&schemas.VirtualMediaInsertMediaParameters{Image: "http://images/agent.iso"}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetFault("3", sim.FaultDown); err != nil {
		t.Fatal(err)
	}

	// Written while the fleet runs, without Close.
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(file)
		if strings.Contains(string(data), `"fault": "down"`) && strings.Contains(string(data), "agent.iso") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state file not written while the fleet runs: %q", data)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("state file: %v, mode %v; want 0600", err, st.Mode())
	}
	c.Logout()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	b := start(t, sim.Options{Systems: 3, StateFile: file})
	for id, want := range map[string]string{"1": "On", "2": "Off", "3": "Off"} {
		if p, _ := b.Power(id); p != want {
			t.Errorf("system %s after the restart: power %s, want %s", id, p, want)
		}
	}
	if tg, en, _ := b.BootOverride("2"); tg != "Cd" || en != "Continuous" {
		t.Errorf("system 2 after the restart: boot override %s/%s, want Cd/Continuous", tg, en)
	}
	if img, in, _ := b.Media("2"); img != "http://images/agent.iso" || !in {
		t.Errorf("system 2 after the restart: media %q inserted=%v", img, in)
	}
	status := func(id string) sim.SystemStatus {
		t.Helper()
		res, err := http.Get(b.URL() + "/sim/systems/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var st sim.SystemStatus
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := status("3"); st.Fault != "down" {
		t.Errorf("system 3 after the restart: %+v; want its fault down", st)
	}
	// System 1 ran on through the restart: its OS did not boot again.
	if st := status("1"); st.OS.PowerOns != 0 {
		t.Errorf("system 1's OS booted %d times at the restart", st.OS.PowerOns)
	}
}

// A state file that cannot be read stops the fleet from starting, naming
// the file and what to do, rather than silently powering everything off.
func TestStateFileUnreadable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sim-state.json")
	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sim.Start(sim.Options{Systems: 1, StateFile: file})
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("start on a corrupt state file: %v", err)
	}
}
