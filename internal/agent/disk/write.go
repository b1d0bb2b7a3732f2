package disk

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Source is an image to write.
type Source struct {
	// URL is http:// or https://. It may carry credentials (userinfo, a
	// presigned query string); they never appear in errors or logs.
	URL string
	// Checksum is the API's image.checksum (see ParseChecksum), or "" for
	// none. It is the digest of the file as served, so of the compressed
	// bytes for a compressed image: what `sha256sum image.raw.zst` prints,
	// and what Ironic checks too.
	Checksum string
}

// Target is where an image goes: a block device (/dev/sda) or, in tests,
// a regular file standing for a disk of the file's current size. The
// target must exist; it is never created, truncated or grown.
type Target struct {
	Path string
}

// Options tune Write; the zero value is what the agent uses.
type Options struct {
	// Client fetches the image; nil means NewClient(nil). A client of the
	// agent's own is made by NewClient, which guards what it may reach.
	Client *http.Client
	// Retries bounds consecutive failed attempts (connects, dropped
	// connections, restarts) without progress; 0 means 5.
	Retries int
	// Backoff is the wait before the first retry, doubling up to 30s; 0
	// means 1s.
	Backoff time.Duration
	// StallTimeout is how long a connection may deliver nothing before it
	// counts as dropped; 0 means one minute.
	StallTimeout time.Duration
	// ChunkSize is the size of each write (and of each pooled buffer),
	// rounded up to 1 MiB; 0 means 4 MiB.
	ChunkSize int
	// Buffers is the number of pooled buffers, so memory is about
	// Buffers*ChunkSize plus a decompressor's window; 0 means 4.
	Buffers int
	// Progress, if set, is called after every chunk written, from one
	// goroutine. Keep it cheap.
	Progress func(Progress)
	// Logf, if set, receives notes on retries, resumes and restarts.
	Logf func(format string, args ...any)
}

// Progress is a snapshot of a running Write.
type Progress struct {
	Written    int64 // image bytes written to the target
	Downloaded int64 // bytes received, re-downloads included
	Size       int64 // the served file's size, -1 if the server did not say
}

// Result is what a finished Write did.
type Result struct {
	Format string // compression of the served file: raw, gzip, zstd, xz or bzip2
	// Container is "qcow2" for a qcow2 image (converted as it streamed),
	// "" for a raw disk image.
	Container  string
	Written    int64 // disk bytes written (the decompressed size; a qcow2's virtual size)
	Served     int64 // size of the file as served
	Downloaded int64 // bytes received over the network, re-downloads included
	// Digest is the checksum of the served file: in Source.Checksum's
	// algorithm when one was given (and then verified), else sha256.
	Digest   Checksum
	Duration time.Duration
	Resumes  int // connections resumed with a Range request
	Restarts int // downloads started over from byte zero
}

const (
	defaultChunk = 4 << 20
	peekBuffer   = 64 << 10
)

// Write streams src to dst: detects the compression from the first bytes,
// refuses images that are not raw disk images, verifies the checksum of
// the served bytes as they arrive, writes in large chunks at
// chunk-aligned offsets and syncs at the end.
//
// Memory is bounded by opts.Buffers*opts.ChunkSize (16 MiB by default)
// plus the decompressor's window: the image is never held whole.
//
// A connection lost mid-body is resumed where it stopped (Range with
// If-Range), so the hash simply continues. If the server ignores Range,
// or the file changed, or the server gives no validator, the download
// restarts from byte zero (and the image is written again from the start;
// Logf says why).
//
// Errors are *Error, of kind ErrInput or ErrMachine, or ctx.Err(). On a
// checksum mismatch the target holds the bad image: the caller erases or
// rewrites it, never boots it.
func Write(ctx context.Context, src Source, dst Target, opts Options) (Result, error) {
	start := time.Now()
	opts = opts.withDefaults()

	sum := Checksum{Algo: "sha256"}
	if src.Checksum != "" {
		c, err := ParseChecksum(src.Checksum)
		if err != nil {
			return Result{}, err
		}
		sum = c
	}
	u, err := url.Parse(src.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Result{}, inputErr(CodeImageUnreachable, nil, "image URL %s is not an http or https URL", RedactURL(src.URL))
	}

	f, capacity, err := openTarget(dst.Path)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = f.Close() }() // synced before the result is decided

	w := &writer{
		ctx: ctx, opts: opts, file: f, path: dst.Path, capacity: capacity,
		u: u, shown: redact(u), sum: sum,
		retry: &retrier{max: opts.Retries, base: opts.Backoff},
	}
	w.pool = make(chan []byte, opts.Buffers)
	for range opts.Buffers {
		w.pool <- make([]byte, opts.ChunkSize)
	}
	res, err := w.run()
	res.Duration = time.Since(start)
	res.Downloaded = w.received.Load()
	return res, err
}

