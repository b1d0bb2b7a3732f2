package disk

import (
	"errors"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nvmePassthru is struct nvme_passthru_cmd (linux/nvme_ioctl.h), 72 bytes.
type nvmePassthru struct {
	opcode      uint8
	flags       uint8
	rsvd1       uint16
	nsid        uint32
	cdw2, cdw3  uint32
	metadata    uint64
	addr        uint64
	metadataLen uint32
	dataLen     uint32
	cdw10       uint32
	cdw11       uint32
	cdw12       uint32
	cdw13       uint32
	cdw14       uint32
	cdw15       uint32
	timeoutMs   uint32
	result      uint32
}

const (
	nvmeIoctlID       = 0x4e40     // _IO('N', 0x40): the namespace id of the device
	nvmeIoctlAdminCmd = 0xc0484e41 // _IOWR('N', 0x41, struct nvme_passthru_cmd)
)

// nvmeFormat erases the NVMe namespace open as f with the drive's Format
// NVM: a cryptographic erase where the drive offers one, else a user
// data erase, keeping the namespace's block format. It returns which it
// ran, or errNotNVMe when f is not an NVMe namespace or the drive cannot
// format. The kernel re-reads the namespace afterwards.
func nvmeFormat(f *os.File) (string, error) {
	nsid, err := nvmeNamespaceID(f)
	if err != nil {
		return "", errNotNVMe
	}
	ctrlData, err := nvmeIdentify(f, 0, nvmeCNSController)
	if err != nil {
		return "", err
	}
	ctrl, err := parseIdentifyController(ctrlData)
	if err != nil {
		return "", err
	}
	if !ctrl.format {
		return "", errNotNVMe
	}
	nsData, err := nvmeIdentify(f, nsid, nvmeCNSNamespace)
	if err != nil {
		return "", err
	}
	ses, how := uint32(nvmeSESUserData), ErasedByNVMeUserData
	if ctrl.crypto {
		ses, how = nvmeSESCrypto, ErasedByNVMeCrypto
	}
	for {
		cdw10, err := nvmeFormatCDW10(nsData, ses)
		if err != nil {
			return "", err
		}
		err = nvmeAdmin(f, "format", &nvmePassthru{opcode: nvmeOpFormatNVM, nsid: nsid, cdw10: cdw10, timeoutMs: nvmeFormatTimeout})
		var st *nvmeStatusError
		if errors.As(err, &st) && ses == nvmeSESCrypto {
			// Some drives announce a cryptographic erase they refuse
			// for this namespace: a user data erase still erases.
			ses, how = nvmeSESUserData, ErasedByNVMeUserData
			continue
		}
		return how, err
	}
}

func nvmeNamespaceID(f *os.File) (uint32, error) {
	id, err := rawIoctl(f, nvmeIoctlID, nil)
	return uint32(id), err
}

func nvmeIdentify(f *os.File, nsid, cns uint32) ([]byte, error) {
	buf := make([]byte, 4096)
	// The drive writes into buf by its address, which the command holds
	// as a number: pinned, the collector neither moves nor frees it.
	var pin runtime.Pinner
	pin.Pin(&buf[0])
	defer pin.Unpin()
	err := nvmeAdmin(f, "identify", &nvmePassthru{opcode: nvmeOpIdentify, nsid: nsid, cdw10: cns,
		addr: uint64(uintptr(unsafe.Pointer(&buf[0]))), dataLen: uint32(len(buf))})
	return buf, err
}

// nvmeAdmin sends one admin command. The ioctl returns -errno when the
// kernel refused it, and the NVMe status when the drive completed it
// with an error.
func nvmeAdmin(f *os.File, op string, cmd *nvmePassthru) error {
	status, err := rawIoctl(f, nvmeIoctlAdminCmd, unsafe.Pointer(cmd))
	if err != nil {
		return err
	}
	if status != 0 {
		return &nvmeStatusError{op: op, status: uint32(status)}
	}
	return nil
}

// rawIoctl is ioctlPtr for requests whose return value means something.
func rawIoctl(f *os.File, req uintptr, arg unsafe.Pointer) (uintptr, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var (
		ret   uintptr
		errno unix.Errno
	)
	if err := sc.Control(func(fd uintptr) {
		ret, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, errno
	}
	return ret, nil
}
