package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// BenchmarkServePowerSync drives the real `controller serve` process, not
// the in-process pass: it enrolls a fleet of simulated BMCs through the
// API, lets the periodic power sync fan out into power_sync_batch jobs as
// in production, then makes a share of the BMCs hang and times the first
// pass after that from the controller's own
// baremetal_power_sync_pass_duration_seconds. It prints, per store and
// share of hung BMCs: the enroll rate, the healthy pass, the first pass
// with hung BMCs, and how far above "healthy + one --bmc-timeout" that is.
//
//	go test -run '^$' -bench ServePowerSync -benchtime 1x -timeout 60m ./controller
//
// BENCH_NODES (default 10000) sets the fleet size, BENCH_BMC_LATENCY
// (default 0) the simulated BMCs' answer time.
func BenchmarkServePowerSync(b *testing.B) {
	nodes := 10000
	if v, err := strconv.Atoi(os.Getenv("BENCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	var latency time.Duration
	if v, err := time.ParseDuration(os.Getenv("BENCH_BMC_LATENCY")); err == nil {
		latency = v
	}
	for _, db := range []string{"sqlite", "postgres"} {
		for _, pct := range []int{0, 1, 10} {
			b.Run(fmt.Sprintf("%s/nodes=%d/hung=%d%%", db, nodes, pct), func(b *testing.B) {
				for range b.N {
					benchServePass(b, db, nodes, pct, latency)
				}
			})
		}
	}
}

const (
	benchBMCTimeout   = 5 * time.Second
	benchSyncInterval = 20 * time.Second
)

func benchServePass(b *testing.B, db string, nodes, hungPct int, latency time.Duration) {
	fleet, err := sim.Start(sim.Options{Systems: nodes, Latency: latency})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = fleet.Close() })
	// One simulated BMC per 250 systems, on its own loopback address: the
	// controller caps concurrent requests per BMC (64), and a fleet behind
	// one address would measure that cap, not the pass.
	bmcs := []string{fleet.URL()}
	for i := 2; len(bmcs)*250 < nodes; i++ {
		u, err := fleet.ServeAlso(fmt.Sprintf("127.0.%d.%d:0", i/250, i%250+1))
		if err != nil {
			b.Fatal(err)
		}
		bmcs = append(bmcs, u)
	}
	dbURL := ""
	if db == "postgres" {
		dbURL = storetest.PostgresURL(b)
	}
	p := startServe(b, b.TempDir(), dbURL)

	// Enroll through the API, 16 clients at once.
	sys := fleet.SystemIDs()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(sys) {
					return
				}
				body := fmt.Sprintf(`{"name":"bench-%05d","driver":"redfish","resource_class":"baremetal",
					"bmc":{"address":%q,"username":"admin","password":"password","system_id":%q}}`, i, bmcs[i%len(bmcs)], sys[i])
				if err := p.post("/v1/nodes", body, http.StatusCreated); err != nil {
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
	enrolled := time.Since(start)
	p.waitMetric(b, `baremetal_nodes{provision_state="available"}`, float64(nodes), 10*time.Minute)
	verified := time.Since(start)

	// A whole healthy pass that began after every node was available.
	healthy := p.waitPasses(b, 2, 5*time.Minute)

	const failed = `baremetal_power_sync_nodes_total{result="failed"}`
	failedBefore := p.metrics(b)[failed]
	hungNodes := nodes * hungPct / 100
	for i := range hungNodes {
		if err := fleet.SetFault(sys[i], sim.FaultHang); err != nil {
			b.Fatal(err)
		}
	}
	// The next pass starts at the next interval, after the faults are set.
	hung := p.waitPasses(b, 1, 10*time.Minute)
	// Its batches did not wait for the hung reads; those end by
	// --bmc-timeout and are recorded in the background. The whole pass,
	// hung reads included, ends when the last of them is counted.
	passStart := time.Now().Add(-time.Duration(hung * float64(time.Second)))
	p.waitMetric(b, failed, failedBefore+float64(hungNodes), 10*time.Minute)
	whole := time.Since(passStart).Seconds()

	b.ReportMetric(float64(nodes)/enrolled.Seconds(), "enrolls/s")
	b.ReportMetric(float64(nodes)/verified.Seconds(), "available/s")
	b.ReportMetric(healthy, "healthy-pass-s")
	b.ReportMetric(hung, "hung-pass-s")
	b.ReportMetric(whole, "whole-pass-s")
	b.ReportMetric(whole-(healthy+benchBMCTimeout.Seconds()), "s-over-healthy+timeout")
	b.Logf("%s, %d nodes, %d%% hung, bmc-timeout %s: enroll %.0f/s (all available after %s); healthy pass %.2f s; "+
		"first pass with hung BMCs: batches done in %.2f s, hung reads recorded by %.2f s (healthy + timeout = %.2f s; 0.2 s polling)",
		p.db, nodes, hungPct, benchBMCTimeout, float64(nodes)/enrolled.Seconds(), verified.Round(time.Millisecond),
		healthy, hung, whole, healthy+benchBMCTimeout.Seconds())
}

type serveProc struct {
	cmd  *exec.Cmd
	url  string
	db   string
	mu   sync.Mutex
	logs bytes.Buffer
}

func startServe(b *testing.B, dataDir, dbURL string) *serveProc {
	b.Helper()
	addr := freePort(b)
	args := []string{"serve", "--listen", addr, "--data-dir", dataDir, "--bootstrap-token", testToken,
		"--power-sync-interval", benchSyncInterval.String(), "--bmc-timeout", benchBMCTimeout.String(),
		"--log-level", "warn"}
	p := &serveProc{url: "http://" + addr, db: "sqlite"}
	if dbURL != "" {
		args = append(args, "--database-url", dbURL)
		p.db = "postgres"
	}
	p.cmd = exec.Command(controllerBinary(b), args...)
	p.cmd.Stdout = lockedBuffer{&p.mu, &p.logs}
	p.cmd.Stderr = lockedBuffer{&p.mu, &p.logs}
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if b.Failed() {
			p.mu.Lock()
			b.Logf("controller log:\n%s", tail(p.logs.String(), 6000))
			p.mu.Unlock()
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if res, err := http.Get(p.url + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("controller did not become ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *serveProc) post(path, body string, want int) error {
	req, err := http.NewRequest(http.MethodPost, p.url+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		return fmt.Errorf("POST %s: %d, want %d: %s", path, res.StatusCode, want, msg)
	}
	return nil
}

// metrics reads the controller's /metrics as name{labels} → value.
func (p *serveProc) metrics(b *testing.B) map[string]float64 {
	b.Helper()
	res, err := http.Get(p.url + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

func (p *serveProc) waitMetric(b *testing.B, name string, want float64, timeout time.Duration) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := p.metrics(b)[name] // absent (a counter never incremented) counts as 0
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s = %v after %s, want %v", name, got, timeout, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

type passCounter struct {
	count int
	sum   float64
}

func (p *serveProc) passes(b *testing.B) passCounter {
	b.Helper()
	m := p.metrics(b)
	return passCounter{
		count: int(m["baremetal_power_sync_pass_duration_seconds_count"]),
		sum:   m["baremetal_power_sync_pass_duration_seconds_sum"],
	}
}

// waitPasses waits until n more passes have been timed and returns the
// duration of the last one, in seconds. It polls far more often than
// passes end (every interval), so each increment is one pass.
func (p *serveProc) waitPasses(b *testing.B, n int, timeout time.Duration) float64 {
	b.Helper()
	deadline := time.Now().Add(timeout)
	prev := p.passes(b)
	want := prev.count + n
	last := 0.0
	for {
		cur := p.passes(b)
		if cur.count > prev.count {
			last = (cur.sum - prev.sum) / float64(cur.count-prev.count)
			prev = cur
		}
		if cur.count >= want {
			return last
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d power sync passes after %s", cur.count, want, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
