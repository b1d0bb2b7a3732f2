package testvm

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
)

// The simulated machines of internal/bmc/sim boot the agent ISO the
// controller serves without running its kernel or its /init (they run the
// agent's code in-process), so tests that serve them the agent need a
// real kernel file (its version names the modules directory) but neither
// the controller binary nor any module: StubAgent and NoModules make the
// ISO small and quick to build (50-250 ms per boot, the README says).

// RequireKernel returns the kernel Require would, without needing qemu:
// for agent images that no VM boots. In CI a missing kernel fails the
// test (.ci/run installs linux-image-amd64); elsewhere it skips it.
func RequireKernel(t testing.TB) string {
	t.Helper()
	return findKernel(func(format string, args ...any) string {
		msg := "no kernel for the agent image: " + format + " (Debian: apt-get install linux-image-amd64)"
		if os.Getenv("CI") == "true" {
			t.Fatalf(msg, args...)
		}
		t.Skipf(msg, args...)
		return ""
	})
}

// StubAgent writes the smallest static x86-64 Linux executable (it exits
// 0 at once) into dir and returns its path: an agent image's /init for
// machines that never run it. The image builder accepts it as it accepts
// the static controller binary, with the same checks.
func StubAgent(t testing.TB, dir string) string {
	t.Helper()
	const base = 0x400000
	// mov eax, 60 (exit); xor edi, edi; syscall
	code := []byte{0xb8, 0x3c, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05}
	b := make([]byte, 64+56, 64+56+len(code))
	le := binary.LittleEndian
	copy(b, []byte{0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* LE */, 1, 0})
	le.PutUint16(b[16:], 2)    // ET_EXEC
	le.PutUint16(b[18:], 0x3e) // x86-64
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[24:], base+64+56) // entry: the code after the headers
	le.PutUint64(b[32:], 64)         // program headers right after this one
	le.PutUint16(b[52:], 64)
	le.PutUint16(b[54:], 56)
	le.PutUint16(b[56:], 1)
	ph := b[64:]
	le.PutUint32(ph[0:], 1) // PT_LOAD the whole file, read and execute
	le.PutUint32(ph[4:], 5)
	le.PutUint64(ph[16:], base)
	le.PutUint64(ph[24:], base)
	size := uint64(len(b) + len(code))
	le.PutUint64(ph[32:], size)
	le.PutUint64(ph[40:], size)
	le.PutUint64(ph[48:], 0x1000)
	b = append(b, code...)
	bin := filepath.Join(dir, "agent-stub")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := image.CheckStatic(bin); err != nil {
		t.Fatalf("the stub agent: %v", err)
	}
	return bin
}

// NoModules makes an empty modules directory for kernel (an empty
// modules.dep) in dir and returns it, for ModulesDir: an initramfs
// without drivers, which only a machine that never runs the kernel boots.
func NoModules(t testing.TB, dir, kernel string) string {
	t.Helper()
	version, err := image.KernelVersion(kernel)
	if err != nil {
		t.Fatal(err)
	}
	mods := filepath.Join(dir, "modules", version)
	if err := os.MkdirAll(mods, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mods, "modules.dep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return mods
}
