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
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/ipmi"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/redfish"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/console"
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

// App is a running controller.
type App struct {
	cfg   Config
	log   *slog.Logger
	Store store.Store
	Jobs  *jobs.Runner
	// Console records nodes' serial consoles while they boot, and serves
	// them to interactive viewers.
	Console  *console.Recorder
	Service  *service.Service
	http     *http.Server
	api      *httpapi.Server
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
	// Bad settings and certificates are found before anything is opened.
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var tlsConfig *tls.Config
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
	checker := imageChecker(cfg, a.listener.Addr())
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
	a.Console = console.New(st, drivers, console.Options{Logger: log, Timeout: cfg.BMCTimeout, RedfishSOL: cfg.RedfishConsole})

	byClass, _ := ParseCleanEraseClass(cfg.CleanEraseClass) // Validate read it
	agentCA, err := readAgentCA(cfg.AgentCAFile)
	if err != nil {
		return fail(err)
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
		AgentTimeout: cfg.AgentTimeout, AgentURL: cfg.AgentURL,
		ConfigureTimeout: cfg.ConfigureTimeout, SettingsSyncInterval: cfg.SettingsSyncInterval, HealthInterval: cfg.HealthInterval, CleanErase: cleanErase(cfg.CleanErase),
		CleanEraseByClass: byClass,
		AgentNetboot:      images != nil && cfg.AgentNetboot,
		InspectOnEnroll:   cfg.InspectOnEnroll,
		Console:           a.Console,
	})
	if err != nil {
		return fail(fmt.Errorf("jobs: %w", err))
	}
	a.Service = service.New(st, a.Jobs, log)
	a.Service.ResolveSystemsAtEnroll(drivers, min(cfg.BMCTimeout, enrollResolveTimeout))
	if cfg.EnrollVerifyFast > 0 {
		a.Service.VerifyAtEnroll(a.Jobs, cfg.EnrollVerifyFast)
	}
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
	hopts := httpapi.Options{Service: a.Service, Jobs: a.Jobs, Logger: log, Registry: reg, PublicURL: publicURL,
		Consoles: httpapi.RecorderConsoles(a.Console)}
	if images != nil {
		hopts.AgentImages, hopts.AgentURL, hopts.AgentCACerts = images, cfg.AgentURL, agentCA
		hopts.AgentLLDPWait = cfg.InspectLLDPWait
	}
	handler := httpapi.New(hopts)
	a.api = handler
	// The timeouts are for requests: a console's WebSocket clears them
	// for its connection (httpapi.nodeConsole).
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
func imageChecker(cfg Config, api net.Addr) jobs.ImageChecker {
	if !cfg.ImageCheck {
		return nil
	}
	// Validate read the lists.
	allow, _ := netguard.ParsePrefixes("--image-url-allow", cfg.ImageURLAllow)
	deny, _ := netguard.ParsePrefixes("--image-url-deny", cfg.ImageURLDeny)
	opts := imagecheck.Options{Timeout: cfg.BMCTimeout, Allow: allow, Deny: deny}
	if ap, err := netip.ParseAddrPort(api.String()); err == nil {
		opts.Own = append(opts.Own, ap)
	}
	return imagecheck.New(opts)
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
	if a.api != nil {
		// Console WebSockets are hijacked connections, which Shutdown
		// leaves alone: close them with a reason, their end recorded.
		a.api.CloseConsoles(ctx)
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
	if a.Console != nil {
		a.Console.Close() // saves the recordings' last lines
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
