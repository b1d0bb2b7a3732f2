// Package app assembles a controller from its parts: the store (embedded
// SQLite or PostgreSQL), the BMC drivers, River jobs and power sync, the
// service and the HTTP API. The controller binary and the in-process test
// environment both start controllers through it, so tests run the same
// wiring users do.
package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agentboot"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/ipmi"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/redfish"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/httpapi"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/imagecheck"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/jobs"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/netguard"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/secret"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/postgres"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlite"
)

// enrollResolveTimeout bounds how long POST /v1/nodes waits for a Redfish
// BMC to say which system a new node is (service.ResolveSystemsAtEnroll):
// long enough for a BMC's login, short enough that a dead BMC never holds
// the API; the verify job asks again.
const enrollResolveTimeout = 5 * time.Second

// Config is everything a controller needs; the binary fills it from flags
// and environment variables.
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
	PowerPollInterval  time.Duration
	FaultThreshold     int
	MaxBackoff         time.Duration
	RetryBase          time.Duration
	Workers            int
	// RedfishMaxConnections caps the concurrent requests (and connections)
	// to one Redfish BMC (default 2: BMCs take few; a service in front of
	// many systems, like the simulated fleet, may take more).
	RedfishMaxConnections int
	// MediaSettle is how long a BMC may take to show a virtual media
	// insert or eject it accepted before the request is sent again (and
	// then fails): default 15s.
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
	// AgentModulesDir (default /lib/modules/<its version>), and this
	// binary (AgentBinary when set; it must be static, CGO_ENABLED=0) as
	// the agent's /init. Inspection needs it.
	AgentKernel     string
	AgentModulesDir string
	AgentBinary     string
	// AgentUEFI is how the served agent ISO boots on UEFI firmware:
	// auto (default: Debian's signed shim and GRUB where installed, so
	// Secure Boot nodes boot it too, else unsigned GRUB, else BIOS only),
	// on, secure-boot, grub or off (image.ResolveUEFI).
	AgentUEFI string
	// AgentCABundle is the deploy agent's trust store for https (a PEM
	// file): auto (default: the host's, Debian's ca-certificates), none,
	// or a file (image.ResolveCABundle). AgentCAFile adds to it per boot.
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
	// CleanErase is how cleanups erase disks with the deploy agent:
	// "metadata" (default), "full" or "off".
	CleanErase string
	// CleanEraseClass overrides CleanErase per resource class:
	// "class=mode[,class=mode...]", modes as CleanErase.
	CleanEraseClass string
	// InspectOnEnroll inspects every node whose BMC verify succeeded
	// (enroll → inspecting → available) before it can be scheduled;
	// needs AgentKernel.
	InspectOnEnroll bool

	Logger *slog.Logger
}

// Defaults returns the documented defaults.
func Defaults() Config {
	return Config{
		Listen: "127.0.0.1:8080", DataDir: "./data",
		PowerSyncInterval: 60 * time.Second, PowerSyncWorkers: 64, BMCTimeout: 10 * time.Second,
		PowerChangeTimeout: 60 * time.Second, PowerPollInterval: 2 * time.Second,
		FaultThreshold: 3, MaxBackoff: 5 * time.Minute, RetryBase: 2 * time.Second, Workers: 100,
		RedfishMaxConnections: redfish.DefaultMaxConcurrentRequests, MediaSettle: 15 * time.Second,
		ImageCheck: true, CleanErase: "metadata",
	}
}

// readAgentCA reads --agent-ca-file ("": none): at least one PEM
// certificate, nothing else.
func readAgentCA(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--agent-ca-file: %w", err)
	}
	rest, n := b, 0
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return "", fmt.Errorf("--agent-ca-file %s: holds a %s block; want only CERTIFICATE blocks (never a private key)", path, blk.Type)
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return "", fmt.Errorf("--agent-ca-file %s: certificate %d: %w", path, n+1, err)
		}
		n++
	}
	if n == 0 {
		return "", fmt.Errorf("--agent-ca-file %s: no PEM certificate in it", path)
	}
	return string(b), nil
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

