package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/disk"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/kmod"
)

// Init is the agent as PID 1: it brings the node up and reports to the
// controller forever. It never returns; any failure is logged to the
// console and retried, because an exiting init panics the kernel and
// leaves the operator a frozen node with nothing to read.
func Init(version string) {
	for attempt := 1; ; attempt++ {
		err := protect(func() error { return boot(version) })
		fmt.Fprintf(os.Stderr, "agent: start-up attempt %d failed: %v; retrying in 10s\n", attempt, err)
		time.Sleep(10 * time.Second)
	}
}

func protect(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// boot runs the start-up steps; each is safe to repeat after a failure.
func boot(version string) error {
	if err := mountAll(); err != nil {
		return err
	}
	attachConsole()
	out := consoleLog(os.Stderr, readTrim(ActiveConsolesPath))
	logger := slog.New(slog.NewTextHandler(out, nil)).With("component", "agent")
	// u-root's DHCP client logs through the standard logger.
	log.SetOutput(out)
	logger.Info("agent starting", "version", version)

	loadModules(logger)
	mountEFIVars(logger)

	cfg := Config{}
	if err := ParseConfigFile(ConfigPath, &cfg); err != nil {
		logger.Error("config file unusable", "error", err)
	}
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return fmt.Errorf("read /proc/cmdline: %w", err)
	}
	ApplyCmdline(string(cmdline), &cfg)
	if err := cfg.Validate(); err != nil {
		// Nothing at runtime can fix the boot configuration: say so on
		// the console once a minute rather than spin.
		for {
			logger.Error("cannot reach the controller: bad boot configuration", "error", err, "config", cfg.String())
			time.Sleep(time.Minute)
		}
	}
	logger.Info("configuration", "config", cfg.String())

	ctx := context.Background()
	BringUpNetwork(ctx, logger)
	collector := DefaultCollector()
	if wait := cfg.LLDPWait(); wait > 0 {
		// Before the first report: an inspection takes the first
		// inventory the agent sends.
		collector.LLDP = DiscoverLLDP(ctx, logger, wait)
	}

	// Validate checked the CA certificates: these cannot fail.
	apiClient, _ := cfg.HTTPClient(30 * time.Second)
	driveClient, _ := cfg.HTTPClient(2 * time.Minute)
	imageClient, _ := cfg.ImageClient() // guarded: no metadata service, no link-local address
	loop := &Loop{
		Controller: NewHTTPController(cfg.API, cfg.Token, apiClient),
		Collect:    collector.Collect,
		Commands:   &Runner{SysRoot: "/sys", Log: logger, Client: driveClient, Write: disk.Options{Client: imageClient}},
		Version:    version,
		Log:        logger,
	}
	if cfg.PowerOffAfterHeartbeat {
		loop.Accepted = func(int) {
			if loop.Commands.Status() != nil {
				return // a command runs, or its outcome is yet to be taken
			}
			logger.Info("poweroff_after_heartbeat is set: powering off")
			PowerOff()
		}
	}
	loop.Run(ctx)
	return errors.New("heartbeat loop ended")
}

type mount struct{ source, target, fstype string }

var mounts = []mount{
	{"proc", "/proc", "proc"},
	{"sysfs", "/sys", "sysfs"},
	{"devtmpfs", "/dev", "devtmpfs"},
	{"tmpfs", "/run", "tmpfs"},
	{"tmpfs", "/tmp", "tmpfs"},
}

func mountAll() error {
	for _, m := range mounts {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", m.target, err)
		}
		err := unix.Mount(m.source, m.target, m.fstype, unix.MS_NOSUID, "")
		// EBUSY: mounted already (a retried start-up).
		if err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.target, err)
		}
	}
	return nil
}

// mountEFIVars mounts the UEFI variables, read-only (the inventory reads
// SecureBoot; the agent never writes one), once the efivarfs module is
// loaded. Only on UEFI machines, and best effort: a machine without them
// still has disks to write.
func mountEFIVars(logger *slog.Logger) {
	const efiVars = "/sys/firmware/efi/efivars"
	if _, err := os.Stat("/sys/firmware/efi"); err != nil {
		return // booted by a BIOS
	}
	err := unix.Mount("efivarfs", efiVars, "efivarfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if err != nil && !errors.Is(err, unix.EBUSY) {
		logger.Warn("UEFI variables not mounted: Secure Boot is reported off", "error", err)
		return
	}
	logger.Info("UEFI variables mounted")
}

// attachConsole points stdin/out/err at /dev/console. The kernel does so
// itself only when the initramfs has a /dev/console node; devtmpfs has one
// in any case, so this also covers an image built without it.
func attachConsole() {
	fd, err := unix.Open("/dev/console", unix.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return
	}
	for i := 0; i < 3; i++ {
		_ = unix.Dup2(fd, i)
	}
	if fd > 2 {
		_ = unix.Close(fd)
	}
}

// consoleLog is the agent's log output: console (/dev/console) and,
// best effort, the other consoles the kernel lists in active. They are
// opened without blocking: a serial port held up by flow control must
// not stall the agent, it loses lines instead.
func consoleLog(console io.Writer, active string) io.Writer {
	ws := []io.Writer{console}
	for _, p := range OtherConsoles(active) {
		f, err := os.OpenFile(p, os.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err != nil {
			continue
		}
		ws = append(ws, bestEffort{f})
	}
	if len(ws) == 1 {
		return console
	}
	return io.MultiWriter(ws...)
}

// bestEffort never fails a write, so that io.MultiWriter goes on to the
// next console after one that refused.
type bestEffort struct{ w io.Writer }

func (b bestEffort) Write(p []byte) (int, error) {
	_, _ = b.w.Write(p)
	return len(p), nil
}

// ModulesDir is where the image keeps the modules of its kernel.
func ModulesDir() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		dir := filepath.Join("/lib/modules", unix.ByteSliceToString(u.Release[:]))
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
	}
	return ""
}

// loadModules loads every module of the image in dependency order. A
// module that fails (no such hardware is not a failure for PCI drivers,
// but a missing firmware is) is logged and skipped: the node may still
// have a disk and a NIC that work.
func loadModules(logger *slog.Logger) {
	dir := ModulesDir()
	if dir == "" {
		logger.Warn("no modules for this kernel in the image; relying on built-in drivers")
		return
	}
	f, err := os.Open(filepath.Join(dir, "modules.dep"))
	if err != nil {
		logger.Error("read modules.dep", "error", err)
		return
	}
	deps, err := kmod.ParseDeps(f)
	f.Close()
	if err != nil {
		logger.Error("parse modules.dep", "error", err)
		return
	}
	order, err := deps.Order(deps.Files())
	if err != nil {
		logger.Error("order modules", "error", err)
		return
	}
	start, loaded := time.Now(), 0
	for _, m := range order {
		if err := kmod.Load(filepath.Join(dir, m)); err != nil {
			logger.Warn("module not loaded", "error", err)
			continue
		}
		loaded++
	}
	logger.Info("modules loaded", "loaded", loaded, "of", len(order), "took", time.Since(start).Round(time.Millisecond))
}

// PowerOff flushes and powers the machine off. It returns only if the
// kernel refused.
func PowerOff() {
	unix.Sync()
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Fprintf(os.Stderr, "agent: power off: %v\n", err)
	}
}
