package app

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/redfish"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/netguard"
)

// Config is everything a controller needs. Its settings, the flags of
// controller serve, are one table (Settings): their defaults (Defaults),
// help, checks (Validate) and the README's configuration table all come
// from it. The fields without a flag are for tests.
type Config struct {
	Listen         string // host:port of the API; "127.0.0.1:0" picks a port
	DataDir        string
	DatabaseURL    string // empty: embedded SQLite in DataDir
	BootstrapToken string
	SecretKeyFile  string // empty: <DataDir>/secret.key
	// TLSCertFile and TLSKeyFile, when both set, make the API serve HTTPS
	// (PEM files; re-read at start only).
	TLSCertFile string
	TLSKeyFile  string
	// PublicURL is the API's base URL as BMCs and booted instances reach
	// it: BMCs fetch config drives from it, instances call back to it.
	// Empty: derived from Listen unless Listen is a wildcard address.
	PublicURL string

	PowerSyncInterval  time.Duration
	PowerSyncWorkers   int
	BMCTimeout         time.Duration
	PowerChangeTimeout time.Duration
	FaultThreshold     int
	MaxBackoff         time.Duration
	Workers            int
	// PowerPollInterval and RetryBase have no flag (zero: the jobs'
	// defaults); tests shorten them.
	PowerPollInterval time.Duration
	RetryBase         time.Duration
	// RedfishMaxConnections caps the concurrent requests (and connections)
	// to one Redfish BMC: BMCs take few; a service in front of many
	// systems, like the simulated fleet, may take more.
	RedfishMaxConnections int
	// MediaSettle is how long a BMC may take to show a virtual media
	// insert or eject it accepted before the request is sent again (and
	// then fails).
	MediaSettle time.Duration
	// ImageCheck makes deploys look at an image URL from the controller
	// (HEAD and a range GET) before a BMC gets it, so an image that is not
	// there fails its instance with the reason. Off only where the
	// controller cannot reach the image servers the BMCs use.
	ImageCheck bool
	// ImageURLAllow and ImageURLDeny are the check's CIDR lists, comma
	// separated (netguard.ParsePrefixes). The check never fetches from a
	// cloud metadata service, a link-local or loopback address or the
	// controller's own API address (imagecheck); Allow exempts ranges
	// from that (make run allows 127.0.0.1 for the simulator's demo
	// image), Deny refuses more.
	ImageURLAllow, ImageURLDeny string

	// AgentKernel, when set, makes the controller serve the deploy agent:
	// a Linux kernel (Debian's /boot/vmlinuz-*), its modules from
	// AgentModulesDir (empty: /lib/modules/<its version>), and this binary
	// (AgentBinary when set, which has no flag; it must be static,
	// CGO_ENABLED=0) as the agent's /init. Inspection needs it.
	AgentKernel     string
	AgentModulesDir string
	AgentBinary     string
	// AgentUEFI is how the served agent ISO boots on UEFI firmware: auto
	// (Debian's signed shim and GRUB where installed, so Secure Boot nodes
	// boot it too, else unsigned GRUB, else BIOS only), on, secure-boot,
	// grub or off (image.ResolveUEFI); empty is auto.
	AgentUEFI string
	// AgentCABundle is the deploy agent's trust store for https (a PEM
	// file): auto (the host's, Debian's ca-certificates), none, or a file
	// (image.ResolveCABundle). AgentCAFile adds to it per boot.
	AgentCABundle string
	// AgentURL is the API's base URL as booted nodes (the deploy agent)
	// reach it, when that differs from PublicURL (a provisioning network
	// apart from the BMCs' network). Empty: PublicURL.
	AgentURL string
	// AgentNetboot boots the deploy agent from the network on nodes whose
	// BMC has no virtual media (IPMI): the provisioning network's DHCP
	// hands iPXE the API's netboot script (api.AgentNetbootPath at
	// AgentURL), which boots the agent on the node being booted.
	AgentNetboot bool
	// AgentCAFile is a PEM file of CA certificates the agent trusts,
	// besides the system's, for the controller's https URL and the image
	// servers (its initramfs has no trust store of its own).
	AgentCAFile string
	// AgentTimeout bounds the wait for a booted agent's report.
	AgentTimeout time.Duration
	// ConfigureTimeout bounds the wait for hardware settings to show
	// after the reset; SettingsSyncInterval is how often the settings of
	// nodes that declare some are read back (drift).
	ConfigureTimeout     time.Duration
	SettingsSyncInterval time.Duration
	// EnrollVerifyFast: an enroll whose Redfish BMC's requests take at
	// most this verifies the node itself (service.VerifyAtEnroll); 0
	// leaves every node to its verify job.
	EnrollVerifyFast time.Duration
	// RedfishConsole records the consoles of Redfish nodes through IPMI
	// Serial-over-LAN on their BMC's host (UDP 623, the same credentials).
	RedfishConsole bool
	// HealthInterval is how often every node's hardware health and BMC
	// event log are read.
	HealthInterval time.Duration
	// CleanErase is how cleanups erase disks with the deploy agent:
	// "metadata", "full" or "off" ("" is off too).
	CleanErase string
	// CleanEraseClass overrides CleanErase per resource class:
	// "class=mode[,class=mode...]", modes as CleanErase.
	CleanEraseClass string
	// InspectOnEnroll inspects every node whose BMC verify succeeded
	// (enroll → inspecting → available) before it can be scheduled;
	// needs AgentKernel.
	InspectOnEnroll bool
	// InspectLLDPWait is how long an inspection's agent listens for the
	// LLDP frames of the switches its NICs are cabled to; 0: it does not.
	InspectLLDPWait time.Duration

	Logger *slog.Logger
}