// App is a running controller.
type App struct {
	cfg      Config
	log      *slog.Logger
	Store    store.Store
	Jobs     *jobs.Runner
	Service  *service.Service
	http     *http.Server
	listener net.Listener
	redfish  *redfish.Opener
	ipmi     *ipmi.Opener
	// TokenFile is where a generated admin token was written ("" if none).
	TokenFile string
	served    chan error
	scheme    string
}

// OpenStore opens (and migrates) the configured store.
func OpenStore(ctx context.Context, cfg Config, log *slog.Logger) (store.Store, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	// A fresh data dir is 0700; one the operator made is used as it is,
	// its files still created 0600, but a directory others can read says
	// which files exist and lets them in should one ever be looser.
	if st, err := os.Stat(cfg.DataDir); err == nil && st.Mode().Perm()&0o077 != 0 {
		log.Warn("the data dir is accessible to other users; it holds the secret key, the admin token and the embedded database: chmod 700 it",
			"dir", cfg.DataDir, "mode", fmt.Sprintf("%04o", st.Mode().Perm()))
	}
	keyFile := cfg.SecretKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(cfg.DataDir, "secret.key")
	}
	key, err := secret.LoadOrCreateKey(keyFile)
	if err != nil {
		return nil, fmt.Errorf("secret key %s: %w", keyFile, err)
	}
	box, err := secret.New(key)
	if err != nil {
		return nil, fmt.Errorf("secret key %s: %w", keyFile, err)
	}
	switch u := cfg.DatabaseURL; {
	case u == "":
		path := filepath.Join(cfg.DataDir, "baremetal.db")
		log.Info("using embedded SQLite store", "path", path)
		return sqlite.Open(ctx, path, box)
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		log.Info("using PostgreSQL store", "database", redactDSN(u))
		return postgres.Open(ctx, u, box)
	default:
		return nil, fmt.Errorf("--database-url must be a postgres:// URL (or empty for embedded SQLite)")
	}
}

