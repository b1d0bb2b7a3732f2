package disk

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"unicode/utf16"
)

// ConfigDriveLabel is the partition name (GPT) and, inside the ISO, the
// volume label cloud-init looks for.
const ConfigDriveLabel = "config-2"

// configDriveSize is the partition's size when the disk has room for it,
// as Ironic makes it: room for a larger drive on a rebuild, and nothing
// next to a disk's size.
const configDriveSize = 64 << 20

const align = 1 << 20 // partitions start and end on MiB boundaries

// Linux filesystem data, 0FC63DAF-8483-4772-8E79-3D69D8477DE4, in GPT's
// mixed-endian byte order: what sgdisk and Ironic give a config drive.
var linuxDataGUID = [16]byte{0xaf, 0x3d, 0xc6, 0x0f, 0x83, 0x84, 0x72, 0x47, 0x8e, 0x79, 0x3d, 0x69, 0xd8, 0x47, 0x7d, 0xe4}

// AppendConfigDrive adds a partition holding iso (a config drive, see
// internal/configdrive) at the end of dev, after an image was written to
// it. The partition goes at the very end of the disk, not right after the
// image's last partition, so cloud-init's growpart can still grow that
// partition into the space between.
//
// On a GPT disk the table is first moved to the disk's real end (an image
// smaller than the disk has its backup header in the middle), the new
// partition takes a free entry, and both copies are rewritten; the MBR's
// boot code and any hybrid entries are kept. On an MBR disk the partition
// takes a free primary slot (type 0x83) below 2 TiB. Anything else (no
// table, four primaries used, no room left) is refused with ErrInput: it
// is the image's layout that does not allow a config drive.
//
// The order of writes keeps the disk bootable if the node loses power
// half way: the ISO first, then the backup GPT, then the primary.
func AppendConfigDrive(ctx context.Context, dev string, iso []byte) error {
	if len(iso) == 0 {
		return inputErr(CodePartitionTable, nil, "config drive is empty")
	}
	f, size, err := openRW(dev)
	if err != nil {
		return err
	}
	defer f.Close()
	w := &diskWriter{ctx: ctx, f: f, dev: dev}

	g, err := readGPT(f)
	if err != nil {
		if _, ok := err.(*Error); ok {
			return err
		}
		return diskError(dev, "read partition table", err)
	}
	if g != nil {
		err = appendGPT(w, g, size, iso)
	} else {
		err = appendMBR(w, size, iso)
	}
	if err != nil {
		return err
	}
	if isBlockDevice(f) {
		_ = rereadPartitions(f)
	}
	return nil
}

// placement picks [start, end) for a partition of want bytes (shrunk to
// the ISO when there is not that much room) ending at or before limit
// and starting at or after floor, all in bytes, aligned to 1 MiB.
func placement(floor, limit, want, iso int64) (start, end int64, ok bool) {
	for _, n := range []int64{want, (iso + align - 1) &^ (align - 1)} {
		end = limit &^ (align - 1)
		start = end - n
		if start >= floor && start < end {
			return start, end, true
		}
	}
	return 0, 0, false
}

func appendGPT(w *diskWriter, g *gptTable, size int64, iso []byte) error {
	ss := g.ss
	sectors := uint64(size / ss)
	oldAlt := g.alternateLBA()
	if oldAlt >= sectors {
		return inputErr(CodePartitionTable, nil, "the image's GPT is for a disk of %s, larger than disk %s (%s)", human(int64(oldAlt+1)*ss), w.dev, human(size))
	}
	newAlt := sectors - 1
	newBackupEntries := newAlt - g.entrySectors()
	newLastUsable := newBackupEntries - 1

	free := -1
	var lastEnd uint64 // the sector after the last partition
	for i := range g.numEntries() {
		e := g.entry(i)
		if !entryUsed(e) {
			if free < 0 {
				free = i
			}
			continue
		}
		_, last := entryRange(e)
		lastEnd = max(lastEnd, last+1)
	}
	if free < 0 {
		return inputErr(CodePartitionTable, nil, "no free entry in the GPT for a config drive partition (all %d used)", g.numEntries())
	}
	floor := int64(max(lastEnd, g.entriesLBA()+g.entrySectors())) * ss
	start, end, ok := placement(floor, int64(newLastUsable+1)*ss, configDriveSize, int64(len(iso)))
	if !ok {
		return inputErr(CodePartitionTable, nil, "no room for a %s config drive after the last partition (ends at %s) on disk %s (%s)",
			human(int64(len(iso))), human(floor), w.dev, human(size))
	}

	// The data first: until the tables name it, it is free space.
	if err := w.writeZeroPadded(iso, start, end); err != nil {
		return err
	}

	e := g.entry(free)
	clear(e)
	copy(e[0:16], linuxDataGUID[:])
	if _, err := rand.Read(e[16:32]); err != nil {
		return machineErr(CodeDiskIO, err, "partition GUID")
	}
	e[16+7] = e[16+7]&0x0f | 0x40 // version 4 (byte 7 of a GUID's mixed-endian third field)
	e[16+8] = e[16+8]&0x3f | 0x80
	binary.LittleEndian.PutUint64(e[32:], uint64(start/ss))
	binary.LittleEndian.PutUint64(e[40:], uint64(end/ss)-1)
	for i, c := range utf16.Encode([]rune(ConfigDriveLabel)) {
		binary.LittleEndian.PutUint16(e[56+2*i:], c)
	}
	entriesCRC := crc32IEEE(g.entries)

	primary := g.header
	binary.LittleEndian.PutUint64(primary[32:], newAlt)
	binary.LittleEndian.PutUint64(primary[48:], newLastUsable)
	binary.LittleEndian.PutUint32(primary[88:], entriesCRC)
	setHeaderCRC(primary)
	backup := make([]byte, ss)
	copy(backup, primary)
	binary.LittleEndian.PutUint64(backup[24:], newAlt)
	binary.LittleEndian.PutUint64(backup[32:], 1)
	binary.LittleEndian.PutUint64(backup[72:], newBackupEntries)
	setHeaderCRC(backup)

	if err := w.writeSync(g.entries, int64(newBackupEntries)*ss); err != nil {
		return err
	}
	if err := w.writeSync(backup, int64(newAlt)*ss); err != nil {
		return err
	}
	if err := w.writeSync(g.entries, int64(g.entriesLBA())*ss); err != nil {
		return err
	}
	if err := w.writeSync(primary, ss); err != nil {
		return err
	}
	if err := fixProtectiveMBR(w, sectors); err != nil {
		return err
	}
	// The image's old backup header, now in the middle of the disk,
	// would make tools that scan for one complain: zero it, unless the
	// new partition or the new backup took its place.
	oldOff := int64(oldAlt) * ss
	if oldAlt != newAlt && oldAlt > 1 && (oldOff+ss <= start || oldOff >= end) && oldAlt < newBackupEntries {
		sector := make([]byte, ss)
		if _, err := w.f.ReadAt(sector, oldOff); err != nil {
			return diskError(w.dev, "read", err)
		}
		if string(sector[:8]) == gptSignature {
			if err := w.writeSync(make([]byte, ss), oldOff); err != nil {
				return err
			}
		}
	}
	return nil
}

