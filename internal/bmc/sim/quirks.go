package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Quirks are the ways a real BMC's Redfish departs from the standard (or
// from the common reading of it) that the controller must cope with. Each
// was seen on a real BMC (see the vendor dialects below and
// /work/shared/NOTES.md); a Dialect is a named set of them, and
// Options.Tweak changes single ones on top, so a test can hold one quirk
// against the standard service.
type Quirks struct {
	// SystemID and ManagerID name the i-th system (from 0) and its
	// Manager when Options.IDs does not; nil: "1", "2", ...
	SystemID, ManagerID func(i int) string
	// TrailingSlash: every @odata.id, action target and Location ends
	// with "/" (iLO 5).
	TrailingSlash bool
	// SessionsAtRoot: the session collection is /redfish/v1/Sessions, as
	// iDRAC serves it, not /redfish/v1/SessionService/Sessions.
	SessionsAtRoot bool
	// MaxSessions: a login while this many sessions are open is refused
	// (HTTP 400 with iDRAC's RAC0218 message); 0 = no limit.
	MaxSessions int

	// ETagRequired: a PATCH of a system or a virtual media slot without
	// If-Match is answered 428, and one with an ETag that is no longer
	// current 412 (Lenovo XCC, iLO 6). ETags are always served; only
	// this makes them matter.
	ETagRequired bool
	// TaskMonitor: ComputerSystem.Reset, InsertMedia and EjectMedia (and
	// a slot's PATCH that inserts or ejects) are answered 202 with a task
	// monitor (Location) and land TaskDelay later,
	// when the task completes, as DSP0266 lets any service answer an
	// action (gofish#418 met it for InsertMedia). No vendor dialect here
	// sets it: a test turns it on.
	TaskMonitor bool
	TaskDelay   time.Duration

	// ResetTypes are the reset types the system takes (nil: the standard
	// set resetTypes).
	ResetTypes []string
	// ResetAllowable is how the allowed reset types are advertised:
	// "inline" (ResetType@Redfish.AllowableValues, the default),
	// "actioninfo" (only through @Redfish.ActionInfo: OpenBMC, AMI) or
	// "runtogether" (inline, but GracefulShutdown and GracefulRestart run
	// together into one string, as a Supermicro X12 was read to say).
	ResetAllowable string

	// BootModeReadOnly: a PATCH that carries BootSourceOverrideMode is
	// refused with 400, even of the mode the system is in (HPE iLO,
	// community.general#3509; Dell 13G, #5091).
	BootModeReadOnly bool
	// ModeResetWithoutMode: a PATCH of a boot target without a mode puts
	// the system in Legacy mode (Supermicro, DMTF Redfishtool#106).
	ModeResetWithoutMode bool
	// BootViaSettings: Boot is read-only on the system (400) and written
	// through its @Redfish.Settings object, pending until the next reset
	// or power-on (iDRAC 10, community.general#11297).
	BootViaSettings bool
	// TaskFails: with TaskMonitor, every task ends in Exception with a
	// message, and its action does not land.
	TaskFails bool

	// BootMode is the systems' BootSourceOverrideMode at start: "UEFI"
	// (the default) or "Legacy" (Gigabyte, Intel, Quanta, Lenovo captures).
	BootMode string

	// MediaOnSystem: virtual media sit under /Systems/{id}/VirtualMedia,
	// linked from the System (Supermicro X12, sushy-tools); the Manager
	// has none.
	MediaOnSystem bool
	// EmptyMediaCollection: a VirtualMedia collection is linked but has
	// no members (Supermicro X10's OEM collection, Intel).
	EmptyMediaCollection bool
	// MediaSlots, when Options.MediaSlots is empty, are the slots.
	MediaSlots []string
	// slotKinds says what the dialect's slot names that do not start
	// with a kind prefix (see parseSlots) are, by lower-case name.
	slotKinds map[string]slotKind
	// InsertIgnored: InsertMedia (or its PATCH) answers 204 and inserts
	// nothing (some iDRAC firmware, dell/terraform-provider-redfish#331).
	InsertIgnored bool
	// InsertDelay: the image shows in the slot this long after the
	// insert was answered (AMI/Gigabyte: about 3 s).
	InsertDelay time.Duration
	// InsertRejectsFlags: InsertMedia refuses Inserted and WriteProtected
	// in its body with 400 (Supermicro, community.general#6969).
	InsertRejectsFlags bool
	// KeepImageAfterEject: EjectMedia sets Inserted false but leaves Image
	// and ImageName (Supermicro).
	KeepImageAfterEject bool
	// PatchOnlyMedia: slots have no InsertMedia/EjectMedia actions; media
	// are inserted and ejected by PATCHing Image and Inserted (Lenovo XCC).
	PatchOnlyMedia bool
	// TransferParams: InsertMedia lists TransferProtocolType and
	// TransferMethod with their allowable values and refuses an insert
	// without TransferProtocolType (Cisco CIMC).
	TransferParams bool
	// OperatorMedia are slots (by id) that hold an operator's image from
	// the start (an XCC's Floppy slot with a driver disk, say).
	OperatorMedia map[string]string

	// CPU describes the processors and how ProcessorSummary reports them.
	CPU CPUShape
	// Expand is how the service takes $expand (DSP0266) on the Processors
	// collection: ExpandNone (the zero value: the root advertises no
	// ExpandQuery and a query is ignored), ExpandHonored (advertised; the
	// collection read with $expand=. or $expand=* has its members inline),
	// ExpandIgnored (advertised, the members come back as links all the
	// same) or ExpandRefused (advertised, and a read with $expand is
	// answered 400). The standard dialect honors it; the vendor dialects
	// leave it out until a capture shows what each serves (the driver
	// goes by what the root says, and checks what comes back).
	Expand ExpandSupport
	// MemoryGiB is TotalSystemMemoryGiB (0: 64).
	MemoryGiB float64
	// ZeroInventoryWhenOff: ProcessorSummary.Count and memory read 0
	// while the system is off, and the Processors collection is empty
	// (OpenBMC: the host's inventory comes from the host).
	ZeroInventoryWhenOff bool

	// BIOS and Secure Boot (bios.go). Every system has a Bios resource
	// whose settings object takes pending attributes, applied at the next
	// reset, and a SecureBoot resource, unless these say otherwise.
	BIOS BIOSQuirks
	// Update: the UpdateService (update.go).
	Update UpdateQuirks
	// Storage: RAID controller, drives and volumes (storage.go).
	Storage StorageQuirks
	// Health: chassis, sensors and the event log (health.go).
	Health HealthQuirks
}

