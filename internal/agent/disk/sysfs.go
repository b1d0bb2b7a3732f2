package disk

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// skipped are kernel device names that are not disks to install on:
// loop, RAM and compressed-RAM disks, device-mapper and md composites
// (built on top of real disks, which are listed), network block devices,
// floppies and optical drives.
var skipped = []string{"loop", "ram", "zram", "dm-", "md", "nbd", "fd", "sr", "scd", "cd"}

// ListDisks reads the machine's disks from sysRoot/block (sysRoot is
// "/sys" on a node; tests give a fake tree). Sizes come from "size",
// always in 512-byte units whatever the disk's sector size; identity from
// the device's model, vendor, serial and wwid attributes, which SCSI/SATA
// and NVMe disks spell differently.
func ListDisks(sysRoot string) ([]Disk, error) {
	blockDir := filepath.Join(sysRoot, "block")
	entries, err := os.ReadDir(blockDir)
	if err != nil {
		return nil, machineErr(CodeInventory, err, "list disks")
	}
	var disks []Disk
	for _, e := range entries {
		name := e.Name()
		if slices.ContainsFunc(skipped, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		dir := filepath.Join(blockDir, name)
		sectors, err := strconv.ParseInt(attr(dir, "size"), 10, 64)
		if err != nil {
			continue // not a block device directory we understand
		}
		d := Disk{
			Name:       name,
			Size:       sectors * 512,
			Rotational: attr(dir, "queue/rotational") == "1",
			Removable:  attr(dir, "removable") == "1",
			Model:      attr(dir, "device/model"),
			Vendor:     attr(dir, "device/vendor"),
			Serial:     attr(dir, "device/serial"), // NVMe, virtio, some SATA
			WWN:        firstOf(attr(dir, "wwid"), attr(dir, "device/wwid")),
			Type:       "disk",
		}
		if strings.HasPrefix(d.WWN, "t10.") {
			// A T10 vendor id (vendor, model and serial run together),
			// which a disk without a WWN gets: not a WWN to match.
			d.WWN = ""
		}
		if d.Serial == "" {
			d.Serial = vpdSerial(dir) // SCSI and SATA behind libata
		}
		// SCSI peripheral type 0 is a disk; 5 (CD/DVD), 1 (tape) and
		// the rest are not. NVMe and virtio have no such attribute.
		if t := attr(dir, "device/type"); t != "" && t != "0" && t != "14" {
			continue
		}
		if d.Size == 0 {
			continue // an empty card reader slot
		}
		disks = append(disks, d)
	}
	return disks, nil
}

// attr reads one sysfs attribute, trimmed; "" when absent.
func attr(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// vpdSerial reads the unit serial number from SCSI VPD page 0x80: a
// 4-byte header (page length in bytes 2-3), then the serial, blank padded.
func vpdSerial(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "device/vpd_pg80"))
	if err != nil || len(b) < 4 || b[1] != 0x80 {
		return ""
	}
	n := int(b[2])<<8 | int(b[3])
	if 4+n > len(b) {
		n = len(b) - 4
	}
	return strings.TrimSpace(strings.TrimRight(string(b[4:4+n]), "\x00"))
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