// fixProtectiveMBR grows a protective MBR's 0xEE entry to the new disk
// size (saturating at 2 TiB, as the UEFI spec says), if it is the only
// entry. A hybrid MBR is the image's own business and stays as it is.
func fixProtectiveMBR(w *diskWriter, sectors uint64) error {
	sector, entries, ok, err := readMBR(w.f)
	if err != nil {
		return diskError(w.dev, "read MBR", err)
	}
	if !ok || entries[0].typ != mbrTypeGPT || entries[0].start != 1 {
		return nil
	}
	for _, e := range entries[1:] {
		if e.typ != 0 {
			return nil
		}
	}
	count := uint32(min(sectors-1, 0xffffffff))
	if entries[0].count == count {
		return nil
	}
	binary.LittleEndian.PutUint32(sector[mbrEntries+12:], count)
	return w.writeSync(sector[mbrEntries:mbrEntries+mbrEntrySize], mbrEntries)
}

func appendMBR(w *diskWriter, size int64, iso []byte) error {
	sector, entries, ok, err := readMBR(w.f)
	if err != nil {
		return diskError(w.dev, "read MBR", err)
	}
	used := false
	free := -1
	var lastEnd int64
	for i, e := range entries {
		if e.typ == 0 && e.count == 0 {
			if free < 0 {
				free = i
			}
			continue
		}
		used = true
		lastEnd = max(lastEnd, (int64(e.start)+int64(e.count))*512)
	}
	if !ok || !used {
		return inputErr(CodePartitionTable, nil, "the image on disk %s has no partition table (GPT or MBR), so a config drive cannot be added as a partition", w.dev)
	}
	if lastEnd > size {
		return inputErr(CodePartitionTable, nil, "the image's MBR has a partition ending at %s, past the end of disk %s (%s)", human(lastEnd), w.dev, human(size))
	}
	if free < 0 {
		return inputErr(CodePartitionTable, nil, "the image's MBR has all four primary partitions in use; a config drive needs a free one (logical partitions are not supported)")
	}
	limit := min(size, int64(1)<<32*512) // MBR addresses 2^32 sectors
	start, end, ok := placement(max(lastEnd, align), limit, configDriveSize, int64(len(iso)))
	if !ok {
		return inputErr(CodePartitionTable, nil, "no room for a %s config drive after the last partition (ends at %s) within the first 2 TiB of disk %s (%s)",
			human(int64(len(iso))), human(lastEnd), w.dev, human(size))
	}
	if err := w.writeZeroPadded(iso, start, end); err != nil {
		return err
	}
	e := sector[mbrEntries+free*mbrEntrySize : mbrEntries+(free+1)*mbrEntrySize]
	clear(e)
	// CHS fields at their "use LBA" maximum, as fdisk writes them for
	// partitions past the first 8 GiB.
	copy(e[1:4], []byte{0xfe, 0xff, 0xff})
	e[4] = 0x83
	copy(e[5:8], []byte{0xfe, 0xff, 0xff})
	binary.LittleEndian.PutUint32(e[8:], uint32(start/512))
	binary.LittleEndian.PutUint32(e[12:], uint32((end-start)/512))
	return w.writeSync(e, int64(mbrEntries+free*mbrEntrySize))
}
