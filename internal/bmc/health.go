package bmc

import (
	"context"
	"time"
)

// Hardware health (issue 31): what a BMC says of its system's health and
// sensors, and the new entries of its event log. Read on a slower cadence
// than power, never in the power sync pass.

// The health states, as Redfish's Status.Health names them.
const (
	HealthOK       = "OK"
	HealthWarning  = "Warning"
	HealthCritical = "Critical"
)

// Health is a system's hardware health as its BMC reports it.
type Health struct {
	// State is the worst of the system's and its chassis' health (the
	// rollups where the BMC gives them): HealthOK, HealthWarning,
	// HealthCritical, or "" when the BMC says nothing.
	State string
	// Reasons say what is not OK, one line each, worst first:
	// "power supply PSU2: Critical (input lost)", "fan Fan3: Critical
	// (0 RPM)", "temperature CPU1 Temp: 98 °C, above its critical 95 °C".
	Reasons []string
	// HottestC is the highest temperature reading, in °C (0: none read).
	HottestC float64
	// Fans and PSUs count the fans and power supplies read, FansFailed
	// and PSUsFailed those whose health is Critical (or absent: a
	// removed PSU in a redundant pair).
	Fans, FansFailed, PSUs, PSUsFailed int
}

// HealthGetter reads a system's health and sensors (Redfish: the system's
// and chassis' Status, Thermal/Power or ThermalSubsystem/PowerSubsystem;
// IPMI: the SDR's sensors).
type HealthGetter interface {
	Health(ctx context.Context) (Health, error)
}

// LogEntry is one entry of the BMC's event log (Redfish LogServices,
// IPMI SEL).
type LogEntry struct {
	// ID orders the entries of one log (Redfish Id, SEL record id); the
	// driver makes it comparable as text (zero-padded).
	ID       string
	Created  time.Time
	Severity string // OK, Warning, Critical
	Message  string
}

// EventLogReader reads the entries of the system's event log that came
// after the entry after (its ID; "" for the newest few only, at most
// max), oldest first.
type EventLogReader interface {
	EventLog(ctx context.Context, after string, max int) ([]LogEntry, error)
}
