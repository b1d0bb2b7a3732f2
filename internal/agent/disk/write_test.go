package disk

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// testImage is a deterministic "disk image": random blocks (so a resume
// at the wrong offset shows) with runs of zeros (so compression works).
func testImage(size int) []byte {
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < size; i += 64 << 10 {
		if (i/(64<<10))%2 == 0 {
			for j := i; j < min(i+64<<10, size); j += 8 {
				v := r.Uint64()
				for k := 0; k < 8 && j+k < size; k++ {
					b[j+k] = byte(v >> (8 * k))
				}
			}
		}
	}
	copy(b, "RAWIMAGE")
	b[510], b[511] = 0x55, 0xaa
	return b
}

func gzipped(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	_, _ = z.Write(b) // an HTTP handler or an in-memory writer: nothing to do with an error
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstded(t testing.TB, b []byte) []byte {
	z, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	return z.EncodeAll(b, nil)
}

func xzed(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	z, err := xz.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = z.Write(b) // an HTTP handler or an in-memory writer: nothing to do with an error
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha256hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// newDisk makes a regular file standing for a disk of size bytes.
func newDisk(t testing.TB, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// serve serves body at /image with ETag and Range support
// (http.ServeContent), counting requests.
func serve(t testing.TB, body []byte) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "image", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

var fast = Options{Backoff: time.Millisecond, ChunkSize: 1 << 20}

// assertWritten checks the disk starts with exactly img.
func assertWritten(t *testing.T, disk string, img []byte) {
	t.Helper()
	got, err := os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(img) {
		t.Fatalf("disk is %d bytes, image %d", len(got), len(img))
	}
	if sha256hex(got[:len(img)]) != sha256hex(img) {
		t.Fatalf("disk bytes differ from the image")
	}
}

func TestWriteFormats(t *testing.T) {
	img := testImage(3<<20 + 12345) // not a multiple of the chunk size
	for _, tc := range []struct {
		format string
		served []byte
	}{
		{"raw", img},
		{"gzip", gzipped(t, img)},
		{"zstd", zstded(t, img)},
		{"xz", xzed(t, img)},
	} {
		t.Run(tc.format, func(t *testing.T) {
			srv, _ := serve(t, tc.served)
			disk := newDisk(t, 8<<20)
			res, err := Write(context.Background(), Source{URL: srv.URL + "/image", Checksum: sha256hex(tc.served)}, Target{Path: disk}, fast)
			if err != nil {
				t.Fatal(err)
			}
			assertWritten(t, disk, img)
			if res.Format != tc.format || res.Written != int64(len(img)) || res.Served != int64(len(tc.served)) ||
				res.Downloaded != int64(len(tc.served)) || res.Digest.String() != "sha256:"+sha256hex(tc.served) {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

func TestWriteBzip2(t *testing.T) {
	// testdata/pattern.img.bz2 was made by bzip2(1) from patternImage():
	// the standard library has a bzip2 reader but no writer.
	served, err := os.ReadFile("testdata/pattern.img.bz2")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := serve(t, served)
	disk := newDisk(t, 4<<20)
	res, err := Write(context.Background(), Source{URL: srv.URL + "/image"}, Target{Path: disk}, fast)
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != "bzip2" {
		t.Fatalf("format %q", res.Format)
	}
	assertWritten(t, disk, patternImage())
}

// patternImage is the image behind testdata/pattern.img.bz2.
func patternImage() []byte {
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = byte(i / 512)
	}
	copy(b, "RAWIMAGE")
	return b
}

func TestWriteChecksumAlgorithms(t *testing.T) {
	img := testImage(1 << 20)
	served := zstded(t, img)
	m := md5.Sum(served)
	s := sha512.Sum512(served)
	srv, _ := serve(t, served)
	for _, sum := range []string{
		hex.EncodeToString(m[:]), "md5:" + hex.EncodeToString(m[:]),
		strings.ToUpper(sha256hex(served)), "sha256:" + sha256hex(served),
		hex.EncodeToString(s[:]), "sha512:" + hex.EncodeToString(s[:]),
	} {
		disk := newDisk(t, 2<<20)
		res, err := Write(context.Background(), Source{URL: srv.URL + "/image", Checksum: sum}, Target{Path: disk}, fast)
		if err != nil {
			t.Fatalf("%s: %v", sum, err)
		}
		if !strings.EqualFold(res.Digest.Hex, sum[strings.Index(sum, ":")+1:]) {
			t.Fatalf("%s: digest %s", sum, res.Digest)
		}
		assertWritten(t, disk, img)
	}
}

func TestWriteChecksumMismatch(t *testing.T) {
	img := testImage(1 << 20)
	srv, _ := serve(t, img)
	want := sha256hex([]byte("something else"))
	_, err := Write(context.Background(), Source{URL: srv.URL + "/image", Checksum: want}, Target{Path: newDisk(t, 2<<20)}, fast)
	assertErr(t, err, ErrInput, CodeChecksumMismatch)
	if !strings.Contains(err.Error(), "expected sha256:"+want) || !strings.Contains(err.Error(), "got sha256:"+sha256hex(img)) {
		t.Fatalf("error does not name both digests: %v", err)
	}
}

func TestWriteBadChecksum(t *testing.T) {
	for _, sum := range []string{"abc", "md5:" + sha256hex(nil), "crc32:" + strings.Repeat("0", 32), strings.Repeat("0", 40), strings.Repeat("g", 64)} {
		_, err := Write(context.Background(), Source{URL: "http://127.0.0.1:1/x", Checksum: sum}, Target{Path: newDisk(t, 1<<20)}, fast)
		assertErr(t, err, ErrInput, CodeChecksumInvalid)
	}
}

func assertErr(t *testing.T, err, kind error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	other := ErrMachine
	if kind == ErrMachine {
		other = ErrInput
	}
	if !errors.Is(err, kind) || errors.Is(err, other) || CodeOf(err) != code {
		t.Fatalf("error %q: code %q, input %v, machine %v; want %s, %v", err, CodeOf(err), errors.Is(err, ErrInput), errors.Is(err, ErrMachine), code, kind)
	}
}

// secretURL puts credentials where users put them: userinfo and query.
func secretURL(base string) string {
	u := strings.Replace(base, "http://", "http://alice:hunter2@", 1)
	return u + "/image?X-Amz-Signature=s3cr3t&token=s3cr3t"
}

func assertNoSecret(t *testing.T, err error) {
	t.Helper()
	for _, s := range []string{"hunter2", "s3cr3t", "alice"} {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("error leaks %q: %v", s, err)
		}
	}
}

func TestWriteUnreachable(t *testing.T) {
	// A port with nothing listening: bind one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()

	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) }))
	defer gone.Close()
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer denied.Close()
	var fiveHundreds atomic.Int32
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fiveHundreds.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer broken.Close()

	for _, tc := range []struct {
		name, url, code string
	}{
		{"refused", secretURL(closed), CodeImageUnreachable},
		{"dns", secretURL("http://no-such-host.invalid"), CodeImageUnreachable},
		{"404", secretURL(notFound.URL), CodeImageNotFound},
		{"410", secretURL(gone.URL), CodeImageNotFound},
		{"403", secretURL(denied.URL), CodeImageDenied},
		{"502", secretURL(broken.URL), CodeImageUnreachable},
		{"scheme", "ftp://alice:hunter2@example.com/x?token=s3cr3t", CodeImageUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := newDisk(t, 1<<20)
			_, err := Write(context.Background(), Source{URL: tc.url}, Target{Path: disk}, Options{Backoff: time.Millisecond, Retries: 2})
			assertErr(t, err, ErrInput, tc.code)
			assertNoSecret(t, err)
			t.Log(err)
		})
	}
	// 5xx is retried (Retries: 2 → three tries); 404 is not.
	if n := fiveHundreds.Load(); n != 3 {
		t.Fatalf("502 server got %d requests, want 3", n)
	}
}

func TestWriteTooLarge(t *testing.T) {
	img := testImage(3 << 20)
	for _, tc := range []struct {
		name   string
		served []byte
	}{{"raw", img}, {"zstd", zstded(t, img)}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := serve(t, tc.served)
			disk := newDisk(t, 2<<20)
			_, err := Write(context.Background(), Source{URL: srv.URL + "/image"}, Target{Path: disk}, fast)
			assertErr(t, err, ErrInput, CodeImageTooLarge)
			if fi, _ := os.Stat(disk); fi.Size() != 2<<20 {
				t.Fatalf("disk grew to %d bytes", fi.Size())
			}
		})
	}
}

