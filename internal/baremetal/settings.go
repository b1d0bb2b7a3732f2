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
	// Waiting: the operator asked for them to be applied while the node
	// held an instance; they are applied (configuring) when its cleanup
	// ends, before it takes another.
	Waiting bool `json:"waiting,omitempty"`
}

// IsZero reports whether no setting is managed.
func (h HardwareSettings) IsZero() bool { return len(h.BIOS) == 0 && h.SecureBoot == nil }

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
	return out
}
