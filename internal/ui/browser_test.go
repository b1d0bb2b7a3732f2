package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// ScreenshotsEnv names the directory the browser test writes its
// screenshots to; by default e2e/screenshots (gitignored).
const ScreenshotsEnv = "BAREMETAL_UI_SCREENSHOTS"

// browserTools finds node, Chromium and the installed playwright-core,
// or says how to get them: skipped locally, failed in CI, which installs
// all three (.ci/run).
func browserTools(t *testing.T) (node, chromium string) {
	t.Helper()
	missing := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI must run the browser test)")
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: apt-get install nodejs npm")
	}
	// playwright-core 1.65 needs Node 20 (Debian 12's own nodejs is 18).
	if v, err := exec.Command(node, "--version").Output(); err != nil {
		missing("node --version: %v", err)
	} else if major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(v)), "v"), "."); atoi(major) < 20 {
		missing("node %s is too old for playwright-core: Node 20 or later is needed", strings.TrimSpace(string(v)))
	}
	chromium = os.Getenv("BAREMETAL_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("no Chromium at %s: apt-get install chromium (or set BAREMETAL_CHROMIUM)", chromium)
	}
	if _, err := os.Stat(filepath.Join("e2e", "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core is not installed: npm ci --prefix internal/ui/e2e")
	}
	return node, chromium
}

// TestDashboardInBrowser drives the dashboard in a real headless Chromium
// (Playwright, e2e/dashboard.mjs) against a real controller and a
// simulated BMC fleet, on both stores: an admin logs in, sees a node turn
// faulted when its BMC goes down and heal when it returns, sets and
// clears maintenance with a reason and sees the events, powers a node off
// and on; a member sees no BMC address or credential and no admin action.
func TestDashboardInBrowser(t *testing.T) {
	node, chromium := browserTools(t)
	// In parallel: each store has its own controller, fleet and browser,
	// and most of a run is waiting (power sync, refresh intervals).
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		runDashboard(t, node, chromium, "")
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		runDashboard(t, node, chromium, storetest.PostgresURL(t))
	})
}

func runDashboard(t *testing.T, node, chromium, databaseURL string) {
	const nodes = 6
	setup := time.Now()
	// A short power-sync interval: a BMC going down becomes a fault
	// (three failed reads) in about a second and a half.
	env := testenv.Start(t, testenv.Options{Systems: nodes, DatabaseURL: databaseURL, PowerSyncInterval: 500 * time.Millisecond})
	enrolled := env.EnrollNodes(t, nodes, "rack1-u", "baremetal")
	member := env.MemberToken(t, "team-a")

	// One instance, so the overview has an active node and the member an
	// instance to see; on the last node, as the script acts on the first
	// three.
	last := enrolled[nodes-1].ID
	call(t, env.URL, member, "POST", "/v1/instances",
		`{"name":"web-1","node_id":"`+last+`","image":{"url":"https://images.example/web.iso"}}`, http.StatusCreated)
	env.WaitNode(t, last, 30*time.Second, func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateActive
	})

	t.Logf("controller, %d nodes and an active instance ready in %s", nodes, time.Since(setup).Round(time.Millisecond))

	shots := os.Getenv(ScreenshotsEnv)
	if shots == "" {
		shots = filepath.Join("e2e", "screenshots")
	}
	shots, err := filepath.Abs(filepath.Join(shots, filepath.Base(t.Name())))
	if err != nil {
		t.Fatal(err)
	}
	// Only this run's pictures: a failed-*.png from an earlier run would mislead.
	if err := os.RemoveAll(shots); err != nil {
		t.Fatalf("screenshots dir: %v", err)
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatalf("screenshots dir: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "dashboard.mjs")
	cmd.Dir = "e2e"
	cmd.Env = append(os.Environ(),
		"BASE_URL="+env.URL,
		"ADMIN_TOKEN="+env.AdminToken,
		"MEMBER_TOKEN="+member,
		"SIM_URL="+env.Sim.URL(),
		// rack1-u-0 is the first simulated system.
		"FAULT_SYSTEM="+strings.TrimPrefix(env.Sim.SystemIDs()[0], "/redfish/v1/Systems/"),
		"NODES="+fmt.Sprint(nodes),
		"CHROMIUM="+chromium,
		"SCREENSHOTS="+shots,
	)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("browser script (%s):\n%s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("browser script failed: %v (screenshots in %s)", err, shots)
	}
	t.Logf("screenshots in %s", shots)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

func call(t *testing.T, base, token, method, path, body string, want int) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %v", method, path, resp.StatusCode, want, out)
	}
	return out
}
