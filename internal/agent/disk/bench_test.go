package disk

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// benchImage is a 2 GiB disk image generated on the fly, so the server
// side holds no copy of it: 1 MiB blocks of random bytes (each made
// different by its index), every other one zeros when half is set.
type benchImage struct {
	size, off int64
	block     []byte
	half      bool
}

const benchSize = 2 << 30

func newBenchImage(half bool) *benchImage {
	b := make([]byte, mib)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	copy(b, "RAWIMAGE")
	return &benchImage{size: benchSize, block: b, half: half}
}

func (g *benchImage) Read(p []byte) (int, error) {
	if g.off >= g.size {
		return 0, io.EOF
	}
	blk, in := g.off/mib, g.off%mib
	n := int(min(int64(len(p)), mib-in, g.size-g.off))
	if g.half && blk%2 == 1 {
		clear(p[:n])
	} else {
		copy(p[:n], g.block[in:])
		if in < 16 && blk > 0 { // make each block unique
			var tag [16]byte
			copy(tag[:], strconv.FormatInt(blk, 10))
			copy(p[:n], tag[in:min(16, in+int64(n))])
		}
	}
	g.off += int64(n)
	return n, nil
}

func (g *benchImage) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		g.off = off
	case io.SeekCurrent:
		g.off += off
	case io.SeekEnd:
		g.off = g.size + off
	}
	return g.off, nil
}

func serveReadSeeker(b *testing.B, open func() io.ReadSeeker) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"bench"`)
		rs := open()
		if c, ok := rs.(io.Closer); ok {
			defer c.Close()
		}
		http.ServeContent(w, r, "image", time.Time{}, rs)
	}))
	b.Cleanup(srv.Close)
	return srv.URL + "/image"
}

// serveFile serves the file at p (from the page cache, not this
// process's memory).
func serveFile(b *testing.B, p string) string {
	return serveReadSeeker(b, func() io.ReadSeeker {
		f, err := os.Open(p)
		if err != nil {
			b.Error(err)
		}
		return f
	})
}

func sha256Of(b *testing.B, r io.Reader) string {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		b.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// BenchmarkWrite measures Write on a 2 GiB image from a local HTTP server
// to a file, checksum on, fsync included, and reports the peak RSS of the
// whole process during the write (VmHWM, reset just before it).
//
//	go test -run '^$' -bench BenchmarkWrite -benchtime 1x ./internal/agent/disk
//	AGENTDISK_BENCH_DIR=/dev/shm go test -run '^$' -bench BenchmarkWrite -benchtime 1x ./internal/agent/disk
func BenchmarkWrite(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		url := serveReadSeeker(b, func() io.ReadSeeker { return newBenchImage(false) })
		benchWrite(b, url, sha256Of(b, newBenchImage(false)))
	})
	b.Run("zstd", func(b *testing.B) {
		// Compressed once, to a file the server reads (page cache, not
		// this process's memory).
		p := filepath.Join(b.TempDir(), "image.zst")
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		bw := bufio.NewWriterSize(f, mib)
		z, _ := zstd.NewWriter(bw, zstd.WithEncoderLevel(zstd.SpeedDefault))
		if _, err := io.Copy(z, newBenchImage(true)); err != nil {
			b.Fatal(err)
		}
		if err := z.Close(); err != nil {
			b.Fatal(err)
		}
		if err := bw.Flush(); err != nil {
			b.Fatal(err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			b.Fatal(err)
		}
		sum := sha256Of(b, f)
		f.Close()
		benchWrite(b, serveFile(b, p), sum)
	})
	b.Run("qcow2", func(b *testing.B) {
		// The half-zero image as qemu-img convert -c writes it: zero
		// clusters unallocated (zeroed on the disk at the end), random
		// ones stored as they are (they do not compress).
		qemuImg, err := exec.LookPath("qemu-img")
		if err != nil {
			b.Skip("no qemu-img (apt-get install qemu-utils)")
		}
		dir := b.TempDir()
		rawPath, p := filepath.Join(dir, "image.raw"), filepath.Join(dir, "image.qcow2")
		f, err := os.Create(rawPath)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(f, newBenchImage(true)); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if out, err := exec.Command(qemuImg, "convert", "-c", "-f", "raw", "-O", "qcow2", rawPath, p).CombinedOutput(); err != nil {
			b.Fatalf("qemu-img: %v\n%s", err, out)
		}
		os.Remove(rawPath)
		f, err = os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		sum := sha256Of(b, f)
		f.Close()
		benchWrite(b, serveFile(b, p), sum)
	})
}

func benchWrite(b *testing.B, url, sum string) {
	disk := newDisk(b, benchSize+64*mib)
	// The target is a file in b.TempDir(), so the number is at most the
	// machine's disk speed (compare: dd bs=4M conv=fsync). To measure
	// the writer itself, put the file on tmpfs:
	// AGENTDISK_BENCH_DIR=/dev/shm.
	if dir := os.Getenv("AGENTDISK_BENCH_DIR"); dir != "" {
		disk = filepath.Join(dir, "agentdisk-bench-"+strconv.Itoa(os.Getpid()))
		f, err := os.Create(disk)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Truncate(benchSize + 64*mib); err != nil {
			b.Fatal(err)
		}
		f.Close()
		b.Cleanup(func() { os.Remove(disk) })
	}
	var peak, sys float64
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		debug.FreeOSMemory()
		resetPeakRSS(b)
		b.StartTimer()
		res, err := Write(context.Background(), Source{URL: url, Checksum: sum}, Target{Path: disk}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Written != benchSize {
			b.Fatalf("wrote %d", res.Written)
		}
		peak = max(peak, peakRSS(b))
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		sys = max(sys, float64(ms.Sys)/mib)
	}
	b.ReportMetric(peak, "peak-RSS-MiB")
	b.ReportMetric(sys, "go-Sys-MiB")
}

// resetPeakRSS sets VmHWM back to the current RSS (proc(5), clear_refs).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("cannot reset the peak RSS (%v): it includes the set-up", err)
	}
}

func peakRSS(b *testing.B) float64 {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}
