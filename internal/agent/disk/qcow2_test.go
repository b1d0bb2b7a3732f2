package disk

import (
	"bytes"
	"context"
	"encoding/binary"
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
	compress    bool   // every data cluster deflated, packed byte by byte as qemu does
	zeroFlag    bool   // all-zero clusters get the v3 zero flag (else they are unallocated)
	l2Last      bool   // L2 tables after the data they map: no stream can follow that
	backing     bool   // a backing file named in the header
	virtSize    int64  // default len(raw)
}

// buildQcow2 lays raw out as a qcow2 image the way qemu-img convert does
// (header, L1, then each L2 table followed by its data), so the tests
// need no qemu-img; the qemu-img tests below check real ones.
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
		off  int64
		data []byte
		// compressed: sectors beyond the first
		sectors int64
		zero    bool
	}
	places := make([]place, clusters)
	l2Off := make([]int64, l2s)
	l1Off := cs
	pos := alignUp(l1Off + l2s*8)
	dataFor := func(i int64) []byte {
		b := make([]byte, cs)
		if i*cs < int64(len(raw)) {
			copy(b, raw[i*cs:])
		}
		return b
	}
	layData := func(i int64) {
		b := dataFor(i)
		if bytes.Equal(b, make([]byte, cs)) {
			places[i].zero = true
			return
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
			c := buf.Bytes()
			places[i] = place{off: pos, data: c, sectors: (pos%512 + int64(len(c)) - 1) / 512}
			pos += int64(len(c))
			return
		}
		pos = alignUp(pos)
		places[i] = place{off: pos, data: b}
		pos += cs
	}
	for g := range l2s {
		if !o.l2Last {
			pos = alignUp(pos)
			l2Off[g] = pos
			pos += cs
		}
		for i := g * perL2; i < min((g+1)*perL2, clusters); i++ {
			layData(i)
		}
	}
	if o.l2Last {
		for g := range l2s {
			pos = alignUp(pos)
			l2Off[g] = pos
			pos += cs
		}
	}
	img := make([]byte, alignUp(pos))
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
		case o.compress:
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
	raw := qcowRaw()
	dir := t.TempDir()
	rawPath := filepath.Join(dir, "disk.raw")
	if err := os.WriteFile(rawPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"compressed (deflate)", []string{"-c"}},
		{"compressed (zstd)", []string{"-c", "-o", "compression_type=zstd"}},
		{"v2 (compat 0.10)", []string{"-o", "compat=0.10"}},
		{"4K clusters compressed", []string{"-c", "-o", "cluster_size=4096"}},
		{"2M clusters", []string{"-o", "cluster_size=2M"}},
		{"preallocated metadata", []string{"-o", "preallocation=metadata"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			// qemu-img rounds the virtual size up to 512 bytes.
			want := append(bytes.Clone(raw), make([]byte, (512-len(raw)%512)%512)...)
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
	f.Fuzz(func(t *testing.T, img []byte) {
		// Whatever the bytes, the converter ends with data or an
		// error: no panic, no write outside the disk.
		const capacity = 1 << 20
		size, holes, err := convertQcow2(bytes.NewReader(img), capacity, func(off int64, p []byte) error {
			if off < 0 || off+int64(len(p)) > capacity {
				t.Fatalf("write of %d bytes at %d outside a %d-byte disk", len(p), off, capacity)
			}
			return nil
		})
		if err != nil {
			return
		}
		for _, h := range holes {
			if h.start < 0 || h.end > size || h.start >= h.end {
				t.Fatalf("hole %+v of a %d-byte image", h, size)
			}
		}
	})
}
