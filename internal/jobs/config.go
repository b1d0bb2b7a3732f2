package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// DefaultPowerSyncInterval is the power-sync period a controller should use
// unless told otherwise.
const DefaultPowerSyncInterval = 60 * time.Second

// DefaultSettingsSyncInterval is how often a controller should read back
// the hardware settings of nodes that declare some.
const DefaultSettingsSyncInterval = 10 * time.Minute

// DefaultHealthInterval is how often a controller should read its nodes'
// hardware health.
const DefaultHealthInterval = 5 * time.Minute

// Config configures a Runner. Zero durations and counts take the defaults
// documented on each field, so a Config with only Store and BMC works
// (PowerSyncInterval excepted).
type Config struct {
	Store  store.Store
	BMC    bmc.Opener
	Logger *slog.Logger

	// Workers is how many jobs of the default queue (verify, deploy,
	// cleanup, power, retire, sync_node) run at once in this process.
	// Default 100. A job spends nearly all its time waiting for a BMC and
	// holds no database connection meanwhile, so this is what bounds the
	// enroll rate with real BMCs: a verify makes three requests, 150 ms
	// with BMCs that answer in 50 ms, and 20 workers made at most ~130
	// nodes/s available. River also starts at most Workers jobs per
	// FetchCooldown.
	Workers int

	// BMCTimeout bounds every single BMC call, including opening a session.
	// Default 10s.
	BMCTimeout time.Duration
	// PowerChangeTimeout is how long a power change may take to be observed
	// before the node gets the power_mismatch fault. Default 60s.
	PowerChangeTimeout time.Duration
	// PowerPollInterval is the pause between power reads while waiting for
	// a change. Default 2s.
	PowerPollInterval time.Duration

	// PowerSyncInterval is the period of the power-sync pass; 0 disables
	// the periodic pass (SyncPass and Sync still work). Unlike the other
	// fields, zero does not mean the default: use DefaultPowerSyncInterval.
	PowerSyncInterval time.Duration
	// PowerSyncWorkers bounds the BMC calls of power sync in flight in this
	// process (not counting calls already past the straggler threshold,
	// see powersync.go). Default 64.
	PowerSyncWorkers int
	// PowerSyncBatchSize is how many nodes one power_sync_batch job reads.
	// Default 200.
	PowerSyncBatchSize int

	// FaultThreshold is how many consecutive failed BMC calls set a fault.
	// Default 3.
	FaultThreshold int
	// RetryBase is the first backoff step after a failed BMC call; each
	// further failure doubles it. Default 2s, or MaxBackoff when that is
	// smaller.
	RetryBase time.Duration
	// MaxBackoff caps job retry delays and NextCheckAt. Default 5m.
	MaxBackoff time.Duration

	// MaintenancePoll is how long a job waits (snoozed, not failed) before
	// looking again whether its node left maintenance. Default 30s.
	MaintenancePoll time.Duration
	// BusyPoll is how long a job waits when another mutating job of the
	// same node is running. Default 2s.
	BusyPoll time.Duration

	// FetchCooldown and FetchPollInterval tune River's job fetching (as
	// measured on River v0.51: the cooldown caps throughput, the poll interval bounds the
	// latency of short retries and snoozes). Defaults 20ms and 500ms.
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration

	// HeartbeatInterval is how often this replica records that it is alive
	// (and, on PostgreSQL, looks for the running jobs of replicas that are
	// not; recovery.go). Default 3s.
	HeartbeatInterval time.Duration
	// ReplicaTimeout is how old a replica's last heartbeat must be for its
	// running jobs to be run again by another (PostgreSQL). Default 20s; at
	// least three HeartbeatIntervals, so a live replica is not taken for
	// dead over one slow heartbeat.
	ReplicaTimeout time.Duration

	// PublicURL is the API's base URL as BMCs reach it; config drives are
	// served from there. Empty: instances that need a config drive (user
	// data, deploy_timeout) fail to deploy with an error saying so.
	PublicURL string

	// Metrics, when set, receives the runner's Prometheus collectors.
	Metrics prometheus.Registerer

	// MediaSettle is how long a BMC may take to show a virtual media
	// insert or eject it accepted (the Redfish driver reads it back that
	// long, and sends it once more): media calls get their own deadline
	// from it (mediaTimeout), since one such call is several requests.
	MediaSettle time.Duration

	// AgentBoot says that the API serves the deploy agent's ISO
	// (api.AgentBootPath) at PublicURL; inspection needs it.
	AgentBoot bool
	// AgentBIOSOnly says that the served agent ISO boots on BIOS firmware
	// only (no UEFI boot loader was installed where it was built): a node
	// whose BMC reports UEFI boot mode is then not booted into the agent,
	// and the error says why.
	AgentBIOSOnly bool
	// AgentURL is the API's base URL as booted nodes (the agent) reach
	// it; empty: PublicURL.
	AgentURL string
	// AgentNetboot says that the provisioning network's DHCP chains the
	// nodes' iPXE to the API's netboot script (api.AgentNetbootPath), so
	// nodes without virtual media (IPMI, or Redfish BMCs without it) boot
	// the agent from the network. Without it their cleanups skip the
	// erase and they are not inspected.
	AgentNetboot bool
	// CleanErase is how cleanups erase a node's disks with the deploy
	// agent when AgentBoot: "metadata" (partition tables and filesystem
	// signatures), "full" (every byte) or "" (no erase).
	CleanErase string
	// CleanEraseByClass overrides CleanErase for the nodes of a resource
	// class (same values; "" is no erase): a storage class may want every
	// byte gone, a scratch class no erase at all. A node's own CleanErase,
	// when set, wins over both.
	CleanEraseByClass map[string]string
	// InspectOnEnroll: a node whose BMC verify succeeded goes to
	// inspecting instead of available, and is inspected by the agent
	// first (when AgentBoot, and its BMC has virtual media). A node's own
	// InspectOnEnroll, when set, wins over it.
	InspectOnEnroll bool
	// AgentTimeout bounds the wait for a booted agent's report (default
	// 15 minutes: a server's firmware POST alone can take five).
	AgentTimeout time.Duration
	// ConfigureTimeout bounds the wait, after the reset, for a node's
	// hardware settings to show on its BMC (default 20 minutes: a
	// server applying BIOS settings may restart during POST more than
	// once).
	ConfigureTimeout time.Duration
	// SettingsSyncInterval is how often the hardware settings of nodes
	// that declare some are read back from their BMCs (drift); 0 turns
	// the periodic read off.
	SettingsSyncInterval time.Duration
	// HealthInterval is how often every node's hardware health and BMC
	// event log are read; 0 turns it off.
	HealthInterval time.Duration

	// agentStallAfter replaces agentStall's five minutes in tests.
	agentStallAfter time.Duration

	// ImageCheck, when set, looks at an instance's image URL before a
	// deploy inserts it as virtual media (imagecheck.Checker): an image
	// that is not there fails the instance at once, with the reason.
	ImageCheck ImageChecker
	// Console records the serial consoles of the nodes the flows boot
	// (console.Recorder); nil records none.
	Console ConsoleRecorder
}

