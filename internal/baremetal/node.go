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

	// FaultDuplicate: the machine the node's BMC settings reach is
	// another node's (last_error names it), which only the BMC could
	// tell (one of the two has no system_id, or the BMC serves one
	// system under two names). The node stays in enroll and acts on
	// nothing, and deleting it leaves the machine alone. It is no BMC
	// trouble: the BMC answered. The verify runs again when the other
	// node goes or moves (its retire, a forced delete, a change of its
	// bmc settings), or when this one's settings change: the fault clears
	// once this node is the machine's node or reaches another machine.
	FaultDuplicate Fault = "duplicate"
)

// Faults lists every fault value, for filters and validation.
var Faults = []Fault{FaultBMCUnreachable, FaultBMCAuthFailed, FaultBMCError, FaultBMCRefused, FaultPowerMismatch, FaultDeployTimeout, FaultCleanFailed, FaultAgentLost, FaultDuplicate, FaultHardwareCritical}

// CleanErase is a node's own choice of how cleaning erases its disks
// with the deploy agent; CleanEraseDefault leaves it to the node's
// resource class (--clean-erase-class) and the controller
// (--clean-erase).
type CleanErase string

const (
	CleanEraseDefault CleanErase = ""
	// CleanEraseMetadata wipes partition tables and filesystem
	// signatures at both ends of every disk.
	CleanEraseMetadata CleanErase = "metadata"
	// CleanEraseFull erases every byte (NVMe format, blkdiscard, else
	// overwrite).
	CleanEraseFull CleanErase = "full"
	// CleanEraseOff skips the erase (and the agent boot) altogether.
	CleanEraseOff CleanErase = "off"
)

// CleanErases lists the values a node may set (CleanEraseDefault aside).
var CleanErases = []CleanErase{CleanEraseMetadata, CleanEraseFull, CleanEraseOff}

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

// Properties describe a node's hardware; 0 and "" mean unknown.
type Properties struct {
	CPUs     int    `json:"cpus,omitempty"`
	MemoryMB int    `json:"memory_mb,omitempty"`
	LocalGB  int    `json:"local_gb,omitempty"`
	CPUArch  string `json:"cpu_arch,omitempty"`
}

// PropertyName names one of a node's properties (its API and Terraform
// name).
type PropertyName string

const (
	PropertyCPUs     PropertyName = "cpus"
	PropertyMemoryMB PropertyName = "memory_mb"
	PropertyLocalGB  PropertyName = "local_gb"
	PropertyCPUArch  PropertyName = "cpu_arch"
)

// PropertyNames lists every property, in the order they are shown.
var PropertyNames = []PropertyName{PropertyCPUs, PropertyMemoryMB, PropertyLocalGB, PropertyCPUArch}

// Known reports which properties p holds a value for (not 0 or "").
func (p Properties) Known() PropertyOverrides {
	return PropertyOverrides{CPUs: p.CPUs != 0, MemoryMB: p.MemoryMB != 0, LocalGB: p.LocalGB != 0, CPUArch: p.CPUArch != ""}
}

// Only returns p with the properties outside set cleared.
func (p Properties) Only(set PropertyOverrides) Properties {
	var out Properties
	if set.CPUs {
		out.CPUs = p.CPUs
	}
	if set.MemoryMB {
		out.MemoryMB = p.MemoryMB
	}
	if set.LocalGB {
		out.LocalGB = p.LocalGB
	}
	if set.CPUArch {
		out.CPUArch = p.CPUArch
	}
	return out
}

// merge returns p with each property in set taken from q.
func (p Properties) merge(q Properties, set PropertyOverrides) Properties {
	if set.CPUs {
		p.CPUs = q.CPUs
	}
	if set.MemoryMB {
		p.MemoryMB = q.MemoryMB
	}
	if set.LocalGB {
		p.LocalGB = q.LocalGB
	}
	if set.CPUArch {
		p.CPUArch = q.CPUArch
	}
	return p
}

// PropertyOverrides says, per property, whether the operator set it
// explicitly (an override) rather than leaving it to inspection.
type PropertyOverrides struct {
	CPUs, MemoryMB, LocalGB, CPUArch bool
}

// Names lists the overridden properties, in PropertyNames order.
func (o PropertyOverrides) Names() []PropertyName {
	names := []PropertyName{}
	for _, f := range []struct {
		on   bool
		name PropertyName
	}{{o.CPUs, PropertyCPUs}, {o.MemoryMB, PropertyMemoryMB}, {o.LocalGB, PropertyLocalGB}, {o.CPUArch, PropertyCPUArch}} {
		if f.on {
			names = append(names, f.name)
		}
	}
	return names
}

// not is the complement of o: the properties inspection fills.
func (o PropertyOverrides) not() PropertyOverrides {
	return PropertyOverrides{CPUs: !o.CPUs, MemoryMB: !o.MemoryMB, LocalGB: !o.LocalGB, CPUArch: !o.CPUArch}
}

