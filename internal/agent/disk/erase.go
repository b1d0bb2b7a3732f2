package disk

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
)

// MetadataRegion is how much EraseMetadata zeroes at each end of a disk.
//
// The start holds the MBR, the primary GPT (LBA 1 to 33 at 512-byte
// sectors, to 5+ at 4 KiB), and the signatures blkid, the kernel and
// installers look for at the start of a whole-disk volume: LVM (sector
// 1), md 1.1/1.2, bcache, LUKS, ZFS labels L0/L1 (first 512 KiB), and
// the primary superblock of ext2/3/4, XFS, Btrfs (64 KiB), swap, FAT,
// NTFS. The end holds the backup GPT (its header in the last LBA),
// md 0.90/1.0 superblocks (last 64-128 KiB) and ZFS labels L2/L3 (last
// 512 KiB). 8 MiB is generous for all of them.
//
// Filesystems keep more copies in their middle (ext4 and XFS backup
// superblocks, Btrfs mirrors at 64 MiB and 256 GiB); nothing detects a
// filesystem from those without being told to recover one, so they are
// left, as wipefs leaves them.
const MetadataRegion = 8 << 20

// A filesystem or LVM/md member inside a partition has its signatures
// at the partition's ends, which a new table with the same layout would
// bring back to light: EraseMetadata zeroes MetadataRegion at each end of
// every partition the disk's table lists too, as Ironic's metadata erase
// does (the same signatures, the same 8 MiB).

// Erased is what an erase did to a disk and what it read back after it:
// an erase counts only with its read-back (the controller refuses a
// report without one), since a write the disk acknowledged and lost, or
// a drive whose format left data behind, would otherwise pass for clean.
type Erased struct {
	// How says how a full erase erased the disk (one of the ErasedBy
	// values, with a note where it had to fall back); "" for a metadata
	// erase.
	How string
	// VerifiedBytes is how many bytes were read back as zeros after the
	// erase (past the page cache on a block device): the metadata
	// regions, and for a full erase the sampled blocks too.
	VerifiedBytes int64
	// SampledBlocks is how many blocks of SampleBlock bytes at random
	// offsets across the whole disk a full erase read back as zeros.
	SampledBlocks int
}

// A full erase reads back Samples blocks of SampleBlock bytes at random
// offsets besides the disk's ends: a drive that acknowledged the zeroing
// and did not do it, or whose format left data readable, is caught with
// near certainty unless it kept all but a sliver, for a fraction of a
// second of reading (8 MiB, 128 seeks on a spinning disk).
const (
	Samples     = 128
	SampleBlock = 64 << 10
)

// EraseMetadata removes the partition tables and the filesystem, RAID
// and volume manager signatures of dev (a block device or a file), so
// the next tenant's tools see a blank disk. It zeroes the first and last
// MetadataRegion bytes of the disk and of each partition its table
// lists, syncs, and reads the regions back to check they are zeros (past
// the page cache on a block device). The rest of the disk is left alone:
// use EraseFull to overwrite the data.
func EraseMetadata(ctx context.Context, dev string) (Erased, error) {
	f, size, err := openRW(dev)
	if err != nil {
		return Erased{}, err
	}
	defer f.Close()

	regions := []extent{{0, min(MetadataRegion, size)}, {max(0, size-MetadataRegion), size}}
	for _, p := range partitionExtents(f, size) {
		regions = append(regions, extent{p.start, min(p.end, p.start+MetadataRegion)}, extent{max(p.start, p.end-MetadataRegion), p.end})
	}
	regions = mergeExtents(regions)

	zeros := make([]byte, 1<<20)
	for _, r := range regions {
		if err := writeZeros(ctx, f, dev, r, zeros, nil); err != nil {
			return Erased{}, err
		}
	}
	if err := f.Sync(); err != nil {
		return Erased{}, diskError(dev, "sync", err)
	}
	if isBlockDevice(f) {
		_ = flushBuffers(f) // best effort: without it the check may read the cache
	}
	var e Erased
	buf := make([]byte, len(zeros))
	for _, r := range regions {
		if err := readZeros(ctx, f, dev, r, buf); err != nil {
			return Erased{}, err
		}
		e.VerifiedBytes += r.end - r.start
	}
	if isBlockDevice(f) {
		_ = rereadPartitions(f) // the kernel forgets the old partitions
	}
	return e, nil
}

