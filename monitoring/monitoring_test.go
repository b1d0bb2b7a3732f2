// Package monitoring_test checks the Grafana dashboard and the Prometheus
// alert rules in this directory against a real controller's /metrics: a
// renamed metric or label must fail here, not on an operator's screen.
package monitoring_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// expr is one PromQL expression and where it is used.
type expr struct{ where, q string }

type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // collapsed rows
}

func dashboardExprs(t *testing.T) []expr {
	t.Helper()
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("grafana-dashboard.json: uid %q, title %q, %d panels", d.UID, d.Title, len(d.Panels))
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	if !vars["datasource"] {
		t.Error("grafana-dashboard.json: no datasource variable (panels name ${datasource})")
	}
	var out []expr
	ids := map[int]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
			}
			ids[p.ID] = true
			if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
				t.Errorf("panel %q: no gridPos", p.Title)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: datasource is not ${datasource}", p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q target %s: empty expr", p.Title, tg.RefID)
				}
				out = append(out, expr{"panel " + p.Title, tg.Expr})
			}
		}
	}
	walk(d.Panels)
	return out
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func ruleExprs(t *testing.T) []expr {
	t.Helper()
	b, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true) // a misspelt key is an error, as in Prometheus
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	var out []expr
	seen := map[string]bool{}
	for _, g := range f.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("alerts.yml: group %q is unnamed or empty", g.Name)
		}
		for _, r := range g.Rules {
			if r.Alert == "" || seen[r.Alert] {
				t.Errorf("alerts.yml: alert name %q empty or used twice", r.Alert)
			}
			seen[r.Alert] = true
			if d, err := time.ParseDuration(r.For); err != nil || d <= 0 {
				t.Errorf("alert %s: for %q is not a duration", r.Alert, r.For)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alert %s: needs labels.severity and annotations.summary", r.Alert)
			}
			out = append(out, expr{"alert " + r.Alert, r.Expr})
		}
	}
	if len(out) == 0 {
		t.Fatal("alerts.yml has no rules")
	}
	return out
}

var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	metricRef  = regexp.MustCompile(`\b(?:baremetal|process|go)_[a-zA-Z0-9_]+`)
	selector   = regexp.MustCompile(`\b((?:baremetal|process|go)_[a-zA-Z0-9_]+)\{([^}]*)\}`)
	matcher    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	grouping   = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	onlyVector = regexp.MustCompile(`^vector\(\$[a-z_]+\)$`)
)

// balanced reports whether (), [] and {} nest properly outside strings.
func balanced(q string) bool {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	for _, c := range quoted.ReplaceAllString(q, `""`) {
		switch c {
		case '(', '[', '{':
			stack = append(stack, c)
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0
}

// scrape reads a metrics endpoint (/metrics, or with a token
// /v1/metrics/nodes): every series name with the label names it has.
func scrape(t *testing.T, url, path, token string) map[string]map[string]bool {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	out := map[string]map[string]bool{}
	sample := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s`)
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := sample.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if out[m[1]] == nil {
			out[m[1]] = map[string]bool{}
		}
		for _, l := range label.FindAllStringSubmatch(m[2], -1) {
			out[m[1]][l[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDashboardAndAlertsUseServedMetrics runs a controller through what
// makes its metrics appear (enrolment, power sync passes, a BMC fault,
// API requests, health reads), then checks every metric and label that a
// dashboard query or an alert names against its /metrics and, for the
// per-node series, GET /v1/metrics/nodes.
func TestDashboardAndAlertsUseServedMetrics(t *testing.T) {
	exprs := append(dashboardExprs(t), ruleExprs(t)...)

	env := testenv.Start(t, testenv.Options{Systems: 2, PowerSyncInterval: 300 * time.Millisecond, HealthInterval: 300 * time.Millisecond})
	nodes := env.EnrollNodes(t, 2, "mon", "baremetal")
	// A faulted node exports baremetal_nodes_faulted and failed BMC calls.
	if err := env.Sim.SetFault(env.Sim.SystemIDs()[0], sim.FaultDown); err != nil {
		t.Fatal(err)
	}
	env.WaitNode(t, nodes[0].ID, 30*time.Second, func(n *baremetal.Node) bool { return n.Fault != baremetal.FaultNone })
	req, _ := http.NewRequest(http.MethodGet, env.URL+"/v1/nodes", nil)
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	// The healthy node's health is read: its temperatures, fans and
	// power supplies become per-node series.
	env.WaitNode(t, nodes[1].ID, 30*time.Second, func(n *baremetal.Node) bool { return n.Health.ReadAt != nil })
	// The pass histogram is observed when a whole pass has finished.
	var served map[string]map[string]bool
	deadline := time.Now().Add(30 * time.Second)
	for {
		served = scrape(t, env.URL, "/metrics", "")
		if served["baremetal_power_sync_pass_duration_seconds_count"] != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The public /metrics names no node, even with node health recorded.
	for name, labels := range served {
		if labels["node"] || strings.HasPrefix(name, "baremetal_node_") {
			t.Errorf("the public /metrics serves %s with labels %v: a per-node series", name, labels)
		}
	}
	perNode := scrape(t, env.URL, "/v1/metrics/nodes", env.AdminToken)
	for name, labels := range perNode {
		if served[name] != nil {
			t.Errorf("%s is both in /metrics and in /v1/metrics/nodes", name)
		}
		served[name] = labels
	}

	used := map[string]bool{}
	for _, e := range exprs {
		if !balanced(e.q) {
			t.Errorf("%s: unbalanced brackets in %q", e.where, e.q)
		}
		bare := quoted.ReplaceAllString(e.q, `""`)
		names := metricRef.FindAllString(bare, -1)
		if len(names) == 0 && !onlyVector.MatchString(strings.TrimSpace(e.q)) {
			t.Errorf("%s: names no metric of the controller: %q", e.where, e.q)
		}
		labels := map[string]bool{}
		for _, n := range names {
			used[n] = true
			if served[n] == nil {
				t.Errorf("%s: %s is not in /metrics", e.where, n)
				continue
			}
			for l := range served[n] {
				labels[l] = true
			}
		}
		// Label matchers name labels of their own metric.
		for _, s := range selector.FindAllStringSubmatch(e.q, -1) {
			for _, m := range matcher.FindAllStringSubmatch(quoted.ReplaceAllString(s[2], `""`), -1) {
				if served[s[1]] != nil && !served[s[1]][m[1]] {
					t.Errorf("%s: %s has no label %q in /metrics", e.where, s[1], m[1])
				}
			}
		}
		// by (...) / without (...) name labels some metric of the query has.
		for _, g := range grouping.FindAllStringSubmatch(bare, -1) {
			for _, l := range strings.Split(g[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !labels[l] {
					t.Errorf("%s: groups by %q, a label none of its metrics has", e.where, l)
				}
			}
		}
	}
	var list []string
	for n := range used {
		list = append(list, n)
	}
	sort.Strings(list)
	t.Logf("%d queries use %d metrics: %s", len(exprs), len(list), strings.Join(list, ", "))
}
