package disk

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/diskfs/go-diskfs/partition/mbr"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// The tables in these tests are made and read back with go-diskfs, an
// implementation independent of ours, and cross-checked with util-linux
// (partx, blkid) where installed.

const mib = 1 << 20

// gptImage writes an image of size bytes with a GPT made by go-diskfs
// (protective MBR, an ESP and a root partition) and returns its bytes.
func gptImage(t testing.TB, size int64) []byte {
	t.Helper()
	p := newDisk(t, size)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Boot code in the MBR, which must survive.
	if _, err := f.WriteAt([]byte("BOOTCODE"), 0); err != nil {
		t.Fatal(err)
	}
	tbl := &gpt.Table{
		LogicalSectorSize: 512, PhysicalSectorSize: 512, ProtectiveMBR: true,
		Partitions: []*gpt.Partition{
			{Index: 1, Start: 2048, End: 4*2048 - 1, Type: gpt.EFISystemPartition, Name: "EFI"},
			{Index: 2, Start: 4 * 2048, End: uint64(size/512) - 2048 - 1, Type: gpt.LinuxFilesystem, Name: "root"},
		},
	}
	if err := tbl.Write(f, size); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeImage lays img at the start of a disk of size bytes.
func writeImage(t testing.TB, img []byte, size int64) string {
	t.Helper()
	p := newDisk(t, size)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(img, 0); err != nil {
		t.Fatal(err)
	}
	return p
}

// testNetworkData is the network_data.json testISO carries, which must
// survive on the partition.
const testNetworkData = `{"links":[{"id":"eth0","type":"phy","ethernet_mac_address":"52:54:00:12:34:56"}],"networks":[{"id":"network0","type":"ipv4_dhcp","link":"eth0"}],"services":[]}`

func testISO(t testing.TB) []byte {
	var buf bytes.Buffer
	if err := configdrive.Build(&buf, configdrive.Drive{UUID: "8f1d2b4e-0000-4000-8000-000000000001", Name: "web-1", Hostname: "web-1",
		UserData: []byte("#cloud-config\n"), NetworkData: []byte(testNetworkData)}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readGPTWithDiskfs(t *testing.T, p string) (*gpt.Table, int64) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	tbl, err := gpt.Read(f, 512, 512)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Verify(f, uint64(fi.Size())); err != nil {
		t.Fatalf("backup GPT not at the disk's end: %v", err)
	}
	return tbl, fi.Size()
}

func TestAppendConfigDriveGPT(t *testing.T) {
	img := gptImage(t, 64*mib)
	for _, tc := range []struct {
		name string
		disk int64
		want int64 // partition size
	}{
		{"roomy disk", 160 * mib, configDriveSize},
		// The image's old backup GPT lies inside the new partition.
		{"tight disk", 64*mib + 3*mib, mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeImage(t, img, tc.disk)
			iso := testISO(t)
			if err := AppendConfigDrive(context.Background(), p, iso); err != nil {
				t.Fatal(err)
			}
			tbl, size := readGPTWithDiskfs(t, p)
			if len(tbl.Partitions) != 3 {
				t.Fatalf("%d partitions", len(tbl.Partitions))
			}
			for i, name := range []string{"EFI", "root"} {
				if tbl.Partitions[i].Name != name || tbl.Partitions[i].Start != uint64(2048*[]int{1, 4}[i]) {
					t.Fatalf("partition %d changed: %+v", i+1, tbl.Partitions[i])
				}
			}
			cd := tbl.Partitions[2]
			start, end := int64(cd.Start)*512, int64(cd.End+1)*512
			if cd.Name != ConfigDriveLabel || cd.Type != gpt.LinuxFilesystem || end-start != tc.want ||
				start%mib != 0 || end > size-33*512 || end < size-mib-33*512 {
				t.Fatalf("config drive partition %+v (bytes %d..%d of %d)", cd, start, end, size)
			}
			disk, _ := os.ReadFile(p)
			if !bytes.Equal(disk[start:start+int64(len(iso))], iso) {
				t.Fatal("the partition does not hold the ISO")
			}
			if !bytes.Equal(disk[:446], img[:446]) || string(disk[:8]) != "BOOTCODE" {
				t.Fatal("MBR boot code lost")
			}
			// Everything of the image but its table is as it was.
			if !bytes.Equal(disk[1024+16*1024:4*mib], img[1024+16*1024:4*mib]) {
				t.Fatal("the image's first partition changed")
			}
			// The backup header lies in the last LBA; the old one in
			// the middle is gone (or overwritten by the ISO's zeros).
			if string(disk[size-512:size-504]) != gptSignature {
				t.Fatal("no backup header in the last LBA")
			}
			if string(disk[64*mib-512:64*mib-504]) == gptSignature {
				t.Fatal("the image's old backup header is still there")
			}
			// The protective MBR covers the grown disk.
			_, entries, _, _ := readMBR(bytes.NewReader(disk))
			if entries[0].typ != 0xee || int64(entries[0].count) != size/512-1 {
				t.Fatalf("protective MBR entry %+v", entries[0])
			}

			// The backup copy is right on its own: break the primary
			// and read again.
			broken := bytes.Clone(disk)
			copy(broken[512:520], "XXXXXXXX")
			bp := writeImage(t, broken, size)
			f, _ := os.Open(bp)
			defer f.Close()
			bt, err := gpt.Read(f, 512, 512)
			if err != nil || !bt.RecoveredFromBackup || len(bt.Partitions) != 3 || bt.Partitions[2].Name != ConfigDriveLabel || bt.Partitions[2].Start != cd.Start {
				t.Fatalf("from the backup: %v, %+v", err, bt)
			}

			// The ISO is a config drive configdrive can read.
			d, err := configdrive.Parse(bytes.NewReader(disk[start:end]))
			if err != nil || d.Hostname != "web-1" || string(d.NetworkData) != testNetworkData {
				t.Fatalf("reading the drive back: %+v, %v", d, err)
			}
			blkidReports(t, p, start, `LABEL="config-2"`, `TYPE="iso9660"`)
			partxReports(t, p, "config-2", strconv.FormatInt(start/512, 10))
		})
	}
}

// blkidReports checks util-linux's blkid sees wants in the probe of the
// file at offset.
func blkidReports(t *testing.T, p string, offset int64, wants ...string) {
	t.Helper()
	blkid, err := exec.LookPath("blkid")
	if err != nil {
		t.Log("blkid (util-linux) not installed: cross-check not run")
		return
	}
	out, err := exec.Command(blkid, "-p", "-O", strconv.FormatInt(offset, 10), p).CombinedOutput()
	if err != nil {
		t.Fatalf("blkid: %v: %s", err, out)
	}
	for _, w := range wants {
		if !strings.Contains(string(out), w) {
			t.Fatalf("blkid at %d: %s; want %s", offset, out, w)
		}
	}
}

func partxReports(t *testing.T, p string, wants ...string) {
	t.Helper()
	partx, err := exec.LookPath("partx")
	if err != nil {
		t.Log("partx (util-linux) not installed: cross-check not run")
		return
	}
	out, err := exec.Command(partx, "--show", "-o", "NR,START,NAME", p).CombinedOutput()
	if err != nil {
		t.Fatalf("partx: %v: %s", err, out)
	}
	for _, w := range wants {
		if !strings.Contains(string(out), w) {
			t.Fatalf("partx: %s; want %s", out, w)
		}
	}
}

func mbrImage(t testing.TB, size int64, parts int) []byte {
	t.Helper()
	p := newDisk(t, size)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tbl := &mbr.Table{LogicalSectorSize: 512, PhysicalSectorSize: 512}
	for i := range parts {
		tbl.Partitions = append(tbl.Partitions, &mbr.Partition{Type: mbr.Linux, Start: uint32(2048 * (1 + 4*i)), Size: 4 * 2048, Bootable: i == 0})
	}
	if err := tbl.Write(f, size); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	return b
}

func TestAppendConfigDriveMBR(t *testing.T) {
	p := writeImage(t, mbrImage(t, 32*mib, 1), 256*mib)
	iso := testISO(t)
	if err := AppendConfigDrive(context.Background(), p, iso); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(p)
	defer f.Close()
	tbl, err := mbr.Read(f, 512, 512)
	if err != nil {
		t.Fatal(err)
	}
	var got []*mbr.Partition
	for _, pt := range tbl.Partitions {
		if pt.Type != mbr.Empty {
			got = append(got, pt)
		}
	}
	if len(got) != 2 || got[0].Start != 2048 || !got[0].Bootable || got[1].Type != mbr.Linux ||
		int64(got[1].Start)*512 != 256*mib-configDriveSize || int64(got[1].Size)*512 != configDriveSize {
		t.Fatalf("partitions %+v %+v", got[0], got[len(got)-1])
	}
	start := int64(got[1].Start) * 512
	d, err := configdrive.Parse(io.NewSectionReader(f, start, configDriveSize))
	if err != nil || d.Hostname != "web-1" || string(d.NetworkData) != testNetworkData {
		t.Fatalf("reading the drive back: %+v, %v", d, err)
	}
	blkidReports(t, p, start, `LABEL="config-2"`, `TYPE="iso9660"`)
	partxReports(t, p, strconv.Itoa(int(got[1].Start)))
}

func TestAppendConfigDriveRefuses(t *testing.T) {
	iso := testISO(t)
	noTable := writeImage(t, testImage(4*mib), 128*mib)
	full := writeImage(t, mbrImage(t, 64*mib, 4), 128*mib)
	noRoom := writeImage(t, gptImage(t, 64*mib), 64*mib)
	corrupt := gptImage(t, 64*mib)
	corrupt[512+40]++ // first usable LBA, under the header CRC
	for _, tc := range []struct {
		name, path, want string
	}{
		{"no partition table", noTable, "no partition table"},
		{"four primaries", full, "all four primary partitions"},
		{"no room", noRoom, "no room"},
		{"corrupt GPT", writeImage(t, corrupt, 128*mib), "GPT is corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(tc.path)
			err := AppendConfigDrive(context.Background(), tc.path, iso)
			assertErr(t, err, ErrInput, CodePartitionTable)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want %q", err, tc.want)
			}
			after, _ := os.ReadFile(tc.path)
			if !bytes.Equal(before, after) {
				t.Fatal("a refused append changed the disk")
			}
		})
	}
}
