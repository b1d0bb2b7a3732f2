package baremetal

import "time"

// FaultHardwareCritical: the node's BMC reports its hardware's health
// Critical (a failed power supply, fan or overheating part; Health says
// which). The node is kept out of scheduling; the fault clears itself
// when the BMC reports the health better again. Never maintenance, and
// an instance on the node is not touched.
const FaultHardwareCritical Fault = "hardware_critical"

// The node health states.
const (
	HealthOK       = "ok"
	HealthWarning  = "warning"
	HealthCritical = "critical"
	HealthUnknown  = "unknown"
)

// HealthStates lists them.
var HealthStates = []string{HealthOK, HealthWarning, HealthCritical, HealthUnknown}

// Health is what the controller last read of a node's hardware health
// from its BMC (issue 31), on its own cadence (not the power sync's).
type Health struct {
	// State is ok, warning, critical, or unknown (never read, or the BMC
	// says nothing of it).
	State string `json:"state"`
	// Reasons say what is not ok, worst first, one line each (free of
	// secrets and control characters: the BMC's words, cleaned).
	Reasons []string `json:"reasons,omitempty"`
	// HottestC is the highest temperature read, °C (0: none).
	HottestC float64 `json:"hottest_c,omitempty"`
	// FansFailed and PSUsFailed count the failed fans and power supplies.
	FansFailed int `json:"fans_failed,omitempty"`
	PSUsFailed int `json:"psus_failed,omitempty"`
	// LogAfter is the id of the newest BMC event log entry recorded as a
	// node event: the next read records only entries after it.
	LogAfter string `json:"log_after,omitempty"`
	// ReadAt is when it was read; nil: never.
	ReadAt *time.Time `json:"read_at,omitempty"`
}

// StateOrUnknown is the state, unknown when never read.
func (h Health) StateOrUnknown() string {
	if h.State == "" {
		return HealthUnknown
	}
	return h.State
}

// RecordHealth stores what was read and raises or clears the
// hardware_critical fault with it: raised only over no other fault (a
// BMC or action fault says more), cleared as soon as the health is no
// longer critical. It reports whether the fault changed.
func (n *Node) RecordHealth(h Health, now time.Time) bool {
	n.Health = h
	switch {
	case h.State == HealthCritical && n.Fault == FaultNone:
		n.Fault, n.FaultSince = FaultHardwareCritical, &now
		msg := "hardware health critical"
		if len(h.Reasons) > 0 {
			msg += ": " + h.Reasons[0]
		}
		n.LastError = ClipError(msg)
		return true
	case h.State != HealthCritical && n.Fault == FaultHardwareCritical:
		n.ClearFault(FaultHardwareCritical)
		return true
	}
	return false
}

// RestoreHealthFault raises hardware_critical again on a node whose last
// health read was critical and whose other fault (which had the say) just
// cleared: the hardware is not known to be better, and the node must not
// be scheduled until a read says so.
func (n *Node) RestoreHealthFault(now time.Time) {
	if n.Fault != FaultNone || n.Health.State != HealthCritical {
		return
	}
	n.Fault, n.FaultSince = FaultHardwareCritical, &now
	msg := "hardware health critical"
	if len(n.Health.Reasons) > 0 {
		msg += ": " + n.Health.Reasons[0]
	}
	n.LastError = ClipError(msg)
}
