package disk

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zstd"
)

// qcow2 images are converted while they stream, so the agent never holds
// one whole (it runs from RAM) and never downloads it twice. A qcow2 file
// is a header, an L1 table pointing at L2 tables, and L2 tables pointing
// at data clusters (whole, or compressed), all at byte offsets of the
// file ("host" offsets) that map clusters of the disk ("guest" offsets).
// Read front to back, each table is met before what it maps in the
// images qemu-img convert writes (what distributions publish: Ubuntu's,
// Debian's and Fedora's cloud images), because qemu allocates clusters
// at the end of the file as it goes and a table before its first data.
// So the converter keeps a queue of the host ranges it has learnt about,
// in file order, reads the stream up to each one, and writes data
// clusters to their guest offsets as they pass. A range that comes
// before the point the stream has reached (an image whose clusters were
// reused or moved by a running VM, snapshots) cannot be read without
// random access: such an image is refused with the command that lays it
// out anew. Unallocated and zero clusters are holes, zeroed at the end.
//
// Format: docs/interop/qcow2.txt of qemu. Supported: versions 2 and 3,
// cluster sizes 512 B to 2 MiB, deflate and zstd compressed clusters,
// zero clusters. Refused with a reason: backing files, encryption,
// external data files, extended L2 entries (subclusters), images marked
// corrupt, unknown incompatible features.

const (
	qcow2Magic     = "QFI\xfb"
	qcow2MaxL1     = 32 << 20 // bytes; qemu's own limit (QCOW_MAX_L1_SIZE)
	qcow2MaxQueued = 4 << 20  // host ranges waiting to be read (24 bytes each)
	qcow2HostLimit = 1 << 56  // offsets are 56 bits wide

	qcow2OffsetMask = 0x00fffffffffffe00 // bits 9-55 of an L1 or standard L2 entry
	qcow2Compressed = 1 << 62
	qcow2ZeroFlag   = 1 // L2 entry bit 0 (version 3): the cluster reads as zeros

	qcow2IncompatDirty      = 1 << 0
	qcow2IncompatCorrupt    = 1 << 1
	qcow2IncompatDataFile   = 1 << 2
	qcow2IncompatCompress   = 1 << 3
	qcow2IncompatExtendedL2 = 1 << 4
)

// qcow2Header is what the conversion needs of a qcow2 header.
type qcow2Header struct {
	version     uint32
	clusterBits uint32
	size        int64 // the disk's (virtual) size
	l1Entries   uint32
	l1Offset    int64
	zstd        bool // compressed clusters are zstd, not deflate
}

func (h qcow2Header) clusterSize() int64 { return 1 << h.clusterBits }

// qcow2Error is a malformed or unsupported qcow2 image: the user's input.
func qcow2Error(format string, args ...any) error {
	return inputErr(CodeImageFormat, nil, "qcow2 image: "+format, args...)
}

