package sim

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/disk"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/lldp"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// The deploy agent on a simulated machine is the agent's own code
// (internal/agent: Loop, Runner, Collector, HTTPController), run in this
// process as the agent's /init wires it, on what the machine booted: the
// configuration comes from the initramfs's /etc/baremetal/agent.json and
// the kernel command line, the trust store from the initramfs's
// /etc/ssl/certs, and the agent reaches the controller over the network
// like any other client. What the kernel would give it is built from the
// machine's description under the boot's root directory: a sysfs (DMI,
// block devices, NICs, EFI), a procfs meminfo, and /dev nodes that are
// links to the disk files, so its disk commands write those files with
// the agent's disk package. The binary in the initramfs is never run.

// caBundle is where Go's x509 (the agent's system trust store) reads the
// CAs on Linux, and where the agent image puts its trust store.
const caBundle = "etc/ssl/certs/ca-certificates.crt"

// efiGlobal is the EFI global variables' namespace (SecureBoot-<guid>).
const efiGlobal = "8be4df61-93ca-11d2-aa0d-00e098032b8c"

// runAgent runs the deploy agent of boot b until the power goes.
func (m *machine) runAgent(b *machineBoot, device string, lb *linuxBoot, log *slog.Logger) {
	switch lb.init {
	case "static":
	case "":
		m.finish(b, device, BootedNothing, "kernel panic: no /init in the initramfs")
		return
	default:
		m.finish(b, device, BootedNothing, "kernel panic: /init is "+lb.init)
		return
	}
	if err := m.buildRoot(b, lb); err != nil {
		if b.ctx.Err() != nil {
			return // the power went
		}
		m.finish(b, device, BootedNothing, "the simulator could not lay out the machine for its agent: "+err.Error())
		return
	}
	alog := log.With("component", "agent")
	alog.Info("agent starting", "version", m.opts.AgentVersion)
	cfg := agent.Config{}
	if err := agent.ParseConfigFile(filepath.Join(b.root, agent.ConfigPath), &cfg); err != nil {
		alog.Error("config file unusable", "error", err)
	}
	agent.ApplyCmdline(lb.cmdline, &cfg)
	if err := cfg.Validate(); err != nil {
		// The agent says so on its console and never reaches anyone.
		alog.Error("cannot reach the controller: bad boot configuration", "error", err, "config", cfg.String())
		m.finish(b, device, BootedAgent, "the agent cannot reach the controller: bad boot configuration: "+err.Error())
		return
	}
	alog.Info("configuration", "config", cfg.String())

	// The agent's system trust store is its initramfs's, plus the boot's.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(lb.etc[caBundle])
	if cfg.CACerts != "" {
		pool.AppendCertsFromPEM([]byte(cfg.CACerts))
	}
	// As agent.Config.HTTPClient makes them, with that trust store.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // the agent's initramfs has no proxy settings
	t.DisableCompression = true
	t.ResponseHeaderTimeout = time.Minute
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	defer t.CloseIdleConnections()
	apiClient := &http.Client{Transport: t, Timeout: 30 * time.Second}
	driveClient := &http.Client{Transport: t, Timeout: 2 * time.Minute}
	// Guarded as the agent's own (no metadata service, no link-local
	// address), on a transport of its own: the guard wraps its dialer.
	imageClient := disk.NewClient(t.Clone())

	devDir := filepath.Join(b.root, "dev")
	runner := &agent.Runner{
		SysRoot: filepath.Join(b.root, "sys"),
		DevPath: func(name string) string { return filepath.Join(devDir, name) },
		Log:     alog, Client: driveClient, Write: disk.Options{Client: imageClient},
	}
	collector := &agent.Collector{Sys: filepath.Join(b.root, "sys"), Proc: filepath.Join(b.root, "proc"),
		CPUs: func() int { return m.opts.CPUs }}
	if wait := cfg.LLDPWait(); wait > 0 {
		// The agent's DiscoverLLDP, on the frames of the machine's
		// switches rather than raw sockets: the same listener and parser.
		collector.LLDP = lldp.Listen(b.ctx, m.switchFrames(), wait, func(nic string, err error) {
			alog.Warn("LLDP: listening failed", "interface", nic, "error", err)
		})
		alog.Info("LLDP: done", "heard", len(collector.LLDP))
	}
	loop := &agent.Loop{
		Controller: agent.NewHTTPController(cfg.API, cfg.Token, apiClient),
		Collect:    collector.Collect,
		Commands:   runner,
		Version:    m.opts.AgentVersion,
		Log:        alog,
		Boot:       func() (string, float64) { return b.id, time.Since(b.started).Seconds() },
	}
	if cfg.PowerOffAfterHeartbeat {
		loop.Accepted = func(int) {
			if runner.Status() != nil {
				return // a command runs, or its outcome is yet to be taken
			}
			alog.Info("poweroff_after_heartbeat is set: powering off")
			m.powerOffBy(b)
		}
	}

	s := m.s
	s.mu.Lock()
	if m.cur != b {
		s.mu.Unlock()
		return
	}
	m.agentBoots++
	m.agentRunning = true
	m.device, m.booted, m.note = device, BootedAgent, ""
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		m.agentRunning = false // the next boot waits for this one: it is ours
		s.mu.Unlock()
	}()

	loop.Run(b.ctx)
	// The commands stop with the context; the power is gone when they have.
	runner.Wait()
	alog.Info("power lost: the agent stopped")
}

