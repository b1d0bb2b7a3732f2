package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apitest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// These tests run the real controller binary as separate processes and
// SIGKILL them mid-job: what a crash or a lost replica looks like.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func controllerBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "controller-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "controller")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

const testToken = "bmt_process-test-admin-token"

type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	logs *bytes.Buffer
	mu   *sync.Mutex
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// serveArgs are the flags of `controller serve` in these tests.
func serveArgs(addr, dataDir, dbURL string) []string {
	args := []string{"serve", "--listen", addr, "--data-dir", dataDir, "--bootstrap-token", testToken,
		"--power-sync-interval", "1s", "--bmc-timeout", "1s", "--max-backoff", "1s", "--fault-threshold", "2",
		"--power-change-timeout", "5s", "--log-level", "debug",
		// The deploys here use a made-up image URL the sim does not fetch.
		"--image-check=false"}
	if dbURL != "" {
		args = append(args, "--database-url", dbURL)
	}
	return args
}

// startController runs `controller serve` and waits until /readyz answers.
func startController(t *testing.T, dataDir, dbURL string) *proc {
	t.Helper()
	return startControllerUmask(t, dataDir, dbURL, "")
}

// startControllerUmask is startController with the process's umask set
// (through sh, which then execs the controller: the pid is the
// controller's); "" keeps the test's.
func startControllerUmask(t *testing.T, dataDir, dbURL, umask string) *proc {
	t.Helper()
	addr := freePort(t)
	args := serveArgs(addr, dataDir, dbURL)
	cmd := exec.Command(controllerBinary(t), args...)
	if umask != "" {
		cmd = exec.Command("sh", append([]string{"-c", "umask " + umask + " && exec \"$0\" \"$@\"", controllerBinary(t)}, args...)...)
	}
	p := &proc{t: t, cmd: cmd, url: "http://" + addr, logs: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Stdout = lockedBuffer{p.mu, p.logs}
	cmd.Stderr = lockedBuffer{p.mu, p.logs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("controller %s log:\n%s", addr, tail(p.logs.String(), 6000))
			p.mu.Unlock()
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(p.url + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("controller did not become ready: %s", tail(p.logs.String(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// kill sends SIGKILL: no graceful shutdown, jobs die mid-flight.
func (p *proc) kill() {
	if p.cmd.Process != nil && p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

func (p *proc) call(method, path, body string, want int, out any) {
	p.t.Helper()
	apitest.Client{T: p.t, URL: p.url, Token: testToken}.Call(method, path, body, want, out)
}

func (p *proc) node(id string) api.Node {
	var n api.Node
	p.call("GET", "/v1/nodes/"+id, "", 200, &n)
	return n
}

func (p *proc) waitNode(id string, timeout time.Duration, cond func(api.Node) bool) api.Node {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n := p.node(id)
		if cond(n) {
			return n
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("node %s: condition not met in %s; state=%s fault=%q last_error=%q", n.Name, timeout, n.ProvisionState, n.Fault, n.LastError)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitJobRunning waits until a job of kind runs for the node and returns it.
func (p *proc) waitJobRunning(nodeID, kind string, timeout time.Duration) api.Job {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var jl api.JobList
		p.call("GET", "/v1/jobs?state=running&node_id="+nodeID, "", 200, &jl)
		for _, j := range jl.Items {
			if j.Kind == kind {
				return j
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.t.Fatalf("no running %s job for node %s within %s", kind, nodeID, timeout)
	return api.Job{}
}

// riverRescueAfter is how long after an attempt started River's own
// rescuer could first run it again, with startController's flags: its
// RescueStuckJobsAfter is the job timeout (--power-change-timeout 5s +
// 8 x --bmc-timeout 1s + 30s) plus 15s, and it looks only every 30s. The
// crash tests wait for the re-run until a little before that, so only our
// recovery (heartbeats, the SQLite start) can pass them: the bound proves
// the mechanism, it is not the target. The measured times are logged; the
// targets (<= 10s after the restart on SQLite, <= 40s after the replica
// died on PostgreSQL) are in the README.
const riverRescueAfter = 58 * time.Second

// waitRerun waits until job (seen running at seen) has started a later
// attempt, at most until River's rescuer could have been the one to do it.
func (p *proc) waitRerun(job api.Job, seen time.Time) {
	p.t.Helper()
	deadline := seen.Add(riverRescueAfter - 3*time.Second)
	for {
		var jl api.JobList
		p.call("GET", "/v1/jobs?node_id="+job.NodeID, "", 200, &jl)
		for _, j := range jl.Items {
			if j.ID == job.ID && j.Attempt > job.Attempt {
				// Our rescue says why; River's would say "Stuck job
				// rescued by JobRescuer".
				if !strings.Contains(j.LastError, "stopped") {
					p.t.Errorf("job %d re-run with last error %q, want our rescue's", j.ID, j.LastError)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("job %d (%s) not run again within %s of its start: jobs %+v", job.ID, job.Kind, time.Since(seen).Round(time.Second), jl.Items)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deployedNode enrolls one simulated system, deploys an instance on it and
// returns the node and instance ids.
func deployedNode(p *proc, fleet *sim.Fleet, i int) (string, string) {
	p.t.Helper()
	var n api.Node
	p.call("POST", "/v1/nodes", fmt.Sprintf(`{"name":"crash-%d","driver":"redfish","resource_class":"rc%d",
		"bmc":{"address":%q,"username":"admin","password":"password","system_id":%q}}`, i, i, fleet.URL(), fleet.SystemIDs()[i]), 201, &n)
	p.waitNode(n.ID, 30*time.Second, func(n api.Node) bool { return n.ProvisionState == "available" })
	var inst api.Instance
	p.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"vm-%d","project":"p1","resource_class":"rc%d","image":{"url":"https://images.example/x.iso"}}`, i, i), 201, &inst)
	p.waitNode(n.ID, 30*time.Second, func(n api.Node) bool { return n.ProvisionState == "active" })
	// River records a job's completion shortly after it returns. Until the
	// deploy is recorded, the node's next mutating job (the cleanup these
	// tests interrupt) waits for it by snoozing instead of calling the BMC,
	// and a test would kill the controller while nothing is stuck.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var jl api.JobList
		p.call("GET", "/v1/jobs?node_id="+n.ID, "", 200, &jl)
		busy := false
		for _, j := range jl.Items {
			busy = busy || (j.State != "completed" && j.State != "cancelled" && j.State != "discarded")
		}
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("node %s still has unfinished jobs 30s after it became active: %+v", n.ID, jl.Items)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return n.ID, inst.ID
}

// crashMidCleanup deletes an instance while its BMC hangs, SIGKILLs the
// controller while the cleanup job is stuck in a BMC call, heals the BMC,
// restarts the controller, and expects the node to reach available.
func crashMidCleanup(t *testing.T, dbURL string) {
	fleet, err := sim.Start(sim.Options{Systems: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	dataDir := t.TempDir()
	p := startController(t, dataDir, dbURL)
	nodeID, instID := deployedNode(p, fleet, 0)

	if err := fleet.SetFault(fleet.SystemIDs()[0], sim.FaultHang); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var acc api.Accepted
	p.call("DELETE", "/v1/instances/"+instID, "", 202, &acc)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("DELETE with a hung BMC took %s", d)
	}
	p.call("GET", "/v1/instances/"+instID, "", 404, nil)
	job := p.waitJobRunning(nodeID, "cleanup", 20*time.Second)
	seen := time.Now()
	p.kill()

	if err := fleet.SetFault(fleet.SystemIDs()[0], sim.FaultNone); err != nil {
		t.Fatal(err)
	}
	restart := time.Now()
	p2 := startController(t, dataDir, dbURL)
	ready := time.Since(restart)
	p2.waitRerun(job, seen)
	t.Logf("interrupted cleanup seen running again %.1fs after the restart (the controller was ready after %.1fs)",
		time.Since(restart).Seconds(), ready.Seconds())
	n := p2.waitNode(nodeID, 30*time.Second, func(n api.Node) bool { return n.ProvisionState == "available" && n.Fault == "" })
	if n.Maintenance {
		t.Fatal("controller set maintenance")
	}
	if st, _ := fleet.Power(fleet.SystemIDs()[0]); st != "Off" {
		t.Fatalf("cleanup did not power the node off: %s", st)
	}
}

func TestCrashMidCleanupSQLite(t *testing.T) {
	t.Parallel()
	crashMidCleanup(t, "")
}

func TestCrashMidCleanupPostgres(t *testing.T) {
	t.Parallel()
	crashMidCleanup(t, storetest.PostgresURL(t))
}

// TestReplicaLoss: replica A runs a cleanup stuck on a hung BMC; replica B
// joins; A is SIGKILLed; B must finish the cleanup once the BMC heals.
func TestReplicaLoss(t *testing.T) {
	t.Parallel()
	dbURL := storetest.PostgresURL(t)
	fleet, err := sim.Start(sim.Options{Systems: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	a := startController(t, t.TempDir(), dbURL)
	nodeID, instID := deployedNode(a, fleet, 0)
	if err := fleet.SetFault(fleet.SystemIDs()[0], sim.FaultHang); err != nil {
		t.Fatal(err)
	}
	a.call("DELETE", "/v1/instances/"+instID, "", 202, nil)
	job := a.waitJobRunning(nodeID, "cleanup", 20*time.Second)
	seen := time.Now()

	// B shares the database and the BMC password key.
	bDir := t.TempDir()
	key, err := os.ReadFile(filepath.Join(a.dataDirOf(), "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bDir, "secret.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	b := startController(t, bDir, dbURL)
	a.kill()
	died := time.Now()
	if err := fleet.SetFault(fleet.SystemIDs()[0], sim.FaultNone); err != nil {
		t.Fatal(err)
	}
	b.waitRerun(job, seen)
	t.Logf("interrupted cleanup seen running again on the surviving replica %.1fs after the kill", time.Since(died).Seconds())
	b.waitNode(nodeID, 30*time.Second, func(n api.Node) bool { return n.ProvisionState == "available" && n.Fault == "" })
}

func (p *proc) dataDirOf() string {
	for i, a := range p.cmd.Args {
		if a == "--data-dir" {
			return p.cmd.Args[i+1]
		}
	}
	return ""
}

// On SQLite one controller owns the data dir: a second one on it refuses
// to start, saying which directory and which process holds it, and the
// first keeps working.
func TestSecondControllerOnDataDirRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := startController(t, dir, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, controllerBinary(t), serveArgs(freePort(t), dir, "")...).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || ctx.Err() != nil {
		t.Fatalf("second controller on %s: %v (want it to exit with an error)\n%s", dir, err, tail(string(out), 3000))
	}
	for _, want := range []string{"data dir " + dir, "in use", fmt.Sprintf("pid %d", a.cmd.Process.Pid)} {
		if !strings.Contains(string(out), want) {
			t.Errorf("second controller's error does not say %q:\n%s", want, tail(string(out), 3000))
		}
	}
	a.call("GET", "/v1/nodes", "", 200, nil)
}

// With the common umask 022 (which alone gives 0644 files and 0755
// directories) a fresh data dir is 0700 and the database files 0600; in
// an existing 0755 data dir the files are still 0600 and the controller
// warns about the directory.
func TestDataDirFilesArePrivate(t *testing.T) {
	t.Parallel()
	files := []string{"baremetal.db", "baremetal.db-wal", "baremetal.db-shm", "secret.key"}
	checkModes := func(dir string) {
		t.Helper()
		for _, f := range files {
			st, err := os.Stat(filepath.Join(dir, f))
			if err != nil {
				t.Error(err)
				continue
			}
			if m := st.Mode().Perm(); m != 0o600 {
				t.Errorf("%s: mode %04o, want 0600", f, m)
			}
		}
	}
	const warning = "data dir is accessible to other users"

	fresh := filepath.Join(t.TempDir(), "data")
	p := startControllerUmask(t, fresh, "", "022")
	st, err := os.Stat(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o700 {
		t.Errorf("fresh data dir: mode %04o, want 0700", m)
	}
	checkModes(fresh)
	if strings.Contains(p.output(), warning) {
		t.Errorf("warning about a 0700 data dir")
	}

	existing := t.TempDir()
	if err := os.Chmod(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	p = startControllerUmask(t, existing, "", "022")
	checkModes(existing)
	if !strings.Contains(p.output(), warning) {
		t.Errorf("no warning about a 0755 data dir in the log:\n%s", tail(p.output(), 3000))
	}
}
