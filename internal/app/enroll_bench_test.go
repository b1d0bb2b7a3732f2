package app_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// BenchmarkEnroll enrolls a fleet through the HTTP API (POST /v1/nodes,
// 16 clients at once, as the load generator of the serve benchmark) on
// SQLite and on PostgreSQL, and waits until every node is available
// (verified by its enroll where its BMC answered within the enroll's
// bound, else by its verify job). It prints the enroll rate, the rate to available,
// and the process's CPU time per node: the CPU of the whole process
// (controller, HTTP clients and simulated BMCs) from the first POST until
// the last node is available, divided by the nodes. Wall-clock rates
// depend on what else the machine runs; the CPU per node much less.
// One round per run (b.N is not used: the setup dominates).
//
//	go test -run '^$' -bench Enroll -benchtime 1x ./internal/app
//
// BENCH_NODES (default 2000) sets the fleet size; BENCH_BMC_LATENCY (a
// duration, default none) delays every request of the simulated BMCs, as
// real BMCs answer in tens or hundreds of milliseconds; BENCH_BMCS
// (default 1) spreads the systems over that many simulated BMCs (each
// its own address): the Redfish driver keeps at most 64 requests in
// flight per BMC, which with one address and slow answers bounds the
// rate, while real nodes each have a BMC of their own. -cpuprofile shows
// where the CPU goes.
func BenchmarkEnroll(b *testing.B) {
	nodes := 2000
	if v, err := strconv.Atoi(os.Getenv("BENCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	var latency time.Duration
	if v := os.Getenv("BENCH_BMC_LATENCY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("BENCH_BMC_LATENCY: %v", err)
		}
		latency = d
	}
	bmcs := 1
	if v, err := strconv.Atoi(os.Getenv("BENCH_BMCS")); err == nil && v > 0 {
		bmcs = min(v, nodes)
	}
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(fmt.Sprintf("%s/nodes=%d", name, nodes), func(b *testing.B) {
			for range b.N {
				benchEnroll(b, benchStores[name](b), nodes, bmcs, latency)
			}
		})
	}
}

func benchEnroll(b *testing.B, dbURL string, nodes, bmcs int, latency time.Duration) {
	// No power sync pass during the run: it would time the pass, not the
	// enroll.
	envSystems := nodes
	if bmcs > 1 {
		envSystems = 1 // the nodes' BMCs are the fleets started below
	}
	env := testenv.Start(b, testenv.Options{Systems: envSystems, PowerSyncInterval: time.Hour, DatabaseURL: dbURL,
		SimOptions: sim.Options{ServiceLatency: latency}})
	// Node i's BMC: address and system id.
	addr, sys := make([]string, nodes), make([]string, nodes)
	if bmcs == 1 {
		for i, id := range env.Sim.SystemIDs() {
			addr[i], sys[i] = env.Sim.URL(), id
		}
	} else {
		per := (nodes + bmcs - 1) / bmcs
		for f := range bmcs {
			fleet, err := sim.Start(sim.Options{Systems: per, ServiceLatency: latency})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = fleet.Close() })
			for j, id := range fleet.SystemIDs() {
				if i := f*per + j; i < nodes {
					addr[i], sys[i] = fleet.URL(), id
				}
			}
		}
	}
	const clients = 16
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	// The leader's start-up pass (RunOnStart) comes once River has elected
	// it, which can be seconds after the start: wait for it, or it reads
	// the power of the nodes being enrolled in the middle of the run.
	for waited := time.Now(); countJobs(b, env, `kind = 'power_sync' AND state = 'completed'`) == 0; {
		if time.Since(waited) > time.Minute {
			b.Fatal("no power sync pass within a minute of the start")
		}
		time.Sleep(20 * time.Millisecond)
	}

	b.ResetTimer()
	cpu0, start := cpuTime(), time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= nodes {
					return
				}
				body := fmt.Sprintf(`{"name":"bench-%05d","driver":"redfish","resource_class":"baremetal",
					"bmc":{"address":%q,"username":"admin","password":"password","system_id":%q}}`, i, addr[i], sys[i])
				if err := postNode(client, env, body); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	enrolled, cpuEnrolled := time.Since(start), cpuTime()-cpu0
	// Wait on River's jobs still to finish (the verify jobs: the only
	// kind this run queues), counted on River's state index alone, and
	// count the nodes only when none is left: counting the nodes reads
	// every node row, and doing that every 20 ms for the whole run was a
	// good part of the process CPU this benchmark reports (0.13 ms per
	// node of 5,000), work of the benchmark, not of the controller. A job
	// completes after its node's write has committed, so the time is at
	// most the completer's batching late.
	for {
		avail := -1
		if countJobs(b, env, pendingJobs) == 0 {
			avail = availableNodes(b, env)
			if avail == nodes {
				break
			}
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("only %d of %d nodes available after 10 minutes (-1: jobs still pending)", avail, nodes)
		}
		time.Sleep(20 * time.Millisecond)
	}
	verified, cpuVerified := time.Since(start), cpuTime()-cpu0
	b.StopTimer()

	b.ReportMetric(float64(nodes)/enrolled.Seconds(), "enrolls/s")
	b.ReportMetric(float64(nodes)/verified.Seconds(), "available/s")
	b.ReportMetric(float64(cpuEnrolled.Microseconds())/1000/float64(nodes), "cpu-ms/enroll")
	b.ReportMetric(float64(cpuVerified.Microseconds())/1000/float64(nodes), "cpu-ms/available")
	wait, run := verifyTimes(b, env)
	// Nodes whose BMC answered within the enroll's bound were verified by
	// the enroll itself: only the others had a verify job.
	jobsSaid := fmt.Sprintf("%d verified by their enroll, %d by a verify job", nodes-len(run), len(run))
	if len(run) > 0 {
		jobsSaid += fmt.Sprintf(" (queued before their start p50 %.0f ms p90 %.0f ms, ran p50 %.1f ms p90 %.1f ms)",
			pct(wait, 50), pct(wait, 90), pct(run, 50), pct(run, 90))
	}
	b.Logf("%d nodes, %d clients, %d BMC addresses, BMC latency %s: enrolled in %s (%.0f/s), all available after %s (%.0f/s); process CPU %.2f ms per node until enrolled, %.2f ms until available; %s",
		nodes, clients, bmcs, latency, enrolled.Round(time.Millisecond), float64(nodes)/enrolled.Seconds(), verified.Round(time.Millisecond),
		float64(nodes)/verified.Seconds(), float64(cpuEnrolled.Microseconds())/1000/float64(nodes),
		float64(cpuVerified.Microseconds())/1000/float64(nodes), jobsSaid)
}