// BIOSQuirks are the ways BMCs differ in their Bios, attribute registry
// and SecureBoot resources. The zero value is the DMTF's reading: Bios
// at <system>/Bios, its @Redfish.Settings object at <bios>/Settings
// showing only the pending attributes (ApplyTime OnReset), a registry
// under /redfish/v1/Registries, PATCH validated against it.
type BIOSQuirks struct {
	// None: the system has no Bios resource (and no Bios link).
	None bool
	// Path is the Bios resource's segment under the system ("" Bios;
	// sushy-tools serves BIOS).
	Path string
	// SettingsPath is the settings object's segment under the Bios (""
	// Settings): iLO settings (lower case), Supermicro and AMI SD,
	// Lenovo XCC Pending.
	SettingsPath string
	// NoSettingsLink: the Bios has no @Redfish.Settings; its settings
	// object is there all the same (Gigabyte, community.general#6433).
	NoSettingsLink bool
	// SettingsFull: the settings object shows every attribute, pending
	// ones with their pending values (iLO, Lenovo XCC), not only the
	// pending ones.
	SettingsFull bool
	// SettingsOmitEmpty: with nothing pending the settings object has no
	// Attributes at all (Supermicro, seen by NVIDIA's libredfish).
	SettingsOmitEmpty bool
	// SettingsMissingWhenEmpty: with nothing pending, GET of the settings
	// object answers 404 (AMI MegaRAC's SD, DMTF Redfish-Tacklebox#55).
	SettingsMissingWhenEmpty bool
	// ETagRequired: a PATCH of the settings object without If-Match is
	// answered 428 ("*" matches), as an AMI MegaRAC was captured doing.
	// Quirks.ETagRequired implies it.
	ETagRequired bool
	// ApplyTimeRequired: pending attributes apply at a reset only when
	// written with @Redfish.SettingsApplyTime (which schedules iDRAC's
	// BIOS configuration job); without it they stay pending across every
	// reset (dell/iDRAC-Redfish-Scripting#84, dell/terraform-provider-
	// redfish#231). While such a job is scheduled, another PATCH is
	// refused with 400 (iDRAC-Redfish-Scripting#249, quads#726).
	ApplyTimeRequired bool
	// Immediate: a PATCH of the settings object changes the attributes in
	// effect at once and nothing is ever pending; no attribute is
	// checked against the registry (sushy-tools stores what it is sent).
	Immediate bool
	// RegistryName is the Bios's AttributeRegistry ("" the sim's own).
	RegistryName string
	// NoRegistry: the Bios names a registry the service does not serve.
	NoRegistry bool
	// RegistryElsewhere: the registry file's Id is not the name the Bios
	// gives and its Location is /redfish/v1/Systems/Bios/BiosRegistry,
	// whose document has the Bios's name as its Id (sushy-tools).
	RegistryElsewhere bool
	// Drops are attributes a PATCH of the settings object accepts (2xx)
	// and silently leaves out of the pending settings: a fault for tests
	// of the driver's read-back (real BMCs were seen to drop values they
	// do not like, e.g. an iDRAC without its job, python-ilorest#105).
	Drops []string
	// NoSecureBoot: the system has no SecureBoot resource.
	NoSecureBoot bool
}

