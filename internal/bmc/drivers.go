package bmc

import (
	"context"
	"fmt"
	"io"
	"reflect"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// Drivers dispatches Open to the Opener registered for an endpoint's
// driver name ("redfish", "ipmi"). It is the controller's one boundary
// with its drivers: the clients it opens answer every call, of every
// capability, with an error that is classified, redacted (Redact: the
// endpoint's credentials in every form, and the redact rules) and
// capped, so no caller redacts a BMC error again. Drivers hide, before,
// what only they know (a Redfish session token).
type Drivers map[string]Opener

// Open implements Opener.
func (d Drivers) Open(ctx context.Context, ep Endpoint) (Client, error) {
	o, ok := d[ep.Driver]
	if !ok {
		return nil, Errorf(KindUnsupported, "open", "no driver %q in this controller", ep.Driver)
	}
	secrets := redact.New(ep.Password, redact.Basic(ep.Username, ep.Password))
	c, err := o.Open(ctx, ep)
	if err != nil {
		// The address is left out: the driver's error already says what
		// failed, and an address is operator input that could hold secrets.
		return nil, Redact(Wrap(KindUnreachable, "open", fmt.Errorf("open %s BMC: %w", ep.Driver, err)), secrets)
	}
	return &guarded{c: c, driver: ep.Driver, secrets: secrets}, nil
}

// Capability returns c's optional capability T (VirtualMedia,
// ConfigDriveMedia, InventoryGetter, SystemUUIDGetter, BootModeGetter,
// SystemResolver), or a KindUnsupported error naming what c's driver
// lacks. It is the one way to reach a capability: a client from Drivers
// has the methods of every capability (answering KindUnsupported where
// its driver lacks one), so a type assertion on it tells nothing.
func Capability[T any](c Client) (T, error) {
	driver := "BMC"
	if g, ok := c.(*guarded); ok {
		if _, err := capable[T](g); err != nil {
			var zero T
			return zero, err
		}
		driver = g.driver
	}
	t, ok := c.(T)
	if !ok {
		return t, unsupported(&t, driver)
	}
	return t, nil
}

// unsupported is the error of a driver without the capability v points to.
func unsupported(v any, driver string) error {
	name := capabilityName(v)
	return Errorf(KindUnsupported, name, "the %s driver has no %s", driver, name)
}

// capabilityName says what a capability is, for errors.
func capabilityName(v any) string {
	switch v.(type) {
	case *VirtualMedia:
		return "virtual media"
	case *ConfigDriveMedia:
		return "second virtual media slot (config drive)"
	case *InventoryGetter:
		return "inventory"
	case *SystemUUIDGetter:
		return "system UUID"
	case *BootModeGetter:
		return "boot mode"
	case *SystemResolver:
		return "system resolution"
	case *BIOSSettings:
		return "BIOS settings"
	case *SecureBootSetter:
		return "Secure Boot"
	case *RAIDController:
		return "RAID (Storage volumes)"
	case *FirmwareUpdater:
		return "firmware updates (UpdateService)"
	case *TaskMonitor:
		return "task monitors"
	case *HealthGetter:
		return "hardware health"
	case *EventLogReader:
		return "event log"
	case *ConsoleOpener:
		return "serial console (IPMI Serial-over-LAN)"
	}
	return reflect.TypeOf(v).Elem().String()
}

// guarded is a client as Drivers hands it out (see Drivers).
type guarded struct {
	c       Client
	driver  string
	secrets *redact.Secrets
}

var (
	_ Client           = (*guarded)(nil)
	_ VirtualMedia     = (*guarded)(nil)
	_ ConfigDriveMedia = (*guarded)(nil)
	_ InventoryGetter  = (*guarded)(nil)
	_ SystemUUIDGetter = (*guarded)(nil)
	_ BootModeGetter   = (*guarded)(nil)
	_ SystemResolver   = (*guarded)(nil)
	_ BIOSSettings     = (*guarded)(nil)
	_ SecureBootSetter = (*guarded)(nil)
	_ RAIDController   = (*guarded)(nil)
	_ FirmwareUpdater  = (*guarded)(nil)
	_ HealthGetter     = (*guarded)(nil)
	_ EventLogReader   = (*guarded)(nil)
	_ ConsoleOpener    = (*guarded)(nil)
)

func (g *guarded) OpenConsole(ctx context.Context) (Console, error) {
	o, err := capable[ConsoleOpener](g)
	var c Console
	if err == nil {
		c, err = o.OpenConsole(ctx)
	}
	if err != nil {
		return nil, g.check("open console", err)
	}
	return &guardedConsole{Console: c, g: g}, nil
}

// guardedConsole redacts the errors of an open console, as guarded does
// for calls.
type guardedConsole struct {
	Console
	g *guarded
}

func (c *guardedConsole) Read(p []byte) (int, error) {
	n, err := c.Console.Read(p)
	if err != nil && err != io.EOF {
		err = c.g.check("read console", err)
	}
	return n, err
}

func (c *guardedConsole) Write(p []byte) (int, error) {
	n, err := c.Console.Write(p)
	return n, c.g.check("write console", err)
}

func (g *guarded) Health(ctx context.Context) (Health, error) {
	h, err := capable[HealthGetter](g)
	var out Health
	if err == nil {
		out, err = h.Health(ctx)
	}
	return out, g.check("read health", err)
}

func (g *guarded) EventLog(ctx context.Context, after string, max int) ([]LogEntry, error) {
	l, err := capable[EventLogReader](g)
	var out []LogEntry
	if err == nil {
		out, err = l.EventLog(ctx, after, max)
	}
	return out, g.check("read event log", err)
}

func (g *guarded) TaskStatus(ctx context.Context, t Task) (TaskStatus, error) {
	m, err := capable[TaskMonitor](g)
	var st TaskStatus
	if err == nil {
		st, err = m.TaskStatus(ctx, t)
	}
	return st, g.check("read task", err)
}

func (g *guarded) Storage(ctx context.Context) ([]StorageController, error) {
	r, err := capable[RAIDController](g)
	var out []StorageController
	if err == nil {
		out, err = r.Storage(ctx)
	}
	return out, g.check("read storage", err)
}

func (g *guarded) CreateVolume(ctx context.Context, storageID string, spec VolumeSpec) (Task, error) {
	r, err := capable[RAIDController](g)
	var t Task
	if err == nil {
		t, err = r.CreateVolume(ctx, storageID, spec)
	}
	return t, g.check("create volume", err)
}

func (g *guarded) DeleteVolume(ctx context.Context, volumeID string) (Task, error) {
	r, err := capable[RAIDController](g)
	var t Task
	if err == nil {
		t, err = r.DeleteVolume(ctx, volumeID)
	}
	return t, g.check("delete volume", err)
}

func (g *guarded) Firmware(ctx context.Context) ([]FirmwareComponent, error) {
	f, err := capable[FirmwareUpdater](g)
	var out []FirmwareComponent
	if err == nil {
		out, err = f.Firmware(ctx)
	}
	return out, g.check("read firmware inventory", err)
}

func (g *guarded) SimpleUpdate(ctx context.Context, imageURI string, targets []string) (Task, error) {
	f, err := capable[FirmwareUpdater](g)
	var t Task
	if err == nil {
		t, err = f.SimpleUpdate(ctx, imageURI, targets)
	}
	return t, g.check("firmware update", err)
}

func (g *guarded) BIOSAttributes(ctx context.Context) (BIOSValues, error) {
	b, err := capable[BIOSSettings](g)
	var v BIOSValues
	if err == nil {
		v, err = b.BIOSAttributes(ctx)
	}
	return v, g.check("read BIOS attributes", err)
}

func (g *guarded) BIOSRegistry(ctx context.Context) (BIOSRegistry, error) {
	b, err := capable[BIOSSettings](g)
	var r BIOSRegistry
	if err == nil {
		r, err = b.BIOSRegistry(ctx)
	}
	return r, g.check("read BIOS attribute registry", err)
}

func (g *guarded) PendingBIOS(ctx context.Context) (BIOSValues, error) {
	b, err := capable[BIOSSettings](g)
	var v BIOSValues
	if err == nil {
		v, err = b.PendingBIOS(ctx)
	}
	return v, g.check("read pending BIOS settings", err)
}

func (g *guarded) SetBIOS(ctx context.Context, values BIOSValues) (bool, error) {
	b, err := capable[BIOSSettings](g)
	reset := false
	if err == nil {
		reset, err = b.SetBIOS(ctx, values)
	}
	return reset, g.check("write BIOS settings", err)
}

func (g *guarded) SecureBoot(ctx context.Context) (SecureBootState, error) {
	s, err := capable[SecureBootSetter](g)
	var st SecureBootState
	if err == nil {
		st, err = s.SecureBoot(ctx)
	}
	return st, g.check("read Secure Boot", err)
}

func (g *guarded) SetSecureBoot(ctx context.Context, enable bool) (bool, error) {
	s, err := capable[SecureBootSetter](g)
	reset := false
	if err == nil {
		reset, err = s.SetSecureBoot(ctx, enable)
	}
	return reset, g.check("set Secure Boot", err)
}

// check is the end of every call: a driver's unclassified error counts
// as an unreachable BMC (KindOf), and every error leaves redacted.
func (g *guarded) check(op string, err error) error {
	if err == nil {
		return nil
	}
	return Redact(Wrap(KindUnreachable, op, err), g.secrets)
}

// capable returns the driver's capability T, or Capability's error.
func capable[T any](g *guarded) (T, error) {
	t, ok := g.c.(T)
	if !ok {
		return t, unsupported(&t, g.driver)
	}
	return t, nil
}

func (g *guarded) PowerState(ctx context.Context) (PowerState, error) {
	ps, err := g.c.PowerState(ctx)
	return ps, g.check("power state", err)
}

func (g *guarded) SetPower(ctx context.Context, a PowerAction) error {
	return g.check("set power "+string(a), g.c.SetPower(ctx, a))
}

func (g *guarded) SetBootDevice(ctx context.Context, dev BootDevice, persistent bool) error {
	op := "set boot device"
	if dev == BootNone {
		op = "clear boot device"
	}
	return g.check(op, g.c.SetBootDevice(ctx, dev, persistent))
}

func (g *guarded) InsertMedia(ctx context.Context, imageURL string) error {
	vm, err := capable[VirtualMedia](g)
	if err == nil {
		err = vm.InsertMedia(ctx, imageURL)
	}
	return g.check("insert media", err)
}

func (g *guarded) EjectMedia(ctx context.Context) error {
	vm, err := capable[VirtualMedia](g)
	if err == nil {
		err = vm.EjectMedia(ctx)
	}
	return g.check("eject media", err)
}

func (g *guarded) InsertConfigDrive(ctx context.Context, imageURL string) error {
	cd, err := capable[ConfigDriveMedia](g)
	if err == nil {
		err = cd.InsertConfigDrive(ctx, imageURL)
	}
	return g.check("insert config drive", err)
}

func (g *guarded) Inventory(ctx context.Context) (Inventory, error) {
	ig, err := capable[InventoryGetter](g)
	if err != nil {
		return Inventory{}, g.check("inventory", err)
	}
	inv, err := ig.Inventory(ctx)
	return inv, g.check("inventory", err)
}

func (g *guarded) SystemUUID(ctx context.Context) (string, error) {
	sg, err := capable[SystemUUIDGetter](g)
	if err != nil {
		return "", g.check("system uuid", err)
	}
	id, err := sg.SystemUUID(ctx)
	return id, g.check("system uuid", err)
}

func (g *guarded) BootMode(ctx context.Context) (string, error) {
	bg, err := capable[BootModeGetter](g)
	if err != nil {
		return "", g.check("boot mode", err)
	}
	mode, err := bg.BootMode(ctx)
	return mode, g.check("boot mode", err)
}

func (g *guarded) ResolveSystem(ctx context.Context) (ResolvedSystem, error) {
	sr, err := capable[SystemResolver](g)
	if err != nil {
		return ResolvedSystem{}, g.check("resolve system", err)
	}
	res, err := sr.ResolveSystem(ctx)
	return res, g.check("resolve system", err)
}
