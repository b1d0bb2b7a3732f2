package disk

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/diskfs/go-diskfs/partition/gpt"
)

// usedDisk makes a disk as a previous tenant leaves it: data everywhere,
// a GPT (by go-diskfs) with two partitions, a FAT-like boot sector in the
// first, an ext4 (by mkfs.ext4 when installed, else its magic) and an md
// 1.0 superblock (at the partition's end) in the second.
func usedDisk(t *testing.T) (path string, before []byte, p2 extent) {
	const size = 96 * mib
	p := writeImage(t, testImage(size), size)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p2 = extent{40 * mib, 80 * mib}
	tbl := &gpt.Table{LogicalSectorSize: 512, PhysicalSectorSize: 512, ProtectiveMBR: true, Partitions: []*gpt.Partition{
		{Index: 1, Start: 2048, End: 20*2048 - 1, Type: gpt.EFISystemPartition, Name: "EFI"},
		{Index: 2, Start: uint64(p2.start / 512), End: uint64(p2.end/512) - 1, Type: gpt.LinuxFilesystem, Name: "data"},
	}}
	if err := tbl.Write(f, size); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		b   []byte
		off int64
	}{
		{[]byte("FAT32   "), mib + 82},
		{[]byte{0x55, 0xaa}, mib + 510},
		{[]byte{0xfc, 0x4e, 0x2b, 0xa9}, p2.end - 8192}, // md 1.0: 8 KiB from the end
	} {
		if _, err := f.WriteAt(w.b, w.off); err != nil {
			t.Fatal(err)
		}
	}
	if mkfs, err := exec.LookPath("mkfs.ext4"); err == nil {
		if out, err := exec.Command(mkfs, "-q", "-F", "-E", "offset="+strconv.FormatInt(p2.start, 10), p, "8M").CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4: %v: %s", err, out)
		}
		blkidReports(t, p, p2.start, `TYPE="ext4"`)
	} else {
		if _, err := f.WriteAt([]byte{0x53, 0xef}, p2.start+1080); err != nil {
			t.Fatal(err)
		}
	}
	before, err = os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, before, p2
}

func TestEraseMetadata(t *testing.T) {
	p, before, p2 := usedDisk(t)
	size := int64(len(before))
	e, err := EraseMetadata(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(p)
	// 8 MiB at both ends of the disk and of each partition, as Ironic's
	// metadata erase (and the README) says.
	zeroed := []extent{
		{0, MetadataRegion}, {size - MetadataRegion, size}, // the disk's ends
		{mib, mib + 8*mib}, {20*mib - 8*mib, 20 * mib}, // the first partition's ends (1 to 20 MiB)
		{p2.start, p2.start + 8*mib}, {p2.end - 8*mib, p2.end}, // the second partition's ends
	}
	inZeroed := func(off int64) bool {
		for _, z := range zeroed {
			if off >= z.start && off < z.end {
				return true
			}
		}
		return false
	}
	for off := int64(0); off < size; off += 4096 {
		blk := after[off : off+4096]
		if inZeroed(off) {
			if !bytes.Equal(blk, make([]byte, 4096)) {
				t.Fatalf("bytes at %d are not zero", off)
			}
		} else if !bytes.Equal(blk, before[off:off+4096]) {
			t.Fatalf("bytes at %d changed, outside the metadata regions", off)
		}
	}
	// Everything it zeroed, it read back (the regions merged).
	var verified int64
	for _, z := range mergeExtents(zeroed) {
		verified += z.end - z.start
	}
	if e != (Erased{VerifiedBytes: verified}) {
		t.Errorf("read back %+v, want %d bytes", e, verified)
	}
	if g, err := readGPT(bytes.NewReader(after)); g != nil || err != nil {
		t.Fatalf("a GPT is left: %v", err)
	}
	f, _ := os.Open(p)
	defer f.Close()
	if _, err := gpt.Read(f, 512, 512); err == nil {
		t.Fatal("go-diskfs still reads a GPT")
	}
	// blkid finds nothing on the disk or where the partition was.
	if blkid, err := exec.LookPath("blkid"); err == nil {
		for _, off := range []int64{0, p2.start, mib} {
			out, err := exec.Command(blkid, "-p", "-O", strconv.FormatInt(off, 10), p).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("blkid at %d still finds: %s (%v)", off, out, err)
			}
		}
	}
}

