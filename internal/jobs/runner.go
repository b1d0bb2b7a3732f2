package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
)

// Runner runs the controller's durable jobs and the power sync on River,
// over the store's own database.
type Runner struct {
	// nodeWork is shared with the workers (see workers.go); the Runner
	// itself is wiring: River, the power sync, recovery.
	*nodeWork

	// replicaID is this process's River client id and heartbeat row
	// (recovery.go); stopBeats ends the heartbeat loop, beatsDone says it
	// has.
	replicaID string
	stopBeats context.CancelFunc
	beatsDone chan struct{}

	// syncSlots bounds the power-sync BMC calls in flight in this process
	// (PowerSyncWorkers); syncStragglers holds calls that outlived the
	// straggler threshold, so a dead BMC does not keep a slot; syncLatency
	// is the moving average of healthy reads, in ns (powersync.go).
	syncSlots      chan struct{}
	syncStragglers chan struct{}
	syncLatency    atomic.Int64

	// late carries the observations of detached power reads to the
	// lateWriter goroutine; lateCtx bounds those reads and the writer, and
	// ends at Stop (powersync.go).
	late     chan observation
	lateCtx  context.Context
	lateStop context.CancelFunc
	lateDone chan struct{}
	lateOnce sync.Once
}

var _ Inserter = (*Runner)(nil)

// powerSyncQueueWorkers is how many power_sync and power_sync_batch jobs
// one process works at once. The BMC concurrency is bounded by syncSlots,
// not by this: batches hand hung reads off instead of waiting for them, so
// two or three batches in flight keep the slots busy, and one more worker
// is for the pass job itself, which waits for its batches to time the
// pass. Few enough to leave batches for the other replicas.
const powerSyncQueueWorkers = 4

