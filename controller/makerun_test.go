package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// A serve stopped by SIGINT or SIGTERM (Ctrl-C, systemd, docker stop)
// shuts down cleanly and exits 0: a supervisor or make must not report a
// requested stop as a failure.
func TestServeStopsCleanlyOnSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		p := startController(t, t.TempDir(), "")
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("controller serve on %s: %v, want exit 0\n%s", sig, err, tail(p.output(), 3000))
		}
		if !strings.Contains(p.output(), "shutting down") {
			t.Errorf("no clean shutdown on %s:\n%s", sig, tail(p.output(), 3000))
		}
	}
}

// make run, as the README's quick start has a newcomer run it: it says
// that it builds and how long that takes before the build's silence;
// Ctrl-C (SIGINT to make's whole process group, as a terminal sends it)
// ends it without make reporting an error; and a second make run finds
// the simulated machines as they were (power, in the data dir), so the
// next terraform plan shows no drift.
func TestMakeRunCtrlCAndRestart(t *testing.T) {
	t.Parallel()
	mk, err := exec.LookPath("make")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("make is not installed")
		}
		t.Skip("make is not installed")
	}
	controllerBinary(t) // warms the build cache make run's build uses
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	listen, simListen := freePort(t), freePort(t)
	// A make run that cannot see an outer make's jobserver (go test under
	// make test).
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			env = append(env, kv)
		}
	}
	makeRun := func() (*exec.Cmd, func() string) {
		t.Helper()
		cmd := exec.Command(mk, "--no-print-directory", "-C", "..", "run", "LISTEN="+listen, "SIM_LISTEN="+simListen,
			"DATA_DIR="+data, "RUN_BIN="+filepath.Join(dir, "controller"))
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var mu sync.Mutex
		var out bytes.Buffer
		cmd.Stdout = lockedBuffer{&mu, &out}
		cmd.Stderr = lockedBuffer{&mu, &out}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		output := func() string {
			mu.Lock()
			defer mu.Unlock()
			return out.String()
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				_ = cmd.Wait()
				t.Logf("make run output:\n%s", tail(output(), 4000))
			}
		})
		// The first build may take minutes on a cold cache.
		deadline := time.Now().Add(10 * time.Minute)
		for {
			res, err := http.Get("http://" + listen + "/readyz")
			if err == nil {
				res.Body.Close()
				if res.StatusCode == 200 {
					return cmd, output
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("make run: no ready controller after 10 min:\n%s", tail(output(), 4000))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	ctrlC := func(cmd *exec.Cmd, output func() string) {
		t.Helper()
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		// make itself, interrupted too, dies of the SIGINT once its child
		// has exited (as interrupted programs should: the shell then knows
		// it was stopped); a child that failed makes it print
		// "make: *** [run] Error 1" first.
		err := cmd.Wait()
		out := output()
		var exit *exec.ExitError
		interrupted := errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGINT
		if err != nil && !interrupted || strings.Contains(out, "***") {
			t.Errorf("make run after Ctrl-C: %v, want no make error:\n%s", err, tail(out, 3000))
		}
		if !strings.Contains(out, "shutting down") {
			t.Errorf("make run after Ctrl-C: the controller did not shut down cleanly:\n%s", tail(out, 3000))
		}
	}
	simPower := func(id, set string) string {
		t.Helper()
		method, body := http.MethodGet, ""
		if set != "" {
			method, body = http.MethodPost, `{"power":"`+set+`"}`
		}
		req, err := http.NewRequest(method, "http://"+simListen+"/sim/systems/"+id+map[bool]string{true: "/power"}[set != ""], strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var st sim.SystemStatus
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st.Power
	}

	cmd, output := makeRun()
	out := output()
	building := strings.Index(out, "building the controller")
	if building < 0 || building > strings.Index(out, "go build") || !strings.Contains(out[building:], "minutes") {
		t.Errorf("make run does not say that it builds, and how long that takes, before it builds:\n%s", tail(out, 3000))
	}
	if got := simPower("3", "On"); got != "On" {
		t.Fatalf("simulated system 3: power %s after power on", got)
	}
	ctrlC(cmd, output)

	cmd, output = makeRun()
	if got := simPower("3", ""); got != "On" {
		t.Errorf("simulated system 3 after a restart of make run: power %s, want On as it was", got)
	}
	if got := simPower("2", ""); got != "Off" {
		t.Errorf("simulated system 2 after a restart of make run: power %s, want Off as it was", got)
	}
	ctrlC(cmd, output)
}
