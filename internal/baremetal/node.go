package baremetal

import (
	"time"
)

// Driver names the protocol used to talk to a node's BMC.
type Driver string

const (
	DriverRedfish Driver = "redfish"
	DriverIPMI    Driver = "ipmi"
)

// Drivers lists the valid drivers, for validation and error messages.
var Drivers = []Driver{DriverRedfish, DriverIPMI}

// PowerState is the observed power state of a node.
type PowerState string

const (
	PowerOn      PowerState = "on"
	PowerOff     PowerState = "off"
	PowerUnknown PowerState = "unknown"
)

// PowerStates lists every observed power state.
var PowerStates = []PowerState{PowerOn, PowerOff, PowerUnknown}

// Fault is controller-set BMC trouble. The empty Fault means healthy.
type Fault string

const (
	FaultNone           Fault = ""
	FaultBMCUnreachable Fault = "bmc_unreachable"
	FaultBMCAuthFailed  Fault = "bmc_auth_failed"
	FaultBMCError       Fault = "bmc_error"
	FaultPowerMismatch  Fault = "power_mismatch"
	FaultDeployTimeout  Fault = "deploy_timeout"
	FaultCleanFailed    Fault = "clean_failed"

	// FaultBMCRefused: the BMC answers but refused a request the
	// controller needs (every form of it; last_error says which field).
	// Like power_mismatch it is about an action, so a successful power
	// read does not clear it; the action's next success does.
	FaultBMCRefused Fault = "bmc_refused"

	// FaultAgentLost: the deploy agent booted to write a node's disk
	// stopped reporting (its machine went off, hung or lost its network).
	// The work it was booted for retries with a fresh boot; the fault
	// clears when a new agent calls in, or when that work is done.
	FaultAgentLost Fault = "agent_lost"
)

// Faults lists every fault value, for filters and validation.
var Faults = []Fault{FaultBMCUnreachable, FaultBMCAuthFailed, FaultBMCError, FaultBMCRefused, FaultPowerMismatch, FaultDeployTimeout, FaultCleanFailed, FaultAgentLost}

// BMC is how the controller reaches a node's baseboard management controller.
type BMC struct {
	// Address is a URL: https://host[:port] or http://... for Redfish,
	// ipmi://host[:port] for IPMI (port 623 by default).
	Address  string `json:"address"`
	Username string `json:"username"`
	// Password is write-only: never returned by the API, never logged. The
	// store keeps it encrypted; in memory it is plaintext.
	Password string `json:"-"`
	Insecure bool   `json:"insecure"`
	// SystemID is the Redfish system path (e.g. /redfish/v1/Systems/1);
	// optional when the BMC has exactly one system.
	SystemID string `json:"system_id,omitempty"`
	// CipherSuite pins an IPMI lanplus cipher suite; 0 means automatic.
	CipherSuite int `json:"cipher_suite,omitempty"`
}

// Properties describe a node's hardware; filled from inventory where the
// operator left them empty.
type Properties struct {
	CPUs     int    `json:"cpus,omitempty"`
	MemoryMB int    `json:"memory_mb,omitempty"`
	LocalGB  int    `json:"local_gb,omitempty"`
	CPUArch  string `json:"cpu_arch,omitempty"`
}

// Node is a physical server managed through its BMC.
type Node struct {
	ID            string
	Name          string
	Driver        Driver
	BMC           BMC
	ResourceClass string
	Properties    Properties

	// Operator-only.
	Maintenance       bool
	MaintenanceReason string

	PowerState     PowerState
	ProvisionState ProvisionState

	// Controller-only.
	Fault      Fault
	LastError  string
	FaultSince *time.Time
	// BMCFailures counts consecutive failed BMC calls; reset on success.
	BMCFailures int
	// NextCheckAt is when the power sync may try a faulted node again
	// (exponential backoff); nil means at the next pass.
	NextCheckAt *time.Time
	// LastSeenAt is the last time the BMC answered.
	LastSeenAt *time.Time

	InstanceID string

	CreatedAt time.Time
	UpdatedAt time.Time
	// Version increases by one on every write; the store rejects a write
	// whose Version is not the stored one (optimistic concurrency).
	Version int64
}

// Schedulable reports whether a new instance may be placed on the node.
func (n *Node) Schedulable() bool {
	return n.ProvisionState == StateAvailable && !n.Maintenance && n.Fault == FaultNone && n.InstanceID == ""
}

// Event records one change to a node: what, old → new, why and who.
type Event struct {
	ID      int64
	NodeID  string
	Time    time.Time
	Actor   string // token id, or "controller"
	Type    string // e.g. "maintenance", "provision_state", "fault", "power_state"
	Field   string // the changed field, if one
	Old     string
	New     string
	Message string
}

// ActorController is the actor of every change the controller makes by itself.
const ActorController = "controller"
