package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/qemu"
)

// VMOptions backs every system of a fleet with a real qemu virtual machine
// (Options.VM): Redfish power actions start, reset and stop qemu, virtual
// media are CD-ROM drives of the VM holding the fetched images, the boot
// override is the VM's boot order at its next start, and the system's disk
// is a raw file that tests can read. See the package doc.
type VMOptions struct {
	// Dir holds one directory per system (<Dir>/<id>/): disk.img,
	// serial.log (the guest's console, kept across boots), qemu.log,
	// fetched media and UEFI variables. Required.
	Dir string
	// DiskBytes is the size of each system's disk (sparse; default 1 GiB).
	// A disk.img that exists already is kept as it is.
	DiskBytes int64
	// MemoryMB is each VM's memory (default and at most MaxVMMemoryMB).
	MemoryMB int
	// CPUs is each VM's virtual CPUs (default 1, at most 2: TCG is slow
	// and CI machines are small).
	CPUs int
	// Qemu is the emulator (default qemu-system-x86_64).
	Qemu string
	// UEFI starts systems in BootSourceOverrideMode UEFI (OVMF firmware)
	// rather than Legacy (SeaBIOS). Either can be PATCHed later; UEFI needs
	// OVMF (Debian package ovmf).
	UEFI bool
	// OVMFCode and OVMFVars are the UEFI firmware and its variable store
	// template (default: Debian's /usr/share/OVMF/OVMF_CODE_4M.fd and
	// OVMF_VARS_4M.fd, else OVMF_CODE.fd and OVMF_VARS.fd).
	OVMFCode, OVMFVars string
	// NetbootURL is the boot file the VMs' network (qemu's user-mode DHCP)
	// hands a PXE boot, as a provisioning network's DHCP server would;
	// iPXE, the VMs' network boot ROM, fetches an http:// one itself.
	// Fleet.SetNetbootURL sets it once the URL is known.
	NetbootURL string
}

const (
	// MaxVMMemoryMB caps a VM's memory: several may run on a CI machine.
	MaxVMMemoryMB = 512
	defaultVMDisk = 1 << 30
	maxVMCPUs     = 2
	// maxVMSlots: every slot is an IDE CD-ROM drive, and the machine's
	// IDE controller has four positions.
	maxVMSlots = 4
	// vmFetchTimeout bounds fetching a VM's media image (an agent ISO is
	// tens of MiB; a BMC streams longer images than the sim's 10 s).
	vmFetchTimeout = 5 * time.Minute
	maxVMMedia     = 8 << 30
	// vmOpTimeout bounds one power or media operation on the VM.
	vmOpTimeout = 30 * time.Second
)

// vmBootTargets are the boot overrides a VM-backed system can honour.
var vmBootTargets = []string{"None", "Pxe", "Cd", "Hdd"}

// resolveVMOptions fills defaults and checks what can be checked before
// any VM starts, so `controller sim --qemu-vm` fails at once and clearly.
func resolveVMOptions(o VMOptions, slots int) (VMOptions, error) {
	if o.Dir == "" {
		return o, errors.New("sim: VMOptions.Dir is required (where the VMs' disks live)")
	}
	if o.DiskBytes == 0 {
		o.DiskBytes = defaultVMDisk
	}
	if o.DiskBytes < 1<<20 {
		return o, fmt.Errorf("sim: VM disk size %d bytes: want at least 1 MiB", o.DiskBytes)
	}
	if o.MemoryMB == 0 {
		o.MemoryMB = MaxVMMemoryMB
	}
	if o.MemoryMB < 64 || o.MemoryMB > MaxVMMemoryMB {
		return o, fmt.Errorf("sim: VM memory %d MiB: want 64 to %d", o.MemoryMB, MaxVMMemoryMB)
	}
	if o.CPUs == 0 {
		o.CPUs = 1
	}
	if o.CPUs < 1 || o.CPUs > maxVMCPUs {
		return o, fmt.Errorf("sim: VM CPUs %d: want 1 to %d", o.CPUs, maxVMCPUs)
	}
	if slots > maxVMSlots {
		return o, fmt.Errorf("sim: a VM-backed system has at most %d virtual media slots (IDE CD-ROM drives), not %d", maxVMSlots, slots)
	}
	if o.Qemu == "" {
		o.Qemu = qemu.Binary
	}
	if _, err := exec.LookPath(o.Qemu); err != nil {
		return o, fmt.Errorf("sim: VM-backed systems need %s (Debian: apt-get install qemu-system-x86): %w", o.Qemu, err)
	}
	if o.OVMFCode == "" {
		o.OVMFCode, o.OVMFVars, _ = qemu.FindOVMF()
	}
	if o.UEFI && !o.uefiAvailable() {
		return o, errors.New("sim: UEFI boot needs OVMF firmware (Debian: apt-get install ovmf), or VMOptions.OVMFCode and OVMFVars")
	}
	return o, nil
}