// readZeros reads r of f (dev) with buf and fails unless it is all zeros.
func readZeros(ctx context.Context, f *os.File, dev string, r extent, buf []byte) error {
	for off := r.start; off < r.end; off += int64(len(buf)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(int64(len(buf)), r.end-off)
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return diskError(dev, "read back", err)
		}
		for _, b := range buf[:n] {
			if b != 0 {
				return machineErr(CodeEraseVerify, nil, "disk %s: bytes at %d..%d are not zero after erasing them", dev, off, off+n)
			}
		}
	}
	return nil
}

// sampleZeros reads Samples blocks of SampleBlock bytes of f (dev, size
// bytes) at random offsets, 4 KiB aligned, past the page cache on a block
// device, and fails unless all are zeros. It returns the bytes and blocks
// read.
func sampleZeros(ctx context.Context, f *os.File, dev string, size int64) (int64, int, error) {
	if isBlockDevice(f) {
		_ = flushBuffers(f) // best effort: without it the samples may read the cache
	}
	buf := make([]byte, SampleBlock)
	var read int64
	for range Samples {
		var off int64
		if size > SampleBlock {
			off = rand.Int64N(size-SampleBlock+1) &^ 4095
		}
		r := extent{off, min(size, off+SampleBlock)}
		if err := readZeros(ctx, f, dev, r, buf); err != nil {
			return 0, 0, err
		}
		read += r.end - r.start
	}
	return read, Samples, nil
}

// How EraseFull erased a disk, for the command's report.
const (
	ErasedByNVMeCrypto   = "NVMe format, cryptographic erase"
	ErasedByNVMeUserData = "NVMe format, user data erase"
	ErasedByZeroOut      = "discarded, then zeroed"
	ErasedByOverwrite    = "overwritten with zeros"
)

// EraseFull erases every byte of dev and says how (Erased.How, one of the
// ErasedBy values) and what it read back. An NVMe namespace whose drive
// can format is erased by the drive (Format NVM, cryptographic where
// offered): that also reaches the blocks no overwrite can (spare and
// remapped ones). What a format leaves is up to the drive (zeros, ones,
// or after a cryptographic erase whatever the old data decrypts to under
// the new key), so the metadata regions are then zeroed and checked as
// EraseMetadata does, and blocks are sampled across the disk: where they
// are not zeros the namespace is zeroed as well, so the next tenant reads
// a blank disk. Any other block device is discarded (freeing flash; best
// effort) and then zeroed with BLKZEROOUT, which lets the device do the
// work where it can; where the ioctls are not supported, and on files,
// zeros are written. Either way the disk's ends and Samples blocks are
// then read back as zeros. progress, if not nil, is called with bytes
// done and total after each step.
func EraseFull(ctx context.Context, dev string, progress func(done, total int64)) (Erased, error) {
	f, size, err := openRW(dev)
	if err != nil {
		return Erased{}, err
	}
	if progress == nil {
		progress = func(int64, int64) {}
	}
	if !isBlockDevice(f) {
		defer f.Close()
		return zeroAll(ctx, f, dev, size, ErasedByOverwrite, progress)
	}
	how, err := nvmeFormat(f)
	// Through a new descriptor from here: after a format the kernel
	// re-read the namespace.
	f.Close()
	note := ""
	switch {
	case err == nil:
		progress(size, size)
		e, err := EraseMetadata(ctx, dev)
		if err != nil {
			return Erased{}, err
		}
		f, _, err := openRW(dev)
		if err != nil {
			return Erased{}, err
		}
		read, n, err := sampleZeros(ctx, f, dev, size)
		f.Close()
		if err == nil {
			e.How, e.VerifiedBytes, e.SampledBlocks = how, e.VerifiedBytes+read, n
			return e, nil
		}
		if CodeOf(err) != CodeEraseVerify {
			return Erased{}, err
		}
		// The drive formatted and reads back data: zero it too.
		note = " (after " + how + ", which left data readable)"
	case !errors.Is(err, errNotNVMe):
		// A drive that announced Format NVM and failed it: zeroing still
		// erases what the host can address. The report says so.
		note = " (NVMe format failed: " + err.Error() + ")"
	}
	f, size, err = openRW(dev)
	if err != nil {
		return Erased{}, err
	}
	defer f.Close()
	_ = discard(f, 0, size)
	done, err := zeroOutAll(ctx, f, dev, size, progress)
	if err != nil {
		return Erased{}, err
	}
	if !done {
		// BLKZEROOUT is not supported here: write the zeros.
		return zeroAll(ctx, f, dev, size, ErasedByOverwrite+note, progress)
	}
	if err := f.Sync(); err != nil {
		return Erased{}, diskError(dev, "sync", err)
	}
	return verifyZeroed(ctx, f, dev, size, ErasedByZeroOut+note)
}

