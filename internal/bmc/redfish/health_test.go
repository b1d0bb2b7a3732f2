package redfish

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

func healthClient(t *testing.T, opts sim.Options) (*sim.Fleet, *Client, string) {
	t.Helper()
	opts.Systems = 1
	f := startFleet(t, opts)
	return f, open(t, newOpener(t, Options{}), endpoint(f.URL(), "")), f.SystemIDs()[0]
}

func readHealth(t *testing.T, c *Client) bmc.Health {
	t.Helper()
	h, err := c.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// breakSensors fails Fan3, heats CPU1 past its threshold and pulls PSU2.
func breakSensors(t *testing.T, f *sim.Fleet, sys string) {
	t.Helper()
	zero, hot := 0.0, 98.0
	for _, s := range []sim.Sensor{
		{Kind: sim.SensorFan, Name: "Fan3", Reading: &zero},
		{Kind: sim.SensorTemperature, Name: "CPU1 Temp", Reading: &hot},
		{Kind: sim.SensorPSU, Name: "PSU2", Absent: true},
		{Kind: sim.SensorFan, Name: "Fan4", Health: "Warning"},
	} {
		if err := f.SetSensor(sys, s); err != nil {
			t.Fatal(err)
		}
	}
}

// Health on the standard (Thermal/Power), OpenBMC (only the Subsystem
// forms) and iDRAC 9 (both: the Subsystem read) dialects: healthy, then
// broken, with the reasons worst first.
func TestHealthDialects(t *testing.T) {
	for _, d := range []sim.Dialect{sim.DialectStandard, sim.DialectOpenBMC, sim.DialectIDRAC9} {
		t.Run(string(d), func(t *testing.T) {
			f, c, sys := healthClient(t, sim.Options{Dialect: d})
			h := readHealth(t, c)
			want := bmc.Health{State: bmc.HealthOK, HottestC: 47, Fans: 4, PSUs: 2}
			if !reflect.DeepEqual(h, want) {
				t.Fatalf("healthy: %+v, want %+v", h, want)
			}
			breakSensors(t, f, sys)
			h = readHealth(t, c)
			want = bmc.Health{
				State: bmc.HealthCritical,
				Reasons: []string{
					"fan Fan3: Critical (0 RPM)",
					"power supply PSU2: Critical (absent from its redundant group)",
					"temperature CPU1 Temp: 98 °C, above its critical 95 °C",
					"fan Fan4: Warning (7200 RPM)",
				},
				HottestC: 98, Fans: 4, FansFailed: 1, PSUs: 2, PSUsFailed: 1,
			}
			if !reflect.DeepEqual(h, want) {
				t.Fatalf("broken:\n got %+v\nwant %+v", h, want)
			}
		})
	}
}

// A PSU that loses its input; a system rollup the sensors do not
// explain; no Chassis: State from the system alone.
func TestHealthRollupsAndNoChassis(t *testing.T) {
	f, c, sys := healthClient(t, sim.Options{})
	zero := 0.0
	if err := f.SetSensor(sys, sim.Sensor{Kind: sim.SensorPSU, Name: "PSU1", Health: "Critical", Reading: &zero}); err != nil {
		t.Fatal(err)
	}
	if h := readHealth(t, c); h.State != bmc.HealthCritical || h.PSUsFailed != 1 ||
		!reflect.DeepEqual(h.Reasons, []string{"power supply PSU1: Critical (input lost)"}) {
		t.Fatalf("%+v", h)
	}

	f, c, sys = healthClient(t, sim.Options{Tweak: func(q *sim.Quirks) { q.Health.NoChassis = true }})
	if h := readHealth(t, c); !reflect.DeepEqual(h, bmc.Health{State: bmc.HealthOK}) {
		t.Fatalf("no chassis: %+v", h)
	}
	if err := f.SetHealth(sys, "OK", "Warning"); err != nil {
		t.Fatal(err)
	}
	h := readHealth(t, c)
	if h.State != bmc.HealthWarning || len(h.Reasons) != 1 || !strings.Contains(h.Reasons[0], "names no failed sensor") {
		t.Fatalf("rollup only: %+v", h)
	}
}

func ids(es []bmc.LogEntry) string {
	var out []string
	for _, e := range es {
		out = append(out, strings.TrimLeft(e.ID, "0")+":"+e.Severity)
	}
	return strings.Join(out, ",")
}

// The event log on the standard (system's Log), OpenBMC (system's
// EventLog) and iDRAC 9 (the Manager's Sel, newest first, in pages of 50)
// dialects: the newest few, then what came after an id, oldest first,
// at most max.
func TestEventLogDialects(t *testing.T) {
	for _, d := range []sim.Dialect{sim.DialectStandard, sim.DialectOpenBMC, sim.DialectIDRAC9} {
		t.Run(string(d), func(t *testing.T) {
			f, c, sys := healthClient(t, sim.Options{Dialect: d})
			ctx := context.Background()
			es, err := c.EventLog(ctx, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if ids(es) != "1:OK" || es[0].Message != "Log cleared." || es[0].Created.IsZero() {
				t.Fatalf("fresh log %+v", es)
			}
			last := es[0].ID
			for i := 2; i <= 120; i++ {
				sev := "OK"
				if i%10 == 0 {
					sev = "Critical"
				}
				if _, err := f.AddLogEntry(sys, sev, fmt.Sprintf("entry %d", i)); err != nil {
					t.Fatal(err)
				}
			}
			es, err = c.EventLog(ctx, last, 3)
			if err != nil {
				t.Fatal(err)
			}
			if ids(es) != "2:OK,3:OK,4:OK" || es[2].Message != "entry 4" {
				t.Fatalf("after 1: %s", ids(es))
			}
			es, err = c.EventLog(ctx, es[2].ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) != 116 || ids(es[5:7]) != "10:Critical,11:OK" || strings.TrimLeft(es[115].ID, "0") != "120" {
				t.Fatalf("after 4: %d entries, %s", len(es), ids(es[:min(len(es), 8)]))
			}
			es, err = c.EventLog(ctx, "", 2)
			if err != nil {
				t.Fatal(err)
			}
			if ids(es) != "119:OK,120:Critical" {
				t.Fatalf("newest: %s", ids(es))
			}
			es, err = c.EventLog(ctx, es[1].ID, 5)
			if err != nil || len(es) != 0 {
				t.Fatalf("after the newest: %v %v", es, err)
			}
		})
	}
}

// Without LogServices the event log is unsupported.
func TestEventLogUnsupported(t *testing.T) {
	_, c, _ := healthClient(t, sim.Options{Tweak: func(q *sim.Quirks) { q.Health.NoLog = true }})
	_, err := c.EventLog(context.Background(), "", 5)
	if bmc.KindOf(err) != bmc.KindUnsupported || !strings.Contains(err.Error(), "no LogServices") {
		t.Fatalf("%v (%s)", err, bmc.KindOf(err))
	}
}
