// Package testenv starts a real controller in-process for tests: the
// embedded SQLite store (or PostgreSQL) in a temp dir, the HTTP API on a
// loopback port, River jobs, and a simulated Redfish BMC fleet. Timings
// are shortened so fault and recovery paths run in seconds.
package testenv

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/app"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// Options tune the environment; zero values get test-friendly defaults.
type Options struct {
	Systems           int           // simulated systems (default 4)
	PowerSyncInterval time.Duration // default 1s
	BMCTimeout        time.Duration // default 1s
	// DatabaseURL selects PostgreSQL; empty = embedded SQLite.
	DatabaseURL string
	// SimOptions override the fleet's options (Systems is taken from above).
	SimOptions sim.Options
	// ImageCheck turns on the controller's image URL check (off by
	// default: tests use made-up image URLs, which the sim does not fetch).
	ImageCheck bool
	// ImageURLAllow is the check's --image-url-allow; empty: loopback
	// ("127.0.0.0/8,::1"), where the tests' image servers and the
	// simulator listen, as make run allows its simulator's demo image.
	// "none" allows nothing.
	ImageURLAllow string
	// Logs go to the test log when true (noisy), else are discarded
	// unless the test fails... kept simple: discarded.
	Verbose bool
	// Logger, when set, receives the controller's logs (tests that
	// assert on them); it wins over Verbose and Logs.
	Logger *slog.Logger
	// Logs, when set, receives every log record (text, debug level), for
	// tests that read what the controller logged.
	Logs io.Writer
	// AgentKernel and AgentBinary make the controller serve the deploy
	// agent (app.Config); AgentHost, when set, is the host booted nodes
	// reach the controller at (10.0.2.2 from a qemu VM with user
	// networking), on the controller's own port.
	AgentKernel, AgentBinary, AgentHost string
	AgentTimeout                        time.Duration
	// SettingsSyncInterval and ConfigureTimeout, when set, replace the
	// controller's (app.Config): how often declared hardware settings are
	// read back, how long a BMC may take to show them after a reset.
	SettingsSyncInterval, ConfigureTimeout time.Duration
	// HealthInterval, when set, replaces the controller's: how often
	// node health and BMC event logs are read.
	HealthInterval time.Duration
	// EnrollVerifyFast, when set, replaces the controller's
	// --enroll-verify-fast (negative: 0, every node to its verify job).
	EnrollVerifyFast time.Duration
	// InspectLLDPWait, when set, is how long an inspection's agent
	// listens for LLDP (app.Config); zero keeps the controller's default.
	InspectLLDPWait time.Duration
	// AgentNetboot boots the agent from the network on systems without
	// virtual media; the fleet's VMs (or simulated machines) get the
	// controller's netboot script as their DHCP boot file (VMs need
	// AgentHost).
	AgentNetboot bool
	// SimAgent serves the deploy agent to the fleet's simulated machines
	// (sim.Options.Machine, turned on with a per-test directory unless
	// SimOptions set it), which boot its ISO without running its kernel
	// or /init: the image is made of this host's kernel file
	// (testvm.RequireKernel: the test is skipped without one, or fails
	// in CI), a stub static /init (testvm.StubAgent) and no modules, so
	// the controller starts at once and an ISO costs 50-250 ms (the
	// README's Performance table) rather than seconds to make. It
	// replaces AgentKernel and AgentBinary.
	SimAgent bool
}

// Env is a running controller plus its simulated BMCs.
type Env struct {
	URL        string
	AdminToken string
	Sim        *sim.Fleet
	App        *app.App
	// DataDir holds the embedded SQLite database (baremetal.db).
	DataDir string
	admin   service.Caller
}