// redactDSN keeps only the host and database of a database URL for logs:
// passwords hide in userinfo and in query parameters (password=,
// sslpassword=, ...).
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparseable database URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// Start opens the store, bootstraps the admin token, starts jobs and
// serves the API. It returns once the listener is bound.
func Start(ctx context.Context, cfg Config) (*App, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	// Certificate problems are found before anything is opened.
	var tlsConfig *tls.Config
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return nil, errors.New("--tls-cert-file and --tls-key-file go together")
	}
	if cfg.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("load TLS certificate: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	a := &App{cfg: cfg, log: log, served: make(chan error, 1), scheme: "http"}
	if tlsConfig != nil {
		a.scheme = "https"
	}
	// Bound first: the public URL may depend on the port picked.
	var err error
	a.listener, err = net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	fail := func(err error) (*App, error) {
		_ = a.listener.Close()
		_ = a.closeAll(context.Background())
		return nil, err
	}
	publicURL, err := PublicURL(cfg.PublicURL, a.scheme, a.listener.Addr())
	if err != nil {
		return fail(err)
	}
	if publicURL == "" {
		log.Warn("no --public-url and the API listens on a wildcard address: instances with user_data or deploy_timeout cannot get their config drive", "listen", cfg.Listen)
	}
	checker, err := imageChecker(cfg, a.listener.Addr())
	if err != nil {
		return fail(err)
	}
	st, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return fail(err)
	}
	a.Store = st
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	a.redfish = redfish.NewOpener(redfish.Options{Timeout: cfg.BMCTimeout, Logger: log,
		MaxConcurrentRequests: cfg.RedfishMaxConnections, MediaSettle: cfg.MediaSettle, OwnsMedia: api.IsControllerMedia})
	a.ipmi = ipmi.NewOpener(ipmi.Options{Timeout: cfg.BMCTimeout, Logger: log})
	drivers := bmc.Drivers{"redfish": a.redfish, "ipmi": a.ipmi}

	if cfg.RetryBase > cfg.MaxBackoff {
		// A small --max-backoff (tests, impatient operators) caps the
		// first retry too.
		cfg.RetryBase = cfg.MaxBackoff
	}
	switch cfg.CleanErase {
	case "", "metadata", "full", "off":
	default:
		return fail(fmt.Errorf("--clean-erase %q: want metadata, full or off", cfg.CleanErase))
	}
	byClass, err := ParseCleanEraseClass(cfg.CleanEraseClass)
	if err != nil {
		return fail(err)
	}
	if cfg.InspectOnEnroll && cfg.AgentKernel == "" {
		return fail(errors.New("--inspect-on-enroll needs --agent-kernel: inspection boots the deploy agent"))
	}
	agentCA, err := readAgentCA(cfg.AgentCAFile)
	if err != nil {
		return fail(err)
	}
	if cfg.AgentNetboot && cfg.AgentKernel == "" {
		return fail(errors.New("--agent-netboot needs --agent-kernel: it boots the deploy agent from the network"))
	}
	var images *agentboot.Builder
	agentBIOSOnly := false
	if cfg.AgentKernel != "" {
		if publicURL == "" {
			return fail(errors.New("--agent-kernel needs a --public-url: the deploy agent calls the controller there"))
		}
		choice := cfg.AgentUEFI
		if choice == "" {
			choice = "auto"
		}
		uefi, err := image.ResolveUEFI(choice, "")
		if err != nil {
			return fail(fmt.Errorf("--agent-uefi: %w", err))
		}
		uefiName := string(uefi)
		if uefi == image.UEFIOff {
			uefiName = "off"
			agentBIOSOnly = true
		}
		if uefi == image.UEFISecureBoot {
			if w := image.SecureBootKernelWarning(cfg.AgentKernel); w != "" {
				log.Warn("the deploy agent's ISO boots with Secure Boot, but: " + w)
			}
		}
		if uefi == image.UEFIOff && choice != "off" {
			log.Warn("the deploy agent's ISO boots on BIOS only: nodes whose firmware boots UEFI only cannot start it",
				"fix", "apt-get install --no-install-recommends shim-signed grub-efi-amd64-signed (Secure Boot too) or grub-efi-amd64-bin")
		}
		bundle, err := image.ResolveCABundle(cfg.AgentCABundle)
		if err != nil {
			return fail(fmt.Errorf("--agent-ca-bundle: %w", err))
		}
		if bundle == "" && cfg.AgentCABundle != "none" {
			log.Warn("the deploy agent has no trust store: it reaches https image URLs only behind a CA given with --agent-ca-file",
				"fix", "apt-get install ca-certificates, or --agent-ca-bundle FILE")
		}
		start := time.Now()
		if images, err = agentboot.New(agentboot.Options{Kernel: cfg.AgentKernel, ModulesDir: cfg.AgentModulesDir,
			Agent: cfg.AgentBinary, Dir: cfg.DataDir, UEFI: uefi, CABundle: bundle}); err != nil {
			return fail(err)
		}
		log.Info("serving the deploy agent", "kernel", cfg.AgentKernel, "uefi", uefiName, "ca_bundle", bundle, "built_in", time.Since(start).Round(time.Millisecond))
	}
	a.Jobs, err = jobs.New(jobs.Config{
		Store: st, BMC: drivers, Logger: log, Workers: cfg.Workers,
		BMCTimeout: cfg.BMCTimeout, PowerChangeTimeout: cfg.PowerChangeTimeout, PowerPollInterval: cfg.PowerPollInterval,
		PowerSyncInterval: cfg.PowerSyncInterval, PowerSyncWorkers: cfg.PowerSyncWorkers,
		FaultThreshold: cfg.FaultThreshold, MaxBackoff: cfg.MaxBackoff, RetryBase: cfg.RetryBase, Metrics: reg,
		PublicURL: publicURL, ImageCheck: checker,
		MediaSettle: cfg.MediaSettle,
		AgentBoot:   images != nil, AgentBIOSOnly: images != nil && agentBIOSOnly,
		AgentTimeout: cfg.AgentTimeout, AgentURL: cfg.AgentURL, CleanErase: cleanErase(cfg.CleanErase),
		CleanEraseByClass: byClass,
		AgentNetboot:      images != nil && cfg.AgentNetboot,
		InspectOnEnroll:   cfg.InspectOnEnroll,
	})
	if err != nil {
		return fail(fmt.Errorf("jobs: %w", err))
	}
	a.Service = service.New(st, a.Jobs, log)
	a.Service.ResolveSystemsAtEnroll(drivers, min(cfg.BMCTimeout, enrollResolveTimeout))
	if images != nil {
		a.Service.EnableAgent()
	}
	a.TokenFile, err = a.Service.Bootstrap(ctx, cfg.BootstrapToken, filepath.Join(cfg.DataDir, "admin-token"))
	if err != nil {
		return fail(fmt.Errorf("bootstrap admin token: %w", err))
	}
	if a.TokenFile != "" {
		log.Info("generated an admin token on first start", "file", a.TokenFile)
	}
	if err := a.Jobs.Start(ctx); err != nil {
		return fail(fmt.Errorf("start jobs: %w", err))
	}
	hopts := httpapi.Options{Service: a.Service, Jobs: a.Jobs, Logger: log, Registry: reg, PublicURL: publicURL}
	if images != nil {
		hopts.AgentImages, hopts.AgentURL, hopts.AgentCACerts = images, cfg.AgentURL, agentCA
	}
	handler := httpapi.New(hopts)
	a.http = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 60 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if tlsConfig != nil {
		a.http.TLSConfig = tlsConfig
		a.listener = tls.NewListener(a.listener, tlsConfig)
	}
	go func() {
		err := a.http.Serve(a.listener)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		a.served <- err
	}()
	log.Info("controller API listening", "url", a.URL(), "store", st.Dialect())
	return a, nil
}

