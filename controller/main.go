// Command controller runs the baremetal controller: the REST API, durable
// jobs and power sync over an embedded SQLite store (default) or
// PostgreSQL. Subcommands:
//
//	controller serve     run the controller (optionally with a simulated BMC fleet)
//	controller migrate   apply database migrations and exit
//	controller sim       run only a simulated Redfish BMC fleet
//	controller node      operator CLI over the API (list, show, create, maintenance, power, events, inspect, inventory, delete)
//	controller instance  the same for instances (list, show, delete)
//	controller token     API tokens (list, create, revoke)
//	controller agent     the deploy agent (runs as /init, PID 1, of the agent image)
//	controller agent-image  build the agent's bootable ISO and initramfs
//	controller version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/app"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// version is set at release builds (-ldflags "-X main.version=v1.2.3");
// otherwise versionString reads what the Go toolchain recorded.
var version = "dev"

// versionString is the version and, when the binary was built from a git
// checkout, the commit it was built from (and "-dirty" for uncommitted
// changes), so a bug report names exactly what ran.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	var rev, dirty, at string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		case "vcs.time":
			at = s.Value
		}
	}
	v := version
	if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if rev == "" {
		return v + " (" + bi.GoVersion + ")"
	}
	return fmt.Sprintf("%s (commit %.12s%s, %s, %s)", v, rev, dirty, at, bi.GoVersion)
}

func main() {
	args := os.Args[1:]
	// The kernel starts /init of the agent image with no arguments. PID 1
	// alone is not enough: in a container the controller is PID 1 too.
	if os.Getpid() == 1 && os.Args[0] == "/init" {
		args = []string{"agent"}
	}
	if err := run(args); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(terminalSafe(os.Stderr), "controller:", err) // errors quote the server
		}
		os.Exit(1)
	}
}

// usage is the controller's help; the CLI groups' commands are listed
// from their tables, so none is forgotten.
func usage() string {
	return fmt.Sprintf(`usage: controller <command> [flags]

commands:
  serve     run the controller API, jobs and power sync
  migrate   apply database migrations (ours and River's) and exit
  sim       run a simulated Redfish BMC fleet
  node      operator commands through the API: %s
  instance  the same for instances: %s
  token     API tokens (admin): %s
  ip-pool   address pools: %s
  agent-image  build the deploy agent's bootable ISO (and initramfs) from a Linux kernel
  agent     the deploy agent itself (PID 1 of the agent image)
  version   print the version

Run 'controller <command> -h' for a command's flags ('controller node
power -h' for one CLI command's). Every flag of serve, migrate and sim can
also be set with an environment variable: --power-sync-interval is
BAREMETAL_POWER_SYNC_INTERVAL.
`, strings.Join(nodeCLI.names(), ", "), strings.Join(instanceCLI.names(), ", "), strings.Join(tokenCLI.names(), ", "),
		strings.Join(ipPoolCLI.names(), ", "))
}

func run(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage())
		return errors.New("no command")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:])
	case "migrate":
		return migrate(ctx, args[1:])
	case "node":
		return runNode(ctx, args[1:])
	case "instance":
		return runInstance(ctx, args[1:])
	case "token":
		return runToken(ctx, args[1:])
	case "ip-pool":
		return runIPPool(ctx, args[1:])
	case "sim":
		return runSim(ctx, args[1:])
	case "agent":
		return runAgent(args[1:])
	case "agent-image":
		return runAgentImage(args[1:])
	case "version":
		fmt.Println(versionString())
		return nil
	case "-h", "--help", "help":
		fmt.Print(usage())
		return nil
	default:
		fmt.Fprint(os.Stderr, usage())
		return fmt.Errorf("unknown command %q", args[0])
	}
}

// flags wraps a FlagSet so every flag falls back to a BAREMETAL_* env var.
type flags struct {
	*flag.FlagSet
	logLevel, logFormat string
}

func newFlags(name string) *flags {
	f := &flags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.add(f.logSettings()...)
	return f
}

// logSettings are every command's logging flags.
func (f *flags) logSettings() []app.Setting {
	return []app.Setting{
		{Name: "log-level", Value: &f.logLevel, Default: "info", Help: "log level: debug, info, warn, error"},
		{Name: "log-format", Value: &f.logFormat, Default: "text", Help: "log format: text or json", Doc: "`text`, or `json` for machine-read logs"},
	}
}

// add defines the settings' flags.
func (f *flags) add(settings ...app.Setting) {
	for _, s := range settings {
		s.AddTo(f.FlagSet)
	}
}

func envName(flagName string) string {
	return "BAREMETAL_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse applies env vars to flags not given on the command line.
func (f *flags) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", f.Args())
	}
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var err error
	f.VisitAll(func(fl *flag.Flag) {
		if set[fl.Name] || err != nil {
			return
		}
		if v, ok := os.LookupEnv(envName(fl.Name)); ok {
			// Through the FlagSet, so the flag counts as given (set).
			if e := f.Set(fl.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", envName(fl.Name), v, e)
			}
		}
	})
	return err
}