func TestWriteRefusesContainers(t *testing.T) {
	vmdk := append([]byte("KDMV"), make([]byte, 64<<10)...)
	vhd := append([]byte("conectix"), make([]byte, 64<<10)...)
	iso := make([]byte, 64<<10)
	copy(iso[0x8001:], "CD001")
	hybrid := bytes.Clone(iso) // isohybrid: boots from a disk, so it passes
	hybrid[510], hybrid[511] = 0x55, 0xaa
	for _, tc := range []struct {
		name   string
		served []byte
		want   string // "" = accepted
	}{
		{"vmdk", vmdk, "vmdk"},
		{"vmdk in zstd", zstded(t, vmdk), "vmdk"},
		{"vhd", vhd, "vhd"},
		{"iso", iso, "ISO 9660"},
		{"hybrid iso", hybrid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := serve(t, tc.served)
			_, err := Write(context.Background(), Source{URL: srv.URL + "/image"}, Target{Path: newDisk(t, 2<<20)}, fast)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			assertErr(t, err, ErrInput, CodeImageFormat)
			if !strings.Contains(err.Error(), "image is "+tc.want) || !strings.Contains(err.Error(), "not a raw or qcow2 disk image") {
				t.Fatalf("error does not name the format: %v", err)
			}
		})
	}
}