// Setting is one of the controller's settings: a flag of controller serve
// (which reads BAREMETAL_<FLAG> too), its default, help and check.
type Setting struct {
	// Name is the flag's, without dashes: bmc-timeout.
	Name string
	// Value points at the variable the flag sets: a *string, *bool, *int
	// or *time.Duration.
	Value any
	// Default is the variable's default, of its type; nil is its zero.
	Default any
	// Help is the flag's usage. Doc says it in the README's configuration
	// table (Markdown) where that says more; empty: Help.
	Help, Doc string
	// DefaultDoc is the README's default where the value does not say it
	// (an empty --public-url is derived from --listen).
	DefaultDoc string
	// Check refuses a value that could never work, naming flag (Validate).
	Check func(flag string, v any) error
}

// Settings is the table of the controller's settings, bound to c's
// fields, in the README's order.
func (c *Config) Settings() []Setting {
	return []Setting{
		{Name: "listen", Value: &c.Listen, Default: "127.0.0.1:8080",
			Help: "address of the REST API"},
		{Name: "data-dir", Value: &c.DataDir, Default: "./data",
			Help: "directory for the embedded database, secret key and generated admin token",
			Doc:  "embedded database, secret key, generated admin token; created 0700, its files 0600 (a warning if an existing one is open to others)"},
		{Name: "database-url", Value: &c.DatabaseURL,
			Help: "PostgreSQL URL (postgres://...); empty = embedded SQLite in --data-dir",
			Doc:  "`postgres://...` to use PostgreSQL; empty = embedded SQLite"},
		{Name: "bootstrap-token", Value: &c.BootstrapToken, DefaultDoc: "generated",
			Help: "admin token to create on first start, when no token exists; ignored later, so a revoked one stays revoked (default: generate one into <data-dir>/admin-token)",
			Doc:  "admin token created on first start (an empty token table) and ignored, with a log line, on later starts: a revoked bootstrap token stays revoked; when absent one is generated into `<data-dir>/admin-token` (0600)"},
		{Name: "tls-cert-file", Value: &c.TLSCertFile,
			Help: "serve the API over HTTPS with this PEM certificate (with --tls-key-file)",
			Doc:  "serve the API over HTTPS with this PEM certificate (with `--tls-key-file`); the provider's `ca_file` trusts a private CA"},
		{Name: "tls-key-file", Value: &c.TLSKeyFile,
			Help: "PEM private key of --tls-cert-file",
			Doc:  "PEM private key of `--tls-cert-file`"},
		{Name: "public-url", Value: &c.PublicURL, DefaultDoc: "from `--listen`",
			Help: "the API's base URL as BMCs and booted instances reach it (config drives, readiness callbacks); default: derived from --listen unless that is a wildcard address",
			Doc:  "the API's base URL as BMCs and booted instances reach it (config drives, readiness callbacks); needed when `--listen` is a wildcard such as `0.0.0.0:8080`"},
		{Name: "secret-key-file", Value: &c.SecretKeyFile, DefaultDoc: "`<data-dir>/secret.key`",
			Help: "AES-256 key for BMC passwords at rest (default <data-dir>/secret.key, generated on first start)",
			Doc:  "AES-256-GCM key for BMC passwords at rest; generated on first start"},
		{Name: "power-sync-interval", Value: &c.PowerSyncInterval, Default: 60 * time.Second, Check: notNegative,
			Help: "how often every node's power state is read",
			Doc:  "how often every node's power state is read; `0` turns the periodic sync off (faults are then only noticed by jobs)"},
		{Name: "power-sync-workers", Value: &c.PowerSyncWorkers, Default: 64, Check: positive,
			Help: "concurrent BMC reads during power sync"},
		{Name: "bmc-timeout", Value: &c.BMCTimeout, Default: 10 * time.Second, Check: positive,
			Help: "timeout of one BMC call"},
		{Name: "power-change-timeout", Value: &c.PowerChangeTimeout, Default: 60 * time.Second, Check: positive,
			Help: "how long to wait for a power change to be observed before recording power_mismatch",
			Doc:  "wait for a power change to be observed before `power_mismatch`"},
		{Name: "redfish-max-connections", Value: &c.RedfishMaxConnections, Default: redfish.DefaultMaxConcurrentRequests, Check: positive,
			Help: "concurrent requests (and connections) to one Redfish BMC: BMCs take few (iDRAC); raise it for a service in front of many systems (with --sim-systems it defaults to 64: the simulated fleet is one endpoint)",
			Doc:  "concurrent requests (and connections) to one Redfish BMC: BMC web servers take few (iDRAC); raise it for one service in front of many systems. With `--sim-systems` it defaults to 64, the simulated fleet being one endpoint"},
		{Name: "media-settle", Value: &c.MediaSettle, Default: 15 * time.Second, Check: positive,
			Help: "how long a BMC may take to show a virtual media insert or eject it accepted, read back until it does, before the request is sent once more (then fails naming the slot)",
			Doc:  "how long a BMC may take to show a virtual media insert or eject it accepted: the slot is read back that long, the request sent once more, then the work fails naming the slot and what it shows"},
		{Name: "fault-threshold", Value: &c.FaultThreshold, Default: 3, Check: positive,
			Help: "consecutive BMC failures before a node is marked faulted",
			Doc:  "consecutive BMC failures before a fault is recorded"},
		{Name: "max-backoff", Value: &c.MaxBackoff, Default: 5 * time.Minute, Check: positive,
			Help: "cap of the retry backoff of faulted nodes and failing jobs"},
		{Name: "workers", Value: &c.Workers, Default: 100, Check: positive,
			Help: "concurrent jobs (deploy, cleanup, ...) per controller",
			Doc:  "concurrent jobs per controller (jobs mostly wait for BMCs; this bounds how many nodes are verified, deployed or cleaned at once)"},
		{Name: "image-check", Value: &c.ImageCheck, Default: true,
			Help: "before a deploy gives an image URL to the BMC, check it from the controller (HEAD and a range GET): an image that is not there fails the instance with the reason; disable only if the controller cannot reach the image servers the BMCs use",
			Doc: "before a deploy hands an image URL to a BMC, check it from the controller (HEAD, then a range GET): DNS failure, refused, 404/410 or a wrong length fail the *instance* (the node stays healthy); a 5xx or timeout is retried 5 times first. " +
				"The instance's `last_error` says only that the image is unreachable from the controller, with the HTTP status when there was one (`image https://i/x.img: unreachable from the controller (HTTP 404 Not Found)`); why (refused, timeout, DNS, the policy below) is in the node's events, for admins. " +
				"The check never fetches from cloud metadata services (169.254.169.254, fd00:ec2::254, 100.100.100.200, ... and names such as `metadata.google.internal`), link-local or loopback addresses, or the controller's own API address: each request, through a proxy or not and on every redirect, is judged by the addresses its host resolves to before it is sent, and a direct connection again by the address dialed"},
		{Name: "image-url-allow", Value: &c.ImageURLAllow, Check: cidrs,
			Help: "CIDR ranges, comma-separated, that the image check may fetch from although it refuses them by default: loopback and link-local addresses (e.g. 127.0.0.1/32 for an image server on the controller's host, as make run's demo); a cloud metadata address only by its exact /32 or /128; never the controller's own API address",
			Doc:  "CIDR ranges, comma-separated, the image check may fetch from although it refuses them by default (loopback, link-local); a metadata address only by its exact `/32` or `/128`; never the API's own address. `make run` passes `127.0.0.0/8,::1` for the simulator's demo image"},
		{Name: "image-url-deny", Value: &c.ImageURLDeny, Check: cidrs,
			Help: "CIDR ranges, comma-separated, that the image check never fetches from (nor follows a redirect to), besides what it refuses by default: cloud metadata services, link-local and loopback addresses, the controller's own API address",
			Doc:  "CIDR ranges, comma-separated, the image check never fetches from nor follows a redirect to, whatever `--image-url-allow` says"},
		{Name: "agent-kernel", Value: &c.AgentKernel,
			Help: "serve the deploy agent (inspection): a Linux kernel, e.g. Debian's /boot/vmlinuz-<version> from linux-image-amd64; this binary (built with CGO_ENABLED=0) becomes the agent's /init; needs --public-url",
			Doc:  "serve the deploy agent: a Linux kernel such as Debian's `/boot/vmlinuz-<ver>`; this (static) binary becomes its `/init`. Enables inspection, `deploy_method = \"image\"` (then the default) and erasing cleanups; needs `--public-url`"},
		{Name: "agent-modules-dir", Value: &c.AgentModulesDir, DefaultDoc: "`/lib/modules/<ver>`",
			Help: "the agent kernel's modules (default /lib/modules/<its version>)",
			Doc:  "the agent kernel's modules"},
		{Name: "agent-url", Value: &c.AgentURL, DefaultDoc: "`--public-url`",
			Help: "the API's base URL as booted nodes (the deploy agent) reach it, when that differs from --public-url (a provisioning network apart from the BMCs')",
			Doc:  "the API's base URL as booted nodes (the agent) reach it, when the provisioning network is not the BMCs'"},
		{Name: "agent-timeout", Value: &c.AgentTimeout, Default: 15 * time.Minute,
			Help: "how long a booted deploy agent may take to report before the work it was booted for gives up",
			Doc:  "how long a booted agent may stay silent before the work it was booted for retries (deploys, cleanups) or gives up (inspection); deploys and cleanups retry sooner when the BMC reports the machine off, or when an agent that has reported falls silent for 5 minutes (at most this timeout)"},
		{Name: "configure-timeout", Value: &c.ConfigureTimeout, Default: 20 * time.Minute, Check: positive,
			Help: "how long a node's BMC may take, after the reset, to show the hardware settings it was given (BIOS attributes, Secure Boot) before the settings are reported not applied",
			Doc:  "how long a node's BMC may take, after the reset, to show the hardware settings it was given (BIOS, Secure Boot) before they are reported not applied in `last_error`"},
		{Name: "settings-sync-interval", Value: &c.SettingsSyncInterval, Default: 10 * time.Minute, Check: notNegative,
			Help: "how often the hardware settings of nodes that declare some are read back from their BMCs, so a change made out of band shows as drift; 0 turns it off",
			Doc:  "how often the hardware settings of nodes that declare some are read back from their BMCs, so an out-of-band change shows as drift in `terraform plan`; `0` turns it off (they are still read after every apply)"},
		{Name: "health-interval", Value: &c.HealthInterval, Default: 5 * time.Minute, Check: notNegative,
			Help: "how often every node's hardware health (system and chassis health, temperatures, fans, power supplies) and its BMC's new event log entries are read; critical health is the hardware_critical fault; 0 turns it off",
			Doc:  "how often every node's hardware health (health rollups, temperatures, fans, power supplies) and its BMC's new event log entries (as node events) are read, apart from the power sync; critical health is the `hardware_critical` fault, which keeps the node out of scheduling and clears itself; `0` turns it off"},
		{Name: "redfish-console", Value: &c.RedfishConsole,
			Help: "record the serial consoles of Redfish nodes too, through IPMI Serial-over-LAN on their BMC's host (UDP 623, the node's BMC credentials; IPMI over LAN must be enabled on the BMC: iDRAC, iLO, XCC, Supermicro, CIMC and OpenBMC offer it); IPMI nodes' consoles are always recorded",
			Doc:  "record Redfish nodes' serial consoles too, through IPMI Serial-over-LAN on their BMC's host (UDP 623, the node's credentials; IPMI over LAN enabled on the BMC). IPMI nodes' consoles are always recorded while they boot (see [Serial console](#serial-console))"},
		{Name: "enroll-verify-fast", Value: &c.EnrollVerifyFast, Default: 10 * time.Millisecond, Check: notNegative,
			Help: "an enroll whose Redfish BMC answers its requests within this (their recent average, the enroll's login and system lookup included) also reads the node's power and inventory and returns it available, with no verify job; a slower BMC's node is verified by its job while the enroll returns (a script enrolling with few clients is not held by slow BMCs); 0 leaves every node to its job",
			Doc:  "an enroll whose Redfish BMC answers its requests within this (their recent average, the enroll's login and system lookup among them) reads the node's power and inventory too (within 1 s) and returns it `available`, with no verify job: a BMC answering in milliseconds makes enrolls CPU-bound, and this saves a third of their CPU and the client's poll. A slower BMC's node comes back in `enroll` and its verify job reads it while the enroll returns, so a script enrolling with few clients is not held up by slow BMCs. Raise it to have node creates return verified whatever the BMCs' speed; `0` leaves every node to its job"},
		{Name: "inspect-on-enroll", Value: &c.InspectOnEnroll,
			Help: "with --agent-kernel, inspect every node once its BMC is verified (enroll → inspecting → available), so its inventory and properties are known before it is scheduled; IPMI nodes only with --agent-netboot (they have no virtual media to boot the agent from)",
			Doc:  "with `--agent-kernel`, inspect every node once its BMC is verified: `enroll` → `inspecting` → `available`, so inventory and properties are known before it is scheduled (IPMI nodes only with `--agent-netboot`: they have no virtual media for the agent)"},
		{Name: "inspect-lldp-wait", Value: &c.InspectLLDPWait, Default: 35 * time.Second, Check: notNegative,
			Help: "how long the agent booted for an inspection listens for LLDP frames on every NIC with a link before it reports, each NIC until its first frame: the switch and port it is cabled to show in the node's ports (switches send every 30 s by default); 0 turns LLDP off",
			Doc:  "how long an inspection's agent listens for LLDP on every NIC with a link, each NIC until its first frame (switches send one every 30 s by default): the switch and port each NIC is cabled to show in the node's `ports`. NICs without a link are skipped; `0` turns LLDP off"},
		{Name: "agent-netboot", Value: &c.AgentNetboot,
			Help: "with --agent-kernel, boot the deploy agent from the network on nodes whose BMC has no virtual media (IPMI): the provisioning network's DHCP must hand iPXE the boot file <agent-url>/v1/agent/netboot (see the README)",
			Doc:  "with `--agent-kernel`, boot the deploy agent from the network on nodes whose BMC has no virtual media (IPMI): the provisioning network's DHCP hands iPXE the boot file `<agent-url>/v1/agent/netboot` (see [Network boot of the agent](#network-boot-of-the-agent))"},
		{Name: "agent-uefi", Value: &c.AgentUEFI, Default: "auto",
			Help: "with --agent-kernel, how the agent ISO boots on UEFI firmware (BIOS always): secure-boot (Debian's signed shim and GRUB: shim-signed, grub-efi-amd64-signed; boots with Secure Boot on or off), grub (grub-efi-amd64-bin; Secure Boot off only), on (either), off, or auto (the first installed of secure-boot and grub, else BIOS only, with a warning)",
			Doc:  "with `--agent-kernel`, how the agent ISO boots on UEFI firmware besides BIOS: `secure-boot` (Debian's signed shim and GRUB), `grub` (unsigned), `on` (either), `off`, or `auto` (the first installed, else BIOS only with a warning); see [The deploy agent image](#the-deploy-agent-image)"},
		{Name: "agent-ca-bundle", Value: &c.AgentCABundle, Default: "auto",
			Help: "with --agent-kernel, the deploy agent's trust store for https image, config drive and controller URLs (a PEM file of CA certificates): auto (the host's " + image.DefaultCABundle + ", Debian's ca-certificates), none, or a file",
			Doc:  "with `--agent-kernel`, the agent's trust store for https: `auto` (the host's `" + image.DefaultCABundle + "`), `none`, or a PEM file"},
		{Name: "agent-ca-file", Value: &c.AgentCAFile,
			Help: "with --agent-kernel, a PEM file of CA certificates the deploy agent trusts besides the system's: for an https --agent-url or image servers behind a private CA",
			Doc:  "with `--agent-kernel`, PEM CA certificates the deploy agent trusts besides its trust store: for an https `--agent-url` or image servers behind a private CA; each boot's config carries them"},
		{Name: "clean-erase", Value: &c.CleanErase, Default: "metadata", Check: eraseMode,
			Help: "with --agent-kernel, how cleaning erases a node's disks between tenants: metadata (partition tables and filesystem signatures at both ends of every disk), full (every byte) or off",
			Doc:  "with the agent, how cleaning erases disks between tenants: `metadata` (partition tables and signatures at both ends of every disk and partition), `full` (every byte) or `off`"},
		{Name: "clean-erase-class", Value: &c.CleanEraseClass, Check: eraseClasses,
			Help: "per resource class, how cleaning erases disks, overriding --clean-erase: class=mode pairs separated by commas, e.g. storage=full,scratch=off",
			Doc:  "per resource class, overrides `--clean-erase`: `class=mode` pairs separated by commas, e.g. `storage=full,scratch=off`"},
	}
}