// set reports whether the command line or the environment gave flag
// name.
func (f *flags) set(name string) bool {
	found := false
	f.Visit(func(fl *flag.Flag) { found = found || fl.Name == name })
	return found
}

func (f *flags) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch f.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format must be text or json, got %q", f.logFormat)
	}
}

// storeSettings are cfg's settings that say where the database is:
// migrate's flags, and serve's too.
func storeSettings(cfg *app.Config) []app.Setting {
	var out []app.Setting
	for _, s := range cfg.Settings() {
		switch s.Name {
		case "data-dir", "database-url", "secret-key-file":
			out = append(out, s)
		}
	}
	return out
}

// serveFlags are controller serve's flags: the controller's settings
// (app.Config's table), the simulated fleet's and logging's.
type serveFlags struct {
	*flags
	cfg        app.Config
	simSystems int
	simListen  string
}

func newServeFlags() *serveFlags {
	f := &serveFlags{flags: newFlags("serve")}
	f.add(f.settings()...)
	return f
}

// settings are serve's own, in the README's order (logging's follow
// them there).
func (f *serveFlags) settings() []app.Setting {
	return append(f.cfg.Settings(),
		app.Setting{Name: "sim-systems", Value: &f.simSystems,
			Help: "also run a simulated Redfish BMC fleet with this many systems (demos, quickstart)",
			Doc:  "also run a simulated Redfish BMC fleet with N systems"},
		app.Setting{Name: "sim-listen", Value: &f.simListen, Default: "127.0.0.1:8000",
			Help: "address of the simulated BMC fleet (its systems' power, boot override, media and faults are kept in <data-dir>/" + simStateFile + " across restarts)",
			Doc:  "its address"})
}

// config is the controller's Config as the flags say it.
func (f *serveFlags) config() app.Config {
	cfg := f.cfg
	if f.simSystems > 0 && !f.set("redfish-max-connections") {
		// Every simulated system is behind the one endpoint, which the
		// default cap per BMC would make a bottleneck.
		cfg.RedfishMaxConnections = 64
	}
	return cfg
}