// parseQcow2Header reads the header at the start of b (at least 104
// bytes, or all there is).
func parseQcow2Header(b []byte) (qcow2Header, error) {
	var h qcow2Header
	if len(b) < 72 || string(b[:4]) != qcow2Magic {
		return h, qcow2Error("the header is cut short")
	}
	be := binary.BigEndian
	h.version = be.Uint32(b[4:])
	backing := be.Uint64(b[8:])
	h.clusterBits = be.Uint32(b[20:])
	size := be.Uint64(b[24:])
	crypt := be.Uint32(b[32:])
	h.l1Entries = be.Uint32(b[36:])
	l1Offset := be.Uint64(b[40:])
	switch {
	case h.version != 2 && h.version != 3:
		return h, qcow2Error("version %d is not supported (2 and 3 are)", h.version)
	case h.clusterBits < 9 || h.clusterBits > 21:
		return h, qcow2Error("cluster size 2^%d is out of range", h.clusterBits)
	case backing != 0:
		return h, qcow2Error("it has a backing file, so it is not a whole disk: flatten it first (qemu-img convert -O qcow2 in.qcow2 out.qcow2)")
	case crypt != 0:
		return h, qcow2Error("it is encrypted (method %d); the agent writes only unencrypted images", crypt)
	case size >= qcow2HostLimit:
		return h, qcow2Error("virtual size %d is out of range", size)
	case l1Offset == 0 || l1Offset%(1<<h.clusterBits) != 0 || l1Offset >= qcow2HostLimit:
		return h, qcow2Error("the L1 table's offset %d is not a cluster boundary", l1Offset)
	case int64(h.l1Entries)*8 > qcow2MaxL1:
		return h, qcow2Error("its L1 table (%d entries) is larger than qemu allows", h.l1Entries)
	}
	h.size, h.l1Offset = int64(size), int64(l1Offset)
	// Each L2 table maps clusterSize/8 clusters: the L1 table must cover
	// the whole disk.
	perL1 := h.clusterSize() * (h.clusterSize() / 8)
	if need := (h.size + perL1 - 1) / perL1; int64(h.l1Entries) < need {
		return h, qcow2Error("its L1 table (%d entries) does not cover its %d bytes", h.l1Entries, h.size)
	}
	if h.version == 2 {
		return h, nil
	}
	if len(b) < 104 {
		return h, qcow2Error("the version 3 header is cut short")
	}
	incompat := be.Uint64(b[72:])
	headerLen := be.Uint32(b[100:])
	switch {
	case incompat&qcow2IncompatCorrupt != 0:
		return h, qcow2Error("it is marked corrupt (qemu-img check -r all can repair it)")
	case incompat&qcow2IncompatDataFile != 0:
		return h, qcow2Error("its data is in an external file")
	case incompat&qcow2IncompatExtendedL2 != 0:
		return h, qcow2Error("it uses extended L2 entries (subclusters), which the agent does not read: convert it without (qemu-img convert -O qcow2)")
	case incompat&^(qcow2IncompatDirty|qcow2IncompatCompress) != 0:
		return h, qcow2Error("it needs features this agent does not know (incompatible feature bits %#x)", incompat)
	}
	// A dirty image's refcounts may be off; the L1 and L2 tables, which
	// are all the conversion reads, are not.
	if incompat&qcow2IncompatCompress != 0 {
		if headerLen <= 104 || len(b) < 105 {
			return h, qcow2Error("the header names a compression type but does not hold one")
		}
		switch b[104] {
		case 0:
		case 1:
			h.zstd = true
		default:
			return h, qcow2Error("compression type %d is not supported (deflate and zstd are)", b[104])
		}
	}
	return h, nil
}

// qcow2Range is a range of the file the conversion has to read.
type qcow2Range struct {
	host  int64
	guest int64 // data: the guest offset; l2: the first guest offset it maps
	n     int32 // bytes; for compressed data an upper bound that may pass the file's end
	kind  uint8
}

const (
	rangeL1 uint8 = iota
	rangeL2
	rangeData
	rangeCompressed
)

type rangeQueue []qcow2Range

