// Package bmc is the driver interface to baseboard management controllers:
// small capability interfaces (in the manner of bmclib), typed power states
// and classified errors. Implementations live in redfish/ (gofish) and
// ipmi/ (go-ipmi); sim/ is a simulated Redfish BMC fleet for tests.
//
// Every call takes a context and must return by its deadline, whatever the
// BMC does: a hung BMC is the normal case, not the exception.
package bmc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PowerState is a typed observed power state.
type PowerState string

const (
	PowerOn      PowerState = "on"
	PowerOff     PowerState = "off"
	PowerUnknown PowerState = "unknown"
)

// PowerAction is a requested power change.
type PowerAction string

const (
	ActionOn      PowerAction = "on"
	ActionOff     PowerAction = "off"      // hard off
	ActionSoftOff PowerAction = "soft_off" // graceful shutdown
	ActionReset   PowerAction = "reset"
)

// PowerActions lists every power action.
var PowerActions = []PowerAction{ActionOn, ActionOff, ActionSoftOff, ActionReset}

// Target returns the power state an action should end in.
func (a PowerAction) Target() PowerState {
	switch a {
	case ActionOff, ActionSoftOff:
		return PowerOff
	default:
		return PowerOn
	}
}

// BootDevice is a boot override target.
type BootDevice string

const (
	BootPXE  BootDevice = "pxe"
	BootCD   BootDevice = "cd"
	BootDisk BootDevice = "disk"
	// BootNone clears the override.
	BootNone BootDevice = "none"
)

// Inventory is what a BMC reports about its system. A figure the BMC
// does not give (or gives as 0, as an OpenBMC does for a host that is
// off) is 0: unknown, never a fact.
type Inventory struct {
	// CPUs is the number of hardware threads (logical CPUs), what
	// schedulers and operators count; CPUSockets and CPUCores are the
	// populated sockets and their cores, where the BMC says.
	CPUs       int
	CPUSockets int
	CPUCores   int
	MemoryMB   int
	CPUArch    string
	// BootMode is the firmware's boot mode as the BMC reports it
	// ("uefi" or "bios"; "" unknown).
	BootMode   string
	SystemUUID string
	Serial     string
	// PowerState is the power state, where the driver read it in the
	// same request as the rest (Redfish: the system resource has both);
	// "" where it did not. The enroll verify then needs no request of its
	// own for the power.
	PowerState PowerState
}

// PowerGetter reads the power state.
type PowerGetter interface {
	PowerState(ctx context.Context) (PowerState, error)
}

// PowerSetter requests a power change. It returns once the BMC accepted
// the request; the state may change later (callers poll PowerState).
type PowerSetter interface {
	SetPower(ctx context.Context, action PowerAction) error
}

// BootDeviceSetter sets the boot override.
type BootDeviceSetter interface {
	SetBootDevice(ctx context.Context, dev BootDevice, persistent bool) error
}

// VirtualMedia inserts a virtual CD image to boot from, and ejects every
// virtual media slot (the boot CD and a config drive, if any).
type VirtualMedia interface {
	InsertMedia(ctx context.Context, imageURL string) error
	EjectMedia(ctx context.Context) error
}

// ConfigDriveMedia attaches a config drive image (an ISO labelled
// config-2, a few tens of KiB) in a virtual media slot other than the one
// holding the boot image: a USB stick or floppy slot, or a CD slot the
// boot image does not use. It fails with KindUnsupported when the BMC has
// no such slot free. Inserting the image already there sends nothing.
type ConfigDriveMedia interface {
	InsertConfigDrive(ctx context.Context, imageURL string) error
}

// InventoryGetter reads hardware inventory.
type InventoryGetter interface {
	Inventory(ctx context.Context) (Inventory, error)
}

// SystemUUIDGetter reads the system's UUID (IPMI: Get System GUID), as
// the BMC gives it: byte orders differ between BMCs (see
// baremetal.NetbootUUIDs). Drivers whose Inventory has it need not.
type SystemUUIDGetter interface {
	SystemUUID(ctx context.Context) (string, error)
}

// BootModeGetter reads the firmware's boot mode ("uefi" or "bios"; ""
// when the BMC does not say).
type BootModeGetter interface {
	BootMode(ctx context.Context) (string, error)
}

// SystemResolver is implemented by drivers whose BMCs may manage several
// systems (Redfish): it says which system an endpoint reaches, as the BMC
// names it. One machine is one node, and the controller keys a node by
// that name, so it must not depend on how the operator spelled it.
type SystemResolver interface {
	// ResolveSystem returns the endpoint's system: the @odata.id the BMC
	// serves for it (trailing slash and all), or its only system when
	// the endpoint names none. It fails with ErrSystemNotFound when the
	// BMC has no such system (the message names the URL tried and the
	// systems it lists) and ErrSystemIDRequired when it has several and
	// the endpoint names none.
	ResolveSystem(ctx context.Context) (ResolvedSystem, error)
}

