package disk

import (
	"bytes"
	"compress/bzip2"
	"encoding/binary"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Compression of the served file, from its first bytes. The URL's suffix
// is not trusted: object stores and image mirrors rename freely.
type compression string

const (
	compNone  compression = "raw"
	compGzip  compression = "gzip"
	compZstd  compression = "zstd"
	compXz    compression = "xz"
	compBzip2 compression = "bzip2"
)

const compMagicLen = 6

func detectCompression(b []byte) compression {
	switch {
	case bytes.HasPrefix(b, []byte{0x1f, 0x8b}):
		return compGzip
	case bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return compZstd
	case bytes.HasPrefix(b, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}):
		return compXz
	case bytes.HasPrefix(b, []byte("BZh")) && len(b) >= 4 && b[3] >= '1' && b[3] <= '9':
		return compBzip2
	}
	return compNone
}

// zstdMaxWindow bounds the memory a zstd stream may ask of the agent,
// which runs from RAM. `zstd -19` uses 8 MiB windows and `--long` 128 MiB;
// a larger window is refused with an error that says so.
const zstdMaxWindow = 128 << 20

// decompressor wraps r (the served bytes) in the decoder c needs. close
// releases the decoder's goroutines and buffers.
func decompressor(c compression, r io.Reader) (out io.Reader, closeFn func(), err error) {
	nop := func() {}
	switch c {
	case compGzip:
		// klauspost's gzip rather than the standard library's: the same
		// API, about twice as fast, and already a dependency for zstd.
		// Concatenated members (pigz, bgzip) are read as one stream.
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, nop, err
		}
		return z, func() { _ = z.Close() }, nil
	case compZstd:
		// Two decoder goroutines: the node has cores to spare, and
		// more would only add buffers (memory) for little speed.
		z, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(2),
			zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, nop, err
		}
		return z, z.Close, nil
	case compXz:
		// ulikunitz/xz: pure Go, kept, no cgo (the agent is a static
		// binary). Its default dictionary cap (2 GiB) is far more than
		// an agent in RAM has; xz -9 uses 64 MiB.
		cfg := xz.ReaderConfig{DictCap: 256 << 20}
		z, err := cfg.NewReader(r)
		if err != nil {
			return nil, nop, err
		}
		return z, nop, nil
	case compBzip2:
		// The standard library's: slow, but free, and bzip2 images
		// still exist.
		return bzip2.NewReader(r), nop, nil
	}
	return r, nop, nil
}

// innerMagicLen is how much of the (decompressed) image detectContainer
// looks at: ISO 9660's "CD001" sits at byte 32769.
const innerMagicLen = 0x8001 + 5

// detectContainer names the disk-image container format b starts with,
// or returns "" for a raw disk image. Writing such an image byte for byte
// would give a disk that does not boot: qcow2 is converted as it streams
// (qcow2.go), the others are refused.
func detectContainer(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("QFI\xfb")):
		return "qcow2"
	case bytes.HasPrefix(b, []byte("QEVM")):
		return "qcow (v1)"
	case bytes.HasPrefix(b, []byte("KDMV")), bytes.HasPrefix(b, []byte("COWD")),
		bytes.HasPrefix(b, []byte("# Disk DescriptorFile")):
		return "vmdk"
	case bytes.HasPrefix(b, []byte("vhdxfile")):
		return "vhdx"
	case bytes.HasPrefix(b, []byte("conectix")):
		// A dynamic VHD starts with a copy of its footer. (A fixed VHD is
		// raw data with a footer at the end: it writes fine as raw.)
		return "vhd"
	case len(b) >= 0x44 && binary.LittleEndian.Uint32(b[0x40:]) == 0xbeda107f:
		return "vdi"
	case len(b) >= innerMagicLen && string(b[0x8001:0x8006]) == "CD001" && !hasBootSignature(b):
		// A plain ISO 9660 image. Hybrid ISOs (isohybrid: most Linux
		// installers and live images) also carry an MBR or GPT and boot
		// from a disk they are written to, as `dd` users know; those pass.
		return "ISO 9660 (without a partition table)"
	}
	return ""
}

func hasBootSignature(b []byte) bool {
	return len(b) >= 512 && b[510] == 0x55 && b[511] == 0xaa
}

func formatError(name string) error {
	return inputErr(CodeImageFormat, nil,
		"image is %s, not a raw or qcow2 disk image: convert it (qemu-img convert -O raw, or -O qcow2), optionally compressed with gzip, zstd or xz", name)
}

func corruptError(c compression, err error) error {
	return inputErr(CodeImageFormat, err, "image is not valid %s", c)
}