func TestWriteCorruptCompression(t *testing.T) {
	served := zstded(t, testImage(1<<20))
	served = served[:len(served)/2] // a truncated file, served whole
	srv, _ := serve(t, served)
	_, err := Write(context.Background(), Source{URL: srv.URL + "/image"}, Target{Path: newDisk(t, 2<<20)}, fast)
	assertErr(t, err, ErrInput, CodeImageFormat)
}

func TestWriteEmpty(t *testing.T) {
	srv, _ := serve(t, nil)
	_, err := Write(context.Background(), Source{URL: srv.URL + "/image"}, Target{Path: newDisk(t, 1<<20)}, fast)
	assertErr(t, err, ErrInput, CodeImageEmpty)
}

func TestWriteDiskMissing(t *testing.T) {
	srv, _ := serve(t, testImage(1<<20))
	_, err := Write(context.Background(), Source{URL: srv.URL + "/image"}, Target{Path: filepath.Join(t.TempDir(), "sdz")}, fast)
	assertErr(t, err, ErrMachine, CodeDiskGone)
}

func TestWriteDiskNotWritable(t *testing.T) {
	srv, _ := serve(t, testImage(1<<20))
	_, err := Write(context.Background(), Source{URL: srv.URL + "/image"}, Target{Path: t.TempDir()}, fast)
	assertErr(t, err, ErrMachine, CodeDiskIO)
}

// failingDisk fails writes past a point, as a dying disk does.
type failingDisk struct{ after int64 }

func (d *failingDisk) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > d.after {
		return 0, &os.PathError{Op: "write", Path: "/dev/sdz", Err: syscall.EIO}
	}
	return len(p), nil
}
func (d *failingDisk) Sync() error  { return nil }
func (d *failingDisk) Close() error { return nil }

func TestWriteDiskIOError(t *testing.T) {
	srv, _ := serve(t, testImage(4<<20))
	orig := openTarget
	defer func() { openTarget = orig }()
	openTarget = func(string) (targetFile, int64, error) { return &failingDisk{after: 2 << 20}, 8 << 20, nil }
	_, err := Write(context.Background(), Source{URL: srv.URL + "/image"}, Target{Path: "/dev/sdz"}, fast)
	assertErr(t, err, ErrMachine, CodeDiskIO)
	if !strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("error does not say what failed: %v", err)
	}
}

