package disk

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// NVMe Format NVM for full erases. A drive's own format with Secure
// Erase Settings erases every user data block, including those the host
// can no longer address (over-provisioning, remapped blocks), which no
// overwrite reaches, and it takes seconds to minutes instead of hours:
// it is what Ironic's agent, nvme-cli and drive vendors use to wipe NVMe
// disks. The commands go through the kernel's admin passthrough ioctl
// (nvme_linux.go); this file holds what is not Linux's: the command
// fields and reading the Identify data.

// NVMe admin opcodes and values (NVM Express Base Specification 2.0).
const (
	nvmeOpIdentify  = 0x06
	nvmeOpFormatNVM = 0x80

	nvmeCNSNamespace  = 0x00
	nvmeCNSController = 0x01

	nvmeSESUserData = 1 // Secure Erase Settings: user data erase
	nvmeSESCrypto   = 2 // cryptographic erase: the media key is replaced
)

// nvmeFormatTimeout bounds one Format NVM in the kernel (its default for
// admin commands is 60 s; a user data erase of a large drive can take
// many minutes). The agent's command has no deadline of its own: the
// controller's stall rule watches the heartbeats, which go on meanwhile.
const nvmeFormatTimeout = 4 * 60 * 60 * 1000 // ms

// nvmeController is what a Format NVM needs of Identify Controller.
type nvmeController struct {
	format bool // OACS bit 1: Format NVM is supported
	crypto bool // FNA bit 2: cryptographic erase is supported
	allNS  bool // FNA bit 0: a format applies to every namespace
}

func parseIdentifyController(b []byte) (nvmeController, error) {
	if len(b) < 4096 {
		return nvmeController{}, fmt.Errorf("identify controller: %d bytes, want 4096", len(b))
	}
	oacs := binary.LittleEndian.Uint16(b[256:258])
	fna := b[524]
	return nvmeController{format: oacs&(1<<1) != 0, crypto: fna&(1<<2) != 0, allNS: fna&1 != 0}, nil
}

// nvmeFormatCDW10 is the Format NVM command's dword 10 that keeps the
// namespace's current LBA format, metadata and protection settings
// (Identify Namespace FLBAS and DPS), with Secure Erase Settings ses: the
// erase must not change the block size the next tenant's image expects.
func nvmeFormatCDW10(ns []byte, ses uint32) (uint32, error) {
	if len(ns) < 4096 {
		return 0, fmt.Errorf("identify namespace: %d bytes, want 4096", len(ns))
	}
	flbas, dps := uint32(ns[26]), uint32(ns[29])
	// FLBAS: format index bits 3:0, metadata at the end of each block
	// (MSET) bit 4, index bits 5:4 in FLBAS bits 6:5 (more than 16 formats).
	lbaf := flbas&0x0f | (flbas>>5&0x03)<<4
	mset := flbas >> 4 & 1
	pi, pil := dps&0x07, dps>>3&1
	if nlbaf := uint32(ns[25]); lbaf > nlbaf {
		return 0, fmt.Errorf("identify namespace: format index %d beyond the %d formats it lists", lbaf, nlbaf+1)
	}
	return lbaf&0x0f | mset<<4 | pi<<5 | pil<<8 | ses<<9 | (lbaf>>4)<<12, nil
}

// nvmeStatusError is a command the controller completed with an error
// status (Status Code Type and Status Code).
type nvmeStatusError struct {
	op     string
	status uint32
}

func (e *nvmeStatusError) Error() string {
	return fmt.Sprintf("NVMe %s failed with status 0x%03x (type %d, code 0x%02x)", e.op, e.status&0x7ff, e.status>>8&0x7, e.status&0xff)
}

// errNotNVMe: the device is not an NVMe namespace, or the drive has no
// Format NVM; the caller erases another way.
var errNotNVMe = errors.New("not an NVMe namespace with Format NVM")
