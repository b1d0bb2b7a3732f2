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
	if got := (nvmeIoctlAdminCmd >> 16) & 0x3fff; got != 72 {
		t.Fatalf("NVME_IOCTL_ADMIN_CMD encodes size %d", got)
	}
	if off := unsafe.Offsetof(nvmePassthru{}.cdw10); off != 40 {
		t.Fatalf("cdw10 at offset %d, want 40", off)
	}
	if off := unsafe.Offsetof(nvmePassthru{}.timeoutMs); off != 64 {
		t.Fatalf("timeout_ms at offset %d, want 64", off)
	}
}
