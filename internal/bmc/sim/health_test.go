package sim_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

func statusOf(d map[string]any) (health, rollup string) {
	st, _ := d["Status"].(map[string]any)
	health, _ = st["Health"].(string)
	rollup, _ = st["HealthRollup"].(string)
	return health, rollup
}

func chassisOf(t *testing.T, f *sim.Fleet, sd map[string]any) string {
	t.Helper()
	links, _ := sd["Links"].(map[string]any)
	cs, _ := links["Chassis"].([]any)
	if len(cs) != 1 {
		t.Fatalf("system links chassis %v", links)
	}
	return cs[0].(map[string]any)["@odata.id"].(string)
}

// The standard chassis: Thermal and Power; a failed fan and a hot CPU
// show in the sensors, the chassis' health and the system's rollup, and
// SetHealth forces the rollup.
func TestHealthThermalPower(t *testing.T) {
	f := start(t, sim.Options{})
	sys := f.SystemIDs()[0]
	_, sd, _ := rf(t, f, "GET", sys, nil)
	if h, r := statusOf(sd); h != "OK" || r != "OK" {
		t.Fatalf("fresh system %s/%s", h, r)
	}
	ch := chassisOf(t, f, sd)
	_, cd, _ := rf(t, f, "GET", ch, nil)
	if link(cd, "ThermalSubsystem") != "" || link(cd, "Thermal") == "" || link(cd, "Power") == "" {
		t.Fatalf("standard chassis %v", cd)
	}
	zero, hot := 0.0, 99.0
	if err := f.SetSensor(sys, sim.Sensor{Kind: sim.SensorFan, Name: "Fan3", Reading: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := f.SetSensor(sys, sim.Sensor{Kind: sim.SensorTemperature, Name: "CPU1 Temp", Reading: &hot}); err != nil {
		t.Fatal(err)
	}
	_, th, _ := rf(t, f, "GET", link(cd, "Thermal"), nil)
	fan := th["Fans"].([]any)[2].(map[string]any)
	if h, _ := statusOf(fan); fan["Name"] != "Fan3" || fan["Reading"] != 0.0 || h != "Critical" {
		t.Fatalf("fan %v", fan)
	}
	temp := th["Temperatures"].([]any)[0].(map[string]any)
	if h, _ := statusOf(temp); temp["ReadingCelsius"] != 99.0 || temp["UpperThresholdCritical"] != 95.0 || h != "Critical" {
		t.Fatalf("temperature %v", temp)
	}
	_, cd, _ = rf(t, f, "GET", ch, nil)
	_, sd, _ = rf(t, f, "GET", sys, nil)
	if h, _ := statusOf(cd); h != "Critical" {
		t.Fatalf("chassis health %s", h)
	}
	if h, r := statusOf(sd); h != "OK" || r != "Critical" {
		t.Fatalf("system %s/%s, want OK/Critical", h, r)
	}
	if err := f.SetHealth(sys, "Warning", "Warning"); err != nil {
		t.Fatal(err)
	}
	_, sd, _ = rf(t, f, "GET", sys, nil)
	if h, r := statusOf(sd); h != "Warning" || r != "Warning" {
		t.Fatalf("forced %s/%s", h, r)
	}

	// A pulled PSU: Absent, the redundancy Warning.
	if err := f.SetSensor(sys, sim.Sensor{Kind: sim.SensorPSU, Name: "PSU2", Absent: true}); err != nil {
		t.Fatal(err)
	}
	_, pw, _ := rf(t, f, "GET", link(cd, "Power"), nil)
	psu := pw["PowerSupplies"].([]any)[1].(map[string]any)
	if st := psu["Status"].(map[string]any); st["State"] != "Absent" {
		t.Fatalf("psu %v", psu)
	}
	red := pw["Redundancy"].([]any)[0].(map[string]any)
	if h, _ := statusOf(red); h != "Warning" || len(red["RedundancySet"].([]any)) != 2 {
		t.Fatalf("redundancy %v", red)
	}
	if err := f.SetSensor(sys, sim.Sensor{Kind: sim.SensorFan, Name: "Fan9", Reading: &zero}); err == nil || !strings.Contains(err.Error(), "Fan9") {
		t.Fatalf("unknown fan: %v", err)
	}
}

// OpenBMC: only ThermalSubsystem, PowerSubsystem and Sensors; the log
// under the system as EventLog.
func TestHealthSubsystemOpenBMC(t *testing.T) {
	f := start(t, sim.Options{Dialect: sim.DialectOpenBMC})
	sys := f.SystemIDs()[0]
	_, sd, _ := rf(t, f, "GET", sys, nil)
	ch := chassisOf(t, f, sd)
	_, cd, _ := rf(t, f, "GET", ch, nil)
	if link(cd, "Thermal") != "" || link(cd, "ThermalSubsystem") == "" || link(cd, "Sensors") == "" {
		t.Fatalf("openbmc chassis %v", cd)
	}
	if code, _, _ := rf(t, f, "GET", ch+"/Thermal", nil); code != http.StatusNotFound {
		t.Fatalf("Thermal answered %d", code)
	}
	zero := 0.0
	if err := f.SetSensor(sys, sim.Sensor{Kind: sim.SensorFan, Name: "Fan1", Reading: &zero}); err != nil {
		t.Fatal(err)
	}
	_, ts, _ := rf(t, f, "GET", link(cd, "ThermalSubsystem"), nil)
	_, fans, _ := rf(t, f, "GET", link(ts, "Fans"), nil)
	_, fan, _ := rf(t, f, "GET", fans["Members"].([]any)[0].(map[string]any)["@odata.id"].(string), nil)
	if h, _ := statusOf(fan); h != "Critical" || fan["SpeedPercent"].(map[string]any)["SpeedRPM"] != 0.0 {
		t.Fatalf("fan %v", fan)
	}
	_, sens, _ := rf(t, f, "GET", link(cd, "Sensors"), nil)
	_, s0, _ := rf(t, f, "GET", sens["Members"].([]any)[0].(map[string]any)["@odata.id"].(string), nil)
	if s0["ReadingType"] != "Temperature" || s0["Reading"] != 45.0 {
		t.Fatalf("sensor %v", s0)
	}
	if got := link(sd, "LogServices"); got != sys+"/LogServices" {
		t.Fatalf("LogServices %q", got)
	}
	_, svc, _ := rf(t, f, "GET", sys+"/LogServices/EventLog", nil)
	if svc["LogEntryType"] != "Event" || link(svc, "Entries") == "" {
		t.Fatalf("log service %v", svc)
	}
}

// iDRAC: the log is the Manager's Sel, newest first, 50 a page; the
// control API adds entries and breaks sensors.
func TestHealthLogIDRAC(t *testing.T) {
	f := start(t, sim.Options{Dialect: sim.DialectIDRAC9})
	sys := f.SystemIDs()[0]
	_, sd, _ := rf(t, f, "GET", sys, nil)
	if link(sd, "LogServices") != "" {
		t.Fatalf("iDRAC system links LogServices")
	}
	mgr := "/redfish/v1/Managers/iDRAC.Embedded.1"
	_, md, _ := rf(t, f, "GET", mgr, nil)
	if link(md, "LogServices") != mgr+"/LogServices" {
		t.Fatalf("manager %v", md)
	}
	for i := 0; i < 60; i++ {
		if _, err := f.AddLogEntry(sys, "Warning", "entry"); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Post(f.URL()+"/sim/systems/System.Embedded.1/log", "application/json", strings.NewReader(`{"severity":"Critical","message":"The power input for power supply 2 is lost."}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("control log: %d", resp.StatusCode)
	}
	_, page, _ := rf(t, f, "GET", mgr+"/LogServices/Sel/Entries", nil)
	ms := page["Members"].([]any)
	first := ms[0].(map[string]any)
	if len(ms) != 50 || first["Id"] != "62" || first["Severity"] != "Critical" || first["EntryType"] != "SEL" || page["Members@odata.count"] != 62.0 {
		t.Fatalf("first page: %d members, first %v", len(ms), first)
	}
	next, _ := page["Members@odata.nextLink"].(string)
	_, page2, _ := rf(t, f, "GET", next, nil)
	if ms := page2["Members"].([]any); len(ms) != 12 || ms[11].(map[string]any)["Id"] != "1" || page2["Members@odata.nextLink"] != nil {
		t.Fatalf("second page %v", page2)
	}
	resp, _ = http.Post(f.URL()+"/sim/systems/System.Embedded.1/sensors", "application/json", strings.NewReader(`{"kind":"psu","name":"PSU1","health":"Critical","reading":0}`))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("control sensors: %d", resp.StatusCode)
	}
	resp, _ = http.Post(f.URL()+"/sim/systems/System.Embedded.1/sensors", "application/json", strings.NewReader(`{"kind":"gpu","name":"x"}`))
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad sensor kind: %d", resp.StatusCode)
	}
	_, cd, _ := rf(t, f, "GET", chassisOf(t, f, sd), nil)
	if link(cd, "Thermal") == "" || link(cd, "ThermalSubsystem") == "" {
		t.Fatalf("iDRAC chassis serves both forms: %v", cd)
	}
	_, ps, _ := rf(t, f, "GET", link(cd, "PowerSubsystem")+"/PowerSupplies/0", nil)
	if h, _ := statusOf(ps); h != "Critical" || ps["LineInputStatus"] != "LossOfInput" {
		t.Fatalf("psu %v", ps)
	}
}
