package disk

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
)

// The partition tables a disk image may carry: GPT (UEFI spec, chapter
// 5) and MBR. Written here, not with go-diskfs: its GPT writer replaces
// the MBR's partition entries with a fresh protective one (losing a
// hybrid MBR), truncates the protective entry's size on disks over 2 TiB
// instead of saturating it, and leaves the image's old backup header in
// the middle of the disk. Reading and patching the two tables in place
// is short and keeps every byte we do not mean to change.

const (
	gptSignature  = "EFI PART"
	mbrEntries    = 446
	mbrEntrySize  = 16
	mbrTypeGPT    = 0xee
	gptMaxEntries = 1 << 16 // more would be a corrupt header, not a table
)

// gptTable is a GPT read from a disk: its primary header and entry array.
type gptTable struct {
	ss      int64  // logical sector size
	header  []byte // the primary header's sector
	entries []byte // the entry array, numEntries*entrySize bytes
}

func (g *gptTable) u64(off int) uint64   { return binary.LittleEndian.Uint64(g.header[off:]) }
func (g *gptTable) u32(off int) uint32   { return binary.LittleEndian.Uint32(g.header[off:]) }
func (g *gptTable) alternateLBA() uint64 { return g.u64(32) }
func (g *gptTable) entriesLBA() uint64   { return g.u64(72) }
func (g *gptTable) numEntries() int      { return int(g.u32(80)) }
func (g *gptTable) entrySize() int       { return int(g.u32(84)) }
func (g *gptTable) entry(i int) []byte   { return g.entries[i*g.entrySize() : (i+1)*g.entrySize()] }
func (g *gptTable) entrySectors() uint64 { return uint64((int64(len(g.entries)) + g.ss - 1) / g.ss) }
func entryUsed(e []byte) bool            { return !bytes.Equal(e[:16], make([]byte, 16)) }
func entryRange(e []byte) (uint64, uint64) {
	return binary.LittleEndian.Uint64(e[32:]), binary.LittleEndian.Uint64(e[40:])
}

// readGPT reads the primary GPT of r, trying 512- and 4096-byte sectors.
// It returns nil, nil when there is no GPT signature, and an error when
// there is one but the header or entries fail their CRC.
func readGPT(r io.ReaderAt) (*gptTable, error) {
	for _, ss := range []int64{512, 4096} {
		sector := make([]byte, ss)
		if _, err := r.ReadAt(sector, ss); err != nil {
			if err == io.EOF {
				continue
			}
			return nil, err
		}
		if string(sector[:8]) != gptSignature {
			continue
		}
		g := &gptTable{ss: ss, header: sector}
		hs := int(g.u32(12))
		if hs < 92 || int64(hs) > ss {
			return nil, errBadGPT("header size %d", hs)
		}
		if crc := g.u32(16); crc != headerCRC(sector[:hs]) {
			return nil, errBadGPT("primary header CRC")
		}
		n, es := g.numEntries(), g.entrySize()
		if es < 128 || es%8 != 0 || n <= 0 || n > gptMaxEntries {
			return nil, errBadGPT("%d entries of %d bytes", n, es)
		}
		g.entries = make([]byte, n*es)
		if _, err := r.ReadAt(g.entries, int64(g.entriesLBA())*ss); err != nil {
			return nil, err
		}
		if crc32.ChecksumIEEE(g.entries) != g.u32(88) {
			return nil, errBadGPT("partition entries CRC")
		}
		return g, nil
	}
	return nil, nil
}

func errBadGPT(format string, args ...any) error {
	return inputErr(CodePartitionTable, nil, "the disk's GPT is corrupt: bad "+format, args...)
}

// headerCRC is the CRC32 of a GPT header with its own CRC field zeroed.
func headerCRC(h []byte) uint32 {
	c := bytes.Clone(h)
	binary.LittleEndian.PutUint32(c[16:], 0)
	return crc32.ChecksumIEEE(c)
}

func setHeaderCRC(sector []byte) {
	hs := binary.LittleEndian.Uint32(sector[12:])
	binary.LittleEndian.PutUint32(sector[16:], headerCRC(sector[:hs]))
}

// mbrEntry is one of the four primary partition entries.
type mbrEntry struct {
	typ          byte
	start, count uint32
}

// readMBR returns sector 0 and its four entries; ok is false without the
// 0x55AA boot signature.
func readMBR(r io.ReaderAt) (sector []byte, entries [4]mbrEntry, ok bool, err error) {
	sector = make([]byte, 512)
	if _, err := r.ReadAt(sector, 0); err != nil {
		return nil, entries, false, err
	}
	if !hasBootSignature(sector) {
		return sector, entries, false, nil
	}
	for i := range entries {
		e := sector[mbrEntries+i*mbrEntrySize:]
		// The boot indicator is 0x00 or 0x80 in a partition table; other
		// values mean these bytes are something else (a FAT or NTFS boot
		// sector also ends in 0x55AA), as blkid judges too.
		if e[0] != 0 && e[0] != 0x80 {
			return sector, [4]mbrEntry{}, false, nil
		}
		entries[i] = mbrEntry{typ: e[4], start: binary.LittleEndian.Uint32(e[8:]), count: binary.LittleEndian.Uint32(e[12:])}
	}
	return sector, entries, true, nil
}

// extent is a byte range [start, end) of a disk.
type extent struct{ start, end int64 }

// partitionExtents lists the partitions of r (GPT entries, or MBR
// primaries) as byte ranges within size; nil when there is no table.
func partitionExtents(r io.ReaderAt, size int64) []extent {
	var out []extent
	add := func(start, end int64) {
		if start >= 0 && start < end && end <= size {
			out = append(out, extent{start, end})
		}
	}
	if g, err := readGPT(r); err == nil && g != nil {
		for i := range g.numEntries() {
			if e := g.entry(i); entryUsed(e) {
				first, last := entryRange(e)
				add(int64(first)*g.ss, int64(last+1)*g.ss)
			}
		}
		return out
	}
	if _, entries, ok, err := readMBR(r); err == nil && ok {
		for _, e := range entries {
			if e.typ != 0 && e.typ != mbrTypeGPT && e.count > 0 {
				add(int64(e.start)*512, (int64(e.start)+int64(e.count))*512)
			}
		}
	}
	return out
}
