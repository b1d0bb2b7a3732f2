package disk

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const gib = 1 << 30

var inventory = []Disk{
	{Name: "sda", Size: 480103981056, Model: "SAMSUNG MZ7LH480", Serial: "S45NNA0M123456", WWN: "naa.5002538e40a1b2c3", Vendor: "ATA", Type: "disk"},
	{Name: "sdb", Size: 4000787030016, Model: "ST4000NM0035-1V4", Serial: "ZC1ABCDE", WWN: "naa.5000c500a1b2c3d4", Vendor: "ATA", Rotational: true, Type: "disk"},
	{Name: "nvme0n1", Size: 960197124096, Model: "SAMSUNG MZQLB960HAJR-00007", Serial: "S437NA0M700001", WWN: "eui.0025388b71b2c3d4", Type: "disk"},
	{Name: "sdc", Size: 31914983424, Model: "Cruzer Blade", Serial: "4C530001", Vendor: "SanDisk", Removable: true, Type: "disk"},
	{Name: "sdd", Size: 64 << 20, Model: "Virtual Floppy", Vendor: "iDRAC", Type: "disk"},
}

func TestChooseRootDisk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hints Hints
		want  string
	}{
		{"default: smallest non-removable of at least 4 GiB", Hints{}, "sda"},
		{"size exact, rounded down", Hints{Size: SizeHint{GiB: 447}}, "sda"},
		{"size at least", Hints{Size: SizeHint{GiB: 500, AtLeast: true}}, "nvme0n1"},
		{"serial, case and blanks", Hints{Serial: "  zc1abcde "}, "sdb"},
		{"wwn as udev spells it", Hints{WWN: "0x5000C500A1B2C3D4"}, "sdb"},
		{"wwn as sysfs spells it", Hints{WWN: "eui.0025388b71b2c3d4"}, "nvme0n1"},
		{"model", Hints{Model: "samsung mzqlb960hajr-00007"}, "nvme0n1"},
		{"vendor: smallest of several", Hints{Vendor: "ata"}, "sda"},
		{"name with /dev", Hints{Name: "/dev/sdb"}, "sdb"},
		{"name without", Hints{Name: "nvme0n1"}, "nvme0n1"},
		{"hints may pick a removable disk", Hints{Vendor: "SanDisk"}, "sdc"},
		{"all hints together", Hints{Vendor: "ATA", Size: SizeHint{GiB: 1000, AtLeast: true}, Name: "sdb"}, "sdb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ChooseRootDisk(inventory, tc.hints)
			if err != nil {
				t.Fatal(err)
			}
			if d.Name != tc.want {
				t.Fatalf("chose %s, want %s", d.Name, tc.want)
			}
		})
	}
}

func TestChooseRootDiskTieIsStable(t *testing.T) {
	disks := []Disk{{Name: "sdb", Size: 10 * gib}, {Name: "sda", Size: 10 * gib}}
	for range 3 {
		if d, _ := ChooseRootDisk(disks, Hints{}); d.Name != "sda" {
			t.Fatalf("chose %s", d.Name)
		}
		disks[0], disks[1] = disks[1], disks[0]
	}
}

