package agent

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// SMBIOS structures laid out as DSP0134 (3.x) gives them: a 4-byte header
// (type, length of the formatted area, handle), the formatted area, then
// the strings, each NUL-terminated, the set ending with a second NUL
// (two NULs alone when there are none).

func smbiosStruct(typ byte, handle uint16, formatted []byte, strs ...string) []byte {
	b := []byte{typ, byte(4 + len(formatted)), 0, 0}
	binary.LittleEndian.PutUint16(b[2:], handle)
	b = append(b, formatted...)
	if len(strs) == 0 {
		return append(b, 0, 0)
	}
	for _, s := range strs {
		b = append(append(b, s...), 0)
	}
	return append(b, 0)
}

// memoryArray is a type 16 Physical Memory Array of SMBIOS 2.7+ (length
// 17h): location system board (03h), use, no error correction, maximum
// capacity, no error information, devices.
func memoryArray(handle uint16, use byte, devices uint16) []byte {
	f := make([]byte, 0x17-4)
	f[0x04-4], f[0x05-4], f[0x06-4] = 0x03, use, 0x03
	binary.LittleEndian.PutUint32(f[0x07-4:], 0x80000000) // use Extended Maximum Capacity
	binary.LittleEndian.PutUint16(f[0x0b-4:], 0xfffe)
	binary.LittleEndian.PutUint16(f[0x0d-4:], devices)
	binary.LittleEndian.PutUint64(f[0x0f-4:], 2<<40)
	return smbiosStruct(smbiosMemoryArray, handle, f)
}

// memoryDevice is a type 17 Memory Device whose formatted area is length
// bytes long (15h for SMBIOS 2.1, 22h for 2.7, 28h for 2.8 as QEMU writes
// it, 54h for 3.2+), in array, with the Size word size and, where the
// length has it, the Extended Size dword ext. Its strings are the device
// and bank locators, manufacturer, serial, asset tag and part number.
func memoryDevice(handle, array uint16, length int, size uint16, ext uint32, locator string) []byte {
	f := make([]byte, length-4)
	put16 := func(off int, v uint16) { binary.LittleEndian.PutUint16(f[off-4:], v) }
	put16(0x04, array)
	put16(0x06, 0xfffe) // no error information
	put16(0x08, 72)     // total width (ECC)
	put16(0x0a, 64)     // data width
	put16(0x0c, size)
	f[0x0e-4] = 0x09 // DIMM
	f[0x10-4], f[0x11-4] = 1, 2
	f[0x12-4] = 0x1a    // DDR4
	put16(0x13, 0x0080) // synchronous
	strs := []string{locator, "BANK 0"}
	if length >= 0x1b {
		put16(0x15, 3200)
		f[0x17-4], f[0x18-4], f[0x19-4], f[0x1a-4] = 3, 4, 5, 6
		strs = append(strs, "Samsung", "0x1234ABCD", "Asset", "M393A4K40DB3-CWE")
	}
	if length >= 0x20 {
		binary.LittleEndian.PutUint32(f[0x1c-4:], ext)
	}
	return smbiosStruct(smbiosMemoryDevice, handle, f, strs...)
}

func smbiosTableOf(structs ...[]byte) []byte {
	t := bytes.Join(structs, nil)
	return append(t, smbiosStruct(smbiosEndOfTable, 0xfeff, nil)...)
}

