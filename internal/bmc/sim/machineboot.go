package sim

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/disk"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// How a simulated machine boots. Power on (or a restart) starts a boot:
// the firmware takes the boot override (a Once override is used up, as
// real BMCs clear it) or else its boot order, disk, CD, network, and
// boots the first device that holds something bootable:
//
//	disk     a disk with a partition table: the simulated OS, which reads
//	         the config drive from a config-2 partition on the disks (as
//	         cloud-init finds it by label), else from the virtual media
//	cd       the first CD slot's image, fetched from its URL as the BMC
//	         serves it: an agent ISO boots the deploy agent; any other
//	         image boots the simulated OS (the sim does not run other
//	         operating systems), which reads its config drive from the
//	         virtual media
//	network  the iPXE script at the fleet's netboot URL: an agent boot
//	         (kernel and initramfs) boots the agent; "exit" hands back to
//	         the firmware, which goes on with the disk and the CD
//
// With an override only that device is tried (the network's "exit" aside).
// A boot runs in a goroutine under a context that power off, the next
// power change and Close cancel; the next boot starts only once the last
// one has returned, so two boots never share the disks.

// machineBoot is one power-on of a machine.
type machineBoot struct {
	n        int
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	prev     <-chan struct{}
	firmware string // api.BootModeUEFI or api.BootModeBIOS
	started  time.Time
	id       string // the kernel's boot id, as the agent reports it
	root     string // the agent's view of the machine: sys, proc, dev, etc
}

// stop is the power going: the disks' device nodes go first, so that no
// later open reaches them, then the boot's context.
func (b *machineBoot) stop() {
	_ = os.RemoveAll(filepath.Join(b.root, "dev"))
	b.cancel()
}

// powerOffLocked cuts the machine's power: whatever it runs stops. A nil
// machine (a system without one) does nothing. s.mu must be held.
func (m *machine) powerOffLocked() {
	if m == nil || m.cur == nil {
		return
	}
	m.cur.stop()
	m.cur = nil
}

// bootMachineLocked starts a boot of s's machine after a power-on or a
// restart. s.mu must be held.
func (f *Fleet) bootMachineLocked(s *system) {
	m := s.machine
	m.powerOffLocked()
	override := s.takeBootOverrideLocked()
	m.boots++
	ctx, cancel := context.WithCancel(f.life)
	b := &machineBoot{
		n: m.boots, ctx: ctx, cancel: cancel, done: make(chan struct{}), prev: m.last,
		firmware: s.firmwareLocked(), started: time.Now(), id: randomUUID(),
		root: filepath.Join(m.dir, "root"),
	}
	m.cur, m.last = b, b.done
	m.device, m.booted, m.note = "", "", ""
	if !f.goBackground(func() { defer close(b.done); m.run(b, override) }) {
		cancel()
		close(b.done)
	}
}

// takeBootOverrideLocked is the boot override's target for this boot
// ("" when none: the boot order), a Once override used up. s.mu must be
// held.
func (s *system) takeBootOverrideLocked() string {
	if s.bootEnabled == "Disabled" || s.bootTarget == "None" || s.bootTarget == "" {
		return ""
	}
	t := s.bootTarget
	if s.bootEnabled == "Once" {
		s.bootTarget, s.bootEnabled = "None", "Disabled"
	}
	return t
}

// Boot devices, as MachineStatus.BootDevice names them.
const (
	bootDisk    = "disk"
	bootCD      = "cd"
	bootNetwork = "network"
)

// run is one boot, from the firmware to what it boots.
func (m *machine) run(b *machineBoot, override string) {
	if b.prev != nil {
		select {
		case <-b.prev:
		case <-b.ctx.Done():
			return
		}
	}
	log := m.logger()
	shown := override
	if shown == "" {
		shown = "none"
	}
	log.Info("power on: firmware starting", "boot", b.n, "firmware", b.firmware, "boot_override", shown)
	var order []string
	switch override {
	case "":
		order = []string{bootDisk, bootCD, bootNetwork}
	case "Hdd":
		order = []string{bootDisk}
	case "Cd":
		order = []string{bootCD}
	case "Pxe":
		order = []string{bootNetwork}
	default:
		m.finish(b, "", BootedNothing, fmt.Sprintf("the boot override %s names no device this machine boots from (it boots Hdd, Cd and Pxe)", override))
		return
	}
	var passed []string
	for i := 0; i < len(order); i++ {
		dev := order[i]
		var next bool
		var why string
		switch dev {
		case bootDisk:
			next, why = m.bootFromDisk(b, log)
		case bootCD:
			next, why = m.bootFromCD(b, log)
		case bootNetwork:
			next, why = m.bootFromNetwork(b, log)
			if next && override == "Pxe" {
				// iPXE's exit: the firmware boots the next device.
				order = append(order, bootDisk, bootCD)
			}
		}
		if !next {
			return
		}
		if b.ctx.Err() != nil {
			return
		}
		log.Info("nothing to boot here", "device", dev, "why", why)
		passed = append(passed, dev+": "+why)
	}
	m.finish(b, "", BootedNothing, "no bootable device ("+strings.Join(passed, "; ")+")")
}

// finish records what boot b booted, unless a newer boot has started.
func (m *machine) finish(b *machineBoot, device, booted, note string) {
	if note != "" && booted == BootedNothing {
		m.logger().Error("the machine boots nothing", "why", note)
	}
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	if m.last == b.done {
		m.device, m.booted, m.note = device, booted, note
	}
}

