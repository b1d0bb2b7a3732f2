package ipmisim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The simulated BMC's sensors, each with a full sensor record (IPMI v2.0
// §43.1) in its SDR repository, the thresholds the sensor itself holds
// (what Get Sensor Thresholds answers) and events enabled, so that a
// value past a threshold also logs a SEL entry, as on a real BMC.
const (
	// SensorCPUTemp is "CPU Temp", °C (raw = °C): non-critical 85,
	// critical 95, non-recoverable 105; 45 at start.
	SensorCPUTemp = 1
	// SensorFan is "FAN1", RPM (raw × 50): non-critical below 1000,
	// critical below 500; 5000 at start.
	SensorFan = 2
	// SensorPSU is "PSU1", a power supply discrete sensor (type 08h,
	// sensor-specific states: 0 presence, 1 failure detected, 2
	// predictive failure, 3 input lost); present at start.
	SensorPSU = 3
)

// Names of the sensors, as their SDRs give them.
const (
	CPUTempName = "CPU Temp"
	FanName     = "FAN1"
	PSUName     = "PSU1"
)

// fanRPMPerRaw is the fan sensor's M factor: reading = raw × 50 RPM.
const fanRPMPerRaw = 50

type simSensor struct {
	num, sensorType, eventType, entity byte
	name                               string
	// Analog sensors: the unit (IPMI unit type code), M, thresholds
	// (UNR, UCR, UNC, LNR, LCR, LNC; raw, 0 = not set), the initial
	// raw value; enabled marks the thresholds set, as ipmi_sim wants it
	// (UNR first).
	unit, m    byte
	thresholds [6]byte
	enabled    string
	initial    byte
	// events are the event bits enabled (15 characters, bit 0 last).
	events string
	// Discrete sensors: the state bits set at start.
	initialBits []int
}

var sensors = []simSensor{
	{num: SensorCPUTemp, sensorType: 0x01, eventType: 0x01, entity: 0x03, name: CPUTempName,
		unit: 1, m: 1, thresholds: [6]byte{105, 95, 85, 0, 0, 0}, enabled: "111000", initial: 45,
		events: "000101010000000"}, // upper non-critical, critical, non-recoverable going high
	{num: SensorFan, sensorType: 0x04, eventType: 0x01, entity: 0x1d, name: FanName,
		unit: 18, m: fanRPMPerRaw, thresholds: [6]byte{0, 0, 0, 0, 500 / fanRPMPerRaw, 1000 / fanRPMPerRaw}, enabled: "000011",
		initial: 5000 / fanRPMPerRaw, events: "000000000000101"}, // lower non-critical, critical going low
	{num: SensorPSU, sensorType: 0x08, eventType: 0x6f, entity: 0x0a, name: PSUName,
		events: "000000000001111", initialBits: []int{0}},
}

func (s simSensor) analog() bool { return s.eventType == 0x01 }

// sdr is the sensor's full sensor record, as main_sdr_add wants it: every
// byte in C notation (ipmi_sim reads "51" as decimal and "c0" not at all).
func (s simSensor) sdr() string {
	b := []byte{0x00, 0x00, 0x51, 0x01, byte(43 + len(s.name)),
		0x20, 0x00, s.num, s.entity, 0x01,
		0x67, // init scanning, events, sensor type; events and scanning on
		0x40, // auto re-arm, no hysteresis, (below) threshold access
		s.sensorType, s.eventType}
	events, _ := strconv.ParseUint(s.events, 2, 16)
	if s.analog() {
		b[11] |= 0x08 // thresholds readable and settable
		var readable, lower, upper uint16
		for i, on := range s.enabled { // UNR, UCR, UNC, LNR, LCR, LNC
			if on == '1' {
				readable |= 1 << (5 - i)
			}
		}
		// Comparison status returned: LNC, LCR, LNR in the assertion
		// mask's bits 12-14, UNC, UCR, UNR in the deassertion mask's.
		lower = (readable & 0x07) << 12
		upper = ((readable >> 3) & 0x07) << 12
		am, dm := uint16(events)|lower, uint16(events)|upper
		b = append(b, byte(am), byte(am>>8), byte(dm), byte(dm>>8), byte(readable), byte(readable),
			0x00, s.unit, 0x00, 0x00, s.m, 0x00, 0x00, 0x00, 0x00, 0x00,
			0x01, s.initial, 0x00, 0x00, 0xff, 0x00) // nominal reading given; sensor range 0-255
		b = append(b, s.thresholds[:]...)
	} else {
		b = append(b, byte(events), byte(events>>8), byte(events), byte(events>>8), byte(events), byte(events>>8),
			0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // not analog
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00)
	}
	b = append(b, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0|byte(len(s.name))) // hysteresis, reserved, OEM, 8-bit ASCII id
	b = append(b, s.name...)
	var out strings.Builder
	for _, x := range b {
		fmt.Fprintf(&out, " 0x%02x", x)
	}
	return out.String()
}

