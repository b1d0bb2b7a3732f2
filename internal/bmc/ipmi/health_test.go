package ipmi

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/ipmi/ipmisim"
)

// Health and the event log are tested through the Drivers boundary, as
// the controller reaches them (bmc.Capability), against ipmi_sim's
// sensors and SEL (ipmisim's CPU temperature, fan and power supply).

func healthClient(t *testing.T, sim *ipmisim.Sim) (bmc.HealthGetter, bmc.EventLogReader) {
	t.Helper()
	o := newOpener(t, Options{})
	c, err := bmc.Drivers{"ipmi": o}.Open(context.Background(), endpoint(sim))
	if err != nil {
		t.Fatal(err)
	}
	hg, err := bmc.Capability[bmc.HealthGetter](c)
	if err != nil {
		t.Fatal(err)
	}
	lr, err := bmc.Capability[bmc.EventLogReader](c)
	if err != nil {
		t.Fatal(err)
	}
	return hg, lr
}

func TestHealth(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	hg, _ := healthClient(t, sim)
	ctx := ctxTimeout(t, 30*time.Second)

	h, err := hg.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := bmc.Health{State: bmc.HealthOK, HottestC: 45, Fans: 1, PSUs: 1}
	if h.State != want.State || len(h.Reasons) != 0 || h.HottestC != want.HottestC || h.Fans != 1 || h.FansFailed != 0 || h.PSUs != 1 || h.PSUsFailed != 0 {
		t.Fatalf("healthy machine: Health = %+v, want %+v", h, want)
	}

	// Warm, not yet critical: a warning.
	if err := sim.SetTemperature(ctx, 88); err != nil {
		t.Fatal(err)
	}
	h, err = hg.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.State != bmc.HealthWarning || !slices.Equal(h.Reasons, []string{"temperature CPU Temp: 88 °C, above its non-critical 85 °C"}) || h.HottestC != 88 {
		t.Fatalf("at 88 °C: Health = %+v", h)
	}

	// Overheating, the fan stopped, the power supply failed: Critical,
	// worst first (alike ones by text).
	if err := sim.SetTemperature(ctx, 98); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetFanRPM(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetPSU(ctx, true, true); err != nil {
		t.Fatal(err)
	}
	h, err = hg.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantReasons := []string{
		"fan FAN1: 0 RPM, below its critical 500 RPM",
		"power supply PSU1: Critical (failure detected)",
		"temperature CPU Temp: 98 °C, above its critical 95 °C",
	}
	if h.State != bmc.HealthCritical || !slices.Equal(h.Reasons, wantReasons) || h.HottestC != 98 ||
		h.Fans != 1 || h.FansFailed != 1 || h.PSUs != 1 || h.PSUsFailed != 1 {
		t.Fatalf("failing machine: Health = %+v\nwant reasons %q", h, wantReasons)
	}

	// A slowing fan is a warning; a pulled power supply (no redundancy
	// to tell otherwise) is an empty bay.
	if err := sim.SetTemperature(ctx, 50); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetFanRPM(ctx, 800); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetPSU(ctx, false, false); err != nil {
		t.Fatal(err)
	}
	h, err = hg.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.State != bmc.HealthWarning || !slices.Equal(h.Reasons, []string{"fan FAN1: 800 RPM, below its non-critical 1000 RPM"}) ||
		h.FansFailed != 0 || h.PSUs != 0 || h.HottestC != 50 {
		t.Fatalf("slow fan, PSU pulled: Health = %+v", h)
	}
}

// The SDR is read once per BMC and kept: a second Health costs one
// exchange per sensor (and one for the repository's info), not a walk of
// the repository.
func TestHealthSDRCached(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	o := newOpener(t, Options{})
	cl := open(t, o, endpoint(sim))
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := cl.Health(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := o.conn(cl.t)
	if err != nil {
		t.Fatal(err)
	}
	first := conn.sdr
	if first == nil || len(first.sensors) != 3 {
		t.Fatalf("sensors cached after Health: %+v", first)
	}
	if _, err := cl.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if conn.sdr != first {
		t.Fatal("a second Health read the SDR repository again")
	}
	// A session that ended (idle, BMC restart) does not lose the cache.
	o.dropSessions()
	if _, err := cl.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if conn.sdr != first {
		t.Fatal("a new session read the SDR repository again")
	}
	// Too old: read again.
	first.readAt = time.Now().Add(-sdrTTL)
	if _, err := cl.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if conn.sdr == first {
		t.Fatal("an expired SDR cache was kept")
	}
}

func TestEventLog(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	_, lr := healthClient(t, sim)
	ctx := ctxTimeout(t, 30*time.Second)

	// An empty SEL: no entries, no error, whatever after says.
	for _, after := range []string{"", "00003"} {
		got, err := lr.EventLog(ctx, after, 10)
		if err != nil || len(got) != 0 {
			t.Fatalf("empty SEL, after %q: %+v, %v", after, got, err)
		}
	}

	events := []ipmisim.SELEvent{
		// Temperature, upper critical going high (offset 9), reading 98, threshold 95.
		{SensorType: 0x01, SensorNumber: ipmisim.SensorCPUTemp, EventType: 0x01, Data: [3]byte{0x59, 98, 95}},
		// Power supply failure detected (offset 1).
		{SensorType: 0x08, SensorNumber: ipmisim.SensorPSU, EventType: 0x6f, Data: [3]byte{0x01, 0xff, 0xff}},
		// ... and its deassertion.
		{SensorType: 0x08, SensorNumber: ipmisim.SensorPSU, EventType: 0x6f, Deassert: true, Data: [3]byte{0x01, 0xff, 0xff}},
		// Fan, lower critical going low (offset 2), reading 0, threshold 10.
		{SensorType: 0x04, SensorNumber: ipmisim.SensorFan, EventType: 0x01, Data: [3]byte{0x52, 0, 10}},
	}
	var ids []string
	for _, e := range events {
		id, err := sim.AddSEL(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, selID(uint16(id)))
	}

	all, err := lr.EventLog(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Fatalf("whole SEL: %+v", all)
	}
	for i, e := range all {
		if e.ID != ids[i] || len(e.ID) != 5 {
			t.Fatalf("entry %d: id %q, want %q (oldest first, 5 digits)", i, e.ID, ids[i])
		}
	}
	if !strings.HasPrefix(all[0].Message, "Temperature #0x01: Upper Critical - going high") || all[0].Severity != bmc.HealthCritical {
		t.Fatalf("temperature event: %+v", all[0])
	}
	if !strings.Contains(all[1].Message, "Power Supply") || !strings.Contains(all[1].Message, "ailure") || all[1].Severity != bmc.HealthCritical {
		t.Fatalf("PSU failure event: %+v", all[1])
	}
	if !strings.HasSuffix(all[2].Message, "(deasserted)") || all[2].Severity != bmc.HealthOK {
		t.Fatalf("PSU failure deasserted: %+v", all[2])
	}
	// ipmi_sim's clock starts at its start: the timestamps are relative,
	// not dates, and are left out.
	if !all[0].Created.IsZero() {
		t.Fatalf("pre-init timestamp read as a date: %v", all[0].Created)
	}

	// "": the newest max.
	got, err := lr.EventLog(ctx, "", 2)
	if err != nil || len(got) != 2 || got[0].ID != ids[2] || got[1].ID != ids[3] {
		t.Fatalf(`EventLog("", 2) = %+v, %v; want %s, %s`, got, err, ids[2], ids[3])
	}
	// After an id: the next ones, oldest first, at most max.
	got, err = lr.EventLog(ctx, ids[0], 2)
	if err != nil || len(got) != 2 || got[0].ID != ids[1] || got[1].ID != ids[2] {
		t.Fatalf("EventLog(%s, 2) = %+v, %v; want %s, %s", ids[0], got, err, ids[1], ids[2])
	}
	got, err = lr.EventLog(ctx, ids[2], 10)
	if err != nil || len(got) != 1 || got[0].ID != ids[3] {
		t.Fatalf("EventLog(%s, 10) = %+v, %v", ids[2], got, err)
	}
	got, err = lr.EventLog(ctx, ids[3], 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("EventLog(last, 10) = %+v, %v; want none", got, err)
	}
	// An id the log no longer has: it was cleared since, and numbers its
	// records from 1 again, so everything in it is newer (at most max).
	got, err = lr.EventLog(ctx, "00900", 3)
	if err != nil || len(got) != 3 || got[0].ID != ids[0] {
		t.Fatalf("EventLog(gone 00900, 3) = %+v, %v; want the first 3", got, err)
	}
	got, err = lr.EventLog(ctx, "00000", 10)
	if err != nil || len(got) != 4 {
		t.Fatalf("EventLog(00000) = %+v, %v; want all", got, err)
	}
	if _, err := lr.EventLog(ctx, "not-an-id", 10); err == nil {
		t.Fatal("a Redfish-style id was taken")
	}
}

// With the SDR read (by Health), SEL messages name the sensor.
func TestEventLogNamesSensors(t *testing.T) {
	t.Parallel()
	sim := ipmisim.Start(t)
	hg, lr := healthClient(t, sim)
	ctx := ctxTimeout(t, 30*time.Second)
	if err := sim.SetTemperature(ctx, 98); err != nil { // the BMC logs the crossings
		t.Fatal(err)
	}
	if _, err := hg.Health(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := lr.EventLog(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range got {
		msgs = append(msgs, e.Severity+" "+e.Message)
	}
	if !slices.Contains(msgs, "Critical Temperature CPU Temp: Upper Critical - going high") {
		t.Fatalf("SEL after the CPU overheated: %q", msgs)
	}
}

// A BMC with 200 sensors: the first Health walks the repository (a Get
// SDR and a Get Sensor Thresholds per sensor), later ones read the
// sensors only. Both stay well within one call's deadline.
func TestHealthManySensors(t *testing.T) {
	t.Parallel()
	sim := ipmisim.StartWith(t, ipmisim.Config{ExtraTemperatures: 200})
	hg, _ := healthClient(t, sim)
	ctx := ctxTimeout(t, 60*time.Second)
	start := time.Now()
	h, err := hg.Health(ctx)
	first := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if h.State != bmc.HealthOK || h.HottestC != 45 || h.Fans != 1 || h.PSUs != 1 {
		t.Fatalf("Health = %+v", h)
	}
	if _, err := sim.Command(ctx, "sensor_set_value 0x20 0 215 99 0"); err != nil { // "Temp 200"
		t.Fatal(err)
	}
	start = time.Now()
	h, err = hg.Health(ctx)
	again := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if h.State != bmc.HealthCritical || !slices.Equal(h.Reasons, []string{"temperature Temp 200: 99 °C, above its critical 95 °C"}) || h.HottestC != 99 {
		t.Fatalf("Temp 200 at 99 °C: Health = %+v", h)
	}
	t.Logf("203 sensors: first Health %v, then %v", first, again)
	if first > 5*time.Second || again > 3*time.Second {
		t.Fatalf("Health too slow for 203 sensors: first %v, then %v", first, again)
	}
}
