package testvm

import (
	"crypto/rand"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
)

// RequireISOLinux fails (in CI) or skips the test when syslinux's BIOS CD
// loader, which the agent ISO boots through, is missing.
func RequireISOLinux(t testing.TB) {
	t.Helper()
	for _, p := range []string{image.DefaultIsolinuxBin, image.DefaultLdlinux} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%v (apt-get install isolinux syslinux-common)", err)
			}
			t.Skipf("%v (apt-get install isolinux syslinux-common)", err)
		}
	}
}

// BuildController builds the real controller binary as make build does
// (static): the agent image's /init is that binary.
func BuildController(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "controller")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/baremetal-tf/terraform-provider-baremetal/controller")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build controller: %v\n%s", err, out)
	}
	return bin
}

// AgentISO builds the agent's bootable ISO (BIOS, and UEFI where GRUB is
// installed) into dir, from kernel and
// the static controller binary, with cfg baked into its initramfs (as the
// controller does per boot). The console is the serial port, so tests
// read the agent's log there.
func AgentISO(t testing.TB, dir, kernel, controller string, cfg agent.Config) string {
	t.Helper()
	initrd := filepath.Join(dir, "agent.initrd")
	f, err := os.Create(initrd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := image.BuildInitrd(f, image.InitrdOptions{Agent: controller, Kernel: kernel}); err != nil {
		f.Close()
		t.Fatalf("agent initramfs: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	conf, err := agent.MarshalConfigFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	appendix, err := image.ConfigArchive(map[string][]byte{agent.ConfigPath: conf})
	if err != nil {
		t.Fatal(err)
	}
	iso := filepath.Join(dir, "agent.iso")
	uefi, _ := image.ResolveUEFI("auto", "") // auto never fails
	err = image.BuildISO(iso, image.ISOOptions{Kernel: kernel, Initrd: initrd, InitrdAppend: appendix,
		// As `controller agent-image --uefi auto` builds it.
		// The default command line, as the controller's: its last console
		// (/dev/console, where the agent logs) is the serial port the
		// tests read.
		UEFI: uefi})
	if err != nil {
		t.Fatalf("agent ISO: %v", err)
	}
	return iso
}

// DiskImage is a raw disk image of size bytes for image-deploy tests:
// header at offset 0 (to look for on the VM's disk), an MBR with one
// Linux partition from 1 MiB to the image's end (a config drive needs a
// partition table to join), and random bytes elsewhere.
func DiskImage(size int, header string) []byte {
	raw := make([]byte, size)
	_, _ = rand.Read(raw)
	copy(raw, header)
	clear(raw[440:512])
	raw[446+4] = 0x83 // Linux
	binary.LittleEndian.PutUint32(raw[446+8:], 2048)
	binary.LittleEndian.PutUint32(raw[446+12:], uint32(size/512-2048))
	raw[510], raw[511] = 0x55, 0xaa
	return raw
}

// Qcow2 converts raw to a compressed qcow2 image with qemu-img, the way
// distributions publish cloud images. Without qemu-img the test is
// skipped (failed in CI: .ci/run installs qemu-utils).
func Qcow2(t testing.TB, raw []byte) []byte {
	t.Helper()
	qemuImg, err := exec.LookPath("qemu-img")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no qemu-img (apt-get install qemu-utils)")
		}
		t.Skip("no qemu-img (apt-get install qemu-utils)")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "disk.raw"), filepath.Join(dir, "disk.qcow2")
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(qemuImg, "convert", "-c", "-f", "raw", "-O", "qcow2", in, out).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img convert: %v\n%s", err, b)
	}
	img, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