// powerOffBy powers the machine off from within boot b (the agent's
// poweroff), unless another boot has started since.
func (m *machine) powerOffBy(b *machineBoot) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.cur != b {
		return
	}
	s.cancelPendingLocked()
	m.f.applyPowerLocked(s, false, false)
}

// buildRoot lays out what boot b's kernel would show its agent: the
// initramfs's /etc, a sysfs and procfs of the machine's description, and
// /dev nodes for its disks.
func (m *machine) buildRoot(b *machineBoot, lb *linuxBoot) error {
	if err := os.RemoveAll(b.root); err != nil {
		return err
	}
	var errs []error
	put := func(p string, content string) {
		full := filepath.Join(b.root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			errs = append(errs, err)
			return
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	dir := func(p string) {
		if err := os.MkdirAll(filepath.Join(b.root, filepath.FromSlash(p)), 0o755); err != nil {
			errs = append(errs, err)
		}
	}
	for p, data := range lb.etc {
		put(p, string(data))
	}
	s := m.s
	put("sys/class/dmi/id/sys_vendor", "baremetal-sim\n")
	put("sys/class/dmi/id/product_name", "SimServer 1000\n")
	put("sys/class/dmi/id/product_serial", s.serial+"\n")
	put("sys/class/dmi/id/product_uuid", s.uuid+"\n")
	if b.firmware == api.BootModeUEFI {
		// Attributes (non-volatile, boot and runtime access), then 0:
		// Secure Boot off.
		put("sys/firmware/efi/efivars/SecureBoot-"+efiGlobal, "\x06\x00\x00\x00\x00")
	}
	for _, d := range m.disks {
		p := "sys/block/" + d.Name + "/"
		put(p+"size", strconv.FormatInt(d.Bytes/512, 10)+"\n")
		put(p+"removable", boolAttr(d.Removable))
		put(p+"queue/rotational", boolAttr(d.Rotational))
		put(p+"device/model", d.Model+"\n")
		put(p+"device/vendor", "SIM\n")
		put(p+"device/serial", d.serial+"\n")
		put(p+"wwid", d.wwn+"\n")
	}
	for _, n := range m.nics {
		p := "sys/class/net/" + n.Name + "/"
		put(p+"type", "1\n")
		put(p+"address", n.MAC+"\n")
		put(p+"operstate", "up\n")
		put(p+"speed", strconv.Itoa(nicSpeedMbps)+"\n")
		dir(p + "device")
	}
	put("proc/meminfo", fmt.Sprintf("MemTotal:       %d kB\n", m.opts.MemoryMiB<<10))
	dir("dev")
	if len(errs) > 0 {
		return errs[0]
	}
	// The device nodes last, and only while the power is on: stop removes
	// them, so nothing of a lost boot opens a disk afterwards.
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	if m.cur != b {
		return fmt.Errorf("the power went during the boot")
	}
	for _, d := range m.disks {
		if err := os.Symlink(d.file, filepath.Join(b.root, "dev", d.Name)); err != nil {
			return err
		}
	}
	return nil
}

func boolAttr(v bool) string {
	if v {
		return "1\n"
	}
	return "0\n"
}

// switchFrames is what the machine's switches announce on each NIC's
// link: one LLDP frame from the switch port the NIC is cabled to
// (MachineNIC.Switch, SwitchPort), as a real leaf sends every 30 s.
func (m *machine) switchFrames() map[string]lldp.Source {
	out := make(map[string]lldp.Source, len(m.nics))
	for i, n := range m.nics {
		// Locally administered MACs of the switch and of its port.
		chassis := net.HardwareAddr{0x02, 0x5b, 0, 0, 0, byte(i + 1)}
		port := net.HardwareAddr{0x02, 0x5b, byte(i + 1), byte(m.s.index >> 16), byte(m.s.index >> 8), byte(m.s.index)}
		a := lldp.Announcement{ChassisMAC: chassis, SystemName: n.Switch, PortName: n.SwitchPort,
			PortDescription: fmt.Sprintf("system-%d %s", m.s.index+1, n.Name), VLANID: simNativeVLAN,
			MgmtAddress: netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})}
		out[n.Name] = lldp.Replay(a.Frame(port))
	}
	return out
}

// simNativeVLAN is the untagged VLAN of every simulated switch port.
const simNativeVLAN = 100
