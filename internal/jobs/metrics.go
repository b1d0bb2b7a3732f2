package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// metrics are the runner's Prometheus collectors. They always exist (so
// call sites need no nil checks) and are registered only when the Config
// names a Registerer.
type metrics struct {
	bmcCalls     *prometheus.CounterVec
	bmcDuration  *prometheus.HistogramVec
	syncNodes    *prometheus.CounterVec
	syncBatch    prometheus.Histogram
	syncPass     prometheus.Histogram
	jobsFinished *prometheus.CounterVec
	jobsRescued  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		bmcCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baremetal_bmc_calls_total",
			Help: "BMC calls by driver, operation and result (ok or the error kind).",
		}, []string{"driver", "op", "result"}),
		bmcDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "baremetal_bmc_call_duration_seconds",
			Help:    "Duration of BMC calls by driver and operation.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"driver", "op"}),
		syncNodes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baremetal_power_sync_nodes_total",
			Help: "Nodes handled by power sync: ok, failed, skipped (backed off), changed (written).",
		}, []string{"result"}),
		syncBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "baremetal_power_sync_batch_duration_seconds",
			Help:    "Duration of one power_sync_batch job (reads of hung BMCs are handed off, not waited for).",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}),
		syncPass: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "baremetal_power_sync_pass_duration_seconds",
			Help: "Duration of one whole power-sync pass over the fleet, from listing the nodes until every " +
				"batch finished (reads of hung BMCs still unanswered then give up within --bmc-timeout). " +
				"Observed by the replica that fanned the pass out.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}),
		jobsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baremetal_jobs_finished_total",
			Help: "Job attempts by kind and outcome (ok, error, snoozed, cancelled).",
		}, []string{"kind", "outcome"}),
		jobsRescued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baremetal_jobs_rescued_total",
			Help: "Running jobs of a dead controller made runnable again, by kind.",
		}, []string{"kind"}),
	}
	if reg == nil {
		return m, nil
	}
	// A second runner on the same registry (tests, or a restart inside
	// one process) shares the first one's collectors instead of failing.
	var err error
	if m.bmcCalls, err = register(reg, m.bmcCalls); err != nil {
		return nil, err
	}
	if m.bmcDuration, err = register(reg, m.bmcDuration); err != nil {
		return nil, err
	}
	if m.syncNodes, err = register(reg, m.syncNodes); err != nil {
		return nil, err
	}
	if m.syncBatch, err = register(reg, m.syncBatch); err != nil {
		return nil, err
	}
	if m.syncPass, err = register(reg, m.syncPass); err != nil {
		return nil, err
	}
	if m.jobsFinished, err = register(reg, m.jobsFinished); err != nil {
		return nil, err
	}
	if m.jobsRescued, err = register(reg, m.jobsRescued); err != nil {
		return nil, err
	}
	return m, nil
}

func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register metrics: %w", err)
}

func (m *metrics) observeBMC(driver, op string, started time.Time, err error) {
	result := "ok"
	if err != nil {
		result = string(bmc.KindOf(err))
	}
	m.bmcCalls.WithLabelValues(driver, op, result).Inc()
	m.bmcDuration.WithLabelValues(driver, op).Observe(time.Since(started).Seconds())
}

// jobCollector exports the job queue: how many jobs of each kind are
// waiting or running, by River state, counted by the database at scrape
// time (fleet-wide, like the node gauges). Every kind and state is
// exported, zeros included, so a dashboard's series do not come and go.
type jobCollector struct {
	st    store.Store
	log   interface{ Warn(string, ...any) }
	depth *prometheus.Desc
}

// queuedStates are the states of a job not finished yet.
var queuedStates = []string{"available", "scheduled", "retryable", "running", "pending"}

// jobKinds are every kind the runner works.
var jobKinds = []string{VerifyArgs{}.Kind(), DeployArgs{}.Kind(), CleanupArgs{}.Kind(), PowerArgs{}.Kind(),
	RetireArgs{}.Kind(), SyncNodeArgs{}.Kind(), InspectArgs{}.Kind(), ConfigureArgs{}.Kind(), PowerSyncArgs{}.Kind(), PowerSyncBatchArgs{}.Kind(),
	SettingsSyncArgs{}.Kind(), ReadSettingsArgs{}.Kind(), HealthSyncArgs{}.Kind(), ReadHealthArgs{}.Kind()}

func newJobCollector(st store.Store, log interface{ Warn(string, ...any) }) *jobCollector {
	return &jobCollector{st: st, log: log, depth: prometheus.NewDesc("baremetal_jobs",
		"Jobs not finished yet, by kind and River state (available, scheduled, retryable, running, pending).",
		[]string{"kind", "state"}, nil)}
}

