package disk

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/flate"
)

// qcowOpts shape the qcow2 images buildQcow2 makes.
type qcowOpts struct {
	clusterBits uint32 // default 16
	version     uint32 // default 3
	compress    bool   // data clusters deflated where that makes them smaller, packed as qemu packs them
	zeroFlag    bool   // all-zero clusters get the v3 zero flag (else they are unallocated)
	l2Last      bool   // L2 tables after the data they map: no stream can follow that
	backing     bool   // a backing file named in the header
	virtSize    int64  // default len(raw)
}

// buildQcow2 lays raw out as a qcow2 image the way qemu-img convert does,
// so the tests need no qemu-img (the qemu-img tests below check real
// ones): header, L1, then clusters allocated at the end of the file as
// the disk is written in order, an L2 table before the first data of its
// range; compressed clusters packed byte by byte into the tail of the
// cluster the last one went into for as long as they fit there, even
// when L2 tables and clusters that did not compress were allocated after
// it.
func buildQcow2(t testing.TB, raw []byte, o qcowOpts) []byte {
	t.Helper()
	if o.clusterBits == 0 {
		o.clusterBits = 16
	}
	if o.version == 0 {
		o.version = 3
	}
	if o.virtSize == 0 {
		o.virtSize = int64(len(raw))
	}
	cs := int64(1) << o.clusterBits
	perL2 := cs / 8
	clusters := (o.virtSize + cs - 1) / cs
	l2s := (clusters + perL2 - 1) / perL2
	alignUp := func(v int64) int64 { return (v + cs - 1) / cs * cs }

	type place struct {
		off        int64
		data       []byte
		compressed bool
		sectors    int64 // compressed: sectors beyond the first
		zero       bool
	}
	places := make([]place, clusters)
	l2Off := make([]int64, l2s)
	l1Off := cs
	free := alignUp(l1Off + l2s*8) // the next cluster to allocate
	alloc := func(n int64) int64 {
		off := free
		free += alignUp(n)
		return off
	}
	var pack, packEnd int64 // where the next compressed cluster may go, and its cluster's end
	for g := range l2s {
		if !o.l2Last {
			l2Off[g] = alloc(cs)
		}
		for i := g * perL2; i < min((g+1)*perL2, clusters); i++ {
			b := make([]byte, cs)
			if i*cs < int64(len(raw)) {
				copy(b, raw[i*cs:])
			}
			if bytes.Equal(b, make([]byte, cs)) {
				places[i].zero = true
				continue
			}
			if o.compress {
				var buf bytes.Buffer
				w, err := flate.NewWriter(&buf, flate.BestSpeed)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = w.Write(b)
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if c := buf.Bytes(); int64(len(c)) < cs {
					if pack == 0 || pack+int64(len(c)) > packEnd {
						pack = alloc(int64(len(c)))
						packEnd = free
					}
					places[i] = place{off: pack, data: c, compressed: true, sectors: (pack%512 + int64(len(c)) - 1) / 512}
					pack += int64(len(c))
					continue
				}
			}
			places[i] = place{off: alloc(cs), data: b}
		}
	}
	if o.l2Last {
		for g := range l2s {
			l2Off[g] = alloc(cs)
		}
	}
	img := make([]byte, free)
	be := binary.BigEndian
	copy(img, qcow2Magic)
	be.PutUint32(img[4:], o.version)
	if o.backing {
		be.PutUint64(img[8:], 512)
		be.PutUint32(img[16:], 4)
		copy(img[512:], "base")
	}
	be.PutUint32(img[20:], o.clusterBits)
	be.PutUint64(img[24:], uint64(o.virtSize))
	be.PutUint32(img[36:], uint32(l2s))
	be.PutUint64(img[40:], uint64(l1Off))
	if o.version == 3 {
		be.PutUint32(img[96:], 4)
		be.PutUint32(img[100:], 104)
	}
	for g, off := range l2Off {
		be.PutUint64(img[l1Off+int64(g)*8:], uint64(off)|1<<63)
	}
	for i, p := range places {
		slot := img[l2Off[int64(i)/perL2]+int64(i)%perL2*8:]
		switch {
		case p.zero && o.zeroFlag && o.version == 3:
			be.PutUint64(slot, qcow2ZeroFlag)
		case p.zero:
		case p.compressed:
			x := 62 - (o.clusterBits - 8)
			be.PutUint64(slot, qcow2Compressed|uint64(p.sectors)<<x|uint64(p.off))
			copy(img[p.off:], p.data)
		default:
			be.PutUint64(slot, uint64(p.off)|1<<63)
			copy(img[p.off:], p.data)
		}
	}
	return img
}