func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = NewClient(nil)
	}
	if o.Retries <= 0 {
		o.Retries = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = time.Minute
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = defaultChunk
	}
	o.ChunkSize = (o.ChunkSize + 1<<20 - 1) &^ (1<<20 - 1)
	if o.Buffers < 2 {
		o.Buffers = 4
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// targetFile is what Write needs of a disk; a variable so a test can
// hand in a disk whose writes fail.
type targetFile interface {
	io.WriterAt
	Sync() error
	Close() error
}

var openTarget = func(path string) (targetFile, int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, 0, diskError(path, "open", err)
	}
	// Seeking to the end gives a block device's size as well as a file's.
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, 0, diskError(path, "size", err)
	}
	if size == 0 {
		f.Close()
		return nil, 0, machineErr(CodeDiskGone, nil, "disk %s has size 0", path)
	}
	return f, size, nil
}

type writer struct {
	ctx      context.Context
	opts     Options
	file     targetFile
	path     string
	capacity int64
	u        *url.URL
	shown    string
	sum      Checksum
	retry    *retrier
	pool     chan []byte
	received atomic.Int64
}

// run makes attempts until one finishes or fails for good; an attempt
// ends early only to restart from zero.
func (w *writer) run() (Result, error) {
	restarts := 0
	for {
		res, err := w.attempt()
		res.Restarts = restarts
		var re *errRestart
		if !errors.As(err, &re) {
			return res, err
		}
		w.opts.Logf("image download: %s; starting over from byte 0", re.reason)
		// Restarts have their own bound: each may make progress (which
		// resets the retry budget) and still never finish.
		if restarts >= w.opts.Retries || !w.retry.wait(w.ctx) {
			if w.ctx.Err() != nil {
				return res, w.ctx.Err()
			}
			return res, inputErr(CodeImageUnreachable, nil, "image download from %s: gave up after %d restarts (%s)", w.shown, restarts, re.reason)
		}
		restarts++
	}
}