// sensorCommands adds the sensors and their SDRs, and extra temperature
// sensors.
func sensorCommands(extraTemperatures int) string {
	all := append([]simSensor(nil), sensors...)
	for i := range extraTemperatures {
		all = append(all, simSensor{num: byte(16 + i), sensorType: 0x01, eventType: 0x01, entity: 0x07, name: fmt.Sprintf("Temp %d", i+1),
			unit: 1, m: 1, thresholds: [6]byte{0, 95, 0, 0, 0, 0}, enabled: "010000", initial: 30, events: "000001000000000"})
	}
	var out strings.Builder
	for _, s := range all {
		fmt.Fprintf(&out, "sensor_add 0x20 0 %d 0x%02x 0x%02x\n", s.num, s.sensorType, s.eventType)
		fmt.Fprintf(&out, "main_sdr_add 0x20%s\n", s.sdr())
		if s.analog() {
			t := s.thresholds
			fmt.Fprintf(&out, "sensor_set_threshold 0x20 0 %d settable %s %d %d %d %d %d %d\n", s.num, s.enabled, t[0], t[1], t[2], t[3], t[4], t[5])
			fmt.Fprintf(&out, "sensor_set_value 0x20 0 %d %d 0\n", s.num, s.initial)
		}
		for _, bit := range s.initialBits {
			fmt.Fprintf(&out, "sensor_set_bit 0x20 0 %d %d 1 0\n", s.num, bit)
		}
		fmt.Fprintf(&out, "sensor_set_event_support 0x20 0 %d enable scanning per-state %s %s %s %s\n",
			s.num, s.events, s.events, s.events, s.events)
	}
	return out.String()
}

// Command runs one emulator command (ipmi_sim_cmd(5)) on the running
// simulator, through its console, and returns what it printed. A command
// ipmi_sim rejects ("**..." lines) is an error.
func (s *Sim) Command(ctx context.Context, command string) (string, error) {
	if strings.ContainsAny(command, "\r\n") {
		return "", fmt.Errorf("ipmisim: one command per call: %q", command)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.ConsolePort)))
	if err != nil {
		return "", fmt.Errorf("ipmisim console: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	r := bufio.NewReader(conn)
	// The console opens with telnet option negotiation and a "> " prompt,
	// echoes the command and ends its answer with the next prompt; its
	// lines end in "\n\r".
	readPrompt := func() ([]byte, error) {
		var buf []byte
		for !bytes.HasSuffix(buf, []byte("> ")) {
			b, err := r.ReadByte()
			if err != nil {
				return buf, err
			}
			buf = append(buf, b)
		}
		return buf, nil
	}
	if _, err := readPrompt(); err != nil {
		return "", fmt.Errorf("ipmisim console: waiting for the prompt: %w", err)
	}
	if _, err := conn.Write([]byte(command + "\n")); err != nil {
		return "", fmt.Errorf("ipmisim console: %w", err)
	}
	out, err := readPrompt()
	if err != nil {
		return "", fmt.Errorf("ipmisim console: %s: %w (so far %q)", command, err, out)
	}
	text := strings.ReplaceAll(strings.TrimSuffix(string(out), "> "), "\r", "")
	_, text, _ = strings.Cut(text, "\n") // the echo
	text = strings.TrimSpace(text)
	if strings.Contains(text, "**") {
		return text, fmt.Errorf("ipmisim: %s: %s", command, text)
	}
	return text, nil
}

// SetTemperature sets the CPU temperature (°C, 0-255); past a threshold
// the BMC logs an event.
func (s *Sim) SetTemperature(ctx context.Context, celsius int) error {
	if celsius < 0 || celsius > 255 {
		return fmt.Errorf("ipmisim: temperature %d °C out of the sensor's range 0-255", celsius)
	}
	_, err := s.Command(ctx, fmt.Sprintf("sensor_set_value 0x20 0 %d %d 1", SensorCPUTemp, celsius))
	return err
}

// SetFanRPM sets the fan's speed, rounded down to 50 RPM (0-12750).
func (s *Sim) SetFanRPM(ctx context.Context, rpm int) error {
	if rpm < 0 || rpm/fanRPMPerRaw > 255 {
		return fmt.Errorf("ipmisim: fan speed %d RPM out of the sensor's range 0-%d", rpm, 255*fanRPMPerRaw)
	}
	_, err := s.Command(ctx, fmt.Sprintf("sensor_set_value 0x20 0 %d %d 1", SensorFan, rpm/fanRPMPerRaw))
	return err
}

// SetPSU sets the power supply's presence and failure states.
func (s *Sim) SetPSU(ctx context.Context, present, failed bool) error {
	for bit, on := range map[int]bool{0: present, 1: failed} {
		v := 0
		if on {
			v = 1
		}
		if _, err := s.Command(ctx, fmt.Sprintf("sensor_set_bit 0x20 0 %d %d %d 1", SensorPSU, bit, v)); err != nil {
			return err
		}
	}
	return nil
}

// SELEvent is a standard SEL event record (IPMI v2.0 §32.1).
type SELEvent struct {
	SensorType, SensorNumber byte
	// EventType is the event/reading type code (01h threshold, 6Fh
	// sensor-specific); Deassert sets the direction bit.
	EventType byte
	Deassert  bool
	// Data are event data 1-3 (data 1's low nibble is the offset).
	Data [3]byte
}

var addedRecord = regexp.MustCompile(`Added record (\d+)`)

// AddSEL adds an entry to the SEL, as generated by the BMC (IPMB 0x20),
// and returns its record id.
func (s *Sim) AddSEL(ctx context.Context, e SELEvent) (int, error) {
	typ := e.EventType & 0x7f
	if e.Deassert {
		typ |= 0x80
	}
	// Record type 02h; the timestamp (4 bytes) is set by the BMC.
	out, err := s.Command(ctx, fmt.Sprintf("sel_add 0x20 0x02 0 0 0 0 0x20 0x00 0x04 0x%02x 0x%02x 0x%02x 0x%02x 0x%02x 0x%02x",
		e.SensorType, e.SensorNumber, typ, e.Data[0], e.Data[1], e.Data[2]))
	if err != nil {
		return 0, err
	}
	m := addedRecord.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("ipmisim: sel_add answered %q, not the record id", out)
	}
	return strconv.Atoi(m[1])
}