// bootFromDisk boots the simulated OS when a disk holds a partition
// table. next is true when there is nothing to boot (why says so).
func (m *machine) bootFromDisk(b *machineBoot, log *slog.Logger) (next bool, why string) {
	bootable := ""
	var drive *configdrive.Drive
	var driveAt string
	for _, d := range m.disks {
		parts, found, err := diskConfigDrive(d.file)
		if err != nil {
			log.Warn("disk unreadable", "disk", d.Name, "error", err)
			continue
		}
		if len(parts) > 0 && bootable == "" {
			bootable = d.Name
		}
		if found != nil && drive == nil {
			drive, driveAt = found, d.Name
		}
	}
	if bootable == "" {
		return true, "no disk holds a partition table"
	}
	log.Info("booting from disk", "disk", bootable)
	m.startOS(b, bootDisk, drive, driveAt, log)
	return false, ""
}

// diskConfigDrive lists a disk file's partitions and returns the first
// that holds a config drive (an ISO 9660 labelled config-2).
func diskConfigDrive(file string) ([]disk.Partition, *configdrive.Drive, error) {
	fd, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return nil, nil, err
	}
	parts := disk.Partitions(fd, fi.Size())
	for _, p := range parts {
		if d, err := configdrive.Parse(io.NewSectionReader(fd, p.Start, p.End-p.Start)); err == nil {
			return parts, d, nil
		}
	}
	return parts, nil, nil
}

// startOS boots the simulated OS of boot b from device: it calls back the
// ready URL of drive (from a disk partition, found at), else of the first
// config drive in the virtual media.
func (m *machine) startOS(b *machineBoot, device string, drive *configdrive.Drive, at string, log *slog.Logger) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.cur != b {
		return
	}
	note := ""
	switch {
	case drive != nil && drive.ReadyURL != "":
		note = "config drive on disk " + at
	case s.slotDriveLocked() != nil:
		drive, note = s.slotDriveLocked(), "config drive in the virtual media"
	default:
		drive, note = nil, "no config drive with a ready URL: the OS calls nobody"
	}
	log.Info("the simulated OS boots", "device", device, "config_drive", note)
	m.device, m.booted, m.note = device, BootedOS, note
	if drive != nil {
		m.f.startOSLocked(s, drive.ReadyURL, drive.ReadyToken)
	}
}

// bootFromCD boots the first CD slot's image: the deploy agent from an
// agent ISO, the simulated OS from anything else.
func (m *machine) bootFromCD(b *machineBoot, log *slog.Logger) (next bool, why string) {
	s := m.s
	s.mu.Lock()
	img := ""
	for _, sl := range s.slots {
		if sl.kind == kindCD && sl.inserted {
			img = sl.image
			break
		}
	}
	s.mu.Unlock()
	if img == "" {
		return true, "no virtual media in the CD drive"
	}
	u, err := url.Parse(img)
	if err != nil {
		return true, "the virtual CD's image URL is malformed"
	}
	// The BMC serves the CD from its URL; the firmware reads what it needs.
	file := filepath.Join(m.dir, "cd.iso")
	defer func() { _ = os.Remove(file) }()
	if err := m.f.fetchFile(b.ctx, img, file, maxVMMedia); err != nil {
		if b.ctx.Err() != nil {
			return false, ""
		}
		return true, fmt.Sprintf("the virtual CD's image %s cannot be read: %v", showURL(u), err)
	}
	fd, err := os.Open(file)
	if err != nil {
		return true, err.Error()
	}
	defer fd.Close()
	lb, label, err := readBootCD(fd, b.firmware == api.BootModeUEFI)
	agentCD := label == image.VolumeLabel || (err == nil && lb.isAgent())
	switch {
	case !agentCD:
		// Not the agent: the sim runs no other OS, and plays one.
		log.Info("booting the virtual CD", "image", showURL(u), "label", label)
		m.startOS(b, bootCD, nil, "", log)
		return false, ""
	case err != nil:
		var nb *notBootable
		if errors.As(err, &nb) {
			return true, "the agent CD does not boot: " + err.Error()
		}
		m.finish(b, bootCD, BootedNothing, "the agent CD fails to boot: "+err.Error())
		return false, ""
	}
	log.Info("booting Linux from the virtual CD", "image", showURL(u), "loader", lb.loader)
	m.runAgent(b, bootCD, lb, log)
	return false, ""
}

// isAgent reports whether a Linux boot starts the deploy agent: its
// initramfs carries the agent's config file, or its command line the
// agent's settings.
func (lb *linuxBoot) isAgent() bool {
	_, ok := lb.etc[strings.TrimPrefix(agent.ConfigPath, "/")]
	return ok || strings.Contains(" "+lb.cmdline, " baremetal.api=")
}

// fetchFile GETs url into file, as a BMC or a network boot ROM reads an
// image: no proxy, no certificate checks, at most limit bytes.
func (f *Fleet) fetchFile(ctx context.Context, rawURL, file string, limit int64) error {
	ctx, cancel := context.WithTimeout(ctx, vmFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	resp, err := f.mediaClient.Do(req)
	if err != nil {
		return cleanFetchError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("it answered HTTP %d", resp.StatusCode)
	}
	out, err := os.OpenFile(file, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(resp.Body, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = fmt.Errorf("larger than %d MiB", limit>>20)
	}
	if err != nil {
		return cleanFetchError(err)
	}
	return nil
}

// randomUUID is a random (version 4) UUID, as the kernel's boot_id.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