// ExpandSupport is how a service takes $expand (Quirks.Expand).
type ExpandSupport int

// The ways of Quirks.Expand.
const (
	ExpandNone ExpandSupport = iota
	ExpandHonored
	ExpandIgnored
	ExpandRefused
)

// CPUShape is a system's processors and the way its BMC summarizes them.
type CPUShape struct {
	Sockets, CoresPerSocket, ThreadsPerCore int
	// Summary is what ProcessorSummary says: "full" (Count = sockets,
	// CoreCount, LogicalProcessorCount; iDRAC), "sockets" (Count only:
	// iLO 5, AMI, Intel), "cores" (Count = cores, no thread count: Cisco),
	// "x10" (Count = cores, Supermicro X10).
	Summary string
	// AbsentSocket lists one more Processor, an empty socket with no
	// fields but its Id and Status.State Absent (Cisco).
	AbsentSocket bool
}

func (c CPUShape) withDefaults() CPUShape {
	if c.Sockets <= 0 {
		c.Sockets = 2
	}
	if c.CoresPerSocket <= 0 {
		c.CoresPerSocket = 8
	}
	if c.ThreadsPerCore <= 0 {
		c.ThreadsPerCore = 2
	}
	if c.Summary == "" {
		c.Summary = "full"
	}
	return c
}

// Threads is the number of hardware threads, what the controller should
// report as the node's cpus.
func (c CPUShape) Threads() int {
	c = c.withDefaults()
	return c.Sockets * c.CoresPerSocket * c.ThreadsPerCore
}

// The vendor dialects: each a fixture written from the vendor's public
// documentation and from captures of real BMCs' Redfish trees (NOTES.md,
// "Real BMC dialects"). They imitate what matters to the controller, not
// every resource a vendor serves.
const (
	// DialectIDRAC9 is Dell iDRAC 9: ids System.Embedded.1 and
	// iDRAC.Embedded.1, sessions at /redfish/v1/Sessions with few slots,
	// slots CD and RemovableDisk under the Manager, a full
	// ProcessorSummary (an R650: 2 sockets, 28 cores each, 112 threads).
	DialectIDRAC9 Dialect = "idrac9"
	// DialectILO5 is HPE iLO 5: every id with a trailing slash, a boot mode
	// that a PATCH may not name, slots 1
	// (Floppy, USBStick) and 2 (CD, DVD) under the Manager, a
	// ProcessorSummary that counts sockets (a DL325: 1 socket, 32 threads).
	DialectILO5 Dialect = "ilo5"
	// DialectXCC is Lenovo XCC: PATCH needs If-Match (428 without, 412
	// when stale), slots without InsertMedia/EjectMedia actions (PATCH
	// only), an operator's image in the Floppy slot, Legacy boot mode.
	DialectXCC Dialect = "xcc"
	// DialectX10 is Supermicro X10: an empty virtual media collection (no
	// usable virtual media) and a ProcessorSummary.Count of cores
	// (20 for 2 sockets, 40 threads), Legacy boot mode.
	DialectX10 Dialect = "x10"
	// DialectX12 is Supermicro X12: virtual media linked from the System,
	// InsertMedia refusing Inserted/WriteProtected, Image kept after
	// eject, a boot target without a mode switching to Legacy, reset types
	// with GracefulShutdown and GracefulRestart run together into one
	// string.
	DialectX12 Dialect = "x12"
	// DialectCIMC is Cisco CIMC: InsertMedia with TransferProtocolType and
	// TransferMethod, an absent socket listed as a Processor, a
	// ProcessorSummary counting cores (64 of 128 threads).
	DialectCIMC Dialect = "cimc"
	// DialectAMI is AMI MegaRAC (Gigabyte): ids Self, one CD slot, media
	// that show ~3 s after the insert was answered, reset types only
	// through ActionInfo and without ForceOn and PushPowerButton, Legacy
	// boot mode, a ProcessorSummary of sockets (2 sockets, 256 threads).
	DialectAMI Dialect = "ami"
	// DialectOpenBMC is OpenBMC (bmcweb): ids system and bmc, reset types
	// only through ActionInfo, an inventory that reads 0 CPUs and 0 GiB
	// while the host is off.
	DialectOpenBMC Dialect = "openbmc"
	// DialectIntel is an Intel server board's BMC: an empty virtual media
	// collection, Legacy boot mode, a ProcessorSummary of sockets.
	DialectIntel Dialect = "intel"
)

