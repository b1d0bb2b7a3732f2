package baremetal

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Traits are what placement matches instances to nodes by, beyond the
// resource class: strings such as CUSTOM_GPU_A100 or rack:r12. A node has
// the operator's (Node.Traits) and those the controller derives from
// inspection and the BMC (Node.DerivedTraits); an instance requires some
// and forbids others (Requirements).

// MaxTraits bounds the traits an operator sets on a node, and those an
// instance requires or forbids (Ironic allows 50 a node).
const MaxTraits = 50

// MaxTraitLen bounds a trait's length (Ironic's and os-traits' limit).
const MaxTraitLen = 255

// traitRE is what a trait may hold: letters, digits and _ . : / = + -.
// No comma (the store keeps a node's traits comma-joined for its queries)
// and no space or control character.
var traitRE = regexp.MustCompile(`^[A-Za-z0-9_.:/=+-]+$`)

// ValidateTraits checks a set of traits named by field, and returns them
// sorted without duplicates.
func ValidateTraits(field string, traits []string) ([]string, error) {
	if len(traits) > MaxTraits {
		return nil, FieldErrorf(field, "%s holds %d traits; at most %d are allowed", field, len(traits), MaxTraits)
	}
	for i, t := range traits {
		if t == "" {
			return nil, FieldErrorf(fmt.Sprintf("%s[%d]", field, i), "a trait may not be empty")
		}
		if len(t) > MaxTraitLen {
			return nil, FieldErrorf(fmt.Sprintf("%s[%d]", field, i), "trait is %d characters long; at most %d are allowed", len(t), MaxTraitLen)
		}
		if !traitRE.MatchString(t) {
			return nil, FieldErrorf(fmt.Sprintf("%s[%d]", field, i), "trait %q may hold only letters, digits and _ . : / = + - (e.g. CUSTOM_GPU_A100 or rack:r12)", t)
		}
	}
	return SortedTraits(traits), nil
}

// SortedTraits returns traits sorted, without duplicates, never nil.
func SortedTraits(traits []string) []string {
	out := append([]string{}, traits...)
	slices.Sort(out)
	return slices.Compact(out)
}

// AllTraits is every trait the node has: the operator's and the derived.
func (n *Node) AllTraits() []string {
	return SortedTraits(append(append([]string{}, n.Traits...), n.DerivedTraits...))
}

// HasTrait reports whether the node has trait t, set or derived.
func (n *Node) HasTrait(t string) bool {
	return slices.Contains(n.Traits, t) || slices.Contains(n.DerivedTraits, t)
}

// Requirements are what an instance asks of its node beyond the resource
// class: traits it must have and must not have, minimum hardware, and an
// architecture. A minimum needs the node's property to be known: a node
// never inspected satisfies no minimum. The zero value asks nothing.
type Requirements struct {
	RequiredTraits  []string `json:"required_traits,omitempty"`
	ForbiddenTraits []string `json:"forbidden_traits,omitempty"`
	MinCPUs         int      `json:"min_cpus,omitempty"`
	MinMemoryMB     int      `json:"min_memory_mb,omitempty"`
	MinDiskGB       int      `json:"min_disk_gb,omitempty"`
	CPUArch         string   `json:"cpu_arch,omitempty"`
}

// IsZero reports whether r asks nothing.
func (r Requirements) IsZero() bool {
	return len(r.RequiredTraits) == 0 && len(r.ForbiddenTraits) == 0 && r.MinCPUs == 0 &&
		r.MinMemoryMB == 0 && r.MinDiskGB == 0 && r.CPUArch == ""
}

// Validate checks r and sorts its traits.
func (r *Requirements) Validate() error {
	var err error
	if r.RequiredTraits, err = ValidateTraits("required_traits", r.RequiredTraits); err != nil {
		return err
	}
	if r.ForbiddenTraits, err = ValidateTraits("forbidden_traits", r.ForbiddenTraits); err != nil {
		return err
	}
	for _, t := range r.RequiredTraits {
		if slices.Contains(r.ForbiddenTraits, t) {
			return FieldErrorf("forbidden_traits", "trait %q is both required and forbidden; no node can satisfy that", t)
		}
	}
	for _, f := range []struct {
		name   string
		v, max int
	}{{"min_cpus", r.MinCPUs, MaxCPUs}, {"min_memory_mb", r.MinMemoryMB, MaxMemoryMB}, {"min_disk_gb", r.MinDiskGB, MaxLocalGB}} {
		if f.v < 0 || f.v > f.max {
			return FieldErrorf(f.name, "%s must be between 0 and %d, got %d", f.name, f.max, f.v)
		}
	}
	if r.CPUArch != "" && !cpuArchRE.MatchString(r.CPUArch) {
		return FieldErrorf("cpu_arch", "cpu_arch %q is not an architecture name (e.g. x86_64 or aarch64)", r.CPUArch)
	}
	return nil
}

var cpuArchRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)

// Unmet is one requirement a node fails, as the no_capacity explanation
// counts it: Kind is one of the Unmet* constants, Value the trait or
// minimum concerned.
type Unmet struct {
	Kind  string
	Value string
}

// The kinds of unmet requirement.
const (
	UnmetResourceClass  = "resource_class"
	UnmetOwner          = "owner"
	UnmetRequiredTrait  = "required_trait"
	UnmetForbiddenTrait = "forbidden_trait"
	UnmetCPUs           = "min_cpus"
	UnmetMemoryMB       = "min_memory_mb"
	UnmetDiskGB         = "min_disk_gb"
	UnmetCPUArch        = "cpu_arch"
)

// UnmetKinds lists the kinds of unmet requirement.
var UnmetKinds = []string{UnmetResourceClass, UnmetOwner, UnmetRequiredTrait, UnmetForbiddenTrait, UnmetCPUs,
	UnmetMemoryMB, UnmetDiskGB, UnmetCPUArch}

// Phrase says what count nodes failing u do, after the count: "lack
// trait CUSTOM_GPU_A100", "has less than 262144 MB memory (or unknown)"
// for one.
func (u Unmet) Phrase(count int) string {
	one := count == 1
	verb := func(single, plural string) string {
		if one {
			return single
		}
		return plural
	}
	switch u.Kind {
	case UnmetResourceClass:
		return verb("is", "are") + " of another resource class than " + u.Value
	case UnmetOwner:
		return verb("is", "are") + " owned by another project"
	case UnmetRequiredTrait:
		return verb("lacks", "lack") + " trait " + u.Value
	case UnmetForbiddenTrait:
		return verb("has", "have") + " forbidden trait " + u.Value
	case UnmetCPUs:
		return verb("has", "have") + " fewer than " + u.Value + " CPUs (or unknown)"
	case UnmetMemoryMB:
		return verb("has", "have") + " less than " + u.Value + " MB memory (or unknown)"
	case UnmetDiskGB:
		return verb("has", "have") + " less than " + u.Value + " GB disk (or unknown)"
	case UnmetCPUArch:
		return verb("is", "are") + " not " + u.Value
	}
	return u.Kind + " " + u.Value
}

// Placement is what a new instance asks of its node: the resource class
// (empty for any), the requirements, and the project it is placed for
// (nodes owned by another project are not placed on).
type Placement struct {
	ResourceClass string
	Requirements  Requirements
	Project       string
}

// Unmet lists the requirements n fails for p, in a stable order; none
// when n's hardware and traits fit (whatever its state). The store's
// placement queries select exactly the nodes for which it is empty
// (storetest checks that they agree).
func (p Placement) Unmet(n *Node) []Unmet {
	var out []Unmet
	if p.ResourceClass != "" && n.ResourceClass != p.ResourceClass {
		out = append(out, Unmet{UnmetResourceClass, p.ResourceClass})
	}
	if n.Owner != "" && n.Owner != p.Project {
		// Which project owns it is not said: members do not see other
		// projects' nodes, and one count reads better than one per owner.
		out = append(out, Unmet{UnmetOwner, ""})
	}
	r := p.Requirements
	for _, t := range r.RequiredTraits {
		if !n.HasTrait(t) {
			out = append(out, Unmet{UnmetRequiredTrait, t})
		}
	}
	for _, t := range r.ForbiddenTraits {
		if n.HasTrait(t) {
			out = append(out, Unmet{UnmetForbiddenTrait, t})
		}
	}
	if n.Properties.CPUs < r.MinCPUs {
		out = append(out, Unmet{UnmetCPUs, fmt.Sprint(r.MinCPUs)})
	}
	if n.Properties.MemoryMB < r.MinMemoryMB {
		out = append(out, Unmet{UnmetMemoryMB, fmt.Sprint(r.MinMemoryMB)})
	}
	if n.Properties.LocalGB < r.MinDiskGB {
		out = append(out, Unmet{UnmetDiskGB, fmt.Sprint(r.MinDiskGB)})
	}
	if r.CPUArch != "" && !strings.EqualFold(n.Properties.CPUArch, r.CPUArch) {
		out = append(out, Unmet{UnmetCPUArch, r.CPUArch})
	}
	return out
}

