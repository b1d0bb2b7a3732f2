package disk

import (
	"context"
	"hash/crc32"
	"os"
)

// diskWriter writes to a disk with the context and errors this package
// wants: the machine's fault for any I/O error.
type diskWriter struct {
	ctx context.Context
	f   *os.File
	dev string
}

// writeSync writes b at off and syncs, so what comes next is ordered
// after it on the disk.
func (w *diskWriter) writeSync(b []byte, off int64) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if _, err := w.f.WriteAt(b, off); err != nil {
		return diskError(w.dev, "write", err)
	}
	if err := w.f.Sync(); err != nil {
		return diskError(w.dev, "sync", err)
	}
	return nil
}

// writeZeroPadded writes b at start and zeros up to end, then syncs:
// the zeros remove whatever signatures a previous tenant left there, so
// blkid sees one filesystem in the partition, not two.
func (w *diskWriter) writeZeroPadded(b []byte, start, end int64) error {
	if _, err := w.f.WriteAt(b, start); err != nil {
		return diskError(w.dev, "write", err)
	}
	if err := writeZeros(w.ctx, w.f, w.dev, extent{start + int64(len(b)), end}, make([]byte, 1<<20), nil); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return diskError(w.dev, "sync", err)
	}
	return nil
}

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