func (c *jobCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.depth }

// jobDepthSQL is the same in both dialects: River's job table has the
// same shape on SQLite and PostgreSQL.
const jobDepthSQL = `SELECT kind, state, count(*) FROM river_job
	WHERE state IN ('available', 'scheduled', 'retryable', 'running', 'pending') GROUP BY kind, state`

func (c *jobCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), nodeCountTimeout)
	defer cancel()
	counts := map[[2]string]int64{}
	for _, k := range jobKinds {
		for _, s := range queuedStates {
			counts[[2]string{k, s}] = 0
		}
	}
	var (
		rows interface {
			Next() bool
			Scan(...any) error
			Err() error
		}
		err error
	)
	switch db := c.st.ReadNative().(type) {
	case *sql.DB:
		var r *sql.Rows
		if r, err = db.QueryContext(ctx, jobDepthSQL); err == nil {
			defer r.Close()
			rows = r
		}
	case *pgxpool.Pool:
		var r pgx.Rows
		if r, err = db.Query(ctx, jobDepthSQL); err == nil {
			defer r.Close()
			rows = r
		}
	default:
		err = fmt.Errorf("store %T: no SQL handle", db)
	}
	for err == nil && rows.Next() {
		var kind, state string
		var n int64
		if err = rows.Scan(&kind, &state, &n); err == nil {
			counts[[2]string{kind, state}] += n
		}
	}
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		c.log.Warn("metrics: count jobs", "err", err)
		return
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}

// nodeCollector exports how many nodes are in each provision state, with
// each fault, and in maintenance, counted by the database at scrape time:
// every replica reports the same fleet-wide numbers, so a dashboard needs
// no aggregation across replicas (take any one, or max).
type nodeCollector struct {
	st      nodeCounter
	log     interface{ Warn(string, ...any) }
	byState *prometheus.Desc
	byFault *prometheus.Desc
	maint   *prometheus.Desc
	total   *prometheus.Desc
}

type nodeCounter interface {
	CountNodes(ctx context.Context) ([]store.NodeCount, error)
}

func newNodeCollector(st nodeCounter, log interface{ Warn(string, ...any) }) *nodeCollector {
	return &nodeCollector{
		st:      st,
		log:     log,
		byState: prometheus.NewDesc("baremetal_nodes", "Nodes by provision state.", []string{"provision_state"}, nil),
		byFault: prometheus.NewDesc("baremetal_nodes_faulted", "Nodes with a fault, by fault.", []string{"fault"}, nil),
		maint:   prometheus.NewDesc("baremetal_nodes_maintenance", "Nodes in maintenance.", nil, nil),
		total:   prometheus.NewDesc("baremetal_nodes_schedulable", "Nodes a new instance could be scheduled on (available, healthy, not in maintenance).", nil, nil),
	}
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.byState
	ch <- c.byFault
	ch <- c.maint
	ch <- c.total
}

// nodeCountTimeout bounds the scrape's query: a slow database must not
// hang the /metrics endpoint (the other metrics are still served).
const nodeCountTimeout = 2 * time.Second

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), nodeCountTimeout)
	defer cancel()
	counts, err := c.st.CountNodes(ctx)
	if err != nil {
		c.log.Warn("metrics: count nodes", "err", err)
		return
	}
	byState := map[baremetal.ProvisionState]int{}
	byFault := map[baremetal.Fault]int{}
	maint, schedulable := 0, 0
	for _, s := range baremetal.ProvisionStates {
		byState[s] = 0 // every state is exported, zeros included
	}
	for _, n := range counts {
		byState[n.ProvisionState] += n.Count
		if n.Fault != baremetal.FaultNone {
			byFault[n.Fault] += n.Count
		}
		if n.Maintenance {
			maint += n.Count
		}
		// An available node holds no instance, so these three fields decide.
		if (&baremetal.Node{ProvisionState: n.ProvisionState, Fault: n.Fault, Maintenance: n.Maintenance}).Schedulable() {
			schedulable += n.Count
		}
	}
	for s, v := range byState {
		ch <- prometheus.MustNewConstMetric(c.byState, prometheus.GaugeValue, float64(v), string(s))
	}
	for f, v := range byFault {
		ch <- prometheus.MustNewConstMetric(c.byFault, prometheus.GaugeValue, float64(v), string(f))
	}
	ch <- prometheus.MustNewConstMetric(c.maint, prometheus.GaugeValue, float64(maint))
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(schedulable))
}
