package kmod

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ulikunitz/xz"
	"golang.org/x/sys/unix"
)

// Load loads one module file. A module already loaded (or built into the
// kernel, which reports EEXIST too) is not an error. Compressed modules
// (.ko.xz, .ko.gz, as some distributions ship them) are decompressed here
// and passed with init_module(2): the in-kernel decompression of
// finit_module needs a kernel option Debian 12's 6.1 does not have.
func Load(file string) error {
	var err error
	switch {
	case strings.HasSuffix(file, ".ko"):
		err = finit(file)
	case strings.HasSuffix(file, ".ko.xz"), strings.HasSuffix(file, ".ko.gz"):
		var image []byte
		image, err = decompress(file)
		if err == nil {
			err = unix.InitModule(image, "")
		}
	default:
		return fmt.Errorf("load module %s: unsupported file type (want .ko, .ko.xz or .ko.gz)", file)
	}
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load module %s: %w", Name(file), err)
	}
	return nil
}

func finit(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.FinitModule(int(f.Fd()), "", 0)
}

func decompress(file string) ([]byte, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r io.Reader
	if strings.HasSuffix(file, ".xz") {
		r, err = xz.NewReader(bytes.NewReader(raw))
	} else {
		r, err = gzip.NewReader(bytes.NewReader(raw))
	}
	if err != nil {
		return nil, fmt.Errorf("decompress %s: %w", file, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decompress %s: %w", file, err)
	}
	return out, nil
}
