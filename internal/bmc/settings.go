package bmc

import "context"

// Hardware settings (issue 30): BIOS attributes and UEFI Secure Boot,
// written as pending settings the BMC applies at the next reset, and read
// back after it. Drivers of BMCs without them (IPMI, a Redfish BMC
// without a Bios or SecureBoot resource) answer KindUnsupported naming
// what is missing.

// BIOSAttributeType is a BIOS attribute's type, as a Redfish attribute
// registry names it.
type BIOSAttributeType string

const (
	BIOSEnumeration BIOSAttributeType = "Enumeration"
	BIOSString      BIOSAttributeType = "String"
	BIOSInteger     BIOSAttributeType = "Integer"
	BIOSBoolean     BIOSAttributeType = "Boolean"
	BIOSPassword    BIOSAttributeType = "Password"
)

// BIOSAttribute is one attribute of a BMC's BIOS attribute registry.
type BIOSAttribute struct {
	Name string
	Type BIOSAttributeType
	// Values are an Enumeration's allowed values (ValueName).
	Values []string
	// ReadOnly attributes cannot be set.
	ReadOnly bool
	// LowerBound and UpperBound bound an Integer (nil: unbounded);
	// MaxLength a String (0: unbounded).
	LowerBound, UpperBound *int64
	MaxLength              int
}

// BIOSRegistry is a BMC's BIOS attribute registry, by attribute name.
type BIOSRegistry map[string]BIOSAttribute

// BIOSValues are BIOS attribute values as text, by attribute name:
// enumerations and strings as they are, integers in decimal, booleans
// "true" or "false". Drivers convert to and from the JSON types the BMC
// uses (the registry's type, else the type of the current value).
type BIOSValues map[string]string

// BIOSSettings reads and writes BIOS attributes (the Redfish Bios
// resource and its @Redfish.Settings object).
type BIOSSettings interface {
	// BIOSAttributes returns the attributes in effect.
	BIOSAttributes(ctx context.Context) (BIOSValues, error)
	// BIOSRegistry returns the attribute registry, or nil (and no error)
	// when the BMC serves none: values are then checked by the type of
	// the current value only.
	BIOSRegistry(ctx context.Context) (BIOSRegistry, error)
	// PendingBIOS returns the attributes written and not yet applied
	// (those of the settings object that differ from the ones in
	// effect); empty when none.
	PendingBIOS(ctx context.Context) (BIOSValues, error)
	// SetBIOS writes values to apply at the next reset (the settings
	// object; with SettingsApplyTime OnReset where the BMC supports it),
	// and reports whether a reset is needed for them to apply (false
	// when the BMC applied them at once).
	SetBIOS(ctx context.Context, values BIOSValues) (needsReset bool, err error)
}

// SecureBootState is UEFI Secure Boot as the BMC reports it.
type SecureBootState struct {
	// Enabled is the setting (SecureBootEnable), which applies at the
	// next reset; Current whether the running boot is under Secure Boot
	// (SecureBootCurrentBoot), nil when the BMC does not say.
	Enabled bool
	Current *bool
}

// SecureBootSetter reads and sets UEFI Secure Boot (the Redfish
// SecureBoot resource).
type SecureBootSetter interface {
	SecureBoot(ctx context.Context) (SecureBootState, error)
	// SetSecureBoot sets SecureBootEnable and reports whether a reset is
	// needed for it to apply.
	SetSecureBoot(ctx context.Context, enable bool) (needsReset bool, err error)
}

// Task is a long-running operation the BMC runs on its own (a Redfish
// task monitor, DSP0266 §12.2): creating a volume, a firmware update.
// Monitor is "" when the BMC completed the operation before answering.
type Task struct {
	Monitor string
}

// TaskStatus is where a task stands.
type TaskStatus struct {
	// Done: the task ended (Failed says how); Percent is its progress
	// where the BMC says (0 otherwise); Message the BMC's last word on it
	// (the reason when it failed).
	Done, Failed bool
	// Staged: the task waits for the system's next reset to do its work
	// (iDRAC's scheduled BIOS update job stays Pending until then; a
	// Redfish update says Update.1.0.AwaitToActivate). Waiting for it to
	// be Done without a reset would wait forever.
	Staged  bool
	Percent int
	Message string
}

// TaskMonitor reads a task's status. A monitor the BMC no longer serves
// (404 after its outcome was read, or a BMC that deletes finished tasks)
// is Done without failure only when the driver read its outcome before;
// otherwise it is an error: callers then read back the result instead.
type TaskMonitor interface {
	TaskStatus(ctx context.Context, t Task) (TaskStatus, error)
}

// Drive is a physical drive a storage controller sees.
type Drive struct {
	// ID is the drive's @odata.id.
	ID            string
	Name          string
	MediaType     string // SSD, HDD (Redfish Drive.MediaType)
	Protocol      string // SAS, SATA, NVMe
	CapacityBytes int64
}

// Volume is a logical volume of a storage controller.
type Volume struct {
	// ID is the volume's @odata.id.
	ID            string
	Name          string
	RAIDType      string // RAID0, RAID1, RAID5, RAID6, RAID10, None
	CapacityBytes int64
	// Drives are the @odata.ids of the drives it spans.
	Drives []string
}

// StorageController is a Redfish Storage resource: a RAID controller
// and what it holds.
type StorageController struct {
	// ID is the Storage resource's @odata.id.
	ID   string
	Name string
	// RAIDTypes are the RAID types it can create (StorageControllers'
	// SupportedRAIDTypes); empty when it does not say.
	RAIDTypes []string
	Drives    []Drive
	Volumes   []Volume
}

// VolumeSpec is a volume to create.
type VolumeSpec struct {
	Name     string
	RAIDType string
	// CapacityBytes 0: all the drives give.
	CapacityBytes int64
	// Drives are @odata.ids of drives of the same controller.
	Drives []string
}

// RAIDController reads and changes a system's storage (Redfish Storage,
// Drives, Volumes). Creating and deleting volumes may run as tasks.
type RAIDController interface {
	TaskMonitor
	Storage(ctx context.Context) ([]StorageController, error)
	// CreateVolume creates a volume on the controller storageID (its
	// @odata.id) and returns the task doing it.
	CreateVolume(ctx context.Context, storageID string, spec VolumeSpec) (Task, error)
	// DeleteVolume deletes the volume volumeID (its @odata.id).
	DeleteVolume(ctx context.Context, volumeID string) (Task, error)
}

// FirmwareComponent is one entry of the BMC's firmware inventory.
type FirmwareComponent struct {
	// ID is the inventory entry's @odata.id.
	ID         string
	Name       string
	Version    string
	Updateable bool
}

// FirmwareUpdater reads the firmware inventory and updates components
// (Redfish UpdateService: FirmwareInventory, SimpleUpdate).
type FirmwareUpdater interface {
	TaskMonitor
	Firmware(ctx context.Context) ([]FirmwareComponent, error)
	// SimpleUpdate asks the BMC to fetch imageURI and apply it to targets
	// (inventory @odata.ids; empty: the BMC decides from the image), and
	// returns the task doing it.
	SimpleUpdate(ctx context.Context, imageURI string, targets []string) (Task, error)
}