func TestEraseMetadataSmallDisk(t *testing.T) {
	// Smaller than the two regions together: all of it is zeroed.
	p := writeImage(t, testImage(3*mib), 3*mib)
	e, err := EraseMetadata(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, make([]byte, 3*mib)) {
		t.Fatal("not all zero")
	}
	if e != (Erased{VerifiedBytes: 3 * mib}) {
		t.Errorf("read back %+v, want the whole 3 MiB", e)
	}
}

func TestEraseFull(t *testing.T) {
	const size = 10*mib + 4096
	p := writeImage(t, testImage(size), size)
	var last, calls int64
	e, err := EraseFull(context.Background(), p, func(done, total int64) {
		if total != size || done < last {
			t.Fatalf("progress %d/%d after %d", done, total, last)
		}
		last, calls = done, calls+1
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, make([]byte, size)) {
		t.Fatal("not all zero")
	}
	if last != size || calls < 3 {
		t.Fatalf("progress ended at %d after %d calls", last, calls)
	}
	// Read back: the whole (small) disk as its two ends, then the samples.
	if want := (Erased{How: ErasedByOverwrite, VerifiedBytes: size + Samples*SampleBlock, SampledBlocks: Samples}); e != want {
		t.Errorf("erased a file: %+v, want %+v", e, want)
	}
}

func TestEraseCanceled(t *testing.T) {
	p := writeImage(t, testImage(4*mib), 4*mib)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := EraseFull(ctx, p, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("EraseFull: %v", err)
	}
	if _, err := EraseMetadata(ctx, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("EraseMetadata: %v", err)
	}
}

func TestEraseMissingDisk(t *testing.T) {
	_, err := EraseMetadata(context.Background(), "/nonexistent/sdz")
	assertErr(t, err, ErrMachine, CodeDiskGone)
	_, err = EraseFull(context.Background(), "/nonexistent/sdz", nil)
	assertErr(t, err, ErrMachine, CodeDiskGone)
}

func TestMergeExtents(t *testing.T) {
	got := mergeExtents([]extent{{10, 20}, {0, 5}, {5, 8}, {15, 30}, {40, 40}, {50, 60}})
	want := []extent{{0, 8}, {10, 30}, {50, 60}}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%v", got)
		}
	}
}

// A disk that does not read back zeros where it was zeroed (it lost the
// writes, or its format left data) fails the erase: the samples across
// it, and the regions, must all read as zeros. Where they do, they are
// counted.
func TestEraseReadBack(t *testing.T) {
	const size = 4 * mib
	p := writeImage(t, testImage(size), size)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	if _, _, err := sampleZeros(ctx, f, p, size); CodeOf(err) != CodeEraseVerify {
		t.Fatalf("samples of a disk full of data: %v, want %s", err, CodeEraseVerify)
	}
	if err := readZeros(ctx, f, p, extent{size - mib, size}, make([]byte, 64<<10)); CodeOf(err) != CodeEraseVerify {
		t.Fatalf("a region of data: %v, want %s", err, CodeEraseVerify)
	}
	z := writeImage(t, make([]byte, size), size)
	zf, err := os.Open(z)
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	read, n, err := sampleZeros(ctx, zf, z, size)
	if err != nil || n != Samples || read != Samples*SampleBlock {
		t.Fatalf("samples of a zeroed disk: %d bytes, %d blocks, %v", read, n, err)
	}
	// A disk smaller than a sample block is read whole each time.
	read, _, err = sampleZeros(ctx, zf, z, 4096)
	if err != nil || read != Samples*4096 {
		t.Fatalf("samples of a 4 KiB disk: %d bytes, %v", read, err)
	}
}