func TestChooseRootDiskNoFit(t *testing.T) {
	_, err := ChooseRootDisk(inventory, Hints{Serial: "NOPE", Vendor: "ATA"})
	assertErr(t, err, ErrInput, CodeNoRootDisk)
	for _, want := range []string{
		`sda (447.1 GiB (480103981056 bytes), model "SAMSUNG MZ7LH480", serial "S45NNA0M123456", wwn "naa.5002538e40a1b2c3"): serial "S45NNA0M123456", not "NOPE"`,
		`nvme0n1 (`, `sdc (`, "removable", `sdd (`, `vendor "iDRAC", not "ATA"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	// No hints and nothing usable: the machine's problem, not the user's.
	_, err = ChooseRootDisk(inventory[3:], Hints{})
	assertErr(t, err, ErrMachine, CodeNoRootDisk)
	if !strings.Contains(err.Error(), "sdc (") || !strings.Contains(err.Error(), ": removable") || !strings.Contains(err.Error(), "sdd (64.0 MiB") {
		t.Errorf("error does not say why each disk was rejected: %v", err)
	}
	_, err = ChooseRootDisk(nil, Hints{})
	assertErr(t, err, ErrMachine, CodeNoRootDisk)
	if !strings.Contains(err.Error(), "no disks found") {
		t.Errorf("error: %v", err)
	}
}

func TestParseSizeHint(t *testing.T) {
	for in, want := range map[string]SizeHint{
		"100": {GiB: 100}, " >= 100 ": {GiB: 100, AtLeast: true}, ">=8": {GiB: 8, AtLeast: true},
	} {
		got, err := ParseSizeHint(in)
		if err != nil || got != want {
			t.Errorf("ParseSizeHint(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5", "> 10", "<= 10", "ten"} {
		if _, err := ParseSizeHint(in); err == nil {
			t.Errorf("ParseSizeHint(%q): no error", in)
		}
	}
}

// fakeSys builds a /sys/block tree as the kernel lays it out for SATA,
// NVMe, USB and virtio disks, and for devices that are not disks.
func fakeSys(t *testing.T) string {
	root := t.TempDir()
	write := func(path, content string) {
		p := filepath.Join(root, "block", path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dev := func(name, sectors, rot, rem string) {
		write(name+"/size", sectors+"\n")
		write(name+"/queue/rotational", rot+"\n")
		write(name+"/removable", rem+"\n")
	}
	// SATA SSD behind libata: serial only in VPD page 0x80.
	dev("sda", "937703088", "0", "0")
	write("sda/device/model", "SAMSUNG MZ7LH480\n")
	write("sda/device/vendor", "ATA     \n")
	write("sda/device/type", "0\n")
	write("sda/device/wwid", "naa.5002538e40a1b2c3\n")
	write("sda/device/vpd_pg80", "\x00\x80\x00\x14      S45NNA0M123456")
	// A SATA disk without a WWN: sysfs's wwid is a T10 id.
	dev("sdb", "7814037168", "1", "0")
	write("sdb/device/model", "ST4000NM0035-1V4\n")
	write("sdb/device/type", "0\n")
	write("sdb/device/wwid", "t10.ATA     ST4000NM0035-1V4                        ZC1ABCDE\n")
	// NVMe: serial and model on the controller, wwid on the namespace.
	dev("nvme0n1", "1875385008", "0", "0")
	write("nvme0n1/wwid", "eui.0025388b71b2c3d4\n")
	write("nvme0n1/device/model", "SAMSUNG MZQLB960HAJR-00007               \n")
	write("nvme0n1/device/serial", "S437NA0M700001      \n")
	// USB stick.
	dev("sdc", "62333952", "0", "1")
	write("sdc/device/model", "Cruzer Blade\n")
	write("sdc/device/vendor", "SanDisk\n")
	write("sdc/device/type", "0\n")
	// virtio: no model at all.
	dev("vda", "41943040", "1", "0")
	write("vda/device/serial", "\n")
	// Not disks.
	dev("sr0", "2097151", "1", "1")
	write("sr0/device/type", "5\n")
	dev("sde", "2097152", "1", "0") // a SCSI CD-ROM that is not called sr
	write("sde/device/type", "5\n")
	for _, n := range []string{"loop0", "ram0", "zram0", "dm-0", "md127", "nbd0"} {
		dev(n, "1048576", "0", "0")
	}
	dev("sdf", "0", "0", "1") // an empty card reader slot
	return root
}

func TestListDisks(t *testing.T) {
	got, err := ListDisks(fakeSys(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []Disk{
		{Name: "nvme0n1", Size: 1875385008 * 512, Model: "SAMSUNG MZQLB960HAJR-00007", Serial: "S437NA0M700001", WWN: "eui.0025388b71b2c3d4", Type: "disk"},
		{Name: "sda", Size: 937703088 * 512, Model: "SAMSUNG MZ7LH480", Vendor: "ATA", Serial: "S45NNA0M123456", WWN: "naa.5002538e40a1b2c3", Type: "disk"},
		{Name: "sdb", Size: 7814037168 * 512, Model: "ST4000NM0035-1V4", Rotational: true, Type: "disk"},
		{Name: "sdc", Size: 62333952 * 512, Model: "Cruzer Blade", Vendor: "SanDisk", Removable: true, Type: "disk"},
		{Name: "vda", Size: 41943040 * 512, Rotational: true, Type: "disk"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	// And the inventory feeds the choice: the 20 GiB virtio disk.
	if d, err := ChooseRootDisk(got, Hints{}); err != nil || d.Path() != "/dev/vda" {
		t.Fatalf("chose %+v, %v", d, err)
	}
}

func TestListDisksNoSysfs(t *testing.T) {
	_, err := ListDisks(filepath.Join(t.TempDir(), "nope"))
	assertErr(t, err, ErrMachine, CodeInventory)
}