func (q rangeQueue) Len() int           { return len(q) }
func (q rangeQueue) Less(i, j int) bool { return q[i].host < q[j].host }
func (q rangeQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *rangeQueue) Push(x any)        { *q = append(*q, x.(qcow2Range)) }
func (q *rangeQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// streamWindow hands out ranges of a stream read front to back, keeping
// the bytes from the start of the last range handed out, so ranges that
// overlap (compressed clusters share sectors) are served from memory.
type streamWindow struct {
	r     io.Reader
	start int64 // stream offset of buf[0]
	buf   []byte
	eof   bool
}

// span returns the n bytes at offset off, or fewer at the stream's end
// when short is allowed. It forgets what lies before off: asking for an
// offset before the last one is an error.
func (w *streamWindow) span(off int64, n int, short bool) ([]byte, error) {
	if off < w.start {
		return nil, errOutOfOrder
	}
	if end := w.start + int64(len(w.buf)); off >= end {
		w.buf = w.buf[:0]
		if skip := off - end; skip > 0 && !w.eof {
			m, err := io.CopyN(io.Discard, w.r, skip)
			if err == io.EOF || (err == nil && m < skip) {
				w.eof = true
			} else if err != nil {
				return nil, err
			}
		}
	} else {
		w.buf = w.buf[:copy(w.buf, w.buf[off-w.start:])]
	}
	w.start = off
	if cap(w.buf) < n {
		b := make([]byte, len(w.buf), n)
		copy(b, w.buf)
		w.buf = b
	}
	for len(w.buf) < n && !w.eof {
		m, err := w.r.Read(w.buf[len(w.buf):n])
		w.buf = w.buf[:len(w.buf)+m]
		if err == io.EOF {
			w.eof = true
		} else if err != nil {
			return nil, err
		}
	}
	if len(w.buf) < n && !short {
		return w.buf, io.ErrUnexpectedEOF
	}
	return w.buf[:min(n, len(w.buf))], nil
}

var errOutOfOrder = errors.New("out of stream order")

// qcow2Converter turns a qcow2 stream into writes of the disk's bytes.
type qcow2Converter struct {
	h       qcow2Header
	win     streamWindow
	queue   rangeQueue
	written []uint64 // a bit per guest cluster written
	out     []byte   // one decompressed cluster
	flate   io.ReadCloser
	zstd    *zstd.Decoder
}

// convertQcow2 reads a qcow2 image from r (positioned at its first byte)
// and calls emit with each run of the disk's data at its offset (emit
// must copy p, which is reused). It returns the disk's size and the
// ranges of it no data was written to (unallocated or zero clusters),
// which the caller zeroes. capacity is the target's size.
func convertQcow2(r io.Reader, capacity int64, emit func(off int64, p []byte) error) (size int64, holes []extent, err error) {
	c := &qcow2Converter{win: streamWindow{r: r}}
	head, err := c.win.span(0, 112, true)
	if err != nil {
		return 0, nil, qcow2Error("reading the header: %v", err)
	}
	if c.h, err = parseQcow2Header(head); err != nil {
		return 0, nil, err
	}
	if c.h.size > capacity {
		return c.h.size, nil, inputErr(CodeImageTooLarge, nil, "image is %s (qcow2 virtual size), larger than the disk (%s)", human(c.h.size), human(capacity))
	}
	defer c.close()
	cs := c.h.clusterSize()
	c.written = make([]uint64, ((c.h.size+cs-1)/cs+63)/64)
	heap.Push(&c.queue, qcow2Range{host: c.h.l1Offset, n: int32(c.h.l1Entries) * 8, kind: rangeL1})
	for c.queue.Len() > 0 {
		rg := heap.Pop(&c.queue).(qcow2Range)
		if err := c.handle(rg, emit); err != nil {
			if errors.Is(err, errOutOfOrder) {
				return c.h.size, nil, qcow2Error("its %s at byte %d of the file comes after data the stream has passed; "+
					"the agent converts qcow2 while it downloads, which needs the layout qemu-img writes: "+
					"run qemu-img convert -O qcow2 on it (or -O raw)", rangeName(rg.kind), rg.host)
			}
			var e *Error
			if errors.As(err, &e) {
				return c.h.size, nil, err
			}
			return c.h.size, nil, qcow2Error("at byte %d of the file: %v", rg.host, err)
		}
	}
	return c.h.size, c.holes(), nil
}

func rangeName(kind uint8) string {
	switch kind {
	case rangeL1:
		return "L1 table"
	case rangeL2:
		return "L2 table"
	}
	return "data cluster"
}

func (c *qcow2Converter) handle(rg qcow2Range, emit func(off int64, p []byte) error) error {
	cs := c.h.clusterSize()
	switch rg.kind {
	case rangeL1:
		b, err := c.win.span(rg.host, int(rg.n), false)
		if err != nil {
			return err
		}
		perL2 := cs * (cs / 8) // guest bytes one L2 table maps
		for i := int64(0); i < int64(len(b)/8) && i*perL2 < c.h.size; i++ {
			l2 := int64(binary.BigEndian.Uint64(b[i*8:]) & qcow2OffsetMask)
			if l2 == 0 {
				continue
			}
			if l2%cs != 0 {
				return fmt.Errorf("L1 entry %d points at %d, not a cluster boundary", i, l2)
			}
			if err := c.enqueue(qcow2Range{host: l2, guest: i * perL2, n: int32(cs), kind: rangeL2}); err != nil {
				return err
			}
		}
	case rangeL2:
		b, err := c.win.span(rg.host, int(rg.n), false)
		if err != nil {
			return err
		}
		for j := int64(0); j < cs/8; j++ {
			guest := rg.guest + j*cs
			if guest >= c.h.size {
				break
			}
			e := binary.BigEndian.Uint64(b[j*8:])
			if e&qcow2Compressed != 0 {
				// Bits 0..x-1 the offset, x..61 the sectors beyond the
				// first that the compressed data spans.
				x := 62 - (c.h.clusterBits - 8)
				off := int64(e & (1<<x - 1))
				sectors := int64(e>>x) & (1<<(c.h.clusterBits-8) - 1)
				n := (sectors+1)*512 - off%512
				if err := c.enqueue(qcow2Range{host: off, guest: guest, n: int32(n), kind: rangeCompressed}); err != nil {
					return err
				}
				continue
			}
			if c.h.version >= 3 && e&qcow2ZeroFlag != 0 {
				continue // reads as zeros: a hole
			}
			off := int64(e & qcow2OffsetMask)
			if off == 0 {
				continue // unallocated, and no backing file: zeros
			}
			if off%cs != 0 {
				return fmt.Errorf("L2 entry for guest offset %d points at %d, not a cluster boundary", guest, off)
			}
			if err := c.enqueue(qcow2Range{host: off, guest: guest, n: int32(cs), kind: rangeData}); err != nil {
				return err
			}
		}
	case rangeData:
		// Reading past a file's end gives zeros (qemu's view too): the
		// last cluster of a file may be cut short.
		b, err := c.win.span(rg.host, int(rg.n), true)
		if err != nil {
			return err
		}
		out := b
		if len(b) < int(cs) {
			out = c.cluster()
			copy(out, b)
			clear(out[len(b):])
		}
		return c.emit(rg.guest, out, emit)
	case rangeCompressed:
		b, err := c.win.span(rg.host, int(rg.n), true)
		if err != nil {
			return err
		}
		out, err := c.decompress(b)
		if err != nil {
			return fmt.Errorf("compressed cluster for guest offset %d: %w", rg.guest, err)
		}
		return c.emit(rg.guest, out, emit)
	}
	return nil
}

func (c *qcow2Converter) enqueue(rg qcow2Range) error {
	if rg.host <= 0 || rg.host >= qcow2HostLimit {
		return fmt.Errorf("%s at offset %d is out of range", rangeName(rg.kind), rg.host)
	}
	if rg.host < c.win.start {
		return errOutOfOrder
	}
	if c.queue.Len() >= qcow2MaxQueued {
		return fmt.Errorf("more than %d clusters wait to be read", qcow2MaxQueued)
	}
	heap.Push(&c.queue, rg)
	return nil
}

// emit hands the cluster at guest to the caller, cut at the disk's end,
// and records it as written.
func (c *qcow2Converter) emit(guest int64, data []byte, emit func(off int64, p []byte) error) error {
	cs := c.h.clusterSize()
	i := guest / cs
	c.written[i/64] |= 1 << (i % 64)
	return emit(guest, data[:min(cs, c.h.size-guest)])
}

func (c *qcow2Converter) cluster() []byte {
	if c.out == nil {
		c.out = make([]byte, c.h.clusterSize())
	}
	return c.out
}

// decompress inflates one compressed cluster. The data may be followed by
// the start of the next cluster's (they share sectors): decoding stops
// once a whole cluster is out.
func (c *qcow2Converter) decompress(b []byte) ([]byte, error) {
	out := c.cluster()
	var r io.Reader
	if c.h.zstd {
		if c.zstd == nil {
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderLowmem(true))
			if err != nil {
				return nil, err
			}
			c.zstd = d
		}
		if err := c.zstd.Reset(bytes.NewReader(b)); err != nil {
			return nil, err
		}
		r = c.zstd
	} else {
		// Raw deflate, without zlib's header.
		if c.flate == nil {
			c.flate = flate.NewReader(bytes.NewReader(b))
		} else if err := c.flate.(flate.Resetter).Reset(bytes.NewReader(b), nil); err != nil {
			return nil, err
		}
		r = c.flate
	}
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, err
	}
	return out, nil
}

// holes are the guest ranges no cluster was written to, merged.
func (c *qcow2Converter) holes() []extent {
	cs := c.h.clusterSize()
	var out []extent
	clusters := (c.h.size + cs - 1) / cs
	for i := int64(0); i < clusters; i++ {
		if c.written[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		start, end := i*cs, min((i+1)*cs, c.h.size)
		if n := len(out); n > 0 && out[n-1].end == start {
			out[n-1].end = end
			continue
		}
		out = append(out, extent{start, end})
	}
	return out
}

func (c *qcow2Converter) close() {
	if c.zstd != nil {
		c.zstd.Close()
	}
	if c.flate != nil {
		_ = c.flate.Close()
	}
}