// hashReader hashes and counts the served bytes in the order they are read.
type hashReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (h *hashReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

type chunk struct {
	buf []byte
	n   int
	off int64
}

func (w *writer) attempt() (Result, error) {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	fe := &fetcher{
		ctx: ctx, client: w.opts.Client, u: w.u, shown: w.shown,
		stall: w.opts.StallTimeout, retry: w.retry, logf: w.opts.Logf,
		size: -1, received: &w.received,
	}
	defer fe.Close()
	served := &hashReader{r: fe, h: newHash(w.sum)}
	res := Result{Format: string(compNone), Digest: Checksum{Algo: w.sum.Algo}}
	// fail picks the error to report: the fetcher's own when it has one
	// (a decompressor may have handed up a vaguer one), else err as is.
	fail := func(err error, what func(error) error) error {
		if fe.failed != nil {
			return fe.failed
		}
		if w.ctx.Err() != nil {
			return w.ctx.Err()
		}
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		return what(err)
	}

	br := bufio.NewReaderSize(served, peekBuffer)
	head, err := br.Peek(compMagicLen)
	if err != nil && err != io.EOF {
		return res, fail(err, func(err error) error {
			return inputErr(CodeImageUnreachable, err, "image download from %s", w.shown)
		})
	}
	if len(head) == 0 {
		return res, inputErr(CodeImageEmpty, nil, "image at %s is empty", w.shown)
	}
	comp := detectCompression(head)
	res.Format = string(comp)
	corrupt := func(err error) error { return corruptError(comp, err) }
	dec, closeDec, err := decompressor(comp, br)
	if err != nil {
		return res, fail(err, corrupt)
	}
	defer closeDec()
	ir := bufio.NewReaderSize(dec, peekBuffer)
	inner, err := ir.Peek(innerMagicLen)
	if err != nil && err != io.EOF {
		return res, fail(err, corrupt)
	}
	if len(inner) == 0 {
		return res, inputErr(CodeImageEmpty, nil, "image at %s holds no data", w.shown)
	}
	qcow2 := false
	switch name := detectContainer(inner); name {
	case "":
		if comp == compNone && fe.size > w.capacity {
			return res, tooLarge(fe.size, w.capacity, w.path)
		}
	case "qcow2":
		qcow2, res.Container = true, name
	default:
		return res, formatError(name)
	}

	// Two goroutines with a fixed pool of buffers between them: this one
	// downloads, hashes and decompresses; the other writes, so the
	// network and the disk both stay busy.
	full := make(chan chunk, len(w.pool))
	var wg sync.WaitGroup
	var writeErr error
	var written atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for c := range full {
			if writeErr == nil {
				if _, err := w.file.WriteAt(c.buf[:c.n], c.off); err != nil {
					writeErr = diskError(w.path, "write", err)
					cancel()
				} else {
					written.Add(int64(c.n))
					if w.opts.Progress != nil {
						w.opts.Progress(Progress{Written: c.off + int64(c.n), Downloaded: w.received.Load(), Size: fe.size})
					}
				}
			}
			w.pool <- c.buf
		}
	}()

	var off int64
	readErr := func() error {
		if qcow2 {
			var err error
			off, err = w.convertQcow2(ctx, ir, full)
			if err != nil {
				if mismatch := w.checksumFirst(err, ir, br, served); mismatch != nil {
					return mismatch
				}
				return fail(err, corrupt)
			}
			// Read the rest through the decoder: the checksum covers the
			// whole file, and a decoder must not race the drain below.
			if _, err := io.Copy(io.Discard, ir); err != nil {
				return fail(err, corrupt)
			}
			return nil
		}
		for {
			var buf []byte
			select {
			case buf = <-w.pool:
			case <-ctx.Done():
				return ctx.Err()
			}
			n, err := fill(ir, buf)
			if n > 0 {
				if off+int64(n) > w.capacity {
					w.pool <- buf
					return tooLarge(-1, w.capacity, w.path)
				}
				full <- chunk{buf: buf, n: n, off: off}
				off += int64(n)
			} else {
				w.pool <- buf
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fail(err, corrupt)
			}
		}
	}()
	close(full)
	wg.Wait()
	if writeErr != nil {
		return res, writeErr
	}
	if readErr != nil {
		if errors.Is(readErr, context.Canceled) && w.ctx.Err() == nil {
			return res, fail(readErr, corrupt)
		}
		return res, readErr
	}
	// A decoder may stop at the end of its stream before the served file
	// ends; the checksum covers the whole file, so read the rest.
	if _, err := io.Copy(io.Discard, br); err != nil {
		return res, fail(err, func(err error) error {
			return inputErr(CodeImageUnreachable, err, "image download from %s", w.shown)
		})
	}
	res.Written = written.Load()
	if qcow2 {
		res.Written = off
	}
	res.Served = served.n
	res.Resumes = fe.resumes
	res.Digest.Hex = hex.EncodeToString(served.h.Sum(nil))
	if w.sum.Hex != "" && res.Digest.Hex != w.sum.Hex {
		return res, inputErr(CodeChecksumMismatch, nil, "image checksum mismatch: expected %s, got %s (of the %d bytes served by %s)", w.sum, res.Digest, served.n, w.shown)
	}
	if err := w.file.Sync(); err != nil {
		return res, diskError(w.path, "sync", err)
	}
	return res, nil
}

// convertQcow2 feeds the writer a qcow2 image's data, converted as it
// streams from r, and zeroes the disk where the image reads as zeros. It
// returns the disk's size.
func (w *writer) convertQcow2(ctx context.Context, r io.Reader, full chan<- chunk) (int64, error) {
	sink := &chunkSink{w: w, ctx: ctx, full: full}
	size, err := convertQcow2(r, w.capacity, sink)
	if err != nil {
		if sink.cur.buf != nil {
			w.pool <- sink.cur.buf
		}
		return size, err
	}
	sink.flush()
	return size, nil
}

