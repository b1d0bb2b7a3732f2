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
