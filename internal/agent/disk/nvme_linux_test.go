package disk

import (
	"testing"
	"unsafe"
)

// The ioctl's number encodes the struct's size: a wrong layout is a
// command the kernel refuses (or misreads).
func TestNVMePassthruLayout(t *testing.T) {
	if got := unsafe.Sizeof(nvmePassthru{}); got != 72 {
		t.Fatalf("struct nvme_passthru_cmd is 72 bytes, ours %d", got)
	}
	// _IOWR('N', 0x41, 72): direction read|write, size, type, number.
	if want := uint32(3)<<30 | 72<<16 | 'N'<<8 | 0x41; nvmeIoctlAdminCmd != want {
		t.Fatalf("NVME_IOCTL_ADMIN_CMD %#x, want %#x", nvmeIoctlAdminCmd, want)
	}
	if want := uint32('N'<<8 | 0x40); nvmeIoctlID != want { // _IO('N', 0x40)
		t.Fatalf("NVME_IOCTL_ID %#x, want %#x", nvmeIoctlID, want)
	}
	if off := unsafe.Offsetof(nvmePassthru{}.cdw10); off != 40 {
		t.Fatalf("cdw10 at offset %d, want 40", off)
	}
	if off := unsafe.Offsetof(nvmePassthru{}.timeoutMs); off != 64 {
		t.Fatalf("timeout_ms at offset %d, want 64", off)
	}
}