func TestInstalledMemory(t *testing.T) {
	const mib, gib = int64(1) << 20, int64(1) << 30
	bios := smbiosStruct(0, 0x0000, make([]byte, 0x18-4), "SeaBIOS", "1.16.2-debian-1.16.2-1", "04/01/2014")
	system := smbiosStruct(1, 0x0100, make([]byte, 0x1b-4), "QEMU", "Standard PC (i440FX + PIIX, 1996)", "pc-i440fx-7.2")
	for _, tc := range []struct {
		name  string
		table []byte
		want  int64
	}{
		// QEMU's tables for -m 512: one system memory array, one DIMM
		// of 512 MiB (Size 0200h, MiB granularity), SMBIOS 2.8 lengths.
		{"qemu -m 512", smbiosTableOf(bios, system, memoryArray(0x1000, smbiosUseSystemRAM, 1),
			memoryDevice(0x1100, 0x1000, 0x28, 0x0200, 0, "DIMM 0")), 512 * mib},
		// A server: two 64 GiB modules, whose size is 7FFFh with the MiB
		// in Extended Size (32 GiB and more), one of 16 GiB, an empty
		// socket (0: no module installed) and one of unknown size (FFFFh).
		{"extended size, empty and unknown sockets", smbiosTableOf(memoryArray(0x1000, smbiosUseSystemRAM, 5),
			memoryDevice(0x1100, 0x1000, 0x28, smbiosSizeExtended, 65536, "DIMM_A1"),
			memoryDevice(0x1101, 0x1000, 0x28, smbiosSizeExtended, 65536, "DIMM_A2"),
			memoryDevice(0x1102, 0x1000, 0x28, 16384, 0, "DIMM_B1"),
			memoryDevice(0x1103, 0x1000, 0x28, smbiosSizeNone, 0, "DIMM_B2"),
			memoryDevice(0x1104, 0x1000, 0x28, smbiosSizeUnknown, 0, "DIMM_C1")), 144 * gib},
		// Extended Size's bit 31 is reserved: not part of the size.
		{"extended size reserved bit", smbiosTableOf(memoryArray(0x1000, smbiosUseSystemRAM, 1),
			memoryDevice(0x1100, 0x1000, 0x54, smbiosSizeExtended, 0x80000000|32768, "CPU0_DIMM_A0")), 32 * gib},
		// 7FFFh in a structure too short for Extended Size (SMBIOS 2.6):
		// the size cannot be known.
		{"extended size in a short structure", smbiosTableOf(memoryDevice(0x1100, 0xfffe, 0x1c, smbiosSizeExtended, 0, "DIMM 0")), 0},
		// Bit 15 set: KiB granularity (an old board's 512 KiB module),
		// in an SMBIOS 2.1 structure (15h bytes, no Extended Size).
		{"KiB granularity, SMBIOS 2.1", smbiosTableOf(memoryArray(0x1000, smbiosUseSystemRAM, 2),
			memoryDevice(0x1100, 0x1000, 0x15, smbiosSizeKiB|512, 0, "SIMM0"),
			memoryDevice(0x1101, 0x1000, 0x15, 64, 0, "SIMM1")), 512<<10 + 64*mib},
		// A graphics card's memory array (use 04h, video memory) and a
		// flash array (05h) are not the machine's memory.
		{"video and flash arrays", smbiosTableOf(memoryArray(0x1000, smbiosUseSystemRAM, 1),
			memoryArray(0x1001, 0x04, 1), memoryArray(0x1002, 0x05, 1),
			memoryDevice(0x1100, 0x1000, 0x22, 8192, 0, "DIMM 0"),
			memoryDevice(0x1101, 0x1001, 0x22, 2048, 0, "VRAM"),
			memoryDevice(0x1102, 0x1002, 0x22, 64, 0, "FLASH")), 8 * gib},
		// A device in no listed array (FFFEh) still counts.
		{"device without an array", smbiosTableOf(memoryDevice(0x1100, 0xfffe, 0x22, 4096, 0, "DIMM 0")), 4 * gib},
		{"no memory devices", smbiosTableOf(bios, system), 0},
		{"empty", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := InstalledMemory(tc.table); got != tc.want {
				t.Errorf("InstalledMemory = %d MiB, want %d MiB", got>>20, tc.want>>20)
			}
		})
	}

	// A table cut short yields what precedes the damage, and never reads
	// past its end.
	whole := smbiosTableOf(memoryDevice(0x1100, 0xfffe, 0x28, 1024, 0, "DIMM 0"), memoryDevice(0x1101, 0xfffe, 0x28, 2048, 0, "DIMM 1"))
	first := len(memoryDevice(0x1100, 0xfffe, 0x28, 1024, 0, "DIMM 0"))
	for cut := range len(whole) {
		got := InstalledMemory(whole[:cut])
		want := int64(0)
		if cut >= 0x28 {
			want = 1024 * mib // the first device's formatted area is whole
		}
		if cut >= first+0x28 {
			want = 3072 * mib
		}
		if got != want {
			t.Fatalf("cut at %d: %d MiB, want %d MiB", cut, got>>20, want>>20)
		}
	}
	// A length below the header's own ends the walk.
	if got := InstalledMemory(append([]byte{17, 2, 0, 0, 0, 0}, whole...)); got != 0 {
		t.Errorf("a malformed header: %d", got)
	}
}

func FuzzInstalledMemory(f *testing.F) {
	f.Add(smbiosTableOf(memoryArray(0x1000, smbiosUseSystemRAM, 1), memoryDevice(0x1100, 0x1000, 0x28, 0x0200, 0, "DIMM 0")))
	f.Add([]byte{17, 0x28, 0, 0})
	f.Fuzz(func(t *testing.T, table []byte) {
		if got := InstalledMemory(table); got < 0 {
			t.Fatalf("negative memory %d", got)
		}
	})
}

// The collector reads the whole table (firmware/dmi/tables/DMI) or, on a
// kernel without it, the dmi-sysfs entries of types 16 and 17; without
// either, installed memory is 0 (unknown), and MemTotal is still there.
func TestCollectorReadsInstalledMemory(t *testing.T) {
	array, dimm0, dimm1 := memoryArray(0x1000, smbiosUseSystemRAM, 2),
		memoryDevice(0x1100, 0x1000, 0x28, 0x0400, 0, "DIMM 0"), memoryDevice(0x1101, 0x1000, 0x28, 0x0400, 0, "DIMM 1")
	write := func(t *testing.T, root, p string, b []byte) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		want  int64
	}{
		{"table", map[string][]byte{"firmware/dmi/tables/DMI": smbiosTableOf(array, dimm0, dimm1)}, 2 << 30},
		{"entries", map[string][]byte{
			"firmware/dmi/entries/16-0/raw": array, "firmware/dmi/entries/17-0/raw": dimm0,
			"firmware/dmi/entries/17-1/raw": dimm1, "firmware/dmi/entries/1-0/raw": []byte("junk")}, 2 << 30},
		{"none", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys, proc := t.TempDir(), t.TempDir()
			for p, b := range tc.files {
				write(t, sys, p, b)
			}
			write(t, proc, "meminfo", []byte("MemTotal:        1966080 kB\n"))
			inv := (&Collector{Sys: sys, Proc: proc}).Collect()
			if inv.InstalledMemoryBytes != tc.want || inv.MemoryBytes != 1966080<<10 {
				t.Errorf("installed %d, MemTotal %d; want %d, %d", inv.InstalledMemoryBytes, inv.MemoryBytes, tc.want, 1966080<<10)
			}
		})
	}
}