// SetOverrides makes the known members of p (not 0 or "") the
// operator's overrides and drops every other override: a property the
// operator no longer sets shows what inspection found at once (unknown if
// the node was never inspected).
func (n *Node) SetOverrides(p Properties) {
	n.Overrides = p.Known()
	n.Properties = n.Inspected.merge(p, n.Overrides)
	n.deriveArch()
}

// deriveArch derives the architecture trait (HW_ARCH_X86_64, ...) from
// the cpu_arch the node shows (the operator's where set), dropping it
// when that is unknown.
func (n *Node) deriveArch() {
	var t []string
	if a := ArchTrait(n.Properties.CPUArch); a != "" {
		t = []string{a}
	}
	n.ReplaceDerivedTraits([]string{TraitArchPrefix}, t)
}

// OperatorProperties returns the operator's overrides (the other
// properties empty): what the operator set, as opposed to what the
// node's properties show.
func (n *Node) OperatorProperties() Properties {
	return n.Properties.Only(n.Overrides)
}

// RecordInspection remembers the properties an inspection found (the
// known members of found) and shows them where the operator set no
// override: an operator's value always wins and is never overwritten.
// With onlyUnknown, found fills only properties no earlier inspection
// found (a BMC's summary at enroll must not replace what the deploy
// agent measured on the machine itself).
func (n *Node) RecordInspection(found Properties, onlyUnknown bool) {
	take := found.Known()
	if onlyUnknown {
		had := n.Inspected.Known()
		take = PropertyOverrides{CPUs: take.CPUs && !had.CPUs, MemoryMB: take.MemoryMB && !had.MemoryMB,
			LocalGB: take.LocalGB && !had.LocalGB, CPUArch: take.CPUArch && !had.CPUArch}
	}
	n.Inspected = n.Inspected.merge(found, take)
	n.Properties = n.Properties.merge(n.Inspected, n.Overrides.not())
	n.deriveArch()
}

// Node is a physical server managed through its BMC.
type Node struct {
	ID            string
	Name          string
	Driver        Driver
	BMC           BMC
	ResourceClass string
	// Properties are the node's hardware as scheduling and the API see
	// it: per property the operator's override where Overrides says so,
	// else what inspection found (Inspected).
	Properties Properties
	// Overrides says which Properties the operator set; inspection never
	// changes those.
	Overrides PropertyOverrides
	// Inspected is what inspection (the deploy agent, or the BMC's
	// inventory when it is verified) last found, kept under an override
	// so that clearing the override brings it back.
	Inspected Properties

	// Traits are the operator's (sorted, no duplicates); DerivedTraits
	// those the controller derives from inspection and the BMC (see
	// DeriveTraits), replaced by each new inspection or verify. Placement
	// matches an instance's required and forbidden traits against both.
	Traits        []string
	DerivedTraits []string
	// Owner, when set, is the project whose instances alone are placed on
	// the node (an admin may still pin another's), and the only project
	// whose members see it.
	Owner string

	// Settings are the hardware settings the operator declares; Observed
	// what the controller last read of them from the BMC.
	Settings HardwareSettings
	Observed HardwareObserved
	// Health is what the controller last read of the node's hardware
	// health (a FaultHardwareCritical when critical).
	Health Health

	// CleanErase, when set, wins over the resource class's and the
	// controller's erase mode for this node's cleanings.
	CleanErase CleanErase
	// InspectOnEnroll, when set, wins over the controller's
	// --inspect-on-enroll for this node: nil follows the controller.
	InspectOnEnroll *bool

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

	// Flow is the controller's work in progress on the node, nil when
	// none: a flow runs in one provision state, and Transition ends it.
	Flow *Flow

	// InspectedAt is when the deploy agent's inventory (Inventory) was
	// stored, nil if never: read with the node, so clients learn whether
	// the inventory changed without asking for it. Read-only: writes of
	// the node ignore it; SetInventory sets it.
	InspectedAt *time.Time

	CreatedAt time.Time
	UpdatedAt time.Time
	// Version increases by one on every write; the store rejects a write
	// whose Version is not the stored one (optimistic concurrency).
	Version int64
}

// Flow is a flow the controller runs on a node (deploy, cleanup,
// inspect, retire): a declared list of steps, each small and idempotent,
// and where it stands. It is written when a step starts, so a flow picks
// up at its step after a crash, a replica's loss or a wait.
type Flow struct {
	// Name is the flow's, as the job that runs it is named.
	Name string `json:"name"`
	// Steps are the flow's steps, in order, as this run of it declared
	// them (a cleanup erases or not, a deploy writes its image or boots it).
	Steps []string `json:"steps"`
	// Step is the current step, one of Steps, and StepStartedAt when it
	// started.
	Step          string    `json:"step"`
	StepStartedAt time.Time `json:"step_started_at"`
	// Notes are what earlier steps found that later ones say or act on
	// (what the erase did, how the image boots), free of secrets; kept
	// when the flow moves to its next step, never shown by the API.
	Notes map[string]string `json:"notes,omitempty"`
}

// StepIndex is the position of the current step in Steps (0 first), -1
// when it is not one of them.
func (f *Flow) StepIndex() int {
	for i, s := range f.Steps {
		if s == f.Step {
			return i
		}
	}
	return -1
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