// Start starts an environment, stopped at t.Cleanup.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	if opts.Systems == 0 {
		opts.Systems = 4
	}
	so := opts.SimOptions
	so.Systems = opts.Systems
	var agentModules string
	if opts.SimAgent {
		kernel := testvm.RequireKernel(t)
		testvm.RequireISOLinux(t)
		dir := t.TempDir()
		opts.AgentKernel, opts.AgentBinary = kernel, testvm.StubAgent(t, dir)
		agentModules = testvm.NoModules(t, dir, kernel)
		if so.Machine == nil {
			so.Machine = &sim.MachineOptions{Dir: t.TempDir()}
		}
		// As the controller resolves its default, --agent-uefi auto: a
		// BIOS-only ISO needs machines that boot Legacy BIOS.
		if u, err := image.ResolveUEFI("auto", ""); err == nil && u == image.UEFIOff {
			m := *so.Machine
			m.Legacy = true
			so.Machine = &m
		}
	}
	fleet, err := sim.Start(so)
	if err != nil {
		t.Fatalf("testenv: start sim: %v", err)
	}
	t.Cleanup(func() { _ = fleet.Close() })

	cfg := app.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.DatabaseURL = opts.DatabaseURL
	cfg.BootstrapToken = "bmt_testenv-admin-" + fmt.Sprint(time.Now().UnixNano())
	cfg.PowerSyncInterval = orDur(opts.PowerSyncInterval, time.Second)
	cfg.BMCTimeout = orDur(opts.BMCTimeout, time.Second)
	// The fleet is one endpoint for every system; and its media show an
	// insert at once, but for the dialects that delay it (kept short).
	cfg.RedfishMaxConnections = 64
	cfg.MediaSettle = 2 * time.Second
	cfg.PowerChangeTimeout = 10 * time.Second
	cfg.PowerPollInterval = 50 * time.Millisecond
	cfg.RetryBase = 100 * time.Millisecond
	cfg.MaxBackoff = time.Second
	cfg.FaultThreshold = 3
	cfg.ImageCheck = opts.ImageCheck
	switch opts.ImageURLAllow {
	case "":
		cfg.ImageURLAllow = "127.0.0.0/8,::1"
	case "none":
	default:
		cfg.ImageURLAllow = opts.ImageURLAllow
	}
	cfg.AgentKernel, cfg.AgentBinary, cfg.AgentTimeout = opts.AgentKernel, opts.AgentBinary, opts.AgentTimeout
	cfg.AgentModulesDir = agentModules
	if opts.InspectLLDPWait > 0 {
		cfg.InspectLLDPWait = opts.InspectLLDPWait
	}
	if opts.SettingsSyncInterval > 0 {
		cfg.SettingsSyncInterval = opts.SettingsSyncInterval
	}
	if opts.ConfigureTimeout > 0 {
		cfg.ConfigureTimeout = opts.ConfigureTimeout
	}
	if opts.HealthInterval > 0 {
		cfg.HealthInterval = opts.HealthInterval
	}
	if opts.EnrollVerifyFast != 0 {
		cfg.EnrollVerifyFast = max(opts.EnrollVerifyFast, 0)
	}
	if opts.AgentHost != "" {
		// The agent's URL names the controller's port, so the port is
		// chosen first (free a moment ago; a clash fails the start).
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		cfg.Listen = fmt.Sprintf("127.0.0.1:%d", port)
		cfg.AgentURL = fmt.Sprintf("http://%s:%d", opts.AgentHost, port)
	}
	if opts.AgentNetboot {
		if opts.AgentHost == "" && !opts.SimAgent {
			t.Fatal("testenv: AgentNetboot needs AgentHost (where the VMs reach the controller)")
		}
		cfg.AgentNetboot = true
		if cfg.AgentURL != "" {
			fleet.SetNetbootURL(cfg.AgentURL + api.AgentNetbootPath)
		}
	}
	w := io.Writer(io.Discard)
	if opts.Verbose || os.Getenv("BAREMETAL_TEST_LOG") != "" {
		w = os.Stderr
	}
	if opts.Logs != nil {
		w = io.MultiWriter(w, opts.Logs)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.Logger != nil {
		cfg.Logger = opts.Logger
	}

	ctx := context.Background()
	a, err := app.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("testenv: start controller: %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = a.Stop(sctx)
	})
	if opts.AgentNetboot && cfg.AgentURL == "" {
		// The simulated machines reach the controller where it listens.
		fleet.SetNetbootURL(a.URL() + api.AgentNetbootPath)
	}
	admin, err := a.Service.Authenticate(ctx, cfg.BootstrapToken)
	if err != nil {
		t.Fatalf("testenv: admin token: %v", err)
	}
	return &Env{URL: a.URL(), AdminToken: cfg.BootstrapToken, Sim: fleet, App: a, DataDir: cfg.DataDir, admin: admin}
}

func orDur(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Admin is the bootstrap admin as a service caller.
func (e *Env) Admin() service.Caller { return e.admin }

// MemberToken creates a member token for project and returns its secret.
func (e *Env) MemberToken(t testing.TB, project string) string {
	t.Helper()
	// Token names are required and unique; a test may ask twice.
	name := fmt.Sprintf("member-%s-%d", project, time.Now().UnixNano())
	_, secret, err := e.App.Service.CreateToken(context.Background(), e.admin, service.TokenInput{Name: name, Role: baremetal.RoleMember, Project: project})
	if err != nil {
		t.Fatalf("testenv: member token: %v", err)
	}
	return secret
}

// NodeSpec returns an enrollable spec for the i-th simulated system
// (0-based).
func (e *Env) NodeSpec(i int, name, class string) service.NodeSpec {
	return service.NodeSpec{Name: name, Driver: baremetal.DriverRedfish, ResourceClass: class,
		BMC: baremetal.BMC{Address: e.Sim.URL(), Username: "admin", Password: "password", SystemID: e.Sim.SystemIDs()[i]}}
}

// EnrollNodes enrolls the first n simulated systems as nodes named
// <prefix>-<i> and waits until they are available.
func (e *Env) EnrollNodes(t testing.TB, n int, prefix, class string) []*baremetal.Node {
	t.Helper()
	var out []*baremetal.Node
	for i := 0; i < n; i++ {
		node, err := e.App.Service.CreateNode(context.Background(), e.admin, e.NodeSpec(i, fmt.Sprintf("%s-%d", prefix, i), class))
		if err != nil {
			t.Fatalf("testenv: enroll node %d: %v", i, err)
		}
		out = append(out, node)
	}
	for i, node := range out {
		out[i] = e.WaitNode(t, node.ID, 30*time.Second, func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
	}
	return out
}

// WaitNode polls a node until cond holds or timeout passes.
func (e *Env) WaitNode(t testing.TB, id string, timeout time.Duration, cond func(*baremetal.Node) bool) *baremetal.Node {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *baremetal.Node
	for {
		n, err := e.App.Store.GetNode(context.Background(), id)
		if err == nil {
			last = n
			if cond(n) {
				return n
			}
		}
		if time.Now().After(deadline) {
			if last != nil {
				flow := "-"
				if f := last.Flow; f != nil {
					flow = fmt.Sprintf("%s/%s since %s, notes %v", f.Name, f.Step, f.StepStartedAt.Format(time.RFC3339), f.Notes)
				}
				t.Fatalf("testenv: node %s: condition not met within %s; last: state=%s flow=%s fault=%q power=%s maintenance=%v last_error=%q",
					last.Name, timeout, last.ProvisionState, flow, last.Fault, last.PowerState, last.Maintenance, last.LastError)
			}
			t.Fatalf("testenv: node %s: %v", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
