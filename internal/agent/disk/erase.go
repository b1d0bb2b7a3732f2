package disk

import (
	"bytes"
	"context"
	"errors"
	"io"
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

// EraseMetadata removes the partition tables and the filesystem, RAID
// and volume manager signatures of dev (a block device or a file), so
// the next tenant's tools see a blank disk. It zeroes the first and last
// MetadataRegion bytes of the disk and of each partition its table
// lists, syncs, and reads the regions back to check
// they are zeros (past the page cache on a block device). The rest of
// the disk is left alone: use EraseFull to overwrite the data.
func EraseMetadata(ctx context.Context, dev string) error {
	f, size, err := openRW(dev)
	if err != nil {
		return err
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
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return diskError(dev, "sync", err)
	}
	if isBlockDevice(f) {
		_ = flushBuffers(f) // best effort: without it the check may read the cache
	}
	buf := make([]byte, len(zeros))
	for _, r := range regions {
		for off := r.start; off < r.end; off += int64(len(buf)) {
			n := min(int64(len(buf)), r.end-off)
			if _, err := f.ReadAt(buf[:n], off); err != nil {
				return diskError(dev, "read back", err)
			}
			if !bytes.Equal(buf[:n], zeros[:n]) {
				return machineErr(CodeEraseVerify, nil, "disk %s: bytes at %d..%d are not zero after erasing them", dev, off, off+n)
			}
		}
	}
	if isBlockDevice(f) {
		_ = rereadPartitions(f) // the kernel forgets the old partitions
	}
	return nil
}

// How EraseFull erased a disk, for the command's report.
const (
	ErasedByNVMeCrypto   = "NVMe format, cryptographic erase"
	ErasedByNVMeUserData = "NVMe format, user data erase"
	ErasedByZeroOut      = "discarded, then zeroed"
	ErasedByOverwrite    = "overwritten with zeros"
)

// EraseFull erases every byte of dev and returns how (one of the
// ErasedBy values). An NVMe namespace whose drive can format is erased
// by the drive (Format NVM, cryptographic where offered): that also
// reaches the blocks no overwrite can (spare and remapped ones). What a
// format leaves is up to the drive (zeros or ones), so the metadata
// regions are then zeroed and checked as EraseMetadata does, and the
// disk reads as blank to the next tenant's tools. Any other block device
// is discarded (freeing flash; best effort) and then zeroed with
// BLKZEROOUT, which lets the device do the work where it can; where the
// ioctls are not supported, and on files, zeros are written. progress,
// if not nil, is called with bytes done and total after each step.
func EraseFull(ctx context.Context, dev string, progress func(done, total int64)) (string, error) {
	f, size, err := openRW(dev)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if progress == nil {
		progress = func(int64, int64) {}
	}
	if !isBlockDevice(f) {
		return ErasedByOverwrite, overwrite(ctx, f, dev, size, progress)
	}
	how, err := nvmeFormat(f)
	note := ""
	switch {
	case err == nil:
		progress(size, size)
		// Through a new descriptor: the kernel re-read the namespace
		// after the format.
		f.Close()
		if err := EraseMetadata(ctx, dev); err != nil {
			return "", err
		}
		return how, nil
	case !errors.Is(err, errNotNVMe):
		// A drive that announced Format NVM and failed it: zeroing still
		// erases what the host can address. The report says so.
		note = " (NVMe format failed: " + err.Error() + ")"
	}
	how = ErasedByZeroOut + note
	_ = discard(f, 0, size)
	done, err := zeroOutAll(ctx, f, dev, size, progress)
	if err != nil {
		return "", err
	}
	if !done {
		// BLKZEROOUT is not supported here: write the zeros.
		return ErasedByOverwrite + note, overwrite(ctx, f, dev, size, progress)
	}
	if err := f.Sync(); err != nil {
		return "", diskError(dev, "sync", err)
	}
	return how, nil
}

func overwrite(ctx context.Context, f *os.File, dev string, size int64, progress func(done, total int64)) error {
	if err := writeZeros(ctx, f, dev, extent{0, size}, make([]byte, defaultChunk), progress); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return diskError(dev, "sync", err)
	}
	return nil
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
