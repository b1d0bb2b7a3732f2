package baremetal

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// HardwareSettings are the hardware settings an operator declares on a
// node (issue 30): BIOS attributes by name, and UEFI Secure Boot (nil:
// not managed). The controller applies them while the node holds no
// instance (provision state configuring) and reads them back.
type HardwareSettings struct {
	BIOS       map[string]string `json:"bios,omitempty"`
	SecureBoot *bool             `json:"secure_boot,omitempty"`
	// RAID, when not nil, is every logical volume the node's storage
	// controller is to have (empty: none): volumes not declared are
	// deleted. Nil leaves the volumes alone.
	RAID *[]VolumeSettings `json:"raid,omitempty"`
	// Firmware are components to bring to a version, each from an image
	// the BMC fetches.
	Firmware []FirmwareSettings `json:"firmware,omitempty"`
	// Waiting: the operator asked for them to be applied while the node
	// held an instance; they are applied (configuring) when its cleanup
	// ends, before it takes another.
	Waiting bool `json:"waiting,omitempty"`
}

// IsZero reports whether no setting is managed.
func (h HardwareSettings) IsZero() bool {
	return len(h.BIOS) == 0 && h.SecureBoot == nil && h.RAID == nil && len(h.Firmware) == 0
}

// VolumeSettings is a logical volume a node declares.
type VolumeSettings struct {
	// Name names the volume on the controller (and in drift).
	Name string `json:"name"`
	// RAIDLevel is 0, 1, 5, 6 or 10.
	RAIDLevel string `json:"raid_level"`
	// SizeGB is its size in GiB; 0: all its drives give.
	SizeGB int `json:"size_gb,omitempty"`
	// Drives chooses its drives: a count of drives not in another
	// volume, of a media type (ssd, hdd; empty: any), or drives by id.
	DriveCount int      `json:"drive_count,omitempty"`
	MediaType  string   `json:"media_type,omitempty"`
	DriveIDs   []string `json:"drive_ids,omitempty"`
}

// FirmwareSettings is a firmware component a node declares: its
// version, and the image that has it.
type FirmwareSettings struct {
	// Component names the entry of the BMC's firmware inventory (its Id
	// or Name, e.g. BIOS, BMC, NIC.Integrated.1).
	Component string `json:"component"`
	Version   string `json:"version"`
	ImageURL  string `json:"image_url"`
}

// RAIDLevels are the levels a volume may have, and the drives each needs
// at least (RAID 10: an even number).
var RAIDLevels = map[string]int{"0": 1, "1": 2, "5": 3, "6": 4, "10": 4}

// ObservedVolume is a volume as the BMC reported it.
type ObservedVolume struct {
	Name      string   `json:"name"`
	RAIDLevel string   `json:"raid_level"`
	SizeGB    int      `json:"size_gb"`
	Drives    []string `json:"drives"`
}

// StartConfiguring moves n, available, to configuring so that its
// hardware settings are applied (the caller queues the configure job).
func (n *Node) StartConfiguring() error {
	n.Settings.Waiting = false
	return n.Transition(StateConfiguring)
}

// HardwareObserved is what the controller last read of a node's hardware
// settings from its BMC.
type HardwareObserved struct {
	// BIOS is every attribute in effect, as text (bmc.BIOSValues).
	BIOS map[string]string `json:"bios,omitempty"`
	// SecureBoot is SecureBootEnable; nil when the BMC has none.
	SecureBoot *bool `json:"secure_boot,omitempty"`
	// Volumes are the logical volumes of the node's storage (read when
	// it declares RAID); Firmware the versions of its firmware
	// inventory, by component (Id and Name both; read when it declares
	// firmware).
	Volumes  []ObservedVolume  `json:"volumes,omitempty"`
	Firmware map[string]string `json:"firmware,omitempty"`
	// Registry names the BIOS attribute registry the values are checked
	// against (store.BIOSRegistries), "" when the BMC serves none.
	Registry string `json:"registry,omitempty"`
	// Lacks says what the BMC lacks of what hardware settings need
	// ("BIOS settings", "Secure Boot"), "" when it has all.
	Lacks []string `json:"lacks,omitempty"`
	// ReadAt is when they were read; nil: never.
	ReadAt *time.Time `json:"read_at,omitempty"`
}

