//go:build !linux

package disk

import (
	"errors"
	"os"
)

// The agent runs on Linux; elsewhere (a developer's laptop) the package
// builds and works on regular files, and block-device ioctls fail, so
// callers take their fallbacks.

var errNoIoctl = errors.New("block device ioctls need Linux")

func zeroOut(*os.File, int64, int64) error { return errNoIoctl }
func discard(*os.File, int64, int64) error { return errNoIoctl }
func flushBuffers(*os.File) error          { return errNoIoctl }
func rereadPartitions(*os.File) error      { return errNoIoctl }

func nvmeFormat(*os.File) (string, error) { return "", errNotNVMe }