// checksumFirst: a qcow2 image that does not convert is often not the
// file the user meant (a truncated upload, the wrong URL). When a
// checksum was given and the rest of the file reads, a mismatch is the
// clearer error, so it is returned (nil otherwise).
func (w *writer) checksumFirst(convErr error, ir, br io.Reader, served *hashReader) error {
	if w.sum.Hex == "" || CodeOf(convErr) != CodeImageFormat {
		return nil
	}
	// Through the decoder first, as at the end of a write: it must not
	// race the drain of the served bytes.
	if _, err := io.Copy(io.Discard, ir); err != nil {
		return nil
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return nil
	}
	got := Checksum{Algo: w.sum.Algo, Hex: hex.EncodeToString(served.h.Sum(nil))}
	if got.Hex == w.sum.Hex {
		return nil
	}
	return inputErr(CodeChecksumMismatch, nil, "image checksum mismatch: expected %s, got %s (of the %d bytes served by %s); nor is it a qcow2 image that converts (%s)",
		w.sum, got, served.n, w.shown, convErr)
}

// chunkSink hands a converter's data to the writer goroutine in pooled
// chunks, runs that follow each other on the disk sharing one, and
// zeroes the zero ranges itself.
type chunkSink struct {
	w    *writer
	ctx  context.Context
	full chan<- chunk
	cur  chunk
}

func (s *chunkSink) flush() {
	if s.cur.buf != nil {
		s.full <- s.cur
		s.cur = chunk{}
	}
}

func (s *chunkSink) data(off int64, p []byte) error {
	for len(p) > 0 {
		if s.cur.buf != nil && (off != s.cur.off+int64(s.cur.n) || s.cur.n == len(s.cur.buf)) {
			s.flush()
		}
		if s.cur.buf == nil {
			select {
			case s.cur.buf = <-s.w.pool:
			case <-s.ctx.Done():
				return s.ctx.Err()
			}
			s.cur.n, s.cur.off = 0, off
		}
		n := copy(s.cur.buf[s.cur.n:], p)
		s.cur.n += n
		p = p[n:]
		off += int64(n)
	}
	return nil
}

// zero makes [off, off+n) of the disk read as zeros: a disk holds
// whatever the last tenant left where a cleaning did not erase it. On a
// block device the page-aligned part is zeroed by the kernel (BLKZEROOUT,
// which the device does itself where it can: Write Zeroes), in 1 GiB
// steps so a large hole still sees the context; the rest, and files, get
// written zeros. It runs beside the writer goroutine: the ranges never
// meet.
func (s *chunkSink) zero(off, n int64) error {
	end := off + n
	f, isFile := s.w.file.(*os.File)
	if isFile && isBlockDevice(f) {
		const page, step = 4096, 1 << 30
		if lo, hi := (off+page-1)/page*page, end/page*page; lo < hi {
			done := lo
			for done < hi {
				if err := s.ctx.Err(); err != nil {
					return err
				}
				m := min(step, hi-done)
				if zeroOut(f, done, m) != nil {
					break // not supported here: zeros are written
				}
				done += m
			}
			if err := s.write(off, lo); err != nil {
				return err
			}
			return s.write(done, end)
		}
	}
	return s.write(off, end)
}

var zeroChunk = make([]byte, 1<<20)

func (s *chunkSink) write(off, end int64) error {
	for ; off < end; off += int64(len(zeroChunk)) {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		if _, err := s.w.file.WriteAt(zeroChunk[:min(int64(len(zeroChunk)), end-off)], off); err != nil {
			return diskError(s.w.path, "write", err)
		}
	}
	return nil
}

// fill reads into buf until it is full or r fails. Unlike io.ReadFull it
// hands r's error up as is: a decoder's io.ErrUnexpectedEOF (a truncated
// stream) must not pass for a short last chunk.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func tooLarge(size, capacity int64, path string) error {
	if size >= 0 {
		return inputErr(CodeImageTooLarge, nil, "image is %s, larger than disk %s (%s)", human(size), path, human(capacity))
	}
	return inputErr(CodeImageTooLarge, nil, "image is larger than disk %s (%s)", path, human(capacity))
}

// diskError classifies an I/O error on a disk as the machine's fault.
func diskError(path, op string, err error) error {
	code := CodeDiskIO
	var errno syscall.Errno
	if errors.Is(err, os.ErrNotExist) || (errors.As(err, &errno) && (errno == syscall.ENXIO || errno == syscall.ENODEV)) {
		code = CodeDiskGone
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is in our message already
	}
	return machineErr(code, err, "disk %s: %s", path, op)
}

func human(n int64) string {
	const unit = 1 << 10
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB (%d bytes)", float64(n)/float64(div), "KMGTPE"[exp], n)
}