// ImageChecker checks an image URL from the controller. Its errors are
// *imagecheck.Error (transient or not).
type ImageChecker interface {
	Check(ctx context.Context, imageURL string) error
}

// Defaults is the Config whose every field is what its zero value stands
// for (PowerSyncInterval: DefaultPowerSyncInterval). The controller's
// settings table (app.Config.Settings) says the same; an app test holds
// them together.
func Defaults() Config {
	c := Config{PowerSyncInterval: DefaultPowerSyncInterval, SettingsSyncInterval: DefaultSettingsSyncInterval,
		HealthInterval: DefaultHealthInterval}.withDefaults()
	c.AgentTimeout = c.agentTimeout()
	c.ConfigureTimeout = c.configureTimeout()
	return c
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(i *int, v int) {
		if *i <= 0 {
			*i = v
		}
	}
	defInt(&c.Workers, 100)
	defInt(&c.PowerSyncWorkers, 64)
	defInt(&c.PowerSyncBatchSize, 200)
	defInt(&c.FaultThreshold, 3)
	def(&c.BMCTimeout, 10*time.Second)
	def(&c.PowerChangeTimeout, 60*time.Second)
	def(&c.PowerPollInterval, 2*time.Second)
	def(&c.MediaSettle, 15*time.Second)
	def(&c.MaxBackoff, 5*time.Minute)
	// A small MaxBackoff (tests, impatient operators) caps the first
	// retry too.
	def(&c.RetryBase, min(2*time.Second, c.MaxBackoff))
	def(&c.MaintenancePoll, 30*time.Second)
	def(&c.BusyPoll, 2*time.Second)
	def(&c.FetchCooldown, 20*time.Millisecond)
	def(&c.FetchPollInterval, 500*time.Millisecond)
	def(&c.HeartbeatInterval, 3*time.Second)
	def(&c.ReplicaTimeout, 20*time.Second)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("a store is required"))
	}
	if c.BMC == nil {
		errs = append(errs, errors.New("BMC opener is required"))
	}
	if c.MaxBackoff < c.RetryBase {
		errs = append(errs, errors.New("MaxBackoff must not be below RetryBase"))
	}
	for name, d := range map[string]time.Duration{
		"BMCTimeout": c.BMCTimeout, "PowerChangeTimeout": c.PowerChangeTimeout,
		"PowerPollInterval": c.PowerPollInterval, "RetryBase": c.RetryBase,
		"MaintenancePoll": c.MaintenancePoll, "BusyPoll": c.BusyPoll,
		"PowerSyncInterval": c.PowerSyncInterval, "FetchCooldown": c.FetchCooldown, "FetchPollInterval": c.FetchPollInterval,
		"HeartbeatInterval": c.HeartbeatInterval, "ReplicaTimeout": c.ReplicaTimeout,
		"ConfigureTimeout": c.ConfigureTimeout, "SettingsSyncInterval": c.SettingsSyncInterval, "HealthInterval": c.HealthInterval,
	} {
		if d < 0 {
			errs = append(errs, errors.New(name+" must not be negative"))
		}
	}
	if c.ReplicaTimeout < 3*c.HeartbeatInterval {
		errs = append(errs, errors.New("ReplicaTimeout must be at least three HeartbeatIntervals"))
	}
	return errors.Join(errs...)
}

