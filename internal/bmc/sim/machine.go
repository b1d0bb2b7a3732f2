package sim

import (
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// MachineOptions give every system without a VM simulated hardware that
// boots what its BMC is told to boot (see the package doc): the deploy
// agent from an agent ISO in the virtual CD or from the network, and the
// simulated OS from a disk the agent wrote. All systems get the same
// description; their serials, MACs and WWNs differ.
type MachineOptions struct {
	// Dir holds one directory per system (<Dir>/<id>/): its disk files
	// (kept when they exist, so a sim restarted on the same Dir keeps its
	// disks), console.log (the machine's console: what it booted, the
	// agent's log) and the files of the current boot. Default: a
	// temporary directory, removed at Close.
	Dir string
	// CPUs is the logical CPU count the agent sees, and MemoryMiB the
	// memory (defaults: what the system's Redfish reports, 32 and 65536).
	// Redfish does not follow other values: a BMC and a host that
	// disagree, as on some real machines.
	CPUs      int
	MemoryMiB int
	// Disks are the machine's disks, in the kernel's order (default
	// DefaultMachineDisks). Their files are sparse.
	Disks []MachineDisk
	// NICs is the number of ethernet ports, eno1..enoN (default 2).
	NICs int
	// NetbootURL is the boot file the provisioning network's DHCP hands
	// a network boot (the controller's api.AgentNetbootPath URL); the
	// same as VMOptions.NetbootURL, and Fleet.SetNetbootURL sets it later.
	NetbootURL string
	// Legacy starts the systems in BootSourceOverrideMode Legacy (BIOS)
	// rather than UEFI, for agent ISOs without a UEFI loader.
	Legacy bool
	// AgentVersion is what the agent reports as its version (default
	// "sim"): the machine runs the agent's code built into this process,
	// not the binary in the ISO.
	AgentVersion string
	// Log receives every machine's console lines too (default: only
	// each machine's console.log).
	Log io.Writer
}

// MachineDisk describes one disk of a simulated machine.
type MachineDisk struct {
	// Name is the kernel's name: sda, vda, nvme0n1 (default sda, sdb, ...).
	Name string `json:"name"`
	// Bytes is the size, a multiple of 512 (required).
	Bytes int64 `json:"size_bytes"`
	// Model defaults to "SIM SSD".
	Model      string `json:"model,omitempty"`
	Rotational bool   `json:"rotational,omitempty"`
	Removable  bool   `json:"removable,omitempty"`
}

// DefaultMachineDisks are a simulated machine's disks unless
// MachineOptions.Disks says otherwise: a 4 GiB disk, which the agent
// chooses as the root disk (the smallest of at least 4 GiB), and an 8
// GiB one. Both are sparse files: they cost what is written to them.
var DefaultMachineDisks = []MachineDisk{
	{Name: "sda", Bytes: 4 << 30, Model: "SIM SSD"},
	{Name: "sdb", Bytes: 8 << 30, Model: "SIM SSD"},
}

const (
	defaultMachineNICs = 2
	maxMachineNICs     = 16
	nicSpeedMbps       = 25000
)

// resolveMachineOptions fills defaults and checks the description.
func resolveMachineOptions(o MachineOptions) (MachineOptions, error) {
	// Zero CPUs or memory: each system's own, as its Redfish says.
	if o.CPUs < 0 {
		return o, fmt.Errorf("sim: machine CPUs %d: want at least 1", o.CPUs)
	}
	if o.MemoryMiB != 0 && o.MemoryMiB < 64 {
		return o, fmt.Errorf("sim: machine memory %d MiB: want at least 64", o.MemoryMiB)
	}
	if o.NICs == 0 {
		o.NICs = defaultMachineNICs
	}
	if o.NICs < 1 || o.NICs > maxMachineNICs {
		return o, fmt.Errorf("sim: machine NICs %d: want 1 to %d", o.NICs, maxMachineNICs)
	}
	if len(o.Disks) == 0 {
		o.Disks = DefaultMachineDisks
	}
	disks := make([]MachineDisk, len(o.Disks))
	for i, d := range o.Disks {
		if d.Name == "" {
			d.Name = "sd" + string(rune('a'+i%26))
		}
		if d.Model == "" {
			d.Model = "SIM SSD"
		}
		switch {
		case strings.ContainsAny(d.Name, "/. \x00") || slices.ContainsFunc(disks[:i], func(o MachineDisk) bool { return o.Name == d.Name }):
			return o, fmt.Errorf("sim: machine disk %d: invalid or duplicate name %q", i, d.Name)
		case d.Bytes < 1<<20 || d.Bytes%512 != 0:
			return o, fmt.Errorf("sim: machine disk %s: size %d bytes: want at least 1 MiB, a multiple of 512", d.Name, d.Bytes)
		}
		disks[i] = d
	}
	o.Disks = disks
	if o.AgentVersion == "" {
		o.AgentVersion = "sim"
	}
	return o, nil
}

// machine is the simulated hardware of one system. Its description is
// fixed at Start; the fields below mu are guarded by the system's mutex.
type machine struct {
	f       *Fleet
	s       *system
	opts    MachineOptions
	dir     string
	disks   []machineDisk
	nics    []MachineNIC
	console *consoleLog

	// Guarded by s.mu.
	cur *machineBoot // the boot of the current power-on; nil when off
	// last is closed when the goroutine of the latest boot has returned:
	// the next boot starts after it, so two boots never share the disks.
	last         chan struct{}
	boots        int
	agentBoots   int
	agentRunning bool
	device       string // what the current or last boot booted from
	booted       string // what it runs: agent, os or nothing
	note         string // why nothing, or what of the agent's boot went wrong
}

type machineDisk struct {
	MachineDisk
	file, serial, wwn string
}

// MachineNIC is one ethernet port of a simulated machine.
type MachineNIC struct {
	Name string `json:"name"`
	MAC  string `json:"mac"`
	// Switch and SwitchPort are where the NIC is cabled: NIC n of every
	// machine to the simulated leaf switch sim-leaf-n, on the port of the
	// machine's index (swp1 for the first machine). The switch announces
	// them by LLDP to an inspection's agent.
	Switch     string `json:"switch"`
	SwitchPort string `json:"switch_port"`
}

// What a machine's boot ended up running (MachineStatus.Booted).
const (
	BootedAgent   = "agent"   // the deploy agent, from its ISO or the network
	BootedOS      = "os"      // the simulated OS (from disk, or a CD that is not the agent's)
	BootedNothing = "nothing" // no bootable device; Note says why
)

// newMachine creates a system's directory, disk files and console.
func (f *Fleet) newMachine(s *system, o MachineOptions, dir string) (*machine, error) {
	dir = filepath.Join(dir, s.id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sim: machine directory: %w", err)
	}
	m := &machine{f: f, s: s, opts: o, dir: dir}
	threads, memory := s.redfishHardware()
	if m.opts.CPUs == 0 {
		m.opts.CPUs = threads
	}
	if m.opts.MemoryMiB == 0 {
		m.opts.MemoryMiB = memory
	}
	for i, d := range o.Disks {
		file := filepath.Join(dir, fmt.Sprintf("disk%d.img", i))
		if err := sparseFile(file, d.Bytes); err != nil {
			return nil, fmt.Errorf("sim: machine disk: %w", err)
		}
		h := sha1.Sum([]byte("baremetal-sim/disk/" + s.id + "/" + d.Name))
		m.disks = append(m.disks, machineDisk{MachineDisk: d, file: file,
			serial: fmt.Sprintf("SIM%07d-%d", s.index+1, i),
			// NAA 5: a 24-bit company id (a made-up one), then 36 bits
			// of the disk's own.
			wwn: fmt.Sprintf("naa.5%06x%09x", 0x5a5a5a, binary.BigEndian.Uint64(h[:8])&(1<<36-1)),
		})
	}
	for i := range o.NICs {
		n := s.index + 1
		// Locally administered, unique per system index and port.
		m.nics = append(m.nics, MachineNIC{Name: fmt.Sprintf("eno%d", i+1),
			MAC:    fmt.Sprintf("02:5a:%02x:%02x:%02x:%02x", i, (n>>16)&0xff, (n>>8)&0xff, n&0xff),
			Switch: fmt.Sprintf("sim-leaf-%d", i+1), SwitchPort: fmt.Sprintf("swp%d", n)})
	}
	c, err := openConsole(filepath.Join(dir, "console.log"), o.Log, s.id)
	if err != nil {
		return nil, err
	}
	m.console = c
	return m, nil
}

// sparseFile creates a file of size bytes unless one exists (kept as it
// is, whatever its size: the sim restarted on the same directory).
func sparseFile(file string, size int64) error {
	if _, err := os.Stat(file); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	fd, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	err = fd.Truncate(size)
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	return err
}

// consoleLog is a machine's console: a file kept across boots, and
// optionally the fleet's log too.
type consoleLog struct {
	mu   sync.Mutex
	file *os.File
	also io.Writer
	id   string
}

func openConsole(path string, also io.Writer, id string) (*consoleLog, error) {
	fd, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sim: machine console: %w", err)
	}
	return &consoleLog{file: fd, also: also, id: id}, nil
}

