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
// at the end of the file as it goes and a table before its first data,
// with one exception: compressed clusters are packed one after another
// into a packing cluster, and qemu fills its free tail for as long as
// the next one fits, however many clusters (L2 tables, clusters that did
// not compress) were allocated after it meanwhile; measured, up to 52
// clusters back. So the converter keeps a queue of the host ranges it has
// learnt about, in file order, reads the stream up to each one, keeping
// the last clusters it passed (qcow2Lookbehind) and the tail of the
// cluster the last compressed cluster it read lies in, and writes data
// clusters to their guest offsets as they pass. A range before what it
// kept (an image whose clusters were reused or moved by a running VM,
// snapshots) cannot be read without random access: such an image is
// refused with the command that lays it out anew. Unallocated and zero
// clusters are holes: the disk is zeroed there as they are found.
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

	// qcow2Lookbehind is how many clusters before the range it reads last
	// the stream window keeps, for tables written just after data they
	// map (a refcount block allocated between them, say).
	qcow2Lookbehind = 2
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

// streamWindow hands out ranges of a stream read front to back. It keeps
// the bytes from keep before the last range handed out, so ranges that
// overlap or come a little before it (compressed clusters share sectors
// and fill the tails of earlier clusters) are served from memory.
type streamWindow struct {
	r     io.Reader
	keep  int64
	start int64 // stream offset of buf[0]
	buf   []byte
	eof   bool
	// A range kept apart from the window, however far it moves on: the
	// tail of the cluster compressed clusters are packed into (keepTail).
	tailStart int64
	tail      []byte
}

// has says whether the bytes at off are still at hand (or yet to come).
func (w *streamWindow) has(off int64) bool {
	return off >= w.start || (off >= w.tailStart && off < w.tailStart+int64(len(w.tail)))
}

// keepTail keeps a copy of p, the stream's bytes at off, until the next
// call.
func (w *streamWindow) keepTail(off int64, p []byte) {
	w.tail = append(w.tail[:0], p...)
	w.tailStart = off
}

// span returns the n bytes at offset off, or fewer at the stream's end
// when short is allowed. It forgets what lies more than keep before off:
// asking for bytes it forgot is errOutOfOrder. Failures of the stream
// itself are *streamError.
func (w *streamWindow) span(off int64, n int, short bool) ([]byte, error) {
	if off < w.start {
		if !w.has(off) {
			return nil, errOutOfOrder
		}
		got := w.tail[off-w.tailStart:]
		got = got[:min(n, len(got))]
		if len(got) < n && !short {
			return got, io.ErrUnexpectedEOF
		}
		return got, nil
	}
	if from := off - w.keep; from > w.start {
		if end := w.start + int64(len(w.buf)); from >= end {
			if skip := from - end; skip > 0 && !w.eof {
				m, err := io.CopyN(io.Discard, w.r, skip)
				if err == io.EOF || (err == nil && m < skip) {
					w.eof = true
				} else if err != nil {
					return nil, &streamError{err}
				}
			}
			w.buf = w.buf[:0]
		} else {
			w.buf = w.buf[:copy(w.buf, w.buf[from-w.start:])]
		}
		w.start = from
	}
	need := int(off-w.start) + n
	if cap(w.buf) < need {
		b := make([]byte, len(w.buf), need)
		copy(b, w.buf)
		w.buf = b
	}
	for len(w.buf) < need && !w.eof {
		m, err := w.r.Read(w.buf[len(w.buf):need])
		w.buf = w.buf[:len(w.buf)+m]
		if err == io.EOF {
			w.eof = true
		} else if err != nil {
			return nil, &streamError{err}
		}
	}
	lo := min(int(off-w.start), len(w.buf))
	got := w.buf[lo:min(need, len(w.buf))]
	if len(got) < n && !short {
		return got, io.ErrUnexpectedEOF
	}
	return got, nil
}

// streamError is a failure to read the stream (the download, or an outer
// decompressor), not a fault of the qcow2 image it carries.
type streamError struct{ err error }

func (e *streamError) Error() string { return e.err.Error() }
func (e *streamError) Unwrap() error { return e.err }

var errOutOfOrder = errors.New("out of stream order")

// qcow2Sink takes the disk's bytes as a converter finds them: data runs
// (p is reused after the call) and ranges that read as zeros. Ranges never
// overlap; they come in no particular order.
type qcow2Sink interface {
	data(off int64, p []byte) error
	zero(off, n int64) error
}

// qcow2Converter turns a qcow2 stream into writes of the disk's bytes.
type qcow2Converter struct {
	h     qcow2Header
	win   streamWindow
	queue rangeQueue
	sink  qcow2Sink
	hole  extent // the zero range found last, not yet handed to the sink
	out   []byte // one decompressed cluster
	flate io.ReadCloser
	zstd  *zstd.Decoder
}