// VendorDialects lists the vendor dialects, in the README's order.
var VendorDialects = []Dialect{DialectIDRAC9, DialectILO5, DialectXCC, DialectX10, DialectX12, DialectCIMC, DialectAMI, DialectOpenBMC, DialectIntel}

func numbered(prefix string) func(int) string {
	return func(i int) string { return fmt.Sprintf("%s%d", prefix, i+1) }
}

// selfIDs names the first system "Self", as AMI does, and the others
// Self2, Self3, ... (a fleet needs unique ids).
func selfIDs(i int) string {
	if i == 0 {
		return "Self"
	}
	return fmt.Sprintf("Self%d", i+1)
}

func singleThenNumbered(first, prefix string) func(int) string {
	return func(i int) string {
		if i == 0 {
			return first
		}
		return fmt.Sprintf("%s%d", prefix, i+1)
	}
}

// DialectQuirks returns the quirks of a dialect (the standard has none;
// sushy's are coded in sushy.go, but for its Bios and UpdateService). Tests read
// it for what a dialect's systems report (CPU shape, boot mode, slots).
func DialectQuirks(d Dialect) Quirks {
	switch d {
	case DialectIDRAC9:
		return Quirks{
			SystemID: numbered("System.Embedded."), ManagerID: numbered("iDRAC.Embedded."),
			SessionsAtRoot: true, MaxSessions: 8,
			MediaSlots: []string{"CD", "RemovableDisk"},
			slotKinds:  map[string]slotKind{"removabledisk": kindUSB},
			ResetTypes: []string{"On", "ForceOff", "ForceRestart", "GracefulRestart", "GracefulShutdown", "PushPowerButton", "Nmi", "PowerCycle"},
			CPU:        CPUShape{Sockets: 2, CoresPerSocket: 28, ThreadsPerCore: 2, Summary: "full"},
			MemoryGiB:  256,
			BIOS:       BIOSQuirks{ApplyTimeRequired: true, RegistryName: "BiosAttributeRegistry.v1_0_0"},
			Update:     UpdateQuirks{TargetsIgnored: true, ScheduledUntilReset: true, Naming: "idrac"},
		}
	case DialectILO5:
		return Quirks{
			TrailingSlash: true, BootModeReadOnly: true,
			MediaSlots: []string{"1", "2"},
			slotKinds:  map[string]slotKind{"1": kindUSB, "2": kindCD},
			ResetTypes: []string{"On", "ForceOff", "GracefulShutdown", "ForceRestart", "Nmi", "PushPowerButton", "GracefulRestart"},
			CPU:        CPUShape{Sockets: 1, CoresPerSocket: 16, ThreadsPerCore: 2, Summary: "sockets"},
			MemoryGiB:  128,
			BIOS:       BIOSQuirks{SettingsPath: "settings", SettingsFull: true, RegistryName: "BiosAttributeRegistryU32.v1_2_68"},
			Update:     UpdateQuirks{TargetsIgnored: true, UnknownImageAccepted: true, Naming: "ilo"},
		}
	case DialectXCC:
		return Quirks{
			ETagRequired: true, PatchOnlyMedia: true, BootMode: "Legacy",
			MediaSlots:    []string{"CD1", "Floppy1", "USB1"},
			OperatorMedia: map[string]string{"Floppy1": "http://fileserver.example/drivers/raid-driver.img"},
			ResetTypes:    []string{"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "Nmi", "ForceOn", "PushPowerButton"},
			CPU:           CPUShape{Sockets: 2, CoresPerSocket: 20, ThreadsPerCore: 2, Summary: "full"},
			BIOS:          BIOSQuirks{SettingsPath: "Pending", SettingsFull: true, RegistryName: "BiosAttributeRegistry.1.0.0"},
		}
	case DialectX10:
		return Quirks{
			EmptyMediaCollection: true, BootMode: "Legacy",
			ResetTypes: []string{"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "Nmi", "ForceOn"},
			CPU:        CPUShape{Sockets: 2, CoresPerSocket: 10, ThreadsPerCore: 2, Summary: "x10"},
		}
	case DialectX12:
		return Quirks{
			MediaOnSystem: true, InsertRejectsFlags: true, KeepImageAfterEject: true, ModeResetWithoutMode: true,
			ResetAllowable: "runtogether",
			MediaSlots:     []string{"CD1", "USB1"},
			ResetTypes:     []string{"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "Nmi", "ForceOn"},
			CPU:            CPUShape{Sockets: 2, CoresPerSocket: 16, ThreadsPerCore: 2, Summary: "full"},
			BIOS:           BIOSQuirks{SettingsPath: "SD", SettingsOmitEmpty: true},
		}
	case DialectCIMC:
		return Quirks{
			SystemID: singleThenNumbered("WZP23110ABC", "WZP23110AB"), ManagerID: singleThenNumbered("CIMC", "CIMC"),
			TransferParams: true,
			MediaSlots:     []string{"CD0", "USB0"},
			CPU:            CPUShape{Sockets: 2, CoresPerSocket: 32, ThreadsPerCore: 2, Summary: "cores", AbsentSocket: true},
			MemoryGiB:      512,
		}
	case DialectAMI:
		return Quirks{
			SystemID: selfIDs, ManagerID: selfIDs,
			InsertDelay: 3 * time.Second, BootMode: "Legacy",
			ResetAllowable: "actioninfo",
			MediaSlots:     []string{"CD1"},
			ResetTypes:     []string{"On", "ForceOff", "GracefulShutdown", "ForceRestart", "GracefulRestart", "PowerCycle"},
			CPU:            CPUShape{Sockets: 2, CoresPerSocket: 64, ThreadsPerCore: 2, Summary: "sockets"},
			MemoryGiB:      512,
			BIOS:           BIOSQuirks{SettingsPath: "SD", NoSettingsLink: true, SettingsMissingWhenEmpty: true, ETagRequired: true},
		}
	case DialectOpenBMC:
		return Quirks{
			SystemID: singleThenNumbered("system", "system"), ManagerID: singleThenNumbered("bmc", "bmc"),
			ResetAllowable:       "actioninfo",
			ZeroInventoryWhenOff: true,
			MediaSlots:           []string{"Slot_0", "Slot_1"},
			slotKinds:            map[string]slotKind{"slot_0": kindCD, "slot_1": kindUSB},
			ResetTypes:           []string{"On", "ForceOff", "ForceOn", "ForceRestart", "GracefulRestart", "GracefulShutdown", "PowerCycle", "Nmi"},
		}
	case DialectIntel:
		return Quirks{
			EmptyMediaCollection: true, BootMode: "Legacy",
			CPU: CPUShape{Sockets: 2, CoresPerSocket: 24, ThreadsPerCore: 2, Summary: "sockets"},
		}
	case DialectSushy:
		// sushy-tools' Bios (templates/bios.json, main.py): at BIOS, a
		// PATCH of BIOS/Settings stored at once, a registry whose file
		// names another registry than the Bios does.
		return Quirks{BIOS: BIOSQuirks{Path: "BIOS", Immediate: true, RegistryName: "BiosAttributeRegistryP89.v1_0_0", RegistryElsewhere: true},
			Update: UpdateQuirks{Sushy: true}}
	}
	return Quirks{Expand: ExpandHonored}
}

// withSlash adds the trailing slash of TrailingSlash to a path.
func (q *Quirks) withSlash(p string) string {
	if q == nil || !q.TrailingSlash || strings.HasSuffix(p, "/") {
		return p
	}
	return p + "/"
}

// fixIDs rewrites a document's links for TrailingSlash, in place.
func (q *Quirks) fixIDs(v any) {
	if q == nil || !q.TrailingSlash {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "@odata.id" || k == "target" || k == "@Redfish.ActionInfo") && strings.HasPrefix(s, "/") {
				v[k] = q.withSlash(s)
				continue
			}
			q.fixIDs(x)
		}
	case []any:
		for _, x := range v {
			q.fixIDs(x)
		}
	}
}

// resetAllowable returns the ResetType allowable values as the dialect
// writes them inline (nil: not inline).
func (q *Quirks) resetAllowable(types []string) any {
	switch q.ResetAllowable {
	case "actioninfo":
		return nil
	case "runtogether":
		out := make([]string, 0, len(types))
		for i := 0; i < len(types); i++ {
			if types[i] == "GracefulShutdown" && slices.Contains(types, "GracefulRestart") {
				out = append(out, "GracefulShutdownGracefulRestart")
				continue
			}
			if types[i] == "GracefulRestart" && slices.Contains(types, "GracefulShutdown") {
				continue
			}
			out = append(out, types[i])
		}
		return out
	}
	return types
}