// imageChecker is the deploys' image URL check, nil when it is off (a
// typed nil would not compare equal to nil inside jobs). api is the API's
// bound address: the check never fetches from it.
func imageChecker(cfg Config, api net.Addr) (jobs.ImageChecker, error) {
	allow, err := netguard.ParsePrefixes("--image-url-allow", cfg.ImageURLAllow)
	if err != nil {
		return nil, err
	}
	deny, err := netguard.ParsePrefixes("--image-url-deny", cfg.ImageURLDeny)
	if err != nil {
		return nil, err
	}
	if !cfg.ImageCheck {
		return nil, nil
	}
	opts := imagecheck.Options{Timeout: cfg.BMCTimeout, Allow: allow, Deny: deny}
	if ap, err := netip.ParseAddrPort(api.String()); err == nil {
		opts.Own = append(opts.Own, ap)
	}
	return imagecheck.New(opts), nil
}

// PublicURL checks an operator's --public-url, or derives one from the
// bound address when that names a host a BMC could reach (not 0.0.0.0 or
// [::]: which of the machine's addresses the BMC network sees is not ours
// to guess). It returns "" when there is none.
func PublicURL(configured, scheme string, bound net.Addr) (string, error) {
	if configured != "" {
		u, err := url.Parse(configured)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return "", fmt.Errorf("--public-url %q must be http(s)://host[:port] with no path, query or credentials", configured)
		}
		return u.Scheme + "://" + u.Host, nil
	}
	host, _, err := net.SplitHostPort(bound.String())
	if err != nil {
		return "", fmt.Errorf("bound address %s: %w", bound, err)
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		return "", nil
	}
	return scheme + "://" + bound.String(), nil
}

// URL is the API's base URL.
func (a *App) URL() string { return a.scheme + "://" + a.listener.Addr().String() }

// Wait blocks until the HTTP server fails or ctx ends.
func (a *App) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-a.served:
		return err
	}
}

// Stop shuts down gracefully: stop taking requests, let running jobs
// finish (bounded by ctx), close the store.
func (a *App) Stop(ctx context.Context) error {
	var errs []error
	if a.http != nil {
		if err := a.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
	}
	errs = append(errs, a.closeAll(ctx))
	return errors.Join(errs...)
}

func (a *App) closeAll(ctx context.Context) error {
	var errs []error
	if a.Jobs != nil {
		if err := a.Jobs.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop jobs: %w", err))
		}
	}
	if a.redfish != nil {
		a.redfish.Close()
	}
	if a.ipmi != nil {
		a.ipmi.Close()
	}
	if a.Store != nil {
		if err := a.Store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	return errors.Join(errs...)
}