// qcowLayout counts, in a whole qcow2 image, the compressed clusters and
// the data clusters that lie before the L2 table mapping them (which a
// stream has passed when it learns of them): what a test's image must
// have for the test to exercise those paths.
func qcowLayout(t testing.TB, img []byte) (compressed, before int) {
	t.Helper()
	h, err := parseQcow2Header(img)
	if err != nil {
		t.Fatal(err)
	}
	be := binary.BigEndian
	cs := h.clusterSize()
	x := 62 - (h.clusterBits - 8)
	for i := range int64(h.l1Entries) {
		l2 := int64(be.Uint64(img[h.l1Offset+i*8:]) & qcow2OffsetMask)
		if l2 == 0 {
			continue
		}
		for j := range cs / 8 {
			e := be.Uint64(img[l2+j*8:])
			off := int64(e & qcow2OffsetMask)
			if e&qcow2Compressed != 0 {
				compressed++
				off = int64(e & (1<<x - 1))
			}
			if off != 0 && off < l2 {
				before++
			}
		}
	}
	return compressed, before
}

// packedImage is a disk image that compresses in places: clusters of
// text-like bytes (which deflate well), of random bytes (which do not,
// and are stored as they are) and of zeros, in a seeded order, so
// compressed clusters get packed into tails that L2 tables and stored
// clusters were allocated after.
func packedImage(size, block int) []byte {
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(5, 6))
	for off := 0; off < size; off += block {
		blk := b[off:min(off+block, size)]
		switch r.IntN(4) {
		case 0: // zeros
		case 1:
			for i := range blk {
				blk[i] = byte(r.Uint32())
			}
		default:
			for i := range blk[:r.IntN(len(blk))] {
				blk[i] = 'a' + byte(i%7)
				if r.IntN(4) == 0 {
					blk[i] = byte(r.Uint32())
				}
			}
		}
	}
	copy(b, "PACKEDIMAGE")
	return b
}

// dirtyDisk is a disk of size bytes full of an earlier tenant's data:
// the holes of a qcow2 image must read as zeros after the write.
func dirtyDisk(t testing.TB, size int64) string {
	p := newDisk(t, size)
	if err := os.WriteFile(p, bytes.Repeat([]byte{0xee}, int(size)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// qcowRaw is a disk image with data, zero runs and a tail that ends mid
// cluster.
func qcowRaw() []byte { return testImage(3<<20 + 12345) }

func TestWriteQcow2(t *testing.T) {
	raw := qcowRaw()
	for _, tc := range []struct {
		name string
		o    qcowOpts
	}{
		{"v3 64K clusters", qcowOpts{}},
		{"v3 zero flags", qcowOpts{zeroFlag: true}},
		{"v2", qcowOpts{version: 2}},
		{"512 byte clusters", qcowOpts{clusterBits: 9}},
		{"2M clusters", qcowOpts{clusterBits: 21}},
		{"deflate compressed", qcowOpts{compress: true}},
		{"deflate compressed 4K clusters", qcowOpts{compress: true, clusterBits: 12}},
		{"virtual size beyond the data", qcowOpts{virtSize: 5 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := buildQcow2(t, raw, tc.o)
			want := raw
			if tc.o.virtSize > int64(len(raw)) {
				want = append(bytes.Clone(raw), make([]byte, tc.o.virtSize-int64(len(raw)))...)
			}
			checkQcow2Write(t, img, want)
		})
	}
}

// TestWriteQcow2Packed: compressed clusters packed into the tail of a
// cluster that L2 tables and stored clusters were allocated after, as
// qemu packs them, are read from what the converter kept of that tail.
func TestWriteQcow2Packed(t *testing.T) {
	raw := packedImage(8<<20, 4096)
	for _, bits := range []uint32{9, 12} {
		img := buildQcow2(t, raw, qcowOpts{clusterBits: bits, compress: true})
		if compressed, before := qcowLayout(t, img); compressed == 0 || before == 0 {
			t.Fatalf("%d-bit clusters: %d compressed, %d before their L2 table; the test needs both", bits, compressed, before)
		}
		checkQcow2Write(t, img, raw)
	}
}

// checkQcow2Write serves img (also zstd-compressed, and with its
// checksum), writes it to a dirty disk larger than the image, and checks
// the disk holds want, then the old bytes.
func checkQcow2Write(t *testing.T, img, want []byte) {
	t.Helper()
	for _, outer := range []string{"raw", "zstd"} {
		served := img
		if outer == "zstd" {
			served = zstded(t, img)
		}
		srv, _ := serve(t, served)
		size := int64(len(want)) + 1<<20
		disk := dirtyDisk(t, size)
		var last Progress
		opts := fast
		opts.Progress = func(p Progress) { last = p }
		res, err := Write(context.Background(), Source{URL: srv.URL + "/image.qcow2", Checksum: "sha256:" + sha256hex(served)}, Target{Path: disk}, opts)
		if err != nil {
			t.Fatalf("%s: %v", outer, err)
		}
		if res.Container != "qcow2" || res.Format != outer || res.Written != int64(len(want)) || res.Served != int64(len(served)) {
			t.Errorf("%s: result %+v; want container qcow2, format %s, %d written, %d served", outer, res, outer, len(want), len(served))
		}
		if last.Written <= 0 || last.Written > int64(len(want)) {
			t.Errorf("%s: last progress %+v", outer, last)
		}
		got, err := os.ReadFile(disk)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:len(want)], want) {
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s: disk differs from the image at byte %d (%#x, want %#x)", outer, i, got[i], want[i])
				}
			}
		}
		if !bytes.Equal(got[len(want):], bytes.Repeat([]byte{0xee}, int(size)-len(want))) {
			t.Errorf("%s: the disk past the image was touched", outer)
		}
	}
}

