// Package testvm runs a qemu virtual machine for tests of things that only
// a real machine can prove: the deploy agent booting as PID 1, loading its
// drivers, getting DHCP and reaching the controller.
//
// qemu runs with TCG (software emulation: no KVM on CI machines), user-mode
// networking (the guest reaches the host's 127.0.0.1 at 10.0.2.2), the
// serial console captured to a file and a QMP socket for power control.
// The VM is always killed when the test ends.
package testvm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/qemu"
)

// HostAddr is the host's 127.0.0.1 as the guest sees it (qemu user-mode
// networking).
const HostAddr = "10.0.2.2"

// Qemu is the emulator binary.
const Qemu = "qemu-system-x86_64"

// Require returns the kernel to boot, or skips the test with the reason
// when qemu or a kernel is missing. In CI (CI=true) a missing tool fails
// the test instead: CI installs them (.ci/run), and a skip there would
// hide a broken rig.
//
// The kernel is $BAREMETAL_TEST_KERNEL or the newest /boot/vmlinuz-*
// (Debian: apt-get install linux-image-amd64 qemu-system-x86).
func Require(t testing.TB) (kernel string) {
	t.Helper()
	missing := func(format string, args ...any) string {
		msg := fmt.Sprintf(format, args...) + " (Debian: apt-get install qemu-system-x86 linux-image-amd64 isolinux syslinux-common)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
		return ""
	}
	if _, err := exec.LookPath(Qemu); err != nil {
		return missing("%s not found", Qemu)
	}
	return findKernel(missing)
}

// findKernel is Require's kernel, or what missing says.
func findKernel(missing func(format string, args ...any) string) string {
	if k := os.Getenv("BAREMETAL_TEST_KERNEL"); k != "" {
		if _, err := os.Stat(k); err != nil {
			return missing("BAREMETAL_TEST_KERNEL: %v", err)
		}
		return k
	}
	ks, _ := filepath.Glob("/boot/vmlinuz-*")
	if len(ks) == 0 {
		return missing("no kernel in /boot/vmlinuz-*")
	}
	sort.Strings(ks)
	return ks[len(ks)-1]
}

// Options describe the machine.
type Options struct {
	// Kernel, Initrd and Append boot Linux directly (the fast path);
	// otherwise CDROM boots from an ISO through the BIOS.
	Kernel, Initrd, Append string
	CDROM                  string
	// Disks are raw image files attached as virtio disks.
	Disks []string
	// NVMeDisks are raw image files attached as NVMe drives (one
	// controller and namespace each), which format themselves on a
	// Format NVM command.
	NVMeDisks []string
	// MAC of the virtio NIC (default 52:54:00:12:34:56).
	MAC string
	// NICs, when set, replace that one NIC: virtio NICs in this order,
	// each on a user-mode network of its own.
	NICs []NIC
	// Media are ISO images attached as CD-ROMs that are not booted (a
	// config drive), after the boot device.
	Media []string
	// MemoryMB defaults to 512.
	MemoryMB int
	// UEFI boots OVMF instead of SeaBIOS (see RequireOVMF).
	UEFI bool
	// SecureBoot boots OVMF that enforces Secure Boot with Microsoft's
	// keys enrolled, as servers ship (a q35 machine; implies UEFI).
	SecureBoot bool
}

// NIC is a virtio NIC of the VM.
type NIC struct {
	MAC string
	// Isolated NICs reach neither the host nor anything beyond it (qemu
	// user-mode networking with restrict=on): traffic the guest sends
	// through the wrong NIC goes nowhere.
	Isolated bool
}

