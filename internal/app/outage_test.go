package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testlog"
)

// TestDatabaseOutage stops the controller's PostgreSQL (a private cluster)
// under load and starts it again. While it is down every API call answers
// 503 unavailable with Retry-After (the bearer-token lookup included),
// /readyz 503 and /healthz 200, and the outage is logged once. Once it is
// back the same controller answers again without a restart, and the node
// cleanups queued before the outage all complete.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	const systems = 3
	cluster := storetest.StartCluster(t)
	logs := &testlog.Buffer{}
	env := testenv.Start(t, testenv.Options{Systems: systems, DatabaseURL: cluster.URL("postgres"),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	var nodes []api.Node
	for i := range systems {
		nodes = append(nodes, enroll(admin, env, i, fmt.Sprintf("out-%d", i), "c"))
	}
	var insts []api.Instance
	for i := range systems {
		insts = append(insts, createInstance(member, fmt.Sprintf("vm-%d", i), "c"))
	}
	for _, n := range nodes {
		admin.waitNode(n.ID, 60*time.Second, false, func(n api.Node) bool { return n.ProvisionState == "active" })
	}
	// The cleanups cannot finish before the outage: their BMCs are down,
	// so they fail and wait to be retried.
	for i := range systems {
		if err := env.Sim.SetFault(env.Sim.SystemIDs()[i], sim.FaultDown); err != nil {
			t.Fatal(err)
		}
		member.call("DELETE", "/v1/instances/"+insts[i].ID, "", 202, nil)
	}

	cluster.Stop(t, "fast")
	// Load: admin (cached token) and member calls, reads and a write, and
	// a token never seen before, whose lookup needs the database. Bounded
	// in time; every answer must be a proper 503.
	type call struct{ method, path, token, body string }
	calls := []call{
		{"GET", "/v1/nodes", admin.token, ""},
		{"GET", "/v1/nodes/" + nodes[0].ID, admin.token, ""},
		{"GET", "/v1/instances", member.token, ""},
		{"PATCH", "/v1/nodes/" + nodes[1].ID, admin.token, `{"maintenance":true,"maintenance_reason":"x"}`},
		{"GET", "/v1/nodes", "bmt_never-issued-token-0123456789", ""},
		{"GET", "/v1/jobs", admin.token, ""},
	}
	var (
		mu      sync.Mutex
		bad     []string
		answers int
		wg      sync.WaitGroup
	)
	until := time.Now().Add(8 * time.Second)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; time.Now().Before(until); i++ {
				c := calls[i%len(calls)]
				status, retryAfter, p, err := send(c.method, env.URL+c.path, c.token, c.body)
				mu.Lock()
				answers++
				if err != nil || status != 503 || p.Code != "unavailable" || retryAfter == "" {
					bad = append(bad, fmt.Sprintf("%s %s: %d %q Retry-After=%q err=%v", c.method, c.path, status, p.Code, retryAfter, err))
				}
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	if status, retryAfter, _, err := send("GET", env.URL+"/readyz", "", ""); err != nil || status != 503 || retryAfter == "" {
		t.Errorf("/readyz during the outage: %d Retry-After=%q %v", status, retryAfter, err)
	}
	if status, _, _, err := send("GET", env.URL+"/healthz", "", ""); err != nil || status != 200 {
		t.Errorf("/healthz during the outage: %d %v", status, err)
	}
	// The BMCs heal while the database is away: only the database keeps
	// the cleanups from finishing now.
	for i := range systems {
		if err := env.Sim.SetFault(env.Sim.SystemIDs()[i], sim.FaultNone); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of %d answers during the outage were not 503 unavailable with Retry-After, e.g. %s", len(bad), answers, bad[0])
	}

	cluster.Start(t)
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, _, _, err := send("GET", env.URL+"/v1/nodes", admin.token, "")
		if err == nil && status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the controller did not recover after the database came back: %d %v", status, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	admin.call("GET", "/readyz", "", 200, nil)
	for _, n := range nodes {
		admin.waitNode(n.ID, 120*time.Second, false, available)
	}
	var jobs api.JobList
	admin.call("GET", "/v1/jobs?state=discarded", "", 200, &jobs)
	if len(jobs.Items) > 0 {
		t.Errorf("jobs discarded across the outage: %+v", jobs.Items)
	}

	for !strings.Contains(logs.String(), `msg="database reachable again"`) {
		if time.Now().After(deadline) {
			t.Fatal("the end of the outage was never logged")
		}
		time.Sleep(50 * time.Millisecond)
	}
	l := logs.String()
	if n := strings.Count(l, `msg="database unreachable"`); n != 1 {
		t.Errorf("the outage was logged %d times, want once", n)
	}
	if n := strings.Count(l, `msg="database reachable again"`); n != 1 {
		t.Errorf("the end of the outage was logged %d times, want once", n)
	}
	// The job runner saw the database come back too (deploy agents'
	// silence counts from then), whether its heartbeat failed or hung
	// through the outage.
	for !strings.Contains(logs.String(), `msg="replica heartbeat recorded again"`) {
		if time.Now().After(deadline) {
			t.Fatal("the job runner did not record the database's return")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := strings.Count(l, `msg="internal error"`) + strings.Count(l, `msg="request failed"`); n > 0 {
		t.Errorf("%d per-request error lines during the outage", n)
	}
}

// send makes one request and returns its status, Retry-After and problem
// document (if it was one).
func send(method, url, token, body string) (int, string, api.Problem, error) {
	var rdr io.Reader
	if body != "" {
		rdr = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rdr)
	if err != nil {
		return 0, "", api.Problem{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", api.Problem{}, err
	}
	defer res.Body.Close()
	var p api.Problem
	if res.Header.Get("Content-Type") == api.ProblemContentType {
		_ = json.NewDecoder(res.Body).Decode(&p)
	}
	return res.StatusCode, res.Header.Get("Retry-After"), p, nil
}