// convertQcow2 reads a qcow2 image from r (positioned at its first byte)
// and hands the disk's data and zero ranges to sink. It returns the
// disk's size. capacity is the target's size. Errors are *Error (the
// image is malformed, unsupported or too large), or the stream's own.
func convertQcow2(r io.Reader, capacity int64, sink qcow2Sink) (int64, error) {
	c := &qcow2Converter{win: streamWindow{r: r}, sink: sink}
	head, err := c.win.span(0, 112, true)
	if err != nil {
		return 0, unwrapStream(err)
	}
	if c.h, err = parseQcow2Header(head); err != nil {
		return 0, err
	}
	if c.h.size > capacity {
		return c.h.size, inputErr(CodeImageTooLarge, nil, "image is %s (qcow2 virtual size), larger than the disk (%s)", human(c.h.size), human(capacity))
	}
	defer c.close()
	c.win.keep = qcow2Lookbehind * c.h.clusterSize()
	heap.Push(&c.queue, qcow2Range{host: c.h.l1Offset, n: int32(c.h.l1Entries) * 8, kind: rangeL1})
	for c.queue.Len() > 0 {
		rg := heap.Pop(&c.queue).(qcow2Range)
		err := c.handle(rg)
		var se *streamError
		var e *Error
		switch {
		case err == nil:
		case errors.As(err, &se):
			return c.h.size, se.err
		case errors.Is(err, errOutOfOrder):
			return c.h.size, qcow2Error("its %s at byte %d of the file comes after data the stream has passed; "+
				"the agent converts qcow2 while it downloads, which needs tables before the data they map, as qemu-img writes them: "+
				"lay it out anew with qemu-img convert -O qcow2 (or -O raw)", rangeName(rg.kind), rg.host)
		case errors.As(err, &e):
			return c.h.size, err
		default:
			return c.h.size, qcow2Error("at byte %d of the file: %v", rg.host, err)
		}
	}
	if err := c.flushHole(); err != nil {
		return c.h.size, err
	}
	return c.h.size, nil
}

func unwrapStream(err error) error {
	var se *streamError
	if errors.As(err, &se) {
		return se.err
	}
	return err
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

func (c *qcow2Converter) handle(rg qcow2Range) error {
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
				// No L2 table: all of its range reads as zeros.
				if err := c.zero(i*perL2, min(perL2, c.h.size-i*perL2)); err != nil {
					return err
				}
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
			off := int64(e & qcow2OffsetMask)
			// Reads as zeros: flagged so (version 3), or unallocated
			// (there is no backing file).
			if (c.h.version >= 3 && e&qcow2ZeroFlag != 0) || off == 0 {
				if err := c.zero(guest, min(cs, c.h.size-guest)); err != nil {
					return err
				}
				continue
			}
			if off%cs != 0 {
				return fmt.Errorf("L2 entry for guest offset %d points at %d, not a cluster boundary", guest, off)
			}
			if err := c.enqueue(qcow2Range{host: off, guest: guest, n: int32(cs), kind: rangeData}); err != nil {
				return err
			}
		}
	case rangeData:
		// The last cluster of a file may be cut short: qemu reads the rest
		// as zeros. A cluster wholly past the end is a truncated file.
		b, err := c.win.span(rg.host, int(rg.n), true)
		if err != nil {
			return err
		}
		if len(b) == 0 {
			return fmt.Errorf("the data cluster for guest offset %d lies past the end of the file: the image is truncated", rg.guest)
		}
		out := b
		if len(b) < int(cs) {
			out = c.cluster()
			copy(out, b)
			clear(out[len(b):])
		}
		return c.sink.data(rg.guest, out[:min(cs, c.h.size-rg.guest)])
	case rangeCompressed:
		// Read to the end of the cluster this one ends in, and keep that:
		// the next compressed clusters qemu wrote are packed after it,
		// whatever came in between.
		end := (rg.host+int64(rg.n)-1)/cs*cs + cs
		b, err := c.win.span(rg.host, int(end-rg.host), true)
		if err != nil {
			return err
		}
		out, err := c.decompress(b[:min(len(b), int(rg.n))])
		if err != nil {
			return fmt.Errorf("compressed cluster for guest offset %d: %w", rg.guest, err)
		}
		c.win.keepTail(rg.host, b) // b may be the old tail: used up first
		return c.sink.data(rg.guest, out[:min(cs, c.h.size-rg.guest)])
	}
	return nil
}

// zero records that [off, off+n) reads as zeros, joining it to the range
// found before when they touch (whole L2 tables of unallocated clusters
// are common), so the sink gets few, large ranges.
func (c *qcow2Converter) zero(off, n int64) error {
	if c.hole.end == off && c.hole.end > c.hole.start {
		c.hole.end += n
		return nil
	}
	if err := c.flushHole(); err != nil {
		return err
	}
	c.hole = extent{off, off + n}
	return nil
}

func (c *qcow2Converter) flushHole() error {
	h := c.hole
	c.hole = extent{}
	if h.end <= h.start {
		return nil
	}
	return c.sink.zero(h.start, h.end-h.start)
}

func (c *qcow2Converter) enqueue(rg qcow2Range) error {
	if rg.host <= 0 || rg.host >= qcow2HostLimit {
		return fmt.Errorf("%s at offset %d is out of range", rangeName(rg.kind), rg.host)
	}
	if !c.win.has(rg.host) {
		return errOutOfOrder
	}
	if c.queue.Len() >= qcow2MaxQueued {
		return fmt.Errorf("more than %d clusters wait to be read", qcow2MaxQueued)
	}
	heap.Push(&c.queue, rg)
	return nil
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
			// A cluster is at most 2 MiB: a frame asking for a larger
			// window than 8 MiB is not one qemu wrote.
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(8<<20), zstd.WithDecoderLowmem(true))
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

func (c *qcow2Converter) close() {
	if c.zstd != nil {
		c.zstd.Close()
	}
	if c.flate != nil {
		_ = c.flate.Close()
	}
}
