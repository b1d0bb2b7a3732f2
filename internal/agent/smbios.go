package agent

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The memory a machine has installed is what its firmware's SMBIOS
// tables say: a Memory Device structure (type 17) per memory socket, each
// in a Physical Memory Array (type 16). The kernel's MemTotal is less, by
// what the firmware reserves and the kernel keeps for itself (960 MiB of
// a 1 GiB VM), and so is not what operators, BMCs and schedulers call the
// machine's memory. The kernel exposes the raw tables in sysfs, readable
// by root without dmidecode.

// SMBIOS structure types and fields (DMTF DSP0134).
const (
	smbiosMemoryArray  = 16
	smbiosMemoryDevice = 17
	smbiosEndOfTable   = 127

	// Physical Memory Array: Use (a byte at 05h); 03h is system memory,
	// as against video, flash, non-volatile or cache memory.
	smbiosArrayUse       = 0x05
	smbiosUseSystemRAM   = 0x03
	smbiosArrayMinLength = 0x0f

	// Memory Device: the handle of its array (04h), Size (0Ch, SMBIOS
	// 2.1+) and Extended Size (1Ch, SMBIOS 2.7+).
	smbiosDeviceArray     = 0x04
	smbiosDeviceSize      = 0x0c
	smbiosDeviceMinLength = 0x0e
	smbiosDeviceExtSize   = 0x1c
	smbiosDeviceExtMinLen = 0x20
	smbiosSizeNone        = 0x0000 // no module in the socket
	smbiosSizeUnknown     = 0xffff
	smbiosSizeExtended    = 0x7fff // the size is in Extended Size
	smbiosSizeKiB         = 0x8000 // granularity bit: KiB, else MiB
	smbiosExtSizeMiBMask  = 0x7fffffff
)

// smbiosStructure is one structure of an SMBIOS table: its formatted
// area (header included); the strings after it are skipped.
type smbiosStructure struct {
	typ    byte
	handle uint16
	data   []byte
}

// smbiosStructures splits an SMBIOS table into its structures. It stops
// at the end-of-table structure or where the table is cut short, so a
// truncated or corrupt table yields what precedes the damage.
func smbiosStructures(table []byte) []smbiosStructure {
	var out []smbiosStructure
	for i := 0; i+4 <= len(table); {
		typ, length := table[i], int(table[i+1])
		if length < 4 || i+length > len(table) {
			break
		}
		out = append(out, smbiosStructure{typ: typ, handle: binary.LittleEndian.Uint16(table[i+2:]), data: table[i : i+length]})
		if typ == smbiosEndOfTable {
			break
		}
		// The string set ends with two NULs (two NULs alone when the
		// structure has no strings).
		end := strings.Index(string(table[i+length:]), "\x00\x00")
		if end < 0 {
			break
		}
		i += length + end + 2
	}
	return out
}

// InstalledMemory is the memory the SMBIOS table lists as installed, in
// bytes: the sum of the sizes of its Memory Devices, counting only those
// of system memory arrays (not a video card's or flash). Empty sockets
// and devices of unknown size count nothing. 0 means the table lists no
// memory (no SMBIOS, or firmware that does not fill it in).
func InstalledMemory(table []byte) int64 {
	structs := smbiosStructures(table)
	use := map[uint16]byte{}
	for _, s := range structs {
		if s.typ == smbiosMemoryArray && len(s.data) >= smbiosArrayMinLength {
			use[s.handle] = s.data[smbiosArrayUse]
		}
	}
	var total int64
	for _, s := range structs {
		if s.typ != smbiosMemoryDevice || len(s.data) < smbiosDeviceMinLength {
			continue
		}
		// A device in an array the table lists must be in one of system
		// memory; one whose array is not listed is counted.
		if u, ok := use[binary.LittleEndian.Uint16(s.data[smbiosDeviceArray:])]; ok && u != smbiosUseSystemRAM {
			continue
		}
		total += memoryDeviceSize(s.data)
	}
	return total
}

// memoryDeviceSize is a Memory Device's size in bytes (0: none or
// unknown).
func memoryDeviceSize(d []byte) int64 {
	size := binary.LittleEndian.Uint16(d[smbiosDeviceSize:])
	switch {
	case size == smbiosSizeNone || size == smbiosSizeUnknown:
		return 0
	case size == smbiosSizeExtended:
		// 32 GiB or more: Extended Size holds MiB in its low 31 bits.
		if len(d) < smbiosDeviceExtMinLen {
			return 0
		}
		return int64(binary.LittleEndian.Uint32(d[smbiosDeviceExtSize:])&smbiosExtSizeMiBMask) << 20
	case size&smbiosSizeKiB != 0:
		return int64(size&^smbiosSizeKiB) << 10
	}
	return int64(size) << 20
}

// smbiosTable reads the firmware's SMBIOS table from sysfs under sys:
// whole (firmware/dmi/tables/DMI, kernels since 4.2), else as the
// structures the dmi-sysfs driver lists (firmware/dmi/entries/T-N/raw)
// of the types InstalledMemory reads, which make a table of their own.
func smbiosTable(sys string) []byte {
	if b, err := os.ReadFile(filepath.Join(sys, "firmware/dmi/tables/DMI")); err == nil && len(b) > 0 {
		return b
	}
	var raws []string
	for _, typ := range []int{smbiosMemoryArray, smbiosMemoryDevice} {
		m, _ := filepath.Glob(filepath.Join(sys, "firmware/dmi/entries", strconv.Itoa(typ)+"-*", "raw"))
		raws = append(raws, m...)
	}
	sort.Strings(raws)
	var table []byte
	for _, p := range raws {
		if b, err := os.ReadFile(p); err == nil {
			table = append(table, b...)
		}
	}
	return table
}