// ResolvedSystem is an endpoint's system as its BMC names it.
type ResolvedSystem struct {
	// ID is the system's @odata.id as the BMC serves it; "" when that
	// does not read as a Redfish system path (api.RedfishSystemPath): the
	// node then keeps the system id it has.
	ID string
	// Members are every system the BMC lists, as it serves them: with
	// one, an endpoint without a system id reaches that one too.
	Members []string
	// RoundTrip is how long the BMC's requests took lately (a moving
	// average over the connection's; 0 when the driver does not say):
	// an enroll decides by it whether to read more of the BMC while its
	// client waits.
	RoundTrip time.Duration
}

// Errors of SystemResolver (and of any call on an endpoint whose system
// the BMC does not have), found with errors.Is: only a change of the
// node's system id fixes them, never a retry.
var (
	ErrSystemNotFound   = errors.New("system not found on the BMC")
	ErrSystemIDRequired = errors.New("the BMC manages several systems; set the node's system_id")
)

// Client is one node's BMC. Drivers implement PowerGetter, PowerSetter and
// BootDeviceSetter; the other capabilities (VirtualMedia, InventoryGetter,
// ...) are optional, reached through Capability, which names what a
// driver lacks in a KindUnsupported error. A driver that has one may still
// answer KindUnsupported where its BMC lacks it (a Redfish BMC without
// virtual media, an IPMI BMC without Get System GUID).
type Client interface {
	PowerGetter
	PowerSetter
	BootDeviceSetter
}

// Endpoint is everything a driver needs to reach one node's BMC.
type Endpoint struct {
	Driver      string // "redfish" | "ipmi"
	Address     string
	Username    string
	Password    string
	Insecure    bool
	SystemID    string
	CipherSuite int // IPMI only; 0 = automatic
}

// String never shows the password.
func (e Endpoint) String() string {
	return fmt.Sprintf("%s %s user=%s system=%s", e.Driver, e.Address, e.Username, e.SystemID)
}

// GoString keeps %#v from printing the password.
func (e Endpoint) GoString() string { return e.String() }

// Opener makes a Client for an endpoint. Implementations cache
// connections and sessions per BMC so steady-state calls cost one request.
type Opener interface {
	Open(ctx context.Context, ep Endpoint) (Client, error)
}

// Kind classifies a BMC error so callers can tell transient from permanent.
type Kind string

const (
	KindUnreachable Kind = "unreachable" // dial, timeout, TLS, reset
	KindAuth        Kind = "auth"        // 401/403, bad IPMI credentials
	KindUnsupported Kind = "unsupported" // the BMC lacks the capability
	KindBMCError    Kind = "bmc_error"   // 5xx, Redfish extended error, IPMI completion code
	// KindRefused: the BMC answered and refused the request in every form
	// the driver knows (e.g. 400 to each way of clearing a boot override):
	// retrying the same request cannot help. The BMC is reachable; the
	// message says what was sent and which field the BMC objected to.
	KindRefused Kind = "refused"
	// KindImage: the BMC answered that it cannot use the image it was
	// given (it could not fetch it, or the media is not one it takes).
	// That is the image's fault, not the BMC's.
	KindImage Kind = "image"
)

// ErrNoVirtualMedia: the BMC has no virtual media at all, or none it can
// use (an empty VirtualMedia collection, no CD slot): the node boots from
// the network or not at all. Other unsupported answers about media (one
// slot that refuses a request) are not it. Drivers wrap it in a
// KindUnsupported *Error; callers test it with errors.Is.
var ErrNoVirtualMedia = errors.New("no usable virtual media")

// Error is a classified BMC error. Its message never contains credentials.
type Error struct {
	Kind Kind
	Op   string // e.g. "power state", "reset"
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("bmc %s: %s: %v", e.Op, e.Kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns a classified error.
func Errorf(kind Kind, op, format string, args ...any) error {
	return &Error{Kind: kind, Op: op, Err: fmt.Errorf(format, args...)}
}

// Wrap classifies err; an already-classified error keeps its kind.
func Wrap(kind Kind, op string, err error) error {
	if err == nil {
		return nil
	}
	var be *Error
	if errors.As(err, &be) {
		return err
	}
	return &Error{Kind: kind, Op: op, Err: err}
}

// KindOf returns the kind of err; unclassified errors count as unreachable
// (the safe, transient assumption).
func KindOf(err error) Kind {
	var be *Error
	if errors.As(err, &be) {
		return be.Kind
	}
	return KindUnreachable
}