// AddTo defines the setting's flag in fs, which sets the variable to the
// default at once.
func (s Setting) AddTo(fs *flag.FlagSet) {
	switch p := s.Value.(type) {
	case *string:
		fs.StringVar(p, s.Name, defaultOf[string](s), s.Help)
	case *bool:
		fs.BoolVar(p, s.Name, defaultOf[bool](s), s.Help)
	case *int:
		fs.IntVar(p, s.Name, defaultOf[int](s), s.Help)
	case *time.Duration:
		fs.DurationVar(p, s.Name, defaultOf[time.Duration](s), s.Help)
	default:
		panic(fmt.Sprintf("setting %s: a %T is not a flag's variable", s.Name, s.Value))
	}
}

// defaultOf is s's default as its variable's type T.
func defaultOf[T any](s Setting) T {
	if s.Default == nil {
		var zero T
		return zero
	}
	d, ok := s.Default.(T)
	if !ok {
		panic(fmt.Sprintf("setting %s: default %v is a %T, not its variable's %T", s.Name, s.Default, s.Default, d))
	}
	return d
}

// Defaults is a Config of the settings' defaults.
func Defaults() Config {
	var c Config
	fs := flag.NewFlagSet("defaults", flag.ContinueOnError)
	for _, s := range c.Settings() {
		s.AddTo(fs) // a flag starts at its default
	}
	return c
}