// Fits reports whether n's hardware, traits and owner fit p (whatever
// its state).
func (p Placement) Fits(n *Node) bool { return len(p.Unmet(n)) == 0 }

// BestFitLess orders the nodes placement prefers first: those the
// project owns, then the smallest known hardware (memory, then CPUs,
// then disk; a node of unknown memory after every known one), then id.
// Big machines so stay free for the instances that need them, and the
// order is total, so placement is deterministic. The store's claim
// queries order the same way.
func BestFitLess(a, b *Node) bool {
	if (a.Owner == "") != (b.Owner == "") {
		return a.Owner != ""
	}
	if (a.Properties.MemoryMB == 0) != (b.Properties.MemoryMB == 0) {
		return a.Properties.MemoryMB != 0
	}
	for _, d := range [][2]int{{a.Properties.MemoryMB, b.Properties.MemoryMB}, {a.Properties.CPUs, b.Properties.CPUs}, {a.Properties.LocalGB, b.Properties.LocalGB}} {
		if d[0] != d[1] {
			return d[0] < d[1]
		}
	}
	return a.ID < b.ID
}

// The derived traits' families: each is replaced as a whole when a
// source (the BMC at verify, the deploy agent at inspection) reports on
// it, and kept when the source cannot tell. Names follow OpenStack's
// os-traits where it has one.
const (
	TraitArchPrefix     = "HW_ARCH_"   // HW_ARCH_X86_64, HW_ARCH_AARCH64
	TraitBootModePrefix = "BOOT_MODE_" // BOOT_MODE_UEFI, BOOT_MODE_BIOS
	TraitSecureBoot     = "COMPUTE_SECURITY_UEFI_SECURE_BOOT"
	TraitDiskPrefix     = "STORAGE_DISK_" // STORAGE_DISK_SSD, _HDD, _NVME
	TraitNICSpeedPrefix = "HW_NIC_SPEED_" // HW_NIC_SPEED_25G
)

// ArchTrait is the derived trait of a CPU architecture ("" for none):
// x86_64 and amd64 are HW_ARCH_X86_64, aarch64 and arm64 HW_ARCH_AARCH64.
func ArchTrait(arch string) string {
	a := strings.ToUpper(strings.TrimSpace(arch))
	switch a {
	case "":
		return ""
	case "AMD64", "X86-64", "X64":
		a = "X86_64"
	case "ARM64":
		a = "AARCH64"
	}
	a = strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, a)
	return TraitArchPrefix + a
}

// NICSpeedTrait is the derived trait of a link speed: HW_NIC_SPEED_25G,
// HW_NIC_SPEED_100M ("" for 0).
func NICSpeedTrait(mbps int) string {
	switch {
	case mbps <= 0:
		return ""
	case mbps%1000 == 0:
		return fmt.Sprintf("%s%dG", TraitNICSpeedPrefix, mbps/1000)
	}
	return fmt.Sprintf("%s%dM", TraitNICSpeedPrefix, mbps)
}

// ReplaceDerivedTraits makes traits the node's derived traits of the
// families named by their prefixes (TraitArchPrefix, ...; a whole trait
// such as TraitSecureBoot names itself), dropping those families' earlier
// ones and keeping every other family's. Invalid traits are skipped: the
// hardware is not input the controller can refuse. It reports whether
// the derived traits changed.
func (n *Node) ReplaceDerivedTraits(families []string, traits []string) bool {
	in := func(t string) bool {
		for _, f := range families {
			if strings.HasPrefix(t, f) {
				return true
			}
		}
		return false
	}
	var next []string
	for _, t := range n.DerivedTraits {
		if !in(t) {
			next = append(next, t)
		}
	}
	for _, t := range traits {
		if t != "" && len(t) <= MaxTraitLen && traitRE.MatchString(t) {
			next = append(next, t)
		}
	}
	next = SortedTraits(next)
	if len(next) > 4*MaxTraits {
		next = next[:4*MaxTraits]
	}
	changed := !slices.Equal(next, SortedTraits(n.DerivedTraits))
	n.DerivedTraits = next
	return changed
}