// RequireOVMF fails (in CI) or skips the test without UEFI firmware.
func RequireOVMF(t testing.TB) {
	t.Helper()
	if _, _, ok := qemu.FindOVMF(); !ok {
		msg := "no OVMF UEFI firmware in /usr/share/OVMF (Debian: apt-get install ovmf)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// VM is a running qemu.
type VM struct {
	Started time.Time

	dir  string
	proc *qemu.Process
}

// Event is an asynchronous QMP event.
type Event = qemu.Event

// Start boots the machine. The VM is killed at the end of the test.
func Start(t testing.TB, o Options) *VM {
	t.Helper()
	dir := t.TempDir()
	mac := o.MAC
	if mac == "" {
		mac = "52:54:00:12:34:56"
	}
	mem := o.MemoryMB
	if mem == 0 {
		mem = 512
	}
	args := []string{
		"-accel", "tcg", "-m", strconv.Itoa(mem), "-smp", "1",
		"-display", "none", "-monitor", "none",
		"-serial", "file:" + filepath.Join(dir, "serial.log"),
		// A guest reboot (e.g. a kernel panic with panic=N) ends qemu
		// instead of looping; -no-shutdown keeps it up after a guest power
		// off so the test can read the final state over QMP.
		"-no-reboot", "-no-shutdown",
	}
	nics := o.NICs
	if len(nics) == 0 {
		nics = []NIC{{MAC: mac}}
	}
	for i, nic := range nics {
		id := "n" + strconv.Itoa(i)
		netdev := "user,id=" + id
		if nic.Isolated {
			netdev += ",restrict=on"
		}
		args = append(args, "-netdev", netdev, "-device", "virtio-net-pci,netdev="+id+",mac="+nic.MAC)
	}
	// Seeds the guest's RNG at once: without it getrandom(2) (DHCP
	// transaction ids) blocks for minutes under TCG, whose default CPU
	// has no RDRAND.
	args = append(args, "-device", "virtio-rng-pci")
	for _, d := range o.Disks {
		args = append(args, "-drive", "file="+d+",if=virtio,format=raw")
	}
	for i, d := range o.NVMeDisks {
		id := "nvme" + strconv.Itoa(i)
		args = append(args, "-drive", "file="+d+",if=none,id="+id+",format=raw",
			"-device", "nvme,drive="+id+",serial=NVME"+strconv.Itoa(i))
	}
	switch {
	case o.Kernel != "":
		args = append(args, "-kernel", o.Kernel, "-initrd", o.Initrd, "-append", o.Append)
	case o.CDROM != "":
		// bootindex rather than -boot d: UEFI firmware reads only the
		// former.
		args = append(args, "-drive", "if=none,id=cd0,media=cdrom,readonly=on,format=raw,file="+o.CDROM,
			"-device", "ide-cd,drive=cd0,bootindex=1")
	default:
		t.Fatal("testvm: neither a kernel nor a CD to boot")
	}
	for i, m := range o.Media {
		id := "media" + strconv.Itoa(i)
		args = append(args, "-drive", "if=none,id="+id+",media=cdrom,readonly=on,format=raw,file="+m,
			"-device", "ide-cd,drive="+id)
	}
	if o.UEFI || o.SecureBoot {
		code, vars, ok := qemu.FindOVMF()
		if o.SecureBoot {
			code, vars, ok = qemu.FindOVMFSecureBoot()
			args = append(args, qemu.SecureBootArgs()...)
		}
		if !ok {
			t.Fatal("testvm: UEFI without OVMF (RequireOVMF first)")
		}
		fw, err := qemu.UEFIArgs(code, vars, dir)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, fw...)
	}
	out, err := os.Create(filepath.Join(dir, "qemu.log"))
	if err != nil {
		t.Fatal(err)
	}
	proc, err := qemu.Start(qemu.Config{Binary: Qemu, Args: args, Output: out})
	if err != nil {
		out.Close()
		t.Fatal(err)
	}
	vm := &VM{Started: proc.Started, dir: dir, proc: proc}
	t.Cleanup(func() {
		proc.Kill()
		out.Close()
		if t.Failed() {
			t.Logf("serial console:\n%s", vm.Serial())
			if b, _ := os.ReadFile(filepath.Join(dir, "qemu.log")); len(b) > 0 {
				t.Logf("qemu output:\n%s", b)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := proc.WaitReady(ctx); err != nil {
		t.Fatalf("%v\n%s", err, vm.Serial())
	}
	return vm
}

// Serial returns what the guest wrote to its serial console so far.
func (vm *VM) Serial() string {
	b, _ := os.ReadFile(filepath.Join(vm.dir, "serial.log"))
	return string(b)
}

// Command runs a QMP command (query-status, system_powerdown, quit, ...)
// and returns its "return" value.
func (vm *VM) Command(name string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return vm.proc.Command(ctx, name, nil)
}

// Status is QMP query-status's "status" (running, shutdown, ...).
func (vm *VM) Status() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return vm.proc.Status(ctx)
}

// WaitEvent waits for the first QMP event with this name.
func (vm *VM) WaitEvent(ctx context.Context, name string) (Event, error) {
	return vm.proc.WaitEvent(ctx, name)
}

// ShutdownReason waits for the guest to stop and returns why, as QMP's
// SHUTDOWN event says: "guest-shutdown" for a power off by the guest,
// "guest-reset" for a reboot (with -no-reboot), "guest-panic", ...
func (vm *VM) ShutdownReason(ctx context.Context) (string, error) {
	if _, err := vm.proc.WaitEvent(ctx, "SHUTDOWN"); err != nil {
		return "", err
	}
	return vm.proc.ShutdownReason(), nil
}

// Quit ends qemu and waits for it.
func (vm *VM) Quit() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return vm.proc.Quit(ctx)
}