// Limits of hardware settings: real BMCs have a few hundred BIOS
// attributes, names are identifiers, values short.
const (
	MaxBIOSSettings   = 512
	MaxBIOSValueBytes = 1024
)

var biosNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,127}$`)

// Validate checks the settings' form (names, lengths); their values are
// checked against the BMC's attribute registry by ValidateAgainst.
func (h HardwareSettings) Validate() error {
	if len(h.BIOS) > MaxBIOSSettings {
		return FieldErrorf("bios_settings", "bios_settings holds %d attributes; at most %d are allowed", len(h.BIOS), MaxBIOSSettings)
	}
	if err := h.validateRAID(); err != nil {
		return err
	}
	if err := h.validateFirmware(); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(h.BIOS)) {
		if !biosNameRE.MatchString(k) {
			return FieldErrorf("bios_settings", "BIOS attribute name %q is not an attribute name (a letter, then letters, digits, _ . -; at most 128)", k)
		}
		if err := ValidateLine("bios_settings."+k, h.BIOS[k], MaxBIOSValueBytes); err != nil {
			return err
		}
	}
	return nil
}

// BIOSAttributeSpec is one attribute of a BMC's BIOS attribute registry,
// as the controller keeps it to check operators' values.
type BIOSAttributeSpec struct {
	Type       string   `json:"type"` // Enumeration, String, Integer, Boolean, Password
	Values     []string `json:"values,omitempty"`
	ReadOnly   bool     `json:"read_only,omitempty"`
	LowerBound *int64   `json:"lower_bound,omitempty"`
	UpperBound *int64   `json:"upper_bound,omitempty"`
	MaxLength  int      `json:"max_length,omitempty"`
}

// BIOSRegistry is a BIOS attribute registry by attribute name.
type BIOSRegistry map[string]BIOSAttributeSpec

// ValidateAgainst checks the BIOS settings against the registry the BMC
// serves (reg; nil: the BMC serves none, and only names the BMC reported
// in effect, current, are known): an unknown name, a read-only
// attribute, a value of the wrong type or not allowed is an invalid
// error on bios_settings.<name> that says what the BMC takes.
func (h HardwareSettings) ValidateAgainst(reg BIOSRegistry, current map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(h.BIOS)) {
		v, field := h.BIOS[k], "bios_settings."+k
		if reg == nil {
			if current != nil {
				if _, ok := current[k]; !ok {
					return FieldErrorf(field, "the BMC has no BIOS attribute %q%s", k, nearNames(k, slices.Collect(maps.Keys(current))))
				}
			}
			continue
		}
		a, ok := reg[k]
		if !ok {
			return FieldErrorf(field, "the BMC's attribute registry has no BIOS attribute %q%s", k, nearNames(k, slices.Collect(maps.Keys(reg))))
		}
		if a.ReadOnly {
			return FieldErrorf(field, "BIOS attribute %s is read-only on this BMC", k)
		}
		switch a.Type {
		case "Enumeration":
			if !slices.Contains(a.Values, v) {
				return FieldErrorf(field, "BIOS attribute %s takes one of %s, not %q", k, strings.Join(a.Values, ", "), v)
			}
		case "Integer":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return FieldErrorf(field, "BIOS attribute %s is an integer, not %q", k, v)
			}
			if c := strconv.FormatInt(n, 10); c != v {
				// The BMC reports its integers in decimal: another spelling
				// would read back as drift forever.
				return FieldErrorf(field, "BIOS attribute %s is an integer: write %s, not %q", k, c, v)
			}
			if (a.LowerBound != nil && n < *a.LowerBound) || (a.UpperBound != nil && n > *a.UpperBound) {
				return FieldErrorf(field, "BIOS attribute %s must be between %s and %s, not %d", k, bound(a.LowerBound), bound(a.UpperBound), n)
			}
		case "Boolean":
			if v != "true" && v != "false" {
				return FieldErrorf(field, "BIOS attribute %s is a boolean: true or false, not %q", k, v)
			}
		case "String", "Password":
			if a.MaxLength > 0 && len(v) > a.MaxLength {
				return FieldErrorf(field, "BIOS attribute %s holds at most %d characters, not %d", k, a.MaxLength, len(v))
			}
		}
	}
	return nil
}

func bound(b *int64) string {
	if b == nil {
		return "any"
	}
	return strconv.FormatInt(*b, 10)
}

// nearNames suggests the names closest to k (same letters, any case), for
// a typo in an attribute name: `; did you mean ProcVirtualization?`.
func nearNames(k string, names []string) string {
	var near []string
	lk := strings.ToLower(k)
	for _, n := range names {
		ln := strings.ToLower(n)
		if ln == lk || strings.Contains(ln, lk) || strings.Contains(lk, ln) {
			near = append(near, n)
		}
	}
	if len(near) == 0 {
		return ""
	}
	sort.Strings(near)
	if len(near) > 3 {
		near = near[:3]
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}

// Unmet lists what of h the observed settings do not show yet, as
// "bios_settings.Name: want X, is Y" lines, in name order (none: h is
// met). A setting never read is unmet.
func (h HardwareSettings) Unmet(o HardwareObserved) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(h.BIOS)) {
		is, ok := o.BIOS[k]
		if !ok {
			is = "(not read)"
		}
		if !ok || is != h.BIOS[k] {
			out = append(out, fmt.Sprintf("bios_settings.%s: want %s, is %s", k, h.BIOS[k], is))
		}
	}
	if h.SecureBoot != nil && (o.SecureBoot == nil || *o.SecureBoot != *h.SecureBoot) {
		is := "(not read)"
		if o.SecureBoot != nil {
			is = strconv.FormatBool(*o.SecureBoot)
		}
		out = append(out, fmt.Sprintf("secure_boot: want %t, is %s", *h.SecureBoot, is))
	}
	out = append(out, h.unmetRAID(o)...)
	for _, fw := range h.Firmware {
		is, ok := o.Firmware[fw.Component]
		if !ok {
			is = "(not read)"
		}
		if is != fw.Version {
			out = append(out, fmt.Sprintf("firmware.%s: want %s, is %s", fw.Component, fw.Version, is))
		}
	}
	return out
}

// unmetRAID says how the observed volumes differ from the declared ones.
func (h HardwareSettings) unmetRAID(o HardwareObserved) []string {
	if h.RAID == nil {
		return nil
	}
	if o.ReadAt == nil || (o.Volumes == nil && len(*h.RAID) > 0) {
		return []string{"raid: volumes not read"}
	}
	var out []string
	for _, v := range *h.RAID {
		i := slices.IndexFunc(o.Volumes, func(x ObservedVolume) bool { return x.Name == v.Name })
		switch {
		case i < 0:
			out = append(out, fmt.Sprintf("raid.%s: want RAID %s, is missing", v.Name, v.RAIDLevel))
		case !v.VolumeFits(o.Volumes[i]):
			x := o.Volumes[i]
			out = append(out, fmt.Sprintf("raid.%s: want RAID %s%s, is RAID %s of %d GiB on %d drives", v.Name, v.RAIDLevel, sizeText(v.SizeGB), x.RAIDLevel, x.SizeGB, len(x.Drives)))
		}
	}
	for _, x := range o.Volumes {
		if !slices.ContainsFunc(*h.RAID, func(v VolumeSettings) bool { return v.Name == x.Name }) {
			out = append(out, fmt.Sprintf("raid.%s: not declared, is RAID %s of %d GiB", x.Name, x.RAIDLevel, x.SizeGB))
		}
	}
	return out
}

func sizeText(gb int) string {
	if gb == 0 {
		return ""
	}
	return fmt.Sprintf(" of %d GiB", gb)
}

func (h HardwareSettings) validateRAID() error {
	if h.RAID == nil {
		return nil
	}
	vols := *h.RAID
	if len(vols) > 32 {
		return FieldErrorf("raid", "raid declares %d volumes; at most 32 are allowed", len(vols))
	}
	names := map[string]bool{}
	ids := map[string]bool{}
	for i, v := range vols {
		f := fmt.Sprintf("raid[%d]", i)
		if !biosNameRE.MatchString(v.Name) {
			return FieldErrorf(f+".name", "volume name %q must be a letter, then letters, digits, _ . - (at most 128)", v.Name)
		}
		if names[v.Name] {
			return FieldErrorf(f+".name", "volume name %q is declared twice", v.Name)
		}
		names[v.Name] = true
		need, ok := RAIDLevels[v.RAIDLevel]
		if !ok {
			return FieldErrorf(f+".raid_level", "raid_level %q must be one of 0, 1, 5, 6, 10", v.RAIDLevel)
		}
		if v.SizeGB < 0 || v.SizeGB > MaxLocalGB {
			return FieldErrorf(f+".size_gb", "size_gb must be between 0 (all the drives give) and %d, got %d", MaxLocalGB, v.SizeGB)
		}
		switch v.MediaType {
		case "", "ssd", "hdd":
		default:
			return FieldErrorf(f+".media_type", "media_type %q must be ssd or hdd (or empty: any)", v.MediaType)
		}
		if (v.DriveCount > 0) == (len(v.DriveIDs) > 0) {
			return FieldErrorf(f+".drive_count", "choose the drives of volume %s by drive_count (with media_type) or by drive_ids, one of them", v.Name)
		}
		n := v.DriveCount + len(v.DriveIDs)
		if v.DriveCount < 0 || n < need || (v.RAIDLevel == "10" && n%2 != 0) || n > 64 {
			return FieldErrorf(f+".drive_count", "RAID %s needs at least %d drives%s, at most 64; volume %s has %d", v.RAIDLevel, need,
				map[bool]string{true: " (an even number)", false: ""}[v.RAIDLevel == "10"], v.Name, n)
		}
		for j, id := range v.DriveIDs {
			if err := ValidateLine(fmt.Sprintf("%s.drive_ids[%d]", f, j), id, 255); err != nil {
				return err
			}
			if id == "" || ids[id] {
				return FieldErrorf(fmt.Sprintf("%s.drive_ids[%d]", f, j), "drive %q is empty or in two volumes", id)
			}
			ids[id] = true
		}
	}
	return nil
}

func (h HardwareSettings) validateFirmware() error {
	if len(h.Firmware) > 32 {
		return FieldErrorf("firmware", "firmware declares %d components; at most 32 are allowed", len(h.Firmware))
	}
	seen := map[string]bool{}
	for i, fw := range h.Firmware {
		f := fmt.Sprintf("firmware[%d]", i)
		if err := ValidateLine(f+".component", fw.Component, 128); err != nil {
			return err
		}
		if fw.Component == "" || seen[fw.Component] {
			return FieldErrorf(f+".component", "component %q is empty or declared twice", fw.Component)
		}
		seen[fw.Component] = true
		if err := ValidateLine(f+".version", fw.Version, 128); err != nil {
			return err
		}
		if fw.Version == "" {
			return FieldErrorf(f+".version", "version is required: the controller verifies it after the update")
		}
		if !strings.HasPrefix(fw.ImageURL, "http://") && !strings.HasPrefix(fw.ImageURL, "https://") {
			return FieldErrorf(f+".image_url", "image_url must be an http:// or https:// URL the BMC can fetch")
		}
		if err := ValidateLine(f+".image_url", fw.ImageURL, 2048); err != nil {
			return err
		}
	}
	return nil
}

// VolumeFits reports whether an observed volume is what v declares (its
// level, and its size when v says one, within 1% as controllers round).
func (v VolumeSettings) VolumeFits(o ObservedVolume) bool {
	if o.RAIDLevel != v.RAIDLevel {
		return false
	}
	if v.SizeGB > 0 && (o.SizeGB < v.SizeGB*99/100 || o.SizeGB > v.SizeGB*101/100+1) {
		return false
	}
	if len(v.DriveIDs) > 0 {
		return slices.Equal(SortedTraits(o.Drives), SortedTraits(v.DriveIDs))
	}
	return len(o.Drives) == v.DriveCount || len(o.Drives) == 0 // a BMC that lists no drives of its volumes
}