func (c *consoleLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.also != nil {
		_, _ = fmt.Fprintf(c.also, "sim machine %s: %s", c.id, p)
	}
	return c.file.Write(p)
}

func (c *consoleLog) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.file.Close()
}

// logger is the machine's console as a structured log, as the agent
// prints its own.
func (m *machine) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(m.console, nil))
}

// MachineStatus is a system's simulated machine: its description and how
// its boots went.
type MachineStatus struct {
	Dir string `json:"dir"`
	// UUID and Serial are the system's, as Redfish reports them and the
	// machine's firmware (DMI) gives them to the agent.
	UUID        string              `json:"uuid"`
	Serial      string              `json:"serial"`
	CPUs        int                 `json:"cpus"`
	MemoryBytes int64               `json:"memory_bytes"`
	Disks       []MachineDiskStatus `json:"disks"`
	NICs        []MachineNIC        `json:"nics"`
	// Console is the file with the machine's console, every boot so far.
	Console string `json:"console"`
	// Boots counts power-ons and restarts; AgentBoots those that started
	// the deploy agent.
	Boots      int `json:"boots"`
	AgentBoots int `json:"agent_boots"`
	// AgentRunning: an agent runs (or is still stopping: after the power
	// goes it is cancelled at once and gone moments later).
	AgentRunning bool `json:"agent_running"`
	// BootDevice (cd, disk, network) and Booted (BootedAgent, BootedOS,
	// BootedNothing) are of the current or last boot; Note says why
	// nothing booted, or what went wrong in the agent's boot.
	BootDevice string `json:"boot_device,omitempty"`
	Booted     string `json:"booted,omitempty"`
	Note       string `json:"note,omitempty"`
}