// Validate refuses settings that could never work, all at once, each
// error naming its flag. It reads nothing: the files named, what is
// installed and the address bound are Start's to look at.
func (c Config) Validate() error {
	var errs []error
	for _, s := range c.Settings() {
		if s.Check == nil {
			continue
		}
		if err := s.Check("--"+s.Name, reflect.ValueOf(s.Value).Elem().Interface()); err != nil {
			errs = append(errs, err)
		}
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-key-file go together"))
	}
	if c.InspectOnEnroll && c.AgentKernel == "" {
		errs = append(errs, errors.New("--inspect-on-enroll needs --agent-kernel: inspection boots the deploy agent"))
	}
	if c.AgentNetboot && c.AgentKernel == "" {
		errs = append(errs, errors.New("--agent-netboot needs --agent-kernel: it boots the deploy agent from the network"))
	}
	return errors.Join(errs...)
}

// positive refuses a duration that is not above zero, or a count below
// one: a zero timeout fails every BMC call at once, zero workers do
// nothing.
func positive(flag string, v any) error {
	switch v := v.(type) {
	case time.Duration:
		if v <= 0 {
			return fmt.Errorf("%s must be positive, got %s", flag, v)
		}
	case int:
		if v < 1 {
			return fmt.Errorf("%s must be at least 1, got %d", flag, v)
		}
	}
	return nil
}