// dropOnce serves body with ETag and Range support, but the first
// request's connection dies after cut bytes of the body.
func dropOnce(t testing.TB, body []byte, cut int, honourRange bool) (*httptest.Server, *[]string) {
	var n atomic.Int32
	var ranges []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ranges = append(ranges, r.Header.Get("Range")+"|"+r.Header.Get("If-Range"))
		w.Header().Set("ETag", `"v1"`)
		if n.Add(1) == 1 {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body[:cut]) // an HTTP handler or an in-memory writer: nothing to do with an error
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if !honourRange {
			r.Header.Del("Range")
		}
		http.ServeContent(w, r, "image", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &ranges
}

func TestWriteResume(t *testing.T) {
	img := testImage(3 << 20)
	for _, tc := range []struct {
		name   string
		served []byte
	}{{"raw", img}, {"zstd", zstded(t, img)}} {
		t.Run(tc.name, func(t *testing.T) {
			cut := len(tc.served)/2 + 777
			srv, ranges := dropOnce(t, tc.served, cut, true)
			disk := newDisk(t, 4<<20)
			res, err := Write(context.Background(), Source{URL: srv.URL + "/image", Checksum: sha256hex(tc.served)}, Target{Path: disk}, fast)
			if err != nil {
				t.Fatal(err)
			}
			assertWritten(t, disk, img)
			if res.Resumes != 1 || res.Restarts != 0 || res.Downloaded != int64(len(tc.served)) {
				t.Fatalf("result %+v", res)
			}
			if len(*ranges) != 2 || (*ranges)[1] != "bytes="+strconv.Itoa(cut)+`-|"v1"` {
				t.Fatalf("requests: %q", *ranges)
			}
		})
	}
}

func TestWriteRestartsWhenRangeIgnored(t *testing.T) {
	img := testImage(3 << 20)
	served := gzipped(t, img)
	cut := len(served) / 2
	srv, ranges := dropOnce(t, served, cut, false)
	disk := newDisk(t, 4<<20)
	var logs []string
	opts := fast
	opts.Logf = func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
	res, err := Write(context.Background(), Source{URL: srv.URL + "/image", Checksum: sha256hex(served)}, Target{Path: disk}, opts)
	if err != nil {
		t.Fatal(err)
	}
	assertWritten(t, disk, img)
	if res.Restarts != 1 || res.Resumes != 0 || res.Downloaded != int64(cut+len(served)) {
		t.Fatalf("result %+v (served %d, cut %d)", res, len(served), cut)
	}
	// One try at resuming, answered with 200; then a fresh download.
	if len(*ranges) != 3 || !strings.HasPrefix((*ranges)[1], "bytes=") || (*ranges)[2] != "|" {
		t.Fatalf("requests: %q", *ranges)
	}
	if !strings.Contains(strings.Join(logs, "\n"), "ignores Range") {
		t.Fatalf("logs do not say why it restarted: %q", logs)
	}
}

func TestWriteGivesUpOnDeadServer(t *testing.T) {
	// Every connection dies after 1000 bytes and the resume is refused
	// with a 503: consecutive failures without progress are bounded.
	img := testImage(1 << 20)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(img)))
		_, _ = w.Write(img[:1000]) // an HTTP handler or an in-memory writer: nothing to do with an error
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer srv.Close()
	opts := fast
	opts.Retries = 3
	var logs []string
	opts.Logf = func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
	_, err := Write(context.Background(), Source{URL: secretURL(srv.URL)}, Target{Path: newDisk(t, 2<<20)}, opts)
	assertErr(t, err, ErrInput, CodeImageUnreachable)
	assertNoSecret(t, err)
	if len(logs) < 4 {
		t.Fatalf("logs: %q", logs)
	}
	assertNoSecret(t, errors.New(strings.Join(logs, "\n")))
	if got := n.Load(); got != 4 {
		t.Fatalf("%d requests, want 1 + 3 retries", got)
	}
}

