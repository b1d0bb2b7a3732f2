package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// samples reads a Prometheus text exposition into series -> value, the
// series written as exposed (name{label="v",...}, labels sorted).
func samples(t *testing.T, body []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("not a sample line: %q", line)
		}
		out[line[:i]] = line[i+1:]
	}
	return out
}

// setHealth records h on the named node as the health job would.
func (e *env) setHealth(name string, h baremetal.Health, mutate ...func(*baremetal.Node)) {
	e.t.Helper()
	ctx := context.Background()
	n, err := e.st.GetNode(ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	n.RecordHealth(h, time.Now())
	for _, m := range mutate {
		m(n)
	}
	if err := e.st.UpdateNode(ctx, n); err != nil {
		e.t.Fatal(err)
	}
}

func TestNodeMetrics(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			monitor := e.createToken(`{"role":"monitor","name":"prometheus"}`)
			read := time.Now().UTC().Add(-time.Minute)
			e.createNode("hm-ok")
			e.createNode("hm-hot")
			e.createNode("hm-never")
			e.createNode("hm-p2")
			e.setHealth("hm-ok", baremetal.Health{State: baremetal.HealthOK, HottestC: 41.5, ReadAt: &read})
			e.setHealth("hm-hot", baremetal.Health{State: baremetal.HealthCritical, Reasons: []string{"PSU 2: Critical"},
				HottestC: 92, FansFailed: 1, PSUsFailed: 2, ReadAt: &read})
			// Another project's node: a monitor watches the whole fleet.
			e.setHealth("hm-p2", baremetal.Health{State: baremetal.HealthWarning, FansFailed: 1, ReadAt: &read},
				func(n *baremetal.Node) { n.Owner = "p2" })

			want := map[string]string{
				`baremetal_node_health{node="hm-ok",state="ok"}`:          "1",
				`baremetal_node_health{node="hm-ok",state="critical"}`:    "0",
				`baremetal_node_hottest_celsius{node="hm-ok"}`:            "41.5",
				`baremetal_node_fans_failed{node="hm-ok"}`:                "0",
				`baremetal_node_psus_failed{node="hm-ok"}`:                "0",
				`baremetal_node_health{node="hm-hot",state="critical"}`:   "1",
				`baremetal_node_health{node="hm-hot",state="ok"}`:         "0",
				`baremetal_node_hottest_celsius{node="hm-hot"}`:           "92",
				`baremetal_node_fans_failed{node="hm-hot"}`:               "1",
				`baremetal_node_psus_failed{node="hm-hot"}`:               "2",
				`baremetal_node_health{node="hm-never",state="unknown"}`:  "1",
				`baremetal_node_health{node="hm-never",state="ok"}`:       "0",
				`baremetal_node_health{node="hm-p2",state="warning"}`:     "1",
				`baremetal_node_fans_failed{node="hm-p2"}`:                "1",
				`baremetal_node_health{node="hm-p2",state="unknown"}`:     "0",
				`baremetal_node_health{node="hm-hot",state="warning"}`:    "0",
				`baremetal_node_health{node="hm-never",state="critical"}`: "0",
				`baremetal_node_health{node="hm-ok",state="unknown"}`:     "0",
				`baremetal_node_health{node="hm-ok",state="warning"}`:     "0",
				`baremetal_node_health{node="hm-never",state="warning"}`:  "0",
				`baremetal_node_health{node="hm-p2",state="ok"}`:          "0",
				`baremetal_node_health{node="hm-p2",state="critical"}`:    "0",
				`baremetal_node_health{node="hm-hot",state="unknown"}`:    "0",
				`baremetal_node_psus_failed{node="hm-p2"}`:                "0",
			}
			for _, tok := range []string{monitor, adminSecret} {
				r := e.do("GET", "/v1/metrics/nodes", tok, "")
				if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
					t.Fatalf("GET /v1/metrics/nodes: %d %s: %s", r.status, r.header.Get("Content-Type"), r.body)
				}
				got := samples(t, r.body)
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s = %q, want %s", k, got[k], v)
					}
				}
				// Exactly these: four health states a node, the other
				// gauges only where something was read (no 0 °C for a
				// node without a temperature, no 0 failed fans for one
				// never read).
				if len(got) != len(want) {
					t.Errorf("%d series, want %d:\n%s", len(got), len(want), r.body)
				}
			}

			// A member may not see the fleet's node names; no token, no
			// metrics. Both are problem documents.
			for _, c := range []struct {
				token  string
				status int
			}{{e.member, 403}, {"", 401}, {"bmt_not-a-real-token", 401}} {
				r := e.do("GET", "/v1/metrics/nodes", c.token, "")
				if r.status != c.status {
					t.Fatalf("GET /v1/metrics/nodes as %q: %d, want %d", c.token, r.status, c.status)
				}
				r.problem(t)
			}

			// The monitor lists every node as a member sees one: no BMC
			// details, no error text, no instance ids.
			var list api.NodeList
			e.mustJSON("GET", "/v1/nodes?limit=100", monitor, "", 200, &list)
			names := map[string]api.Node{}
			for _, n := range list.Items {
				names[n.Name] = n
			}
			if len(names) != 4 {
				t.Fatalf("monitor lists %d nodes, want 4: %v", len(names), names)
			}
			if hot := names["hm-hot"]; hot.BMC != nil || hot.LastError != "" || hot.Health.State != "critical" || hot.Fault != api.Fault(baremetal.FaultHardwareCritical) {
				t.Fatalf("monitor's view of hm-hot: %+v", hot)
			}
			// Owned, but not said by whom.
			if p2 := names["hm-p2"]; p2.Owner != "another project" {
				t.Fatalf("monitor's view of hm-p2's owner: %q", p2.Owner)
			}
			// And changes nothing, nor reads beyond its two routes.
			for _, c := range []struct{ method, path, body string }{
				{"POST", "/v1/nodes", nodeBody("hm-new")},
				{"PATCH", "/v1/nodes/hm-ok", `{"maintenance":true,"maintenance_reason":"x"}`},
				{"DELETE", "/v1/nodes/hm-ok", ""},
				{"POST", "/v1/nodes/hm-ok/power", `{"target":"off"}`},
				{"POST", "/v1/instances", `{"name":"x","resource_class":"gpu","image":{"url":"https://i/x"}}`},
				{"POST", "/v1/tokens", `{"role":"admin","name":"escalate"}`},
				{"PUT", "/v1/quotas/p1", `{"instances":5}`},
				{"GET", "/v1/nodes/hm-ok", ""},
				{"GET", "/v1/instances", ""},
				{"GET", "/v1/tokens", ""},
			} {
				r := e.do(c.method, c.path, monitor, c.body)
				if r.status != 403 {
					t.Errorf("%s %s as monitor: %d, want 403: %s", c.method, c.path, r.status, r.body)
					continue
				}
				r.problem(t)
			}
			if n, err := e.st.GetNode(context.Background(), "hm-ok"); err != nil || n.Maintenance {
				t.Fatalf("hm-ok after the monitor's attempts: maintenance %v, %v", n != nil && n.Maintenance, err)
			}

			// The public /metrics names no node, health recorded or not.
			r := e.do("GET", "/metrics", "", "")
			if r.status != 200 {
				t.Fatalf("GET /metrics: %d", r.status)
			}
			if m := regexp.MustCompile(`\bnode="|hm-|baremetal_node_(health|hottest|fans|psus)`).Find(r.body); m != nil {
				t.Fatalf("the public /metrics names a node (%q):\n%s", m, r.body)
			}
		})
	}
}
