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

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
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
// simulated BMC fleet, on both stores: an admin logs in, sees every
// provision state of the API's document counted, coloured and filtered,
// tiles with resource class, instance, the deploy agent's progress
// (live) and the step of the node's flow, the flow's steps on the node
// page, a node turn faulted when its BMC goes down and heal when it
// returns, sets and clears maintenance with a reason and sees the events,
// powers a node off and on, reads an inventory, is told why an
// inspection is refused, retires a node, and sees no "attempt 1/32767";
// a member sees no BMC address or credential and no admin action.
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
	const nodes = 8
	setup := time.Now()
	// A short power-sync interval: a BMC going down becomes a fault
	// (three failed reads) in about a second and a half.
	env := testenv.Start(t, testenv.Options{Systems: nodes, DatabaseURL: databaseURL, PowerSyncInterval: 500 * time.Millisecond})
	enrolled := env.EnrollNodes(t, nodes, "rack1-u", "baremetal")
	member := env.MemberToken(t, "team-a")

	// One instance, so the overview has an active node and the member an
	// instance to see; on rack1-u-5, as the script acts on the first
	// three and the last two.
	last := enrolled[5].ID
	call(t, env.URL, member, "POST", "/v1/instances",
		`{"name":"web-1","node_id":"`+last+`","image":{"url":"https://images.example/web.iso"}}`, http.StatusCreated)
	env.WaitNode(t, last, 30*time.Second, func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateActive
	})

	// A node cleaning with its agent erasing (42%, reported through the
	// API as the agent does), one inspecting whose agent has reported,
	// and one with an inventory. The jobs that get nodes there boot the
	// agent, which simulated BMCs do not run, so the test plays the job's
	// part in the store and the agent's through the heartbeat; and holds
	// the nodes there with maintenance, in which the cleanup and the
	// inspection wait (without, the controller would queue them, and
	// without an agent to serve they would make the nodes available).
	cleanToken := agentAt(t, env, enrolled[3].ID, baremetal.StateCleaning, baremetal.AgentClean,
		`{"id":"erase-1","kind":"erase","erase":"full"}`, `{"id":"erase-1","state":"running","progress":42}`)
	agentAt(t, env, enrolled[4].ID, baremetal.StateInspecting, baremetal.AgentInspect, "", "")
	inv, err := json.Marshal(api.AgentInventory{
		System: api.AgentSystem{Vendor: "Dell Inc.", Product: "PowerEdge R650", Serial: "SVC7Q2", UUID: "4c4c4544-0042-3010-8056-b4c04f4d3132", BootMode: api.BootModeUEFI},
		CPUs:   32, MemoryBytes: 256 << 30,
		Disks: []api.AgentDisk{{Name: "nvme0n1", Path: "/dev/nvme0n1", SizeBytes: 960 << 30, Model: "Samsung PM9A3", Serial: "S64ANS0T"}},
		NICs: []api.AgentNIC{{Name: "eno1", MAC: "52:54:00:12:34:56", LinkUp: true, SpeedMbps: 25000, IPv4: []string{"10.0.8.21"},
			LLDP: &api.AgentLLDP{ChassisID: "44:4c:a8:12:34:56", SystemName: "leaf-1", PortID: "Ethernet7", VLANID: 100}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.App.Store.SetInventory(context.Background(), &baremetal.Inventory{NodeID: enrolled[6].ID, Data: string(inv), InspectedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	t.Logf("controller, %d nodes, an active instance and two agents ready in %s", nodes, time.Since(setup).Round(time.Millisecond))

	shots := os.Getenv(ScreenshotsEnv)
	if shots == "" {
		shots = filepath.Join("e2e", "screenshots")
	}
	shots, err = filepath.Abs(filepath.Join(shots, filepath.Base(t.Name())))
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
		"AGENT_TOKEN="+cleanToken,
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

// agentAt moves node id to state, in maintenance, with a session of the
// deploy agent booted for purpose and handed command (JSON, "" for none),
// and at the step of its flow that waits for the agent, as the job that
// boots it leaves them, then reports status (JSON, "" for none) from that
// agent through POST /v1/agent/heartbeat. It returns the agent's token,
// with which the script reports further.
func agentAt(t *testing.T, env *testenv.Env, id string, state baremetal.ProvisionState, purpose baremetal.AgentPurpose, command, status string) string {
	t.Helper()
	ctx := context.Background()
	n, err := env.App.Store.GetNode(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// The agent runs on the machine: it is on.
	if err := env.Sim.SetPower(n.BMC.SystemID, true); err != nil {
		t.Fatal(err)
	}
	n.ProvisionState, n.PowerState, n.Maintenance, n.MaintenanceReason = state, baremetal.PowerOn, true, "held by the browser test"
	n.Flow = map[baremetal.ProvisionState]*baremetal.Flow{
		baremetal.StateCleaning: {Name: "cleanup", Steps: []string{"boot_agent", "erase", "power_off", "clear_boot"}, Step: "erase",
			StepStartedAt: time.Now().Add(-2 * time.Minute)},
		baremetal.StateInspecting: {Name: "inspect", Steps: []string{"boot_agent", "wait_inventory", "power_off", "clear_boot"}, Step: "wait_inventory",
			StepStartedAt: time.Now().Add(-time.Minute)},
	}[state]
	if err := env.App.Store.UpdateNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	token, hash := baremetal.NewAgentToken()
	if err := env.App.Store.PutAgentSession(ctx, &baremetal.AgentSession{NodeID: id, Purpose: purpose, Token: token, TokenHash: hash, Command: command}); err != nil {
		t.Fatal(err)
	}
	hb := `{"agent_version":"browser-test","boot_id":"b1"}`
	if status != "" {
		hb = `{"agent_version":"browser-test","boot_id":"b1","command":` + status + `}`
	}
	call(t, env.URL, token, "POST", api.AgentHeartbeatPath, hb, http.StatusOK)
	return token
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