func serve(ctx context.Context, args []string) error {
	f := newServeFlags()
	if err := f.parse(args); err != nil {
		return err
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	// Before the simulated fleet starts and its state file is written:
	// bad settings change nothing. (Start checks again, for every caller.)
	cfg := f.config()
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.Logger = log
	if cfg.PowerSyncInterval == 0 {
		log.Warn("--power-sync-interval is 0: the periodic power sync is off; faults are only noticed by jobs")
	}
	if f.simSystems > 0 {
		// The fleet's state lives with the controller's: a restart of
		// the demo leaves the machines as they were, as real ones are.
		fleet, err := sim.Start(sim.Options{Listen: f.simListen, Systems: f.simSystems, StateFile: filepath.Join(cfg.DataDir, simStateFile)})
		if err != nil {
			return fmt.Errorf("start simulated BMC fleet: %w", err)
		}
		defer func() { _ = fleet.Close() }()
		log.Info("simulated Redfish BMC fleet running", "url", fleet.URL(), "systems", f.simSystems,
			"first_system", fleet.SystemIDs()[0], "username", "admin", "password", "password")
	}
	a, err := app.Start(ctx, cfg)
	if err != nil {
		return err
	}
	werr := a.Wait(ctx)
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(werr, a.Stop(sctx))
}

// simStateFile is where serve --sim-systems keeps the simulated fleet's
// state, in the data dir.
const simStateFile = "sim-state.json"

func migrate(ctx context.Context, args []string) error {
	var cfg app.Config
	f := newFlags("migrate")
	f.add(storeSettings(&cfg)...)
	if err := f.parse(args); err != nil {
		return err
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	st, err := app.OpenStore(ctx, cfg, log) // opening applies every migration
	if err != nil {
		return err
	}
	log.Info("migrations applied", "store", st.Dialect())
	return st.Close()
}

func runSim(ctx context.Context, args []string) error {
	f := newFlags("sim")
	listen := f.String("listen", "127.0.0.1:8000", "address of the simulated Redfish service")
	systems := f.Int("systems", 10, "number of simulated systems")
	latency := f.Duration("latency", 0, "added latency of every system request")
	powerDelay := f.Duration("power-delay", 0, "how long after a Reset the power state changes")
	tls := f.Bool("tls", false, "serve HTTPS with a self-signed certificate")
	mediaSlots := f.String("media-slots", "",
		"virtual media slots of each system, comma-separated; the name's prefix is the kind: cd, dvd, usb, floppy, removable (\"CD\" = a single-slot BMC); default "+strings.Join(sim.DefaultMediaSlots, ",")+", with --dialect sushy Cd,Floppy")
	osBootDelay := f.Duration("os-boot-delay", 0, "how long after power-on the simulated OS calls the config drive's ready URL (negative: never)")
	dialect := f.String("dialect", "standard", "Redfish implementation to imitate: standard; sushy (sushy-tools: boot override always Continuous, clearing needs a target, media under the system, images fetched at insert); or a vendor's quirks: "+vendorDialects()+" (see the README's vendor table)")
	fetchMedia := f.Bool("fetch-media", false, "fetch boot CD images at insert time, as real BMCs do (an unfetchable image fails the insert); sushy always does")
	qemuVM := f.Bool("qemu-vm", false, "back each system with a real qemu VM (TCG, user-mode network: the guest reaches this host's 127.0.0.1 at 10.0.2.2): power starts and stops qemu, virtual media are its CD-ROM drives, the boot override is its boot order; --systems defaults to 1")
	vmDir := f.String("vm-dir", "", "with --qemu-vm: directory for each system's disk.img, serial.log and qemu.log (default: a new temporary directory; an existing disk.img is kept)")
	vmDiskMB := f.Int("vm-disk-mb", 1024, "with --qemu-vm: size of each VM's raw disk in MiB (a sparse file)")
	vmMemoryMB := f.Int("vm-memory-mb", sim.MaxVMMemoryMB, fmt.Sprintf("with --qemu-vm: memory of each VM in MiB (at most %d)", sim.MaxVMMemoryMB))
	vmCPUs := f.Int("vm-cpus", 1, "with --qemu-vm: virtual CPUs of each VM (1 or 2)")
	vmUEFI := f.Bool("vm-uefi", false, "with --qemu-vm: start systems in UEFI boot mode (OVMF firmware, Debian package ovmf) instead of Legacy BIOS")
	stateFile := f.String("state-file", "", "keep each system's power, boot override, media and faults in this file across restarts (not with --qemu-vm); default: every start powers every system off")
	machines := f.Bool("machines", false, "give each system simulated hardware without qemu: it boots the deploy agent from the agent ISO in its virtual CD (or from the network), running the agent's code in this process on the machine's disk files (<machine-dir>/<id>/disk*.img, 4 and 8 GiB sparse), and the simulated OS from a disk the agent wrote")
	machineDir := f.String("machine-dir", "", "with --machines: directory for each system's disk files and console.log (default: a temporary directory, removed at exit; existing disk files are kept)")
	if err := f.parse(args); err != nil {
		return err
	}
	var machine *sim.MachineOptions
	if *machines {
		machine = &sim.MachineOptions{Dir: *machineDir}
	}
	var vm *sim.VMOptions
	if *qemuVM {
		if !f.set("systems") {
			*systems = 1
		}
		dir := *vmDir
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "baremetal-sim-vm-"); err != nil {
				return err
			}
		}
		vm = &sim.VMOptions{Dir: dir, DiskBytes: int64(*vmDiskMB) << 20, MemoryMB: *vmMemoryMB, CPUs: *vmCPUs, UEFI: *vmUEFI}
	}
	d, err := sim.ParseDialect(*dialect)
	if err != nil {
		return err
	}
	if *systems < 1 {
		return errors.New("--systems must be at least 1")
	}
	var slots []string
	for _, s := range strings.Split(*mediaSlots, ",") {
		if s = strings.TrimSpace(s); s != "" {
			slots = append(slots, s)
		}
	}
	fleet, err := sim.Start(sim.Options{Listen: *listen, Systems: *systems, Latency: *latency, PowerDelay: *powerDelay, TLS: *tls,
		MediaSlots: slots, OSBootDelay: *osBootDelay, Dialect: d, FetchCDMedia: *fetchMedia, VM: vm, Machine: machine, StateFile: *stateFile})
	if err != nil {
		return err
	}
	defer func() { _ = fleet.Close() }()
	fmt.Printf("simulated Redfish BMC fleet at %s (credentials admin/password)\n", fleet.URL())
	fmt.Printf("fault injection: curl -X POST %s/sim/systems/<id>/fault -d '{\"fault\":\"hang\"}'  (down, hang, slow, error, auth, flap, none)\n", fleet.URL())
	fmt.Printf("silent OS (never reports ready): curl -X POST %s/sim/systems/<id>/os -d '{\"enabled\":false}'\n", fleet.URL())
	ids := fleet.SystemIDs()
	for _, id := range ids {
		if machine != nil {
			st, err := fleet.Machine(id)
			if err != nil {
				return err
			}
			fmt.Printf("%s  machine: disks %s, %s; console %s\n", id, st.Disks[0].File, st.Disks[1].File, st.Console)
			continue
		}
		if vm == nil {
			fmt.Println(id)
			continue
		}
		st, err := fleet.VM(id)
		if err != nil {
			return err
		}
		fmt.Printf("%s  qemu VM: disk %s (%d MiB), MAC %s, console %s\n", id, st.Disk, st.DiskBytes>>20, st.MAC, st.Serial)
	}
	fmt.Println(strconv.Itoa(len(ids)) + " systems; Ctrl-C to stop")
	<-ctx.Done()
	return nil
}

// vendorDialects lists the simulator's vendor dialects for the help.
func vendorDialects() string {
	names := make([]string, len(sim.VendorDialects))
	for i, d := range sim.VendorDialects {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}
