package jobs

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// metrics are the runner's Prometheus collectors. They always exist (so
// call sites need no nil checks) and are registered only when the Config
// names a Registerer.
type metrics struct {
	bmcCalls     *prometheus.CounterVec
	bmcDuration  *prometheus.HistogramVec
	syncNodes    *prometheus.CounterVec
	syncPass     prometheus.Histogram
	jobsFinished *prometheus.CounterVec
	jobsRescued  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		bmcCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baremetal_bmc_calls_total",
			Help: "BMC calls by operation and result (ok or the error kind).",
		}, []string{"op", "result"}),
		bmcDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "baremetal_bmc_call_duration_seconds",
			Help:    "Duration of BMC calls by operation.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"op"}),
		syncNodes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baremetal_power_sync_nodes_total",
			Help: "Nodes handled by power sync: ok, failed, skipped (backed off), changed (written).",
		}, []string{"result"}),
		syncPass: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "baremetal_power_sync_batch_duration_seconds",
			Help:    "Duration of one power-sync batch or in-process pass.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
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

func (m *metrics) observeBMC(op string, started time.Time, err error) {
	result := "ok"
	if err != nil {
		result = string(bmc.KindOf(err))
	}
	m.bmcCalls.WithLabelValues(op, result).Inc()
	m.bmcDuration.WithLabelValues(op).Observe(time.Since(started).Seconds())
}
