package disk

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/deployspec"
)

// Disk is one entry of a node's disk inventory.
type Disk struct {
	Name       string // kernel name: "sda", "nvme0n1"
	Size       int64  // bytes
	Model      string
	Serial     string
	WWN        string
	Vendor     string
	Rotational bool
	Removable  bool
	Type       string // "disk"; ListDisks leaves out the rest (cd-rom, ...)
}

// Path is the device node, /dev/<name>.
func (d Disk) Path() string { return "/dev/" + d.Name }

// Hints select the root disk, as Ironic's root device hints do
// (simplified): every hint given must match. Strings match exactly,
// ignoring case and surrounding blanks.
type Hints struct {
	Size   SizeHint // zero: no size hint
	Serial string
	WWN    string // "0x5000c500a1b2c3d4", "naa.5000c500a1b2c3d4" and "5000c500a1b2c3d4" are the same WWN
	Model  string
	Vendor string
	Name   string // "/dev/sda" or "sda"
}

// SizeHint is size_gb: an exact size in GiB, or a least one (">= N").
// A disk's size in GiB is rounded down, as Ironic does, so a 480103981056
// byte SSD is 447 GiB.
type SizeHint = deployspec.SizeHint

// ParseSizeHint reads size_gb ("100", ">= 100" or ">=100") with the API's
// own parser (deployspec.ParseSizeHint); a refusal is the user's input.
func ParseSizeHint(s string) (SizeHint, error) {
	h, err := deployspec.ParseSizeHint(s)
	if err != nil {
		return SizeHint{}, inputErr(CodeNoRootDisk, nil, "%v", err)
	}
	return h, nil
}

func (h Hints) empty() bool {
	return h.Size == (SizeHint{}) && h.Serial == "" && h.WWN == "" && h.Model == "" && h.Vendor == "" && h.Name == ""
}

// DefaultMinSize is the smallest disk ChooseRootDisk takes without hints,
// as in Ironic: smaller ones are card readers, BMC virtual drives and the
// like, not a place for an operating system. The API's documents say it
// (api.DocRootDevice), hence its one definition there.
const DefaultMinSize = api.RootDiskMinGiB << 30

// ChooseRootDisk picks the root disk from disks. With hints, it is the
// smallest disk matching all of them (removable ones included: the user
// asked for it). Without, it is the smallest non-removable disk of at
// least DefaultMinSize. Ties go to the first name in order, so the choice
// is the same on every boot.
//
// When nothing fits, the error lists every disk and why it was passed
// over. It is ErrInput when hints were given (the user's hints fit no
// disk) and ErrMachine when not (the machine has no usable disk).
func ChooseRootDisk(disks []Disk, h Hints) (Disk, error) {
	var fits []Disk
	var why []string
	for _, d := range disks {
		if reason := h.reject(d); reason != "" {
			why = append(why, fmt.Sprintf("%s (%s): %s", d.Name, describe(d), reason))
			continue
		}
		fits = append(fits, d)
	}
	if len(fits) == 0 {
		seen := "no disks found"
		if len(why) > 0 {
			seen = strings.Join(why, "; ")
		}
		if h.empty() {
			return Disk{}, machineErr(CodeNoRootDisk, nil, "no disk of at least %s that is not removable: %s", human(DefaultMinSize), seen)
		}
		return Disk{}, inputErr(CodeNoRootDisk, nil, "no disk matches the root device hints %s: %s", h, seen)
	}
	return slices.MinFunc(fits, func(a, b Disk) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.Name, b.Name))
	}), nil
}

func (h Hints) String() string {
	var s []string
	add := func(k, v string) {
		if v != "" {
			s = append(s, fmt.Sprintf("%s=%q", k, v))
		}
	}
	if h.Size != (SizeHint{}) {
		s = append(s, "size_gb "+h.Size.String())
	}
	add("serial", h.Serial)
	add("wwn", h.WWN)
	add("model", h.Model)
	add("vendor", h.Vendor)
	add("name", h.Name)
	return "{" + strings.Join(s, ", ") + "}"
}

// reject says why d does not fit h (every hint it fails), or "" when
// it fits.
func (h Hints) reject(d Disk) string {
	if h.empty() {
		switch {
		case d.Removable:
			return "removable"
		case d.Size < DefaultMinSize:
			return "smaller than " + human(DefaultMinSize)
		}
		return ""
	}
	var why []string
	if h.Size != (SizeHint{}) {
		gib := d.Size >> 30
		if (h.Size.AtLeast && gib < h.Size.GiB) || (!h.Size.AtLeast && gib != h.Size.GiB) {
			why = append(why, fmt.Sprintf("size %d GiB, not %s", gib, h.Size))
		}
	}
	for _, c := range []struct{ hint, got, what string }{
		{h.Serial, d.Serial, "serial"},
		{h.Model, d.Model, "model"},
		{h.Vendor, d.Vendor, "vendor"},
	} {
		if c.hint != "" && !strings.EqualFold(strings.TrimSpace(c.hint), strings.TrimSpace(c.got)) {
			why = append(why, fmt.Sprintf("%s %q, not %q", c.what, strings.TrimSpace(c.got), strings.TrimSpace(c.hint)))
		}
	}
	if h.WWN != "" && normalWWN(h.WWN) != normalWWN(d.WWN) {
		why = append(why, fmt.Sprintf("wwn %q, not %q", d.WWN, strings.TrimSpace(h.WWN)))
	}
	if h.Name != "" {
		name := strings.TrimPrefix(strings.TrimSpace(h.Name), "/dev/")
		if !strings.EqualFold(name, d.Name) {
			why = append(why, fmt.Sprintf("name %q, not %q", d.Name, name))
		}
	}
	return strings.Join(why, ", ")
}

// normalWWN drops the spellings of one WWN: udev's "0x", sysfs's "naa."
// or "eui." prefix, and case.
func normalWWN(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, p := range []string{"0x", "naa.", "eui.", "wwn-"} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

func describe(d Disk) string {
	s := []string{human(d.Size)}
	for _, f := range []struct{ k, v string }{{"model", d.Model}, {"serial", d.Serial}, {"wwn", d.WWN}} {
		if f.v != "" {
			s = append(s, f.k+" "+strconv.Quote(f.v))
		}
	}
	if d.Removable {
		s = append(s, "removable")
	}
	return strings.Join(s, ", ")
}
