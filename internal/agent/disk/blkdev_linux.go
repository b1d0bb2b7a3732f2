package disk

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The block-device ioctls the agent uses (linux/fs.h). Each takes the
// open device; on a regular file they fail with ENOTTY, and the callers
// fall back or carry on.

// zeroOut makes [off, off+n) of a block device read as zeros: the kernel
// uses the device's WRITE ZEROES (fast on NVMe and most SSDs, and on
// thin-provisioned volumes) or writes zero pages itself.
func zeroOut(f *os.File, off, n int64) error {
	r := [2]uint64{uint64(off), uint64(n)}
	return ioctlPtr(f, unix.BLKZEROOUT, unsafe.Pointer(&r))
}

// discard tells the device [off, off+n) is unused. It does not promise
// the range reads back as zeros (hence zeroOut afterwards), but frees
// flash and thin-provisioned space for the next tenant.
func discard(f *os.File, off, n int64) error {
	r := [2]uint64{uint64(off), uint64(n)}
	return ioctlPtr(f, unix.BLKDISCARD, unsafe.Pointer(&r))
}

// flushBuffers writes back and then drops the kernel's cached pages of
// the device, so the next read comes from the disk, not from the cache
// of what we just wrote.
func flushBuffers(f *os.File) error {
	return ioctlPtr(f, unix.BLKFLSBUF, nil)
}

// rereadPartitions asks the kernel to read the partition table again.
// It fails with EBUSY while a partition is mounted; the agent reboots
// the node anyway, so that is only a note.
func rereadPartitions(f *os.File) error {
	return ioctlPtr(f, unix.BLKRRPART, nil)
}

func ioctlPtr(f *os.File, req uintptr, arg unsafe.Pointer) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno unix.Errno
	if err := sc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
