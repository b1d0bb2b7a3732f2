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
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
	// MAC of the virtio NIC (default 52:54:00:12:34:56).
	MAC string
	// MemoryMB defaults to 512.
	MemoryMB int
}

// VM is a running qemu.
type VM struct {
	Started time.Time

	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error

	cmdMu  sync.Mutex // one QMP command at a time
	mu     sync.Mutex
	qmp    net.Conn
	events []Event
	evch   chan struct{}
	reply  chan json.RawMessage
}

// Event is an asynchronous QMP event.
type Event struct {
	Name string          `json:"event"`
	Data json.RawMessage `json:"data"`
}

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
	qmpPath := filepath.Join(dir, "qmp.sock")
	args := []string{
		"-accel", "tcg", "-m", strconv.Itoa(mem), "-smp", "1",
		"-display", "none", "-monitor", "none",
		"-serial", "file:" + filepath.Join(dir, "serial.log"),
		"-qmp", "unix:" + qmpPath + ",server,nowait",
		// A guest reboot (e.g. a kernel panic with panic=N) ends qemu
		// instead of looping; -no-shutdown keeps it up after a guest power
		// off so the test can read the final state over QMP.
		"-no-reboot", "-no-shutdown",
		"-netdev", "user,id=n0",
		"-device", "virtio-net-pci,netdev=n0,mac=" + mac,
		// Seeds the guest's RNG at once: without it getrandom(2) (DHCP
		// transaction ids) blocks for minutes under TCG, whose default
		// CPU has no RDRAND.
		"-device", "virtio-rng-pci",
	}
	for _, d := range o.Disks {
		args = append(args, "-drive", "file="+d+",if=virtio,format=raw")
	}
	switch {
	case o.Kernel != "":
		args = append(args, "-kernel", o.Kernel, "-initrd", o.Initrd, "-append", o.Append)
	case o.CDROM != "":
		args = append(args, "-cdrom", o.CDROM, "-boot", "d")
	default:
		t.Fatal("testvm: neither a kernel nor a CD to boot")
	}
	cmd := exec.Command(Qemu, args...)
	out, err := os.Create(filepath.Join(dir, "qemu.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	vm := &VM{dir: dir, cmd: cmd, exited: make(chan struct{}), evch: make(chan struct{}, 1), reply: make(chan json.RawMessage, 1)}
	vm.Started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start qemu: %v", err)
	}
	go func() {
		vm.err = cmd.Wait()
		out.Close()
		close(vm.exited)
	}()
	t.Cleanup(func() {
		if vm.qmp != nil {
			vm.qmp.Close()
		}
		_ = cmd.Process.Kill()
		<-vm.exited
		if t.Failed() {
			t.Logf("serial console:\n%s", vm.Serial())
			if b, _ := os.ReadFile(filepath.Join(dir, "qemu.log")); len(b) > 0 {
				t.Logf("qemu output:\n%s", b)
			}
		}
	})
	if err := vm.connectQMP(qmpPath); err != nil {
		t.Fatalf("qemu QMP: %v\n%s", err, vm.Serial())
	}
	return vm
}

// Serial returns what the guest wrote to its serial console so far.
func (vm *VM) Serial() string {
	b, _ := os.ReadFile(filepath.Join(vm.dir, "serial.log"))
	return string(b)
}

func (vm *VM) connectQMP(path string) error {
	var c net.Conn
	var err error
	// qemu creates the socket a moment after it starts.
	for i := 0; i < 100; i++ {
		if c, err = net.Dial("unix", path); err == nil {
			break
		}
		select {
		case <-vm.exited:
			return fmt.Errorf("qemu exited: %v", vm.err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return err
	}
	vm.qmp = c
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	if !sc.Scan() { // the greeting
		return fmt.Errorf("no QMP greeting: %v", sc.Err())
	}
	go vm.readQMP(sc)
	_, err = vm.Command("qmp_capabilities")
	return err
}

func (vm *VM) readQMP(sc *bufio.Scanner) {
	for sc.Scan() {
		var m struct {
			Event  string          `json:"event"`
			Data   json.RawMessage `json:"data"`
			Return json.RawMessage `json:"return"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Event != "":
			vm.mu.Lock()
			vm.events = append(vm.events, Event{Name: m.Event, Data: m.Data})
			vm.mu.Unlock()
			select {
			case vm.evch <- struct{}{}:
			default:
			}
		default:
			vm.reply <- append(json.RawMessage(nil), sc.Bytes()...)
		}
	}
}

// Command runs a QMP command (query-status, system_powerdown, quit, ...)
// and returns its "return" value.
func (vm *VM) Command(name string) (json.RawMessage, error) {
	vm.cmdMu.Lock()
	defer vm.cmdMu.Unlock()
	if _, err := fmt.Fprintf(vm.qmp, "{\"execute\":%q}\n", name); err != nil {
		return nil, fmt.Errorf("QMP %s: %w", name, err)
	}
	select {
	case raw := <-vm.reply:
		var m struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class, Desc string
			} `json:"error"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("QMP %s: %w", name, err)
		}
		if m.Error != nil {
			return nil, fmt.Errorf("QMP %s: %s: %s", name, m.Error.Class, m.Error.Desc)
		}
		return m.Return, nil
	case <-vm.exited:
		return nil, fmt.Errorf("QMP %s: qemu exited", name)
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("QMP %s: no answer", name)
	}
}

// Status is QMP query-status's "status" (running, shutdown, ...).
func (vm *VM) Status() (string, error) {
	raw, err := vm.Command("query-status")
	if err != nil {
		return "", err
	}
	var s struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s.Status, nil
}

// WaitEvent waits for the first QMP event with this name.
func (vm *VM) WaitEvent(ctx context.Context, name string) (Event, error) {
	for {
		vm.mu.Lock()
		for _, e := range vm.events {
			if e.Name == name {
				vm.mu.Unlock()
				return e, nil
			}
		}
		vm.mu.Unlock()
		select {
		case <-ctx.Done():
			return Event{}, fmt.Errorf("waiting for QMP event %s: %w", name, ctx.Err())
		case <-vm.exited:
			return Event{}, errors.New("qemu exited before QMP event " + name)
		case <-vm.evch:
		}
	}
}

// ShutdownReason waits for the guest to stop and returns why, as QMP's
// SHUTDOWN event says: "guest-shutdown" for a power off by the guest,
// "guest-reset" for a reboot (with -no-reboot), "guest-panic", ...
func (vm *VM) ShutdownReason(ctx context.Context) (string, error) {
	e, err := vm.WaitEvent(ctx, "SHUTDOWN")
	if err != nil {
		return "", err
	}
	var d struct {
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return "", fmt.Errorf("SHUTDOWN event %s: %w", e.Data, err)
	}
	return d.Reason, nil
}

// Quit ends qemu and waits for it.
func (vm *VM) Quit() error {
	_, err := vm.Command("quit")
	<-vm.exited
	if err != nil && !strings.Contains(err.Error(), "exited") {
		return err
	}
	return nil
}