func TestWriteQcow2Refused(t *testing.T) {
	raw := qcowRaw()
	img := buildQcow2(t, raw, qcowOpts{})
	setU32 := func(off int, v uint32) []byte {
		b := bytes.Clone(img)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	setU64 := func(off int, v uint64) []byte {
		b := bytes.Clone(img)
		binary.BigEndian.PutUint64(b[off:], v)
		return b
	}
	for _, tc := range []struct {
		name   string
		served []byte
		disk   int64
		code   string
		want   string
	}{
		{"L2 tables after their data", buildQcow2(t, raw, qcowOpts{l2Last: true}), 8 << 20, CodeImageFormat, "qemu-img convert -O qcow2"},
		{"backing file", buildQcow2(t, raw, qcowOpts{backing: true}), 8 << 20, CodeImageFormat, "backing file"},
		{"larger than the disk", img, 2 << 20, CodeImageTooLarge, "qcow2 virtual size"},
		{"version 1", setU32(4, 1), 8 << 20, CodeImageFormat, "version 1"},
		{"encrypted", setU32(32, 2), 8 << 20, CodeImageFormat, "encrypted"},
		{"cluster size", setU32(20, 30), 8 << 20, CodeImageFormat, "cluster size"},
		{"marked corrupt", setU64(72, qcow2IncompatCorrupt), 8 << 20, CodeImageFormat, "corrupt"},
		{"external data file", setU64(72, qcow2IncompatDataFile), 8 << 20, CodeImageFormat, "external file"},
		{"subclusters", setU64(72, qcow2IncompatExtendedL2), 8 << 20, CodeImageFormat, "extended L2"},
		{"unknown feature", setU64(72, 1<<40), 8 << 20, CodeImageFormat, "does not know"},
		{"L1 too small", setU32(36, 0), 8 << 20, CodeImageFormat, "does not cover"},
		{"L1 misaligned", setU64(40, 1000), 8 << 20, CodeImageFormat, "cluster boundary"},
		{"cut in its tables", img[:65536+100], 8 << 20, CodeImageFormat, "qcow2 image"},
		// Header, L1 (cluster 1), L2 (cluster 2), 100 bytes of the first
		// data cluster: the next ones are missing, not zeros.
		{"cut in its data", img[:3*65536+100], 8 << 20, CodeImageFormat, "past the end of the file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := serve(t, tc.served)
			_, err := Write(context.Background(), Source{URL: srv.URL + "/image"}, Target{Path: newDisk(t, tc.disk)}, fast)
			assertErr(t, err, ErrInput, tc.code)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestWriteQcow2ChecksumFirst: a file that is neither the image the
// checksum names nor a qcow2 that converts (here: cut short) fails on
// the checksum, the clearer of the two reasons.
func TestWriteQcow2ChecksumFirst(t *testing.T) {
	img := buildQcow2(t, qcowRaw(), qcowOpts{})
	srv, _ := serve(t, img[:3*65536+100])
	_, err := Write(context.Background(), Source{URL: srv.URL + "/image", Checksum: "sha256:" + sha256hex(img)}, Target{Path: newDisk(t, 8<<20)}, fast)
	assertErr(t, err, ErrInput, CodeChecksumMismatch)
	if !strings.Contains(err.Error(), "past the end of the file") {
		t.Errorf("error %q does not give the conversion's reason too", err)
	}
}

// TestWriteQcow2FromQemuImg converts real qemu-img output: the layouts,
// compression and versions users' images come in (Ubuntu's and Debian's
// cloud images are compressed qcow2 v3).
func TestWriteQcow2FromQemuImg(t *testing.T) {
	qemuImg, err := exec.LookPath("qemu-img")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no qemu-img (apt-get install qemu-utils)")
		}
		t.Skip("no qemu-img (apt-get install qemu-utils)")
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := qcowRaw()
	// 20 MiB that compresses in places: with 4 and 8 KiB clusters, many
	// L2 tables, and compressed clusters packed into tails before them.
	packed := packedImage(20<<20, 4096)
	for _, tc := range []struct {
		name string
		raw  []byte
		args []string
		// packed: the image must hold compressed clusters, some before
		// the L2 table that maps them (else the case tests nothing).
		packed bool
	}{
		{"default", plain, nil, false},
		{"v2 (compat 0.10)", plain, []string{"-o", "compat=0.10"}, false},
		{"2M clusters", plain, []string{"-o", "cluster_size=2M"}, false},
		{"preallocated metadata", plain, []string{"-o", "preallocation=metadata"}, false},
		{"compressed (deflate), 4K clusters", packed, []string{"-c", "-o", "cluster_size=4096"}, true},
		{"compressed (zstd), 4K clusters", packed, []string{"-c", "-o", "cluster_size=4096,compression_type=zstd"}, true},
		{"compressed (deflate), 8K clusters", packed, []string{"-c", "-o", "cluster_size=8192"}, true},
		{"compressed (deflate), 64K clusters", packed, []string{"-c"}, false},
		{"compressed v2", packed, []string{"-c", "-o", "compat=0.10,cluster_size=4096"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rawPath := write("disk.raw", tc.raw)
			out := filepath.Join(t.TempDir(), "disk.qcow2")
			args := append([]string{"convert", "-f", "raw", "-O", "qcow2"}, tc.args...)
			cmd := exec.Command(qemuImg, append(args, rawPath, out)...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("qemu-img %s: %v\n%s", strings.Join(args, " "), err, b)
			}
			img, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if compressed, before := qcowLayout(t, img); tc.packed && (compressed == 0 || before == 0) {
				t.Fatalf("qemu-img wrote %d compressed clusters, %d before their L2 table: the case tests neither", compressed, before)
			}
			// qemu-img rounds the virtual size up to 512 bytes.
			want := append(bytes.Clone(tc.raw), make([]byte, (512-len(tc.raw)%512)%512)...)
			checkQcow2Write(t, img, want)
		})
	}
}

func FuzzConvertQcow2(f *testing.F) {
	// Small seeds: the fuzzer's speed falls with the input's size.
	raw := testImage(4 << 10)
	f.Add(buildQcow2(f, raw, qcowOpts{clusterBits: 9}))
	f.Add(buildQcow2(f, raw, qcowOpts{clusterBits: 9, compress: true}))
	f.Add(buildQcow2(f, raw, qcowOpts{clusterBits: 9, version: 2}))
	f.Add(buildQcow2(f, raw, qcowOpts{clusterBits: 10, zeroFlag: true}))
	f.Add(buildQcow2(f, packedImage(12<<10, 512), qcowOpts{clusterBits: 9, compress: true}))
	f.Fuzz(func(t *testing.T, img []byte) {
		// Whatever the bytes, the converter ends with data or an
		// error: no panic, nothing outside the disk, no byte given
		// twice, and on success every byte of the disk given once.
		const capacity = 1 << 20
		sink := &coverSink{t: t, seen: make([]bool, capacity)}
		size, err := convertQcow2(bytes.NewReader(img), capacity, sink)
		if err != nil {
			return
		}
		for i, ok := range sink.seen[:size] {
			if !ok {
				t.Fatalf("byte %d of a %d-byte disk neither written nor zeroed", i, size)
			}
		}
	})
}

// coverSink checks what a converter hands out covers the disk once.
type coverSink struct {
	t    *testing.T
	seen []bool
}

func (s *coverSink) mark(off, n int64) {
	if off < 0 || n < 0 || off+n > int64(len(s.seen)) {
		s.t.Fatalf("%d bytes at %d outside a %d-byte disk", n, off, len(s.seen))
	}
	for i := off; i < off+n; i++ {
		if s.seen[i] {
			s.t.Fatalf("byte %d handed out twice", i)
		}
		s.seen[i] = true
	}
}

func (s *coverSink) data(off int64, p []byte) error { s.mark(off, int64(len(p))); return nil }
func (s *coverSink) zero(off, n int64) error        { s.mark(off, n); return nil }
