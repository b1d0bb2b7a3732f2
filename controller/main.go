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

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
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
  agent-image  build the deploy agent's bootable ISO (and initramfs) from a Linux kernel
  agent     the deploy agent itself (PID 1 of the agent image)
  version   print the version

Run 'controller <command> -h' for a command's flags ('controller node
power -h' for one CLI command's). Every flag of serve, migrate and sim can
also be set with an environment variable: --power-sync-interval is
BAREMETAL_POWER_SYNC_INTERVAL.
`, strings.Join(nodeCLI.names(), ", "), strings.Join(instanceCLI.names(), ", "), strings.Join(tokenCLI.names(), ", "))
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
	logLevel, logFormat *string
}

func newFlags(name string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	f := &flags{FlagSet: fs}
	f.logLevel = f.String("log-level", "info", "log level: debug, info, warn, error")
	f.logFormat = f.String("log-format", "text", "log format: text or json")
	return f
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
			if e := fl.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", envName(fl.Name), v, e)
			}
		}
	})
	return err
}

// set reports whether the command line gave flag name.
func (f *flags) set(name string) bool {
	found := false
	f.Visit(func(fl *flag.Flag) { found = found || fl.Name == name })
	return found
}

func (f *flags) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch *f.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format must be text or json, got %q", *f.logFormat)
	}
}

func storeFlags(f *flags, cfg *app.Config) {
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for the embedded database, secret key and generated admin token")
	f.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "PostgreSQL URL (postgres://...); empty = embedded SQLite in --data-dir")
	f.StringVar(&cfg.SecretKeyFile, "secret-key-file", cfg.SecretKeyFile, "AES-256 key for BMC passwords at rest (default <data-dir>/secret.key, generated on first start)")
}

func serve(ctx context.Context, args []string) error {
	cfg := app.Defaults()
	f := newFlags("serve")
	f.StringVar(&cfg.Listen, "listen", cfg.Listen, "address of the REST API")
	storeFlags(f, &cfg)
	f.StringVar(&cfg.BootstrapToken, "bootstrap-token", "", "admin token to create on first start, when no token exists; ignored later, so a revoked one stays revoked (default: generate one into <data-dir>/admin-token)")
	f.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "serve the API over HTTPS with this PEM certificate (with --tls-key-file)")
	f.StringVar(&cfg.TLSKeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	f.StringVar(&cfg.PublicURL, "public-url", "", "the API's base URL as BMCs and booted instances reach it (config drives, readiness callbacks); default: derived from --listen unless that is a wildcard address")
	f.DurationVar(&cfg.PowerSyncInterval, "power-sync-interval", cfg.PowerSyncInterval, "how often every node's power state is read")
	f.IntVar(&cfg.PowerSyncWorkers, "power-sync-workers", cfg.PowerSyncWorkers, "concurrent BMC reads during power sync")
	f.DurationVar(&cfg.BMCTimeout, "bmc-timeout", cfg.BMCTimeout, "timeout of one BMC call")
	f.DurationVar(&cfg.PowerChangeTimeout, "power-change-timeout", cfg.PowerChangeTimeout, "how long to wait for a power change to be observed before recording power_mismatch")
	f.IntVar(&cfg.RedfishMaxConnections, "redfish-max-connections", cfg.RedfishMaxConnections, "concurrent requests (and connections) to one Redfish BMC: BMCs take few (iDRAC); raise it for a service in front of many systems (with --sim-systems it defaults to 64: the simulated fleet is one endpoint)")
	f.DurationVar(&cfg.MediaSettle, "media-settle", cfg.MediaSettle, "how long a BMC may take to show a virtual media insert or eject it accepted, read back until it does, before the request is sent once more (then fails naming the slot)")
	f.IntVar(&cfg.FaultThreshold, "fault-threshold", cfg.FaultThreshold, "consecutive BMC failures before a node is marked faulted")
	f.DurationVar(&cfg.MaxBackoff, "max-backoff", cfg.MaxBackoff, "cap of the retry backoff of faulted nodes and failing jobs")
	f.IntVar(&cfg.Workers, "workers", cfg.Workers, "concurrent jobs (deploy, cleanup, ...) per controller")
	f.BoolVar(&cfg.ImageCheck, "image-check", cfg.ImageCheck, "before a deploy gives an image URL to the BMC, check it from the controller (HEAD and a range GET): an image that is not there fails the instance with the reason; disable only if the controller cannot reach the image servers the BMCs use")
	f.StringVar(&cfg.ImageURLAllow, "image-url-allow", "", "CIDR ranges, comma-separated, that the image check may fetch from although it refuses them by default: loopback and link-local addresses (e.g. 127.0.0.1/32 for an image server on the controller's host, as make run's demo); a cloud metadata address only by its exact /32 or /128; never the controller's own API address")
	f.StringVar(&cfg.ImageURLDeny, "image-url-deny", "", "CIDR ranges, comma-separated, that the image check never fetches from (nor follows a redirect to), besides what it refuses by default: cloud metadata services, link-local and loopback addresses, the controller's own API address")
	f.StringVar(&cfg.AgentKernel, "agent-kernel", "", "serve the deploy agent (inspection): a Linux kernel, e.g. Debian's /boot/vmlinuz-<version> from linux-image-amd64; this binary (built with CGO_ENABLED=0) becomes the agent's /init; needs --public-url")
	f.StringVar(&cfg.AgentModulesDir, "agent-modules-dir", "", "the agent kernel's modules (default /lib/modules/<its version>)")
	f.StringVar(&cfg.AgentUEFI, "agent-uefi", "auto", "with --agent-kernel, how the agent ISO boots on UEFI firmware (BIOS always): secure-boot (Debian's signed shim and GRUB: shim-signed, grub-efi-amd64-signed; boots with Secure Boot on or off), grub (grub-efi-amd64-bin; Secure Boot off only), on (either), off, or auto (the first installed of secure-boot and grub, else BIOS only, with a warning)")
	f.StringVar(&cfg.AgentURL, "agent-url", "", "the API's base URL as booted nodes (the deploy agent) reach it, when that differs from --public-url (a provisioning network apart from the BMCs')")
	f.StringVar(&cfg.AgentCABundle, "agent-ca-bundle", "auto", "with --agent-kernel, the deploy agent's trust store for https image, config drive and controller URLs (a PEM file of CA certificates): auto (the host's "+image.DefaultCABundle+", Debian's ca-certificates), none, or a file")
	f.StringVar(&cfg.AgentCAFile, "agent-ca-file", "", "with --agent-kernel, a PEM file of CA certificates the deploy agent trusts besides the system's: for an https --agent-url or image servers behind a private CA")
	f.BoolVar(&cfg.AgentNetboot, "agent-netboot", false, "with --agent-kernel, boot the deploy agent from the network on nodes whose BMC has no virtual media (IPMI): the provisioning network's DHCP must hand iPXE the boot file <agent-url>/v1/agent/netboot (see the README)")
	f.StringVar(&cfg.CleanErase, "clean-erase", cfg.CleanErase, "with --agent-kernel, how cleaning erases a node's disks between tenants: metadata (partition tables and filesystem signatures at both ends of every disk), full (every byte) or off")
	f.StringVar(&cfg.CleanEraseClass, "clean-erase-class", "", "per resource class, how cleaning erases disks, overriding --clean-erase: class=mode pairs separated by commas, e.g. storage=full,scratch=off")
	f.BoolVar(&cfg.InspectOnEnroll, "inspect-on-enroll", false, "with --agent-kernel, inspect every node once its BMC is verified (enroll → inspecting → available), so its inventory and properties are known before it is scheduled; IPMI nodes only with --agent-netboot (they have no virtual media to boot the agent from)")
	f.DurationVar(&cfg.AgentTimeout, "agent-timeout", 15*time.Minute, "how long a booted deploy agent may take to report before the work it was booted for gives up")
	simSystems := f.Int("sim-systems", 0, "also run a simulated Redfish BMC fleet with this many systems (demos, quickstart)")
	simListen := f.String("sim-listen", "127.0.0.1:8000", "address of the simulated BMC fleet (its systems' power, boot override, media and faults are kept in <data-dir>/"+simStateFile+" across restarts)")
	if err := f.parse(args); err != nil {
		return err
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	if err := checkServeConfig(cfg); err != nil {
		return err
	}
	cfg.Logger = log
	if cfg.PowerSyncInterval == 0 {
		log.Warn("--power-sync-interval is 0: the periodic power sync is off; faults are only noticed by jobs")
	}
	if *simSystems > 0 {
		if !f.set("redfish-max-connections") {
			// Every simulated system is behind the one endpoint, which
			// the default cap per BMC would make a bottleneck.
			cfg.RedfishMaxConnections = 64
		}
		// The fleet's state lives with the controller's: a restart of
		// the demo leaves the machines as they were, as real ones are.
		fleet, err := sim.Start(sim.Options{Listen: *simListen, Systems: *simSystems, StateFile: filepath.Join(cfg.DataDir, simStateFile)})
		if err != nil {
			return fmt.Errorf("start simulated BMC fleet: %w", err)
		}
		defer func() { _ = fleet.Close() }()
		log.Info("simulated Redfish BMC fleet running", "url", fleet.URL(), "systems", *simSystems,
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

// checkServeConfig rejects settings that would make the controller
// silently useless (a zero timeout fails every BMC call at once).
func checkServeConfig(cfg app.Config) error {
	var errs []error
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be positive, got %s", name, d))
		}
	}
	positive("bmc-timeout", cfg.BMCTimeout)
	positive("power-change-timeout", cfg.PowerChangeTimeout)
	positive("max-backoff", cfg.MaxBackoff)
	positive("media-settle", cfg.MediaSettle)
	if cfg.PowerSyncInterval < 0 {
		errs = append(errs, fmt.Errorf("--power-sync-interval must not be negative, got %s", cfg.PowerSyncInterval))
	}
	for name, v := range map[string]int{"power-sync-workers": cfg.PowerSyncWorkers, "fault-threshold": cfg.FaultThreshold, "workers": cfg.Workers,
		"redfish-max-connections": cfg.RedfishMaxConnections} {
		if v < 1 {
			errs = append(errs, fmt.Errorf("--%s must be at least 1, got %d", name, v))
		}
	}
	return errors.Join(errs...)
}

func migrate(ctx context.Context, args []string) error {
	cfg := app.Defaults()
	f := newFlags("migrate")
	storeFlags(f, &cfg)
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
		set := map[string]bool{}
		f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		if !set["systems"] {
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