// jobTimeout bounds the longest job: a deploy makes about six BMC calls
// plus the power-change wait. River cancels the job's context after it.
//
// One virtual media call is counted at its full mediaTimeout: a BMC that
// shows media late is met in a deploy once or twice, not at every call
// (a live deploy with a config drive makes three). A job cut off by the
// timeout is run again (its steps are idempotent); the timeout also sets
// how long River waits before it rescues the job of a crashed replica
// (RescueStuckJobsAfter), which a larger one would slow for every job.
func (c Config) jobTimeout() time.Duration {
	return c.PowerChangeTimeout + 8*c.BMCTimeout + c.mediaTimeout() + 30*time.Second
}

// mediaTimeout bounds one virtual media call: an insert or eject sent,
// read back for up to MediaSettle and sent once more, with a few requests
// around it. The driver may want longer in the worst case (an eject that
// must itself be sent twice before an insert that must): that call then
// ends at this deadline and the job retries.
func (c Config) mediaTimeout() time.Duration {
	return 2*c.MediaSettle + 4*c.BMCTimeout
}

// agentStall is how long an agent that has reported may fall silent
// while it runs a command before it counts as lost, whatever its
// machine's power. It reports every 3 s while it works (from a goroutine
// of its own, so a slow disk does not silence it); while it cannot reach
// the controller it backs off to a minute (72 s with jitter) plus the
// 30 s its failing request may take, so ~100 s between tries. Silence
// counts from this replica's start and its database's return, at the
// earliest; five minutes also covers the restart of another replica the
// agents talk to. Longer silence is a hung agent, a crashed machine or
// one cut off from the network. AgentTimeout, the wait for the first
// report, covers firmware POST and is far longer. Never above
// AgentTimeout.
func (c Config) agentStall() time.Duration {
	d := 5 * time.Minute
	if c.agentStallAfter > 0 {
		d = c.agentStallAfter
	}
	return min(d, c.agentTimeout())
}

// agentTimeout is AgentTimeout or its default.
func (c Config) agentTimeout() time.Duration {
	if c.AgentTimeout > 0 {
		return c.AgentTimeout
	}
	return 15 * time.Minute
}

// configureTimeout is ConfigureTimeout or its default.
func (c Config) configureTimeout() time.Duration {
	if c.ConfigureTimeout > 0 {
		return c.ConfigureTimeout
	}
	return 20 * time.Minute
}

// eraseMode is how a cleanup erases the disks of node n: the node's own
// setting (off: no erase), else its resource class's, else CleanErase;
// "" is no erase.
func (c Config) eraseMode(n *baremetal.Node) string {
	switch n.CleanErase {
	case baremetal.CleanEraseOff:
		return ""
	case baremetal.CleanEraseDefault:
	default:
		return string(n.CleanErase)
	}
	if m, ok := c.CleanEraseByClass[n.ResourceClass]; ok {
		return m
	}
	return c.CleanErase
}

// ConsoleRecorder records nodes' serial consoles (console.Recorder).
type ConsoleRecorder interface {
	// Record makes sure the node's console is being recorded.
	Record(nodeID string)
	// WaitOpen waits at most d for the recording's console to be open.
	WaitOpen(ctx context.Context, nodeID string, d time.Duration) bool
	// Settle waits at most d for the node's console to stop printing.
	Settle(ctx context.Context, nodeID string, d time.Duration)
	// Tail is the last n lines the node's console printed.
	Tail(ctx context.Context, nodeID string, n int) []string
}