// notNegative refuses a negative duration; zero turns the setting off.
func notNegative(flag string, v any) error {
	if d := v.(time.Duration); d < 0 {
		return fmt.Errorf("%s must not be negative, got %s", flag, d)
	}
	return nil
}

// eraseMode refuses what --clean-erase does not know ("" is a Config's
// zero value: no erase).
func eraseMode(flag string, v any) error {
	switch v {
	case "", "metadata", "full", "off":
		return nil
	}
	return fmt.Errorf("%s %q: want metadata, full or off", flag, v)
}

// cidrs refuses a list of CIDR ranges netguard cannot read.
func cidrs(flag string, v any) error {
	_, err := netguard.ParsePrefixes(flag, v.(string))
	return err
}

// eraseClasses refuses a --clean-erase-class ParseCleanEraseClass cannot
// read (its errors name the flag).
func eraseClasses(_ string, v any) error {
	_, err := ParseCleanEraseClass(v.(string))
	return err
}

// ParseCleanEraseClass reads --clean-erase-class: comma-separated
// class=mode pairs, each class once, modes as --clean-erase. The map's
// values are the jobs' (off is "").
func ParseCleanEraseClass(v string) (map[string]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		class, mode, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return nil, fmt.Errorf("--clean-erase-class %q: want class=mode pairs separated by commas, e.g. storage=full,scratch=off", pair)
		}
		if err := baremetal.ValidateResourceClass("--clean-erase-class", class); err != nil {
			return nil, err
		}
		switch mode {
		case "metadata", "full", "off":
		default:
			return nil, fmt.Errorf("--clean-erase-class %s=%q: want metadata, full or off", class, mode)
		}
		if _, dup := out[class]; dup {
			return nil, fmt.Errorf("--clean-erase-class: resource class %s is given twice", class)
		}
		out[class] = cleanErase(mode)
	}
	return out, nil
}

// cleanErase is the jobs' CleanErase for the --clean-erase value.
func cleanErase(v string) string {
	if v == "off" {
		return ""
	}
	return v
}