func TestWriteStall(t *testing.T) {
	// The first connection sends half the image and then nothing, but
	// stays open: the stall timeout turns it into a resume.
	img := testImage(1 << 20)
	var n atomic.Int32
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		if n.Add(1) == 1 {
			w.Header().Set("Content-Length", strconv.Itoa(len(img)))
			_, _ = w.Write(img[:len(img)/2]) // an HTTP handler or an in-memory writer: nothing to do with an error
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		http.ServeContent(w, r, "image", time.Time{}, bytes.NewReader(img))
	}))
	defer srv.Close()
	opts := fast
	opts.StallTimeout = 50 * time.Millisecond
	disk := newDisk(t, 2<<20)
	res, err := Write(context.Background(), Source{URL: srv.URL + "/image", Checksum: sha256hex(img)}, Target{Path: disk}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumes != 1 {
		t.Fatalf("result %+v", res)
	}
	assertWritten(t, disk, img)
}

func TestWriteCanceled(t *testing.T) {
	srv, _ := serve(t, testImage(1<<20))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Write(ctx, Source{URL: srv.URL + "/image"}, Target{Path: newDisk(t, 2<<20)}, fast)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:p@h/a/b?sig=x&y=z#frag": "https://REDACTED@h/a/b?sig=REDACTED&y=REDACTED",
		"http://h:8080/i.raw":              "http://h:8080/i.raw",
		"http://tok@h/i?flag":              "http://REDACTED@h/i?flag=REDACTED",
		"http://h/%zz":                     "(unparseable URL)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWriteRestartsWithoutValidator(t *testing.T) {
	// No ETag, no Last-Modified: a resume could splice two versions of
	// the file, so it starts over instead (and needs no Range support).
	img := testImage(2 << 20)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") != "" {
			t.Errorf("a Range request without a validator: %q", r.Header.Get("Range"))
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(img)))
		if n.Add(1) == 1 {
			_, _ = w.Write(img[:len(img)/3]) // an HTTP handler or an in-memory writer: nothing to do with an error
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		_, _ = w.Write(img) // an HTTP handler or an in-memory writer: nothing to do with an error
	}))
	defer srv.Close()
	disk := newDisk(t, 4<<20)
	res, err := Write(context.Background(), Source{URL: srv.URL, Checksum: sha256hex(img)}, Target{Path: disk}, fast)
	if err != nil {
		t.Fatal(err)
	}
	if res.Restarts != 1 || res.Resumes != 0 {
		t.Fatalf("result %+v", res)
	}
	assertWritten(t, disk, img)
}

func TestWriteRestartsWhenImageChanges(t *testing.T) {
	// The file is replaced while the connection is down: If-Range makes
	// the server send the new file whole, and Write starts over with it
	// rather than splicing old and new.
	oldImg, newImg := testImage(2<<20), bytes.Repeat([]byte("N"), 2<<20)
	copy(newImg, "RAWIMAGE")
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("ETag", `"old"`)
			w.Header().Set("Content-Length", strconv.Itoa(len(oldImg)))
			_, _ = w.Write(oldImg[:len(oldImg)/2]) // an HTTP handler: nothing to do with an error
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("ETag", `"new"`)
		http.ServeContent(w, r, "image", time.Time{}, bytes.NewReader(newImg))
	}))
	defer srv.Close()
	disk := newDisk(t, 4<<20)
	var logs []string
	opts := fast
	opts.Logf = func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
	res, err := Write(context.Background(), Source{URL: srv.URL}, Target{Path: disk}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Restarts != 1 || res.Digest.Hex != sha256hex(newImg) {
		t.Fatalf("result %+v", res)
	}
	assertWritten(t, disk, newImg)
	if !strings.Contains(strings.Join(logs, "\n"), "changed on the server") {
		t.Fatalf("logs: %q", logs)
	}
}
