package httpapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
)

// GET /v1/metrics/nodes serves the per-node hardware health gauges in the
// Prometheus text format, to an admin or monitor token only. They are a
// route of their own rather than what /metrics adds when a token comes
// with the scrape: /metrics stays one public answer whatever the request
// carries (it names no node, so anyone on the network may read it); a
// scrape whose token expired or was revoked fails with 401 (Prometheus
// shows the target down) instead of silently losing its per-node series;
// and the per-node scrape, a read of every node from the store, can have
// an interval of its own, as slow as the health reads it reports
// (--health-interval).
//
// Cardinality is bounded by the fleet: every series is labelled by the
// node's name and nothing else but the health state's four values.
//
//   - baremetal_node_health{node,state}: 1 for the state the node is in
//     (ok, warning, critical, unknown), 0 for the three others, every node
//     every scrape (a state set: "is it critical" is one selector, and a
//     series does not vanish when the state changes).
//   - baremetal_node_hottest_celsius{node}: the hottest temperature read;
//     absent for a node no temperature was read of (0 °C would be a lie a
//     graph's minimum and a "too cold" alert would believe).
//   - baremetal_node_fans_failed{node}, baremetal_node_psus_failed{node}:
//     absent for a node whose health was never read (unknown is not 0).
var (
	nodeHealthDesc = prometheus.NewDesc("baremetal_node_health",
		"Hardware health each node's BMC last reported: 1 for the state it is in (ok, warning, critical, unknown), 0 for the others.",
		[]string{"node", "state"}, nil)
	nodeHottestDesc = prometheus.NewDesc("baremetal_node_hottest_celsius",
		"The hottest temperature the node's BMC last reported, °C (absent when none was read).", []string{"node"}, nil)
	nodeFansDesc = prometheus.NewDesc("baremetal_node_fans_failed",
		"Failed fans the node's BMC last reported (absent when its health was never read).", []string{"node"}, nil)
	nodePSUsDesc = prometheus.NewDesc("baremetal_node_psus_failed",
		"Failed power supplies the node's BMC last reported (absent when its health was never read).", []string{"node"}, nil)
)

// nodeGauges is one node's share of the scrape: only what is exported,
// so a large fleet costs a few dozen bytes a node, not whole nodes.
type nodeGauges struct {
	name, state string
	hottest     float64
	fans, psus  int
	read        bool
}

// nodeGaugeCollector exports gauges read before the scrape started, so a
// store failure is a problem document (503), not an empty 200.
type nodeGaugeCollector []nodeGauges

func (c nodeGaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- nodeHealthDesc
	ch <- nodeHottestDesc
	ch <- nodeFansDesc
	ch <- nodePSUsDesc
}

func (c nodeGaugeCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c {
		for _, st := range baremetal.HealthStates {
			v := 0.0
			if st == g.state {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(nodeHealthDesc, prometheus.GaugeValue, v, g.name, st)
		}
		if g.hottest != 0 {
			ch <- prometheus.MustNewConstMetric(nodeHottestDesc, prometheus.GaugeValue, g.hottest, g.name)
		}
		if g.read {
			ch <- prometheus.MustNewConstMetric(nodeFansDesc, prometheus.GaugeValue, float64(g.fans), g.name)
			ch <- prometheus.MustNewConstMetric(nodePSUsDesc, prometheus.GaugeValue, float64(g.psus), g.name)
		}
	}
}

func (s *Server) nodeMetrics(w http.ResponseWriter, r *http.Request, c service.Caller) {
	var gauges nodeGaugeCollector
	err := s.svc.EachNodeHealth(r.Context(), c, func(n service.NodeHealth) {
		gauges = append(gauges, nodeGauges{name: n.Name, state: n.Health.StateOrUnknown(), hottest: n.Health.HottestC,
			fans: n.Health.FansFailed, psus: n.Health.PSUsFailed, read: n.Health.ReadAt != nil})
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// A registry of this scrape's own: the gauges are this caller's
	// answer, never part of the public /metrics registry.
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(gauges); err != nil {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeInternal, "per-node metrics: %v", err))
		return
	}
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}