// pendingJobs selects the jobs not yet finished. The condition is on the
// state alone, so that their count reads River's fetch index and no job
// row (with kind = 'verify' it read every pending row, ~40 ms of CPU a
// second with 2,000 of them).
const pendingJobs = `state IN ('available', 'pending', 'retryable', 'running', 'scheduled')`

// countJobs counts River's jobs matching where.
func countJobs(b testing.TB, env *testenv.Env, where string) int {
	b.Helper()
	q := `SELECT count(*) FROM river_job WHERE ` + where
	var n int
	var err error
	switch db := env.App.Store.ReadNative().(type) {
	case *sql.DB:
		err = db.QueryRowContext(context.Background(), q).Scan(&n)
	case *pgxpool.Pool:
		err = db.QueryRow(context.Background(), q).Scan(&n)
	default:
		err = fmt.Errorf("store %T: no SQL handle", db)
	}
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// availableNodes counts the nodes in state available.
func availableNodes(b *testing.B, env *testenv.Env) int {
	b.Helper()
	counts, err := env.App.Store.CountNodes(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	avail := 0
	for _, c := range counts {
		if c.ProvisionState == baremetal.StateAvailable {
			avail += c.Count
		}
	}
	return avail
}

// verifyTimes reads, from River's job table, how long each finished
// verify job waited from its insert to its start and how long it ran, in
// milliseconds: which of the two limits the rate to available.
func verifyTimes(b *testing.B, env *testenv.Env) (wait, run []float64) {
	b.Helper()
	q := `SELECT (julianday(attempted_at) - julianday(created_at)) * 86400000, (julianday(finalized_at) - julianday(attempted_at)) * 86400000
		FROM river_job WHERE kind = 'verify' AND state = 'completed'`
	if env.App.Store.Dialect() == "postgres" {
		q = `SELECT extract(epoch FROM attempted_at - created_at) * 1000, extract(epoch FROM finalized_at - attempted_at) * 1000
			FROM river_job WHERE kind = 'verify' AND state = 'completed'`
	}
	scan := func(next func() bool, sc func(...any) error, err func() error) {
		for next() {
			var w, r float64
			if e := sc(&w, &r); e != nil {
				b.Fatal(e)
			}
			wait, run = append(wait, w), append(run, r)
		}
		if e := err(); e != nil {
			b.Fatal(e)
		}
	}
	switch db := env.App.Store.ReadNative().(type) {
	case *sql.DB:
		rows, err := db.QueryContext(context.Background(), q)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		scan(rows.Next, rows.Scan, rows.Err)
	case *pgxpool.Pool:
		rows, err := db.Query(context.Background(), q)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		scan(rows.Next, rows.Scan, rows.Err)
	}
	slices.Sort(wait)
	slices.Sort(run)
	return wait, run
}

func pct(sorted []float64, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

func postNode(client *http.Client, env *testenv.Env, body string) error {
	req, err := http.NewRequest(http.MethodPost, env.URL+"/v1/nodes", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST /v1/nodes: %d: %s", res.StatusCode, msg)
	}
	return nil
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