func (o VMOptions) uefiAvailable() bool {
	return o.OVMFCode != "" && o.OVMFVars != "" && fileExists(o.OVMFCode) && fileExists(o.OVMFVars)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// vmachine is the qemu side of one VM-backed system. One goroutine (run)
// owns the qemu process and does every power and media operation in turn;
// readers (PowerState, status) look at a snapshot under mu and ask qemu
// over QMP themselves.
type vmachine struct {
	f    *Fleet
	s    *system
	opts VMOptions
	dir  string
	disk string
	mac  string
	// diskSerial is the virtio disk's serial number (root device hints).
	diskSerial string

	ops  chan vmOp
	done chan struct{} // run has returned

	mu       sync.Mutex
	proc     *qemu.Process
	launches int
	bootDev  string   // first boot device of the current (or last) boot
	firmware string   // "bios" or "uefi", ditto
	attached []string // per slot: the image file the process holds
	lastExit string
	mediaSeq int
}

type vmOpKind int

const (
	opOn vmOpKind = iota
	opOff
	opPowerdown
	opReset
	opNMI
	opMedia
)

type vmOp struct {
	kind vmOpKind
	slot int    // opMedia
	file string // opMedia: "" ejects
	done chan error
}

// newVM prepares a system's directory and disk. Called at Start.
func (f *Fleet) newVM(s *system, o VMOptions) (*vmachine, error) {
	dir := filepath.Join(o.Dir, s.id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sim: VM directory: %w", err)
	}
	disk := filepath.Join(dir, "disk.img")
	if _, err := os.Stat(disk); errors.Is(err, os.ErrNotExist) {
		fd, err := os.OpenFile(disk, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("sim: VM disk: %w", err)
		}
		err = fd.Truncate(o.DiskBytes)
		if cerr := fd.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("sim: VM disk: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("sim: VM disk: %w", err)
	}
	n := s.index + 1
	return &vmachine{
		f: f, s: s, opts: o, dir: dir, disk: disk,
		mac:        fmt.Sprintf("52:54:00:%02x:%02x:%02x", (n>>16)&0xff, (n>>8)&0xff, n&0xff),
		diskSerial: fmt.Sprintf("SIMDISK%07d", n),
		ops:        make(chan vmOp),
		done:       make(chan struct{}),
		attached:   make([]string, len(s.slots)),
	}, nil
}

// do runs one operation on the VM's goroutine and returns its outcome.
func (v *vmachine) do(ctx context.Context, op vmOp) error {
	ctx, cancel := context.WithTimeout(ctx, vmOpTimeout)
	defer cancel()
	op.done = make(chan error, 1)
	select {
	case v.ops <- op:
	case <-v.done:
		return errors.New("the simulator is shutting down")
	case <-ctx.Done():
		return fmt.Errorf("the VM is busy: %w", ctx.Err())
	}
	select {
	case err := <-op.done:
		return err
	case <-v.done:
		return errors.New("the simulator is shutting down")
	case <-ctx.Done():
		return fmt.Errorf("waiting for the VM: %w", ctx.Err())
	}
}

// run owns the qemu process until the fleet closes.
func (v *vmachine) run() {
	defer close(v.done)
	for {
		v.mu.Lock()
		p := v.proc
		v.mu.Unlock()
		var exited <-chan struct{}
		if p != nil {
			exited = p.Exited()
		}
		select {
		case <-v.f.life.Done():
			if p != nil {
				p.Kill()
				v.exited(p, false)
			}
			return
		case <-exited:
			v.exited(p, true)
		case op := <-v.ops:
			// A process that ended already is seen to first: an "On"
			// right after the guest powered off must start a new one.
			if p != nil {
				select {
				case <-p.Exited():
					v.exited(p, true)
					v.mu.Lock()
					p = v.proc
					v.mu.Unlock()
				default:
				}
			}
			op.done <- v.apply(p, op)
		}
	}
}

// apply does one operation; p is the current process (nil: off).
func (v *vmachine) apply(p *qemu.Process, op vmOp) error {
	ctx, cancel := context.WithTimeout(v.f.life, vmOpTimeout)
	defer cancel()
	ready := p != nil && isReady(p)
	switch op.kind {
	case opOn:
		if p != nil {
			return nil
		}
		return v.launch()
	case opOff:
		if p == nil {
			return nil
		}
		if !ready {
			p.Kill() // still starting: nothing to ask yet
			return nil
		}
		// quit answers before qemu exits: the power state lands when the
		// process has ended (run sees it).
		if _, err := p.Command(ctx, "quit", nil); err != nil && !errors.Is(err, qemu.ErrExited) {
			p.Kill()
		}
		return nil
	case opPowerdown:
		if !ready {
			return nil // like a power button pressed while firmware runs: the OS is not there to hear it
		}
		_, err := p.Command(ctx, "system_powerdown", nil)
		return ignoreExited(err)
	case opReset:
		switch {
		case p == nil:
			// Restarting a system that is off turns it on (as the sim's
			// other systems do).
			return v.launch()
		case !ready:
			p.Kill()
			v.exited(p, false)
			return v.launch()
		}
		// qemu runs with -no-reboot: the reset ends the process and run
		// starts the next boot with the boot order of that moment.
		_, err := p.Command(ctx, "system_reset", nil)
		return ignoreExited(err)
	case opNMI:
		if !ready {
			return nil
		}
		_, err := p.Command(ctx, "inject-nmi", nil)
		return ignoreExited(err)
	case opMedia:
		return v.changeMedia(ctx, p, op.slot, op.file)
	}
	return fmt.Errorf("unknown VM operation %d", op.kind)
}

func isReady(p *qemu.Process) bool {
	select {
	case <-p.Ready():
		return p.ReadyErr() == nil
	default:
		return false
	}
}

func ignoreExited(err error) error {
	if errors.Is(err, qemu.ErrExited) {
		return nil
	}
	return err
}

// changeMedia puts file (or nothing) into slot's drive of the running VM;
// a VM that is off gets it at its next start.
func (v *vmachine) changeMedia(ctx context.Context, p *qemu.Process, slot int, file string) error {
	v.mu.Lock()
	same := p != nil && v.attached[slot] == file
	v.mu.Unlock()
	if p == nil || same {
		return nil
	}
	if err := p.WaitReady(ctx); err != nil {
		return nil // the process is going away: the next start attaches the file
	}
	var err error
	if file == "" {
		_, err = p.Command(ctx, "eject", map[string]any{"id": slotDevice(slot), "force": true})
	} else {
		_, err = p.Command(ctx, "blockdev-change-medium", map[string]any{
			"id": slotDevice(slot), "filename": file, "format": "raw", "read-only-mode": "read-only",
		})
	}
	if errors.Is(err, qemu.ErrExited) {
		return nil
	}
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.attached[slot] = file
	v.mu.Unlock()
	return nil
}

// exited records the end of p; after a reset (the guest's, or ours) the
// next boot starts at once when restart is set, as a rebooting machine's
// power stays on.
func (v *vmachine) exited(p *qemu.Process, restart bool) {
	reason := p.ShutdownReason()
	why := reason
	switch err := p.ExitErr(); {
	case why != "":
	case p.Killed():
		why = "killed" // by us: a ForceOff or reset before QMP was up, or the fleet closing
	case err != nil:
		// qemu refused to start, or crashed: its last words say why.
		why = "exited without a shutdown: " + err.Error()
		if tail := v.logTail(); tail != "" {
			why += ": " + tail
		}
		if rerr := p.ReadyErr(); rerr != nil {
			why += " (" + rerr.Error() + ")"
		}
	default:
		why = "exited without a shutdown event"
	}
	v.mu.Lock()
	if v.proc == p {
		v.proc = nil
	}
	v.lastExit = why
	v.mu.Unlock()
	if restart && qemu.IsReset(reason) && v.f.life.Err() == nil {
		if err := v.launch(); err != nil {
			v.mu.Lock()
			v.lastExit = why + "; restart failed: " + err.Error()
			v.mu.Unlock()
		}
	}
}

// logTail is the last line of qemu's own output (why it refused to start).
func (v *vmachine) logTail() string {
	b, err := os.ReadFile(filepath.Join(v.dir, "qemu.log"))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if strings.HasPrefix(last, "--- boot ") {
		return "" // our own header: qemu said nothing
	}
	return last
}

// bootPlan is what one start of the VM boots with.
type bootPlan struct {
	first    string // disk, cd or pxe
	uefi     bool
	media    []string // per slot: image file or ""
	bootSlot int      // the slot that is the boot CD (-1: none)
	// once: the override to consume when this boot starts.
	once           bool
	target, enable string
}

// plan reads the system's boot override, mode and media.
func (v *vmachine) plan() bootPlan {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p := bootPlan{first: "disk", uefi: s.bootMode == "UEFI", bootSlot: -1, target: s.bootTarget, enable: s.bootEnabled}
	if s.bootEnabled != "Disabled" {
		switch s.bootTarget {
		case "Cd":
			p.first = "cd"
		case "Pxe":
			p.first = "pxe"
		}
		p.once = s.bootEnabled == "Once"
	}
	p.media = make([]string, len(s.slots))
	for i, m := range s.slots {
		if m.inserted {
			p.media[i] = m.file
		}
		if p.bootSlot < 0 && m.kind == kindCD {
			p.bootSlot = i
		}
	}
	return p
}

// args is the qemu command line of one boot.
func (v *vmachine) args(p bootPlan) ([]string, error) {
	o := v.opts
	s := v.s
	order := map[string]int{"disk": 1, "cd": 2, "pxe": 3}
	switch p.first {
	case "cd":
		order = map[string]int{"cd": 1, "disk": 2, "pxe": 3}
	case "pxe":
		order = map[string]int{"pxe": 1, "disk": 2, "cd": 3}
	}
	// The guest's DMI identity is the BMC's: an inspection matches them.
	smbios := "type=1,manufacturer=baremetal-sim,product=SimServer 1000,serial=" + s.serial
	args := []string{
		"-accel", "tcg", "-machine", "pc", "-nodefaults",
		"-m", strconv.Itoa(o.MemoryMB), "-smp", strconv.Itoa(o.CPUs),
		"-uuid", s.uuid, "-smbios", smbios,
		"-display", "none", "-vga", "none", "-monitor", "none",
		// The console survives reboots: one file for the system's life.
		"-chardev", "file,id=ser0,path=" + filepath.Join(v.dir, "serial.log") + ",append=on",
		"-serial", "chardev:ser0",
		// A reset ends the process; run starts the next boot with the boot
		// order of that moment (qemu reads bootindex at start only).
		"-no-reboot",
		"-netdev", v.netdev(),
		"-device", "virtio-net-pci,netdev=n0,mac=" + v.mac + ",bootindex=" + strconv.Itoa(order["pxe"]),
		// Seeds the guest's RNG at once: without it getrandom(2) blocks for
		// minutes under TCG, whose default CPU has no RDRAND.
		"-device", "virtio-rng-pci",
		"-drive", "if=none,id=disk0,format=raw,file=" + v.disk,
		"-device", "virtio-blk-pci,drive=disk0,id=vd0,serial=" + v.diskSerial + ",bootindex=" + strconv.Itoa(order["disk"]),
	}
	for i, file := range p.media {
		drive := fmt.Sprintf("if=none,id=media%d,media=cdrom,readonly=on", i)
		if file != "" {
			drive += ",format=raw,file=" + file
		}
		dev := fmt.Sprintf("ide-cd,drive=media%d,id=%s,bus=ide.%d,unit=%d", i, slotDevice(i), i/2, i%2)
		if i == p.bootSlot {
			dev += ",bootindex=" + strconv.Itoa(order["cd"])
		}
		args = append(args, "-drive", drive, "-device", dev)
	}
	if p.uefi {
		if !o.uefiAvailable() {
			return nil, errors.New("BootSourceOverrideMode is UEFI but no OVMF firmware is installed (Debian: apt-get install ovmf)")
		}
		fw, err := qemu.UEFIArgs(o.OVMFCode, o.OVMFVars, v.dir)
		if err != nil {
			return nil, err
		}
		args = append(args, fw...)
	}
	return args, nil
}

func slotDevice(i int) string { return fmt.Sprintf("slot%d", i) }

// netdev is the VM's user-mode network, with the fleet's netboot URL as
// its DHCP boot file.
func (v *vmachine) netdev() string {
	nd := "user,id=n0"
	if u := v.f.netbootURL(); u != "" {
		// qemu's option syntax: a comma in a value is written twice.
		nd += ",bootfile=" + strings.ReplaceAll(u, ",", ",,")
	}
	return nd
}

// launch starts the next boot: a new qemu process with the boot order,
// firmware and media of this moment. A boot override of Once is used up
// by it, as a real BMC clears it when the system boots.
func (v *vmachine) launch() error {
	p := v.plan()
	args, err := v.args(p)
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(v.dir, "qemu.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("qemu log: %w", err)
	}
	v.mu.Lock()
	n := v.launches + 1
	v.mu.Unlock()
	fmt.Fprintf(logf, "--- boot %d at %s: %s %s\n", n, time.Now().UTC().Format(time.RFC3339), v.opts.Qemu, strings.Join(args, " "))
	// qemu writes to the file itself (an *os.File is handed to the child
	// as is): ours can be closed at once.
	proc, err := qemu.Start(qemu.Config{Binary: v.opts.Qemu, Args: args, Output: logf})
	logf.Close()
	if err != nil {
		return err
	}
	fw := "bios"
	if p.uefi {
		fw = "uefi"
	}
	v.mu.Lock()
	v.proc = proc
	v.launches = n
	v.bootDev, v.firmware = p.first, fw
	copy(v.attached, p.media)
	v.mu.Unlock()
	if p.once {
		s := v.s
		s.mu.Lock()
		// Unless it was changed meanwhile.
		if s.bootTarget == p.target && s.bootEnabled == p.enable {
			s.bootTarget, s.bootEnabled = "None", "Disabled"
		}
		s.mu.Unlock()
	}
	return nil
}

// powerState is the Redfish PowerState, as qemu reports it: Off with no
// process, PoweringOn until QMP answers, On while the machine runs (and
// across a reset, while the next boot starts), PoweringOff from the
// guest's or our shutdown until the process has ended.
func (v *vmachine) powerState(ctx context.Context) string {
	v.mu.Lock()
	p := v.proc
	v.mu.Unlock()
	if p == nil {
		return "Off"
	}
	select {
	case <-p.Exited():
		if qemu.IsReset(p.ShutdownReason()) {
			return "On"
		}
		return "Off"
	case <-p.Ready():
	default:
		return "PoweringOn"
	}
	if p.ReadyErr() != nil {
		return "PoweringOff" // being killed
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := p.Status(ctx)
	reason := p.ShutdownReason()
	switch {
	case qemu.IsReset(reason):
		return "On"
	case err != nil || st == "shutdown" || reason != "":
		return "PoweringOff"
	case st == "prelaunch" || st == "inmigrate":
		return "PoweringOn"
	}
	return "On"
}

// VMStatus is the qemu side of a VM-backed system.
type VMStatus struct {
	Dir        string `json:"dir"`
	Disk       string `json:"disk"`
	DiskBytes  int64  `json:"disk_bytes"`
	DiskSerial string `json:"disk_serial"`
	Serial     string `json:"serial_log"`
	QemuLog    string `json:"qemu_log"`
	MAC        string `json:"mac"`
	MemoryMB   int    `json:"memory_mb"`
	CPUs       int    `json:"cpus"`
	// Running: a qemu process is up; PID is its process id.
	Running bool `json:"running"`
	PID     int  `json:"pid,omitempty"`
	// Boots counts qemu starts (power-ons and resets).
	Boots int `json:"boots"`
	// BootDevice (disk, cd, pxe) and Firmware (bios, uefi) of the current
	// or last boot.
	BootDevice string `json:"boot_device,omitempty"`
	Firmware   string `json:"firmware,omitempty"`
	// LastExit is why the last qemu process ended (QMP's SHUTDOWN reason:
	// guest-shutdown, host-qmp-quit, guest-reset, ...).
	LastExit string `json:"last_exit,omitempty"`
}

func (v *vmachine) status() VMStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	st := VMStatus{
		Dir: v.dir, Disk: v.disk, DiskBytes: v.opts.DiskBytes, DiskSerial: v.diskSerial,
		Serial: filepath.Join(v.dir, "serial.log"), QemuLog: filepath.Join(v.dir, "qemu.log"),
		MAC: v.mac, MemoryMB: v.opts.MemoryMB, CPUs: v.opts.CPUs,
		Boots: v.launches, BootDevice: v.bootDev, Firmware: v.firmware, LastExit: v.lastExit,
	}
	if fi, err := os.Stat(v.disk); err == nil {
		st.DiskBytes = fi.Size()
	}
	if v.proc != nil {
		st.Running = true
		st.PID = v.proc.PID()
	}
	return st
}

// VM returns the qemu side of a VM-backed system (an error for a system
// without a VM).
func (f *Fleet) VM(system string) (VMStatus, error) {
	s, err := f.lookup(system)
	if err != nil {
		return VMStatus{}, err
	}
	if s.vm == nil {
		return VMStatus{}, fmt.Errorf("sim: system %s is not backed by a VM", s.id)
	}
	return s.vm.status(), nil
}

// VMSerial returns what a VM-backed system's guest wrote to its serial
// console, every boot so far.
func (f *Fleet) VMSerial(system string) (string, error) {
	st, err := f.VM(system)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(st.Serial)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

// resetVM maps a Redfish ResetType to the VM.
func (f *Fleet) resetVM(w http.ResponseWriter, r *http.Request, s *system, rt string) {
	var op vmOpKind
	switch rt {
	case "On", "ForceOn":
		op = opOn
	case "ForceOff":
		op = opOff
	case "GracefulShutdown":
		op = opPowerdown
	case "Nmi":
		op = opNMI
	default: // ForceRestart, PowerCycle, GracefulRestart: qemu has no graceful reboot to ask for
		op = opReset
	}
	if err := s.vm.do(r.Context(), vmOp{kind: op}); err != nil {
		writeError(w, http.StatusInternalServerError, "InternalError",
			fmt.Sprintf("The reset %s of system %s failed: %v.", rt, s.id, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// fetchMedia fetches a VM's media image into the system's directory and
// returns the file (bounded by vmFetchTimeout, the request and the fleet's
// life, and maxVMMedia).
func (f *Fleet) fetchMedia(ctx context.Context, v *vmachine, slot, image string) (file string, status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, vmFetchTimeout)
	defer cancel()
	stop := context.AfterFunc(f.life, cancel)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, image, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := f.mediaClient.Do(req)
	if err != nil {
		return "", 0, cleanFetchError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", resp.StatusCode, nil
	}
	v.mu.Lock()
	v.mediaSeq++
	file = filepath.Join(v.dir, fmt.Sprintf("media-%s-%d.img", slot, v.mediaSeq))
	v.mu.Unlock()
	out, err := os.OpenFile(file, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(out, io.LimitReader(resp.Body, maxVMMedia+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > maxVMMedia {
		err = fmt.Errorf("the image is larger than %d GiB", maxVMMedia>>30)
	}
	if err != nil {
		_ = os.Remove(file)
		return "", 0, cleanFetchError(err)
	}
	return file, resp.StatusCode, nil
}

// The methods below let another BMC front drive a VM-backed system's
// machine, as a board with both Redfish and IPMI has one machine behind
// two protocols (the IPMI simulator's chassis, in tests); SetPower and
// Power serve both.

// ResetVM restarts a VM-backed system's machine (a hard reset: the next
// boot takes the boot override of that moment), or starts it when off.
func (f *Fleet) ResetVM(system string) error {
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	if s.vm == nil {
		return fmt.Errorf("sim: system %s has no VM", s.id)
	}
	if err := s.vm.do(f.life, vmOp{kind: opReset}); err != nil {
		return fmt.Errorf("sim: system %s: %w", s.id, err)
	}
	return nil
}

// SetBootOnce sets a one-time boot override of a system (one of
// vmBootTargets for a VM-backed one: Pxe, Cd, Hdd), or clears it with
// "None", as a PATCH of Boot does.
func (f *Fleet) SetBootOnce(system, target string) error {
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	if !slices.Contains(s.bootTargets(), target) {
		return fmt.Errorf("sim: system %s: boot target %q is not one of %v", s.id, target, s.bootTargets())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bootTarget, s.bootEnabled = target, "Once"
	if target == "None" {
		s.bootEnabled = "Disabled"
	}
	return nil
}

// SystemUUID is a system's UUID: its ComputerSystem's UUID and, for a
// VM-backed system, the VM's SMBIOS UUID.
func (f *Fleet) SystemUUID(system string) (string, error) {
	s, err := f.lookup(system)
	if err != nil {
		return "", err
	}
	return s.uuid, nil
}