// New builds a Runner; Start makes it work jobs.
func New(cfg Config) (*Runner, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("jobs config: %w", err)
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	r := &Runner{
		nodeWork: &nodeWork{
			cfg:     cfg,
			store:   cfg.Store,
			ledger:  ledger.New(cfg.Store, cfg.Logger),
			log:     cfg.Logger,
			metrics: m,
			started: time.Now(),
		},
		syncSlots:      make(chan struct{}, cfg.PowerSyncWorkers),
		syncStragglers: make(chan struct{}, 16*cfg.PowerSyncWorkers),
		late:           make(chan observation, writeBatch),
		lateDone:       make(chan struct{}),
		replicaID:      newReplicaID(),
	}
	r.lateCtx, r.lateStop = context.WithCancel(context.Background())
	if cfg.Metrics != nil {
		if _, err := register(cfg.Metrics, prometheus.Collector(newNodeCollector(cfg.Store, cfg.Logger))); err != nil {
			return nil, err
		}
		if _, err := register(cfg.Metrics, prometheus.Collector(newJobCollector(cfg.Store, cfg.Logger))); err != nil {
			return nil, err
		}
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &verifyWorker{nodeWorker[VerifyArgs]{nodeWork: r.nodeWork}})
	river.AddWorker(workers, &deployWorker{nodeWorker[DeployArgs]{nodeWork: r.nodeWork}})
	river.AddWorker(workers, &cleanupWorker{nodeWorker[CleanupArgs]{nodeWork: r.nodeWork}})
	river.AddWorker(workers, &powerWorker{nodeWorker[PowerArgs]{nodeWork: r.nodeWork}})
	river.AddWorker(workers, &retireWorker{nodeWorker[RetireArgs]{nodeWork: r.nodeWork}})
	river.AddWorker(workers, &syncNodeWorker{nodeWork: r.nodeWork})
	river.AddWorker(workers, &inspectWorker{nodeWorker[InspectArgs]{nodeWork: r.nodeWork}})
	river.AddWorker(workers, &configureWorker{nodeWorker[ConfigureArgs]{nodeWork: r.nodeWork}})
	river.AddWorker(workers, &readSettingsWorker{nodeWork: r.nodeWork})
	river.AddWorker(workers, &settingsSyncWorker{r: r})
	river.AddWorker(workers, &readHealthWorker{nodeWork: r.nodeWork})
	river.AddWorker(workers, &healthSyncWorker{r: r})
	river.AddWorker(workers, &powerSyncWorker{r: r})
	river.AddWorker(workers, &powerSyncBatchWorker{r: r})

	rcfg := &river.Config{
		// Our id, not River's generated one: attempted_by then names the
		// replica whose heartbeat tells whether the job's process lives.
		ID: r.replicaID,
		// River reports routine bookkeeping (job counts every few
		// seconds) at info; operators want its warnings, not its heartbeat,
		// and each of them once a minute, not at every poll of an outage.
		Logger:  slog.New(newRepeatLimit(minLevel{slog.LevelWarn, cfg.Logger.Handler()}, time.Minute)).With("component", "river"),
		Workers: workers,
		Queues: map[string]river.QueueConfig{
			QueueDefault:   {MaxWorkers: cfg.Workers},
			QueuePowerSync: {MaxWorkers: powerSyncQueueWorkers},
		},
		FetchCooldown:     cfg.FetchCooldown,
		FetchPollInterval: max(cfg.FetchPollInterval, cfg.FetchCooldown),
		JobTimeout:        cfg.jobTimeout(),
		// A job is "stuck" only after its own timeout: River cancels its
		// context at JobTimeout and every BMC call honours the context, so
		// a job still "running" 15 s later belongs to a dead process. A
		// shorter value would run a slow deploy twice (River rescues a
		// job still running, whatever it is doing). Our own
		// heartbeat rescue (recovery.go) acts long before; this remains
		// the backstop for jobs of replicas that never wrote a heartbeat.
		RescueStuckJobsAfter: cfg.jobTimeout() + 15*time.Second,
	}
	if iv := cfg.PowerSyncInterval; iv > 0 {
		rcfg.PeriodicJobs = []*river.PeriodicJob{river.NewPeriodicJob(
			river.PeriodicInterval(iv),
			func() (river.JobArgs, *river.InsertOpts) {
				opts := PowerSyncArgs{}.InsertOpts()
				// One pass per period even when leadership moves and the new
				// leader runs its RunOnStart pass (River refuses ByPeriod
				// below one second, which only tests use).
				if iv >= time.Second {
					opts.UniqueOpts = river.UniqueOpts{ByPeriod: iv}
				}
				return PowerSyncArgs{}, &opts
			},
			&river.PeriodicJobOpts{ID: "power_sync", RunOnStart: true},
		)}
	}
	// The slower per-node passes, each at most once per period (see the
	// power sync's above).
	type periodicArgs interface {
		river.JobArgs
		InsertOpts() river.InsertOpts
	}
	for _, p := range []struct {
		id   string
		iv   time.Duration
		args periodicArgs
	}{{"settings_sync", cfg.SettingsSyncInterval, SettingsSyncArgs{}}, {"health_sync", cfg.HealthInterval, HealthSyncArgs{}}} {
		if p.iv <= 0 {
			continue
		}
		rcfg.PeriodicJobs = append(rcfg.PeriodicJobs, river.NewPeriodicJob(
			river.PeriodicInterval(p.iv),
			func() (river.JobArgs, *river.InsertOpts) {
				opts := p.args.InsertOpts()
				if p.iv >= time.Second {
					opts.UniqueOpts = river.UniqueOpts{ByPeriod: p.iv}
				}
				return p.args, &opts
			},
			&river.PeriodicJobOpts{ID: p.id, RunOnStart: true},
		))
	}
	q, err := newQueue(cfg.Store, rcfg)
	if err != nil {
		return nil, err
	}
	r.q = q
	return r, nil
}

// Start begins working jobs (and, on the elected leader, enqueueing the
// periodic power sync). Cancelling ctx stops the runner softly.
//
// First it records this replica's heartbeat and makes runnable the jobs a
// dead controller left running (recovery.go): on SQLite every running job,
// so at most one Runner may use a SQLite store (sqlite.Open's lock keeps
// other processes out).
func (r *Runner) Start(ctx context.Context) error {
	if err := r.recoverAtStart(ctx); err != nil {
		return err
	}
	r.lateOnce.Do(func() { go r.lateWriter() })
	if err := r.q.Start(ctx); err != nil {
		return fmt.Errorf("start job runner: %w", err)
	}
	bctx, cancel := context.WithCancel(ctx)
	r.stopBeats, r.beatsDone = cancel, make(chan struct{})
	go func() {
		defer close(r.beatsDone)
		r.heartbeats(bctx)
	}()
	return nil
}