// zeroAll overwrites all of f (dev) with zeros and reads it back as
// verifyZeroed does.
func zeroAll(ctx context.Context, f *os.File, dev string, size int64, how string, progress func(done, total int64)) (Erased, error) {
	if err := writeZeros(ctx, f, dev, extent{0, size}, make([]byte, defaultChunk), progress); err != nil {
		return Erased{}, err
	}
	if err := f.Sync(); err != nil {
		return Erased{}, diskError(dev, "sync", err)
	}
	return verifyZeroed(ctx, f, dev, size, how)
}

// verifyZeroed reads back the ends of a zeroed disk (MetadataRegion each)
// and Samples blocks across it, past the page cache.
func verifyZeroed(ctx context.Context, f *os.File, dev string, size int64, how string) (Erased, error) {
	if isBlockDevice(f) {
		_ = flushBuffers(f)
	}
	e := Erased{How: how}
	buf := make([]byte, 1<<20)
	for _, r := range mergeExtents([]extent{{0, min(MetadataRegion, size)}, {max(0, size-MetadataRegion), size}}) {
		if err := readZeros(ctx, f, dev, r, buf); err != nil {
			return Erased{}, err
		}
		e.VerifiedBytes += r.end - r.start
	}
	read, n, err := sampleZeros(ctx, f, dev, size)
	if err != nil {
		return Erased{}, err
	}
	e.VerifiedBytes += read
	e.SampledBlocks = n
	return e, nil
}

// zeroOutAll zeroes a block device with BLKZEROOUT in 1 GiB steps (each
// ioctl runs to completion in the kernel, so this is how often the
// context and progress are looked at). done is false when the first
// step is refused: the ioctl is not supported here.
func zeroOutAll(ctx context.Context, f *os.File, dev string, size int64, progress func(done, total int64)) (done bool, err error) {
	const step = 1 << 30
	for off := int64(0); off < size; off += step {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if err := zeroOut(f, off, min(step, size-off)); err != nil {
			if off == 0 {
				return false, nil
			}
			return false, diskError(dev, "zero out", err)
		}
		progress(min(off+step, size), size)
	}
	return true, nil
}

func writeZeros(ctx context.Context, f *os.File, dev string, r extent, zeros []byte, progress func(done, total int64)) error {
	for off := r.start; off < r.end; off += int64(len(zeros)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(int64(len(zeros)), r.end-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return diskError(dev, "write", err)
		}
		if progress != nil {
			progress(off+n, r.end)
		}
	}
	return nil
}

func openRW(dev string) (*os.File, int64, error) {
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return nil, 0, diskError(dev, "open", err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, 0, diskError(dev, "size", err)
	}
	if size == 0 {
		f.Close()
		return nil, 0, machineErr(CodeDiskGone, nil, "disk %s has size 0", dev)
	}
	return f, size, nil
}

func isBlockDevice(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0
}

// mergeExtents sorts rs and joins the ones that touch or overlap.
func mergeExtents(rs []extent) []extent {
	slices.SortFunc(rs, func(a, b extent) int { return int(min(max(a.start-b.start, -1), 1)) })
	var out []extent
	for _, r := range rs {
		if r.start >= r.end {
			continue
		}
		if n := len(out); n > 0 && r.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, r.end)
			continue
		}
		out = append(out, r)
	}
	return out
}
