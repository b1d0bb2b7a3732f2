package app_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestHardwareHealth: the health sync reads each node's health apart from
// the power sync: ok on a healthy simulated machine; a failed power
// supply is critical, the hardware_critical fault that keeps the node out
// of scheduling (never maintenance), and the fault clears itself when the
// BMC reports the supply back; a hot CPU is a warning with its
// temperature; new BMC event log entries become node events, cleaned.
func TestHardwareHealth(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1, HealthInterval: 300 * time.Millisecond})
	ctx := context.Background()
	sys := env.Sim.SystemIDs()[0]
	n := env.EnrollNodes(t, 1, "hh", "gpu")[0]
	n = env.WaitNode(t, n.ID, 30*time.Second, func(n *baremetal.Node) bool { return n.Health.ReadAt != nil })
	if n.Health.State != baremetal.HealthOK || n.Fault != "" || n.Health.HottestC <= 0 {
		t.Fatalf("a healthy machine: %+v, fault %q", n.Health, n.Fault)
	}

	if err := env.Sim.SetSensor(sys, sim.Sensor{Kind: sim.SensorPSU, Name: "PSU2", Health: "Critical"}); err != nil {
		t.Fatal(err)
	}
	n = env.WaitNode(t, n.ID, 30*time.Second, func(n *baremetal.Node) bool { return n.Fault == baremetal.FaultHardwareCritical })
	if n.Health.State != baremetal.HealthCritical || n.Health.PSUsFailed != 1 || n.Maintenance || n.Schedulable() ||
		!strings.Contains(n.LastError, "PSU2") {
		t.Fatalf("a failed PSU: health %+v, last_error %q, maintenance %v", n.Health, n.LastError, n.Maintenance)
	}
	if err := env.Sim.SetSensor(sys, sim.Sensor{Kind: sim.SensorPSU, Name: "PSU2", Health: "OK"}); err != nil {
		t.Fatal(err)
	}
	n = env.WaitNode(t, n.ID, 30*time.Second, func(n *baremetal.Node) bool { return n.Fault == "" && n.Health.State == baremetal.HealthOK })
	if !n.Schedulable() || n.LastError != "" {
		t.Fatalf("PSU back: schedulable %v, last_error %q", n.Schedulable(), n.LastError)
	}

	hot := 91.0
	if err := env.Sim.SetSensor(sys, sim.Sensor{Kind: sim.SensorTemperature, Name: "CPU1 Temp", Reading: &hot}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Sim.AddLogEntry(sys, "Warning", "CPU1 Temp crossed its upper warning threshold\x1b[2J"); err != nil {
		t.Fatal(err)
	}
	n = env.WaitNode(t, n.ID, 30*time.Second, func(n *baremetal.Node) bool { return n.Health.HottestC >= 91 })
	evs, _, err := env.App.Store.ListEvents(ctx, n.ID, store.Page{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(evs, func(e *baremetal.Event) bool {
		return e.Type == "bmc_log" && strings.Contains(e.Message, "CPU1 Temp crossed its upper warning threshold")
	})
	if i < 0 {
		// The log is read in the same pass as the health: one more pass at most.
		time.Sleep(time.Second)
		evs, _, _ = env.App.Store.ListEvents(ctx, n.ID, store.Page{Limit: 500})
		i = slices.IndexFunc(evs, func(e *baremetal.Event) bool {
			return e.Type == "bmc_log" && strings.Contains(e.Message, "CPU1 Temp crossed")
		})
	}
	if i < 0 {
		t.Fatalf("no bmc_log event for the new entry among %d events", len(evs))
	}
	if strings.Contains(evs[i].Message, "\x1b") || evs[i].New != "warning" {
		t.Fatalf("the log event: %+v", evs[i])
	}
	// Each entry once: another pass records nothing new.
	count := func() int {
		evs, _, _ := env.App.Store.ListEvents(ctx, n.ID, store.Page{Limit: 500})
		c := 0
		for _, e := range evs {
			if e.Type == "bmc_log" && strings.Contains(e.Message, "CPU1 Temp crossed") {
				c++
			}
		}
		return c
	}
	time.Sleep(time.Second)
	if c := count(); c != 1 {
		t.Fatalf("the entry was recorded %d times", c)
	}
}