// MachineDiskStatus is one disk of a simulated machine.
type MachineDiskStatus struct {
	MachineDisk
	// File holds the disk's bytes (sparse).
	File   string `json:"file"`
	Serial string `json:"serial"`
	WWN    string `json:"wwn"`
}

func (m *machine) statusLocked() MachineStatus {
	st := MachineStatus{
		Dir: m.dir, UUID: m.s.uuid, Serial: m.s.serial, CPUs: m.opts.CPUs, MemoryBytes: int64(m.opts.MemoryMiB) << 20,
		NICs: slices.Clone(m.nics), Console: m.console.file.Name(),
		Boots: m.boots, AgentBoots: m.agentBoots, AgentRunning: m.agentRunning,
		BootDevice: m.device, Booted: m.booted, Note: m.note,
	}
	for _, d := range m.disks {
		st.Disks = append(st.Disks, MachineDiskStatus{MachineDisk: d.MachineDisk, File: d.file, Serial: d.serial, WWN: d.wwn})
	}
	return st
}

// Machine returns a system's simulated machine (Options.Machine).
func (f *Fleet) Machine(system string) (MachineStatus, error) {
	s, err := f.lookup(system)
	if err != nil {
		return MachineStatus{}, err
	}
	if s.machine == nil {
		return MachineStatus{}, fmt.Errorf("sim: system %s has no simulated machine (Options.Machine)", s.id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.machine.statusLocked(), nil
}

// Disk returns the file behind disk i (0-based, in MachineOptions.Disks
// order) of a system's simulated machine, for a test to read.
func (f *Fleet) Disk(system string, i int) (string, error) {
	s, err := f.lookup(system)
	if err != nil {
		return "", err
	}
	if s.machine == nil {
		return "", fmt.Errorf("sim: system %s has no simulated machine (Options.Machine)", s.id)
	}
	if i < 0 || i >= len(s.machine.disks) {
		return "", fmt.Errorf("sim: system %s has %d disks, not a disk %d", s.id, len(s.machine.disks), i)
	}
	return s.machine.disks[i].file, nil
}

// MachineConsole returns what a system's simulated machine printed on its
// console, every boot so far.
func (f *Fleet) MachineConsole(system string) (string, error) {
	st, err := f.Machine(system)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(st.Console)
	return string(b), err
}

// redfishHardware is what the system's Redfish documents report of its
// CPUs (hardware threads: its dialect's sockets, cores and threads, as
// its Processors say) and memory (MemorySummary): its machine's defaults,
// so that an inspection agrees with the BMC.
func (s *system) redfishHardware() (threads, memoryMiB int) {
	return s.cpu.Threads(), int(s.q.MemoryGiB * 1024)
}

// bootMode is the firmware of the system's next boot, as the agent
// reports it.
func (s *system) firmwareLocked() string {
	if s.bootMode == "UEFI" {
		return api.BootModeUEFI
	}
	return api.BootModeBIOS
}

// startMachines gives every system its machine (Options.Machine) before
// the fleet serves, and a goroutine that ends them at Close.
func (f *Fleet) startMachines() error {
	if f.opts.Machine == nil {
		return nil
	}
	if f.opts.VM != nil {
		return errors.New("sim: Options.Machine and Options.VM exclude each other")
	}
	o, err := resolveMachineOptions(*f.opts.Machine)
	if err != nil {
		return err
	}
	if o.NetbootURL != "" {
		f.SetNetbootURL(o.NetbootURL)
	}
	if o.Dir == "" {
		if o.Dir, err = os.MkdirTemp("", "baremetal-sim-machines-"); err != nil {
			return fmt.Errorf("sim: machines: %w", err)
		}
		f.machineTemp = o.Dir
	}
	for _, s := range f.order {
		m, err := f.newMachine(s, o, o.Dir)
		if err != nil {
			f.closeMachines()
			return err
		}
		s.mu.Lock()
		s.machine = m
		if o.Legacy {
			s.bootMode = "Legacy"
		}
		s.mu.Unlock()
	}
	f.goBackground(f.endMachines)
	return nil
}

// endMachines waits for the fleet to close and for the machines' last
// boots to return (Close cancels them), then closes their consoles and
// removes the fleet's temporary machine directory. Close waits for it.
func (f *Fleet) endMachines() {
	<-f.life.Done()
	for _, s := range f.order {
		s.mu.Lock()
		last := s.machine.last
		s.mu.Unlock()
		if last != nil {
			<-last
		}
	}
	f.closeMachines()
}

// closeMachines closes the machines' consoles and removes the fleet's
// temporary machine directory.
func (f *Fleet) closeMachines() {
	for _, s := range f.order {
		if s.machine != nil {
			s.machine.console.close()
		}
	}
	if f.machineTemp != "" {
		_ = os.RemoveAll(f.machineTemp)
	}
}