// Stop waits for running jobs to finish until ctx ends, then cancels them.
// Jobs cancelled this way are retried later (by this or another process):
// every job is idempotent.
//
// The heartbeat goes on while jobs finish, so other replicas do not take
// them over; it is removed only once River has stopped cleanly (otherwise
// it goes stale and the jobs left running are rescued).
func (r *Runner) Stop(ctx context.Context) error {
	err := r.stopQueue(ctx)
	r.stopLate()
	if r.stopBeats != nil {
		r.stopBeats()
		<-r.beatsDone
		if err == nil {
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			r.leave(lctx)
		}
	}
	return err
}

func (r *Runner) stopQueue(ctx context.Context) error {
	err := r.q.Stop(ctx)
	if err == nil {
		return nil
	}
	if ctx.Err() == nil {
		return fmt.Errorf("stop job runner: %w", err)
	}
	hard, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.q.StopAndCancel(hard); err != nil {
		return fmt.Errorf("stop job runner (cancelling running jobs): %w", err)
	}
	return nil
}

// stopLate ends the detached power reads and the lateWriter, after the
// jobs have stopped (so no batch detaches reads any more).
func (r *Runner) stopLate() {
	r.lateStop()
	r.lateOnce.Do(func() { close(r.lateDone) }) // never started: nothing to wait for
	<-r.lateDone
}

// maxListedJobs caps ListJobs: the admin API shows the most recent ones.
const maxListedJobs = 500

// ListJobs returns the most recent jobs, newest first, optionally only
// those of one node and/or in one River state (available, running,
// retryable, scheduled, completed, cancelled, discarded, pending).
func (r *Runner) ListJobs(ctx context.Context, nodeID, state string) ([]api.Job, error) {
	p := river.NewJobListParams().OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(maxListedJobs)
	if state != "" {
		st := rivertype.JobState(state)
		if !slices.Contains(rivertype.JobStates(), st) {
			return nil, baremetal.FieldErrorf("state", "unknown job state %q", state)
		}
		p = p.States(st)
	}
	if nodeID != "" {
		p = p.Where(argsNodeID, river.NamedArgs{"node_id": nodeID})
	}
	res, err := r.q.JobList(ctx, p)
	if err != nil {
		return nil, r.store.Classify("list jobs", fmt.Errorf("list jobs: %w", err))
	}
	out := make([]api.Job, 0, len(res.Jobs))
	for _, j := range res.Jobs {
		out = append(out, toAPIJob(j))
	}
	return out, nil
}

func toAPIJob(j *rivertype.JobRow) api.Job {
	var args struct {
		NodeID string `json:"node_id"`
	}
	_ = json.Unmarshal(j.EncodedArgs, &args) // kinds without node_id leave it empty
	aj := api.Job{
		ID:          j.ID,
		Kind:        j.Kind,
		State:       string(j.State),
		NodeID:      args.NodeID,
		Attempt:     j.Attempt,
		MaxAttempts: j.MaxAttempts,
		ScheduledAt: j.ScheduledAt,
		CreatedAt:   j.CreatedAt,
		FinalizedAt: j.FinalizedAt,
	}
	if n := len(j.Errors); n > 0 {
		aj.LastError = j.Errors[n-1].Error
	}
	if j.MaxAttempts >= foreverAttempts {
		// River's counter needs a bound; the job has none (it snoozes
		// before reaching it), and "attempt 1/32767" would say otherwise.
		aj.MaxAttempts = 0
	}
	return aj
}

// Sync reads one node's power state now, whatever its backoff, and records
// the result (power state, fault accounting). It returns the BMC error, if
// any, after recording it.
func (r *Runner) Sync(ctx context.Context, nodeID string) error {
	n, err := r.store.GetNode(ctx, nodeID)
	if err != nil {
		return fmt.Errorf("sync node %s: %w", nodeID, err)
	}
	return r.syncOne(ctx, n)
}

// minLevel drops records below min; it keeps the wrapped handler's own
// level (so debug logging shows River's debug output too).
type minLevel struct {
	min slog.Level
	slog.Handler
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return (l >= h.min || h.Handler.Enabled(ctx, slog.LevelDebug)) && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.min, h.Handler.WithAttrs(a)}
}
func (h minLevel) WithGroup(n string) slog.Handler { return minLevel{h.min, h.Handler.WithGroup(n)} }
