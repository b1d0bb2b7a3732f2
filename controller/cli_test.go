package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestCLIMaintenance: an operator sets and clears maintenance with the CLI;
// the reason is required, and the events name the operator's token.
func TestCLIMaintenance(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	nodes := env.EnrollNodes(t, 1, "cli", "gpu")
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	ctx := context.Background()
	if err := runNode(ctx, []string{"maintenance", "cli-0"}); err == nil || !strings.Contains(err.Error(), "--reason is required") {
		t.Fatalf("maintenance without reason: %v", err)
	}
	if err := runNode(ctx, []string{"maintenance", "cli-0", "--reason", "swap PSU"}); err != nil {
		t.Fatal(err)
	}
	n, err := env.App.Store.GetNode(ctx, nodes[0].ID)
	if err != nil || !n.Maintenance || n.MaintenanceReason != "swap PSU" {
		t.Fatalf("after CLI maintenance: %+v %v", n, err)
	}
	if err := runNode(ctx, []string{"list", "--maintenance", "true", "-o", "json"}); err != nil {
		t.Fatal(err)
	}
	if err := runNode(ctx, []string{"maintenance", "cli-0", "--off"}); err != nil {
		t.Fatal(err)
	}
	n, _ = env.App.Store.GetNode(ctx, nodes[0].ID)
	if n.Maintenance || n.MaintenanceReason != "" {
		t.Fatalf("after --off: %+v", n)
	}
	member := env.MemberToken(t, "p1")
	t.Setenv("BAREMETAL_TOKEN", member)
	if err := runNode(ctx, []string{"maintenance", "cli-0", "--reason", "x"}); err == nil || !strings.Contains(err.Error(), "only an admin") {
		t.Fatalf("member maintenance via CLI: %v", err)
	}
}

// TestCLIPowerAndFilters: the CLI checks a power action and the list
// filters against the API's values before sending them (a typo is
// answered with the valid ones, and nothing is queued), and soft_off, the
// value the API's route list once forgot, is queued like the others.
func TestCLIPowerAndFilters(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	nodes := env.EnrollNodes(t, 1, "cli", "gpu")
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"power", "cli-0", "sideways"}, `power action "sideways" must be one of on, off, soft_off, reset`},
		{[]string{"list", "--state", "busy"}, `--state "busy" must be one of enroll, available, deploying, active, deploy_failed, cleaning, deleting`},
		{[]string{"list", "--fault", "bmc_down"}, `--fault "bmc_down" must be one of any, none, bmc_unreachable,`},
	} {
		if err := runNode(ctx, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	evs, _, err := env.App.Store.ListEvents(ctx, nodes[0].ID, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == "power_requested" {
			t.Fatalf("a refused action reached the controller: %+v", e)
		}
	}
	if err := runNode(ctx, []string{"power", "cli-0", "soft_off"}); err != nil {
		t.Fatal(err)
	}
	if err := runNode(ctx, []string{"list", "--state", "available", "--fault", "none"}); err != nil {
		t.Fatal(err)
	}
	evs, _, err = env.App.Store.ListEvents(ctx, nodes[0].ID, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(e *baremetal.Event) bool {
		return e.Type == "power_requested" && strings.Contains(e.Message, "power soft_off")
	}) {
		t.Fatalf("no soft_off request among the events %+v", evs)
	}
}

// cliRun runs one CLI command and returns what it printed on stdout.
func cliRun(t *testing.T, run func(context.Context, []string) error, args ...string) (string, error) {
	t.Helper()
	var b bytes.Buffer
	old := stdout
	stdout = &b
	defer func() { stdout = old }()
	err := run(t.Context(), args)
	return b.String(), err
}

// mustCLI is cliRun that fails the test on an error.
func mustCLI(t *testing.T, run func(context.Context, []string) error, args ...string) string {
	t.Helper()
	out, err := cliRun(t, run, args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// rowOf returns the table row of name (its first column), or "".
func rowOf(table, name string) string {
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return line
		}
	}
	return ""
}

// TestCLINodeListShowsDeleting: a faulted node being retired (its BMC is
// down, so the retire waits) is in node list and in --fault any, with its
// state; --include-deleting=false leaves it out; node delete --force
// removes it.
func TestCLINodeListShowsDeleting(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 2, PowerSyncInterval: 300 * time.Millisecond})
	nodes := env.EnrollNodes(t, 2, "cli", "gpu")
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	if err := env.Sim.SetFault(env.Sim.SystemIDs()[0], sim.FaultDown); err != nil {
		t.Fatal(err)
	}
	env.WaitNode(t, nodes[0].ID, 30*time.Second, func(n *baremetal.Node) bool { return n.Fault == baremetal.FaultBMCUnreachable })

	if out := mustCLI(t, runNode, "delete", "cli-0"); !strings.Contains(out, "retire job") {
		t.Errorf("node delete printed %q; want the controller's message", out)
	}
	env.WaitNode(t, nodes[0].ID, 10*time.Second, func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateDeleting })

	out := mustCLI(t, runNode, "list")
	if row := rowOf(out, "cli-0"); !strings.Contains(row, "deleting") || !strings.Contains(row, "bmc_unreachable") {
		t.Errorf("node list: cli-0 row %q; want it deleting with its fault:\n%s", row, out)
	}
	if rowOf(out, "cli-1") == "" {
		t.Errorf("node list lacks cli-1:\n%s", out)
	}
	out = mustCLI(t, runNode, "list", "--fault", "any")
	if row := rowOf(out, "cli-0"); !strings.Contains(row, "deleting") || rowOf(out, "cli-1") != "" {
		t.Errorf("node list --fault any: want only cli-0, deleting:\n%s", out)
	}
	out = mustCLI(t, runNode, "list", "--fault", "any", "--include-deleting=false")
	if rowOf(out, "cli-0") != "" {
		t.Errorf("node list --include-deleting=false still lists the node being retired:\n%s", out)
	}
	var listed []api.Node
	if err := json.Unmarshal([]byte(mustCLI(t, runNode, "list", "-o", "json")), &listed); err != nil || len(listed) != 2 {
		t.Errorf("node list -o json: %d nodes, %v; want 2", len(listed), err)
	}

	if out := mustCLI(t, runNode, "delete", "cli-0", "--force"); !strings.Contains(out, "without touching its BMC") {
		t.Errorf("node delete --force printed %q", out)
	}
	if _, err := env.App.Store.GetNode(context.Background(), nodes[0].ID); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Errorf("after delete --force: %v; want the node gone", err)
	}
}

// TestCLIInstance lists, shows and deletes instances, each project seeing
// only its own.
func TestCLIInstance(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	env.EnrollNodes(t, 1, "cli", "gpu")
	member := env.MemberToken(t, "p1")
	c, err := apiclient.New(env.URL, apiclient.Options{Token: member})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := c.CreateInstance(t.Context(), api.InstanceCreate{Name: "web-1", ResourceClass: "gpu",
		Image: api.Image{URL: env.Sim.URL() + "/sim/images/demo.img"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", member)

	out := mustCLI(t, runInstance, "list")
	if row := rowOf(out, "web-1"); !strings.Contains(row, "p1") || !strings.Contains(row, inst.ID) || !strings.Contains(row, " cli-0 ") {
		t.Errorf("instance list: web-1 row %q; want its project, node (by name) and id:\n%s", row, out)
	}
	var shown api.Instance
	if err := json.Unmarshal([]byte(mustCLI(t, runInstance, "show", "web-1", "-o", "json")), &shown); err != nil || shown.ID != inst.ID {
		t.Errorf("instance show web-1: %+v, %v", shown, err)
	}

	t.Setenv("BAREMETAL_TOKEN", env.MemberToken(t, "p2"))
	if out := mustCLI(t, runInstance, "list"); rowOf(out, "web-1") != "" {
		t.Errorf("another project's member lists web-1:\n%s", out)
	}
	if _, err := cliRun(t, runInstance, "delete", "web-1"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("another project's member deleting web-1: %v; want not found", err)
	}

	t.Setenv("BAREMETAL_TOKEN", member)
	if out := mustCLI(t, runInstance, "delete", "web-1"); !strings.Contains(out, "(job ") {
		t.Errorf("instance delete printed %q; want the cleanup job", out)
	}
	if _, err := cliRun(t, runInstance, "show", "web-1"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("instance show after delete: %v; want not found", err)
	}
	if _, err := cliRun(t, runInstance, "list", "extra"); err == nil || !strings.Contains(err.Error(), "expected 0 argument") {
		t.Errorf("instance list extra: %v", err)
	}
}

// TestCLIToken: a token needs a name, its secret is the only thing on
// stdout, the events of what it does name it, and it is revoked by name.
func TestCLIToken(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	env.EnrollNodes(t, 1, "cli", "gpu")
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)

	if _, err := cliRun(t, runToken, "create", "--role", "admin"); err == nil || !strings.Contains(err.Error(), "--name is required") {
		t.Fatalf("token create without a name: %v", err)
	}
	out := mustCLI(t, runToken, "create", "--name", "alice", "--role", "admin", "--expires", "24h")
	secret := strings.TrimSpace(out)
	if !strings.HasPrefix(secret, "bmt_") || strings.Contains(secret, "\n") {
		t.Fatalf("token create printed %q; want only the secret", out)
	}
	list := mustCLI(t, runToken, "list")
	row := rowOf(list, "alice")
	if !strings.Contains(row, "admin") || strings.Contains(list, secret) {
		t.Fatalf("token list: alice row %q (the secret must not be listed):\n%s", row, list)
	}
	aliceID := strings.Fields(row)[len(strings.Fields(row))-1]

	// What alice does is recorded as alice's.
	t.Setenv("BAREMETAL_TOKEN", secret)
	mustCLI(t, runNode, "maintenance", "cli-0", "--reason", "reseat DIMM")
	events := mustCLI(t, runNode, "events", "cli-0")
	if want := "token:alice (" + aliceID + ") via the CLI (" + api.ClientCLI + "/"; !strings.Contains(events, want) {
		t.Errorf("node events do not name alice and the CLI (%q):\n%s", want, events)
	}

	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	if _, err := cliRun(t, runToken, "create", "--name", "alice", "--role", "member", "--project", "p1"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second token named alice: %v; want a conflict", err)
	}
	if out := mustCLI(t, runToken, "revoke", "alice"); !strings.Contains(out, aliceID) {
		t.Errorf("token revoke alice printed %q", out)
	}
	t.Setenv("BAREMETAL_TOKEN", secret)
	if _, err := cliRun(t, runNode, "list"); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("a revoked token still works: %v", err)
	}
}

// TestCLIInspectAndInventory: node inspect reaches the API (a controller
// serving no agent refuses with the reason, and a member may not ask);
// --wait follows the job and fails with the node's last_error when no
// inventory came of it; node inventory says when a node was never
// inspected, and prints a stored inventory as a summary and as JSON.
func TestCLIInspectAndInventory(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	nodes := env.EnrollNodes(t, 1, "cli", "gpu")
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)

	help := mustCLI(t, runNode, "--help")
	for _, want := range []string{"inspect NODE [--wait", "inventory NODE"} {
		if !strings.Contains(help, want) {
			t.Errorf("node --help lacks %q:\n%s", want, help)
		}
	}
	if _, err := cliRun(t, runNode, "inspect", "cli-0"); err == nil || !strings.Contains(err.Error(), "422") ||
		!strings.Contains(err.Error(), "serves no agent image") {
		t.Errorf("inspect without an agent: %v; want the 422 saying why", err)
	}
	if _, err := cliRun(t, runNode, "inventory", "cli-0"); err == nil || !strings.Contains(err.Error(), "has not been inspected") {
		t.Errorf("inventory of a node never inspected: %v", err)
	}
	if _, err := cliRun(t, runNode, "inventory", "nosuch"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("inventory of no node: %v; want the node's 404", err)
	}
	if _, err := cliRun(t, runNode, "inspect"); err == nil || !strings.Contains(err.Error(), "expected 1 argument") {
		t.Errorf("inspect without a node: %v", err)
	}

	// The service believes an agent is served, the jobs know none is: the
	// job ends the inspection at once with the reason, as it does when an
	// agent never reports, and --wait says it failed.
	env.App.Service.EnableAgent()
	out, err := cliRun(t, runNode, "inspect", "cli-0", "--wait", "--timeout", "1m")
	if err == nil || !strings.Contains(err.Error(), "inspection of node cli-0 failed") || !strings.Contains(err.Error(), "serves no deploy agent image") {
		t.Errorf("inspect --wait whose inspection failed: %v\n%s", err, out)
	}
	if !strings.Contains(out, "queued inspection of node cli-0 as job") || !strings.Contains(out, "done in") {
		t.Errorf("inspect --wait printed no progress:\n%s", out)
	}
	t.Setenv("BAREMETAL_TOKEN", env.MemberToken(t, "p1"))
	if _, err := cliRun(t, runNode, "inspect", "cli-0"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a member inspecting: %v; want 403", err)
	}
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)

	inv := api.AgentInventory{CPUs: 4, MemoryBytes: 7900 << 20, InstalledMemoryBytes: 8 << 30,
		System: api.AgentSystem{Vendor: "QEMU", Product: "Standard PC", Serial: "S123", BootMode: api.BootModeUEFI, SecureBoot: new(true)},
		Disks:  []api.AgentDisk{{Name: "vda", Path: "/dev/vda", SizeBytes: 64 << 30, Model: "virtio", Serial: "disk-1", Rotational: true}},
		NICs: []api.AgentNIC{{Name: "eth0", MAC: "52:54:00:12:34:56", LinkUp: true, SpeedMbps: 10000, IPv4: []string{"10.0.2.15/24"},
			LLDP: &api.AgentLLDP{ChassisID: "44:4c:a8:12:34:56", SystemName: "leaf-1", PortID: "Ethernet7", VLANID: 100}}}}
	data, _ := json.Marshal(inv)
	if err := env.App.Store.InTx(t.Context(), func(tx store.Tx) error {
		return tx.SetInventory(t.Context(), &baremetal.Inventory{NodeID: nodes[0].ID, Data: string(data), InspectedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	out = mustCLI(t, runNode, "inventory", "cli-0")
	for _, want := range []string{"node cli-0, inspected ", "QEMU Standard PC (serial S123", "boot:    UEFI, Secure Boot on", "cpus:    4", "memory:  8.0 GiB installed, 7.7 GiB usable",
		"vda", "64.0 GiB", "disk-1", "eth0", "52:54:00:12:34:56", "up 10000 Mb/s", "10.0.2.15/24", "leaf-1 Ethernet7 vlan 100"} {
		if !strings.Contains(out, want) {
			t.Errorf("node inventory lacks %q:\n%s", want, out)
		}
	}
	var got api.NodeInventory
	if err := json.Unmarshal([]byte(mustCLI(t, runNode, "inventory", "cli-0", "-o", "json")), &got); err != nil ||
		got.NodeID != nodes[0].ID || got.Inventory.Disks[0].SizeBytes != 64<<30 || got.Inventory.NICs[0].MAC != inv.NICs[0].MAC {
		t.Errorf("node inventory -o json: %+v, %v", got, err)
	}
}

// TestCLIUsageMistakes: a mistake in the command line is answered before
// anything is sent, even without a token or a controller: an unknown
// command names itself, a wrong number of arguments says how many, a
// flag the command does not take is refused naming the ones it takes
// (flags of other commands included: node delete X --reason y was
// accepted and dropped), and a member token without its project is
// refused. Every group's help lists every command the group runs, and
// the controller's help every group's commands.
func TestCLIUsageMistakes(t *testing.T) {
	t.Setenv("BAREMETAL_ENDPOINT", "http://127.0.0.1:1") // nothing listens
	t.Setenv("BAREMETAL_TOKEN", "")
	for _, c := range []struct {
		run  func(context.Context, []string) error
		args []string
		want string
	}{
		{runNode, nil, "no node command"},
		{runNode, []string{"reboot", "n1"}, `unknown node command "reboot"`},
		{runNode, []string{"power", "n1"}, "node power: expected 2 argument(s), got 1"},
		{runInstance, []string{"show"}, "instance show: expected 1 argument(s), got 0"},
		{runToken, []string{"list", "extra"}, "token list: expected 0 argument(s), got 1"},
		{runToken, []string{"list"}, "no token"},
		{runNode, []string{"delete", "n1", "--reason", "y"}, "node delete: unknown flag --reason; node delete takes --force and the common flags"},
		{runNode, []string{"list", "--reason", "y"}, "node list: unknown flag --reason; node list takes --class, --cpu-arch, --fault, --include-deleting, --maintenance, --min-cpus, --min-disk-gb, --min-memory-mb, --not-trait, --owner, --schedulable, --state, --trait and the common"},
		{runNode, []string{"show", "n1", "--force"}, "node show: unknown flag --force; node show takes only the common flags"},
		{runNode, []string{"events", "n1", "--wait"}, "node events: unknown flag --wait"},
		{runNode, []string{"maintenance", "n1", "--force"}, "node maintenance: unknown flag --force; node maintenance takes --off, --reason and"},
		{runInstance, []string{"delete", "web-1", "--force"}, "instance delete: unknown flag --force"},
		{runToken, []string{"revoke", "alice", "--role", "admin"}, "token revoke: unknown flag --role"},
		{runNode, []string{"list", "--timeout", "0s"}, "node list: --timeout must be positive"},
		{runNode, []string{"list", "-o", "yaml"}, `node list: -o "yaml" must be one of table, json`},
		{runNode, []string{"maintenance", "n1", "--reason"}, "node maintenance: flag needs an argument"},
	} {
		if _, err := cliRun(t, c.run, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.args, err, c.want)
		}
	}
	// Checked before anything is sent (nothing listens at the endpoint).
	t.Setenv("BAREMETAL_TOKEN", "bmt_not-sent")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--name", "ci", "--role", "member"}, "--project is required for a member token"},
		{[]string{"create", "--name", "ops", "--role", "admin", "--project", "p1"}, "--project applies only to member tokens"},
		{[]string{"create", "--name", "prom", "--role", "monitor", "--project", "p1"}, "--project applies only to member tokens"},
		{[]string{"create", "--name", "x", "--role", "root"}, "monitor"}, // the error lists every role
	} {
		if _, err := cliRun(t, runToken, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("token %q: %v; want %q", c.args, err, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--class", "gpu", "--bmc-address", "https://10.0.0.5", "--bmc-username", "admin"}, "--name is required"},
		{[]string{"create", "--name", "n1", "--bmc-address", "https://10.0.0.5", "--bmc-username", "admin"}, "--class is required"},
		{[]string{"create", "--name", "n1", "--class", "gpu", "--bmc-username", "admin"}, "--bmc-address is required"},
		{[]string{"create", "--name", "n1", "--class", "gpu", "--bmc-address", "https://10.0.0.5", "--bmc-username", "admin", "--driver", "idrac"}, `--driver "idrac" must be one of redfish, ipmi`},
	} {
		if _, err := cliRun(t, runNode, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("node %q: %v; want %q", c.args, err, c.want)
		}
	}

	for _, g := range []cliGroup{nodeCLI, instanceCLI, tokenCLI, ipPoolCLI} {
		help := mustCLI(t, g.run, "help")
		for _, name := range g.names() {
			if !strings.Contains(help, "\n  "+name) {
				t.Errorf("%s help does not list %q:\n%s", g.name, name, help)
			}
			if !strings.Contains(usage(), ": "+name) && !strings.Contains(usage(), ", "+name) {
				t.Errorf("controller help does not list %s %s:\n%s", g.name, name, usage())
			}
		}
	}
}

// TestCLICommandHelp: each command's help shows its own flags and the
// common ones, nothing of its neighbours', with --timeout's true default;
// flags are taken after the positional arguments too.
func TestCLICommandHelp(t *testing.T) {
	for _, c := range []struct {
		run      func(context.Context, []string) error
		args     []string
		want     []string
		wantNone []string
	}{
		{runNode, []string{"delete", "--help"}, []string{"usage: controller node delete NODE [--force]", "--force", "--endpoint", "--token", "-o string",
			"--timeout duration\n        give up after this long (default 2m0s)\n"}, []string{"--reason", "--wait", "--fault", "--include-deleting"}},
		{runNode, []string{"list", "-h"}, []string{"--fault", "--include-deleting", "--maintenance", "--state", "--class"}, []string{"--reason", "--force", "--off", "--wait"}},
		{runNode, []string{"show", "n1", "--help"}, []string{"usage: controller node show NODE", "common flags:"}, []string{"\nflags:", "--reason"}},
		{runNode, []string{"power", "--help"}, []string{"--wait", "(default 2m0s; with --wait 10m0s)"}, []string{"--reason", "--force"}},
		{runNode, []string{"inspect", "--help"}, []string{"--wait", "(default 2m0s; with --wait 20m0s)"}, []string{"--force"}},
		{runNode, []string{"help", "create"}, []string{"--bmc-password-file", "--bmc-address", "--bmc-username", "--bmc-system-id", "--bmc-insecure", "--class", "--driver", "--name", bmcPasswordEnv},
			[]string{"--bmc-password string", "--bmc-password "}},
		{runInstance, []string{"show", "--help"}, []string{"--show-user-data"}, []string{"--force"}},
		{runToken, []string{"create", "--help"}, []string{"create --name WHO --role admin\n", "create --name WHO --role member --project P\n", "--expires"}, []string{"[--project"}},
	} {
		out := mustCLI(t, c.run, c.args...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: help lacks %q:\n%s", c.args, w, out)
			}
		}
		for _, w := range c.wantNone {
			if strings.Contains(out, w) {
				t.Errorf("%q: help has %q, which is not this command's:\n%s", c.args, w, out)
			}
		}
	}
}

// TestCLIDay2: what an operator does after the quick start, by CLI only:
// enroll nodes (the BMC password from a file, the environment or stdin,
// never a flag, and never printed), list them by name with their last
// error, read one as a summary (-o json: as the API has it), see events
// in the API's names, delete a node in maintenance and be told the CLI's
// commands (not "PATCH maintenance=false"), list instances with their
// nodes' names, and show one without its user data unless asked.
func TestCLIDay2(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 3, PowerSyncInterval: 300 * time.Millisecond})
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	ctx := t.Context()
	ids := env.Sim.SystemIDs()
	create := func(name, system string, extra ...string) string {
		t.Helper()
		args := append([]string{"create", "--name", name, "--bmc-address", env.Sim.URL(), "--bmc-username", "admin",
			"--bmc-system-id", system, "--class", "gpu"}, extra...)
		return mustCLI(t, runNode, args...)
	}
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := create("enroll-1", ids[0], "--bmc-password-file", pwFile)
	if !strings.Contains(out, "node enroll-1 created") || strings.Contains(out, "password") {
		t.Errorf("node create printed %q", out)
	}
	t.Setenv(bmcPasswordEnv, "password")
	create("enroll-2", ids[1])
	_ = os.Unsetenv(bmcPasswordEnv) // t.Setenv restores it
	oldStdin, oldTerminal := stdin, stdinTerminal
	defer func() { stdin, stdinTerminal = oldStdin, oldTerminal }()
	stdin = strings.NewReader("password\n")
	create("enroll-3", ids[2], "--bmc-password-file", "-")
	stdinTerminal = func() bool { return false }
	if _, err := cliRun(t, runNode, "create", "--name", "enroll-4", "--class", "gpu", "--bmc-address", "https://10.0.0.9", "--bmc-username", "admin"); err == nil ||
		!strings.Contains(err.Error(), "no BMC password") {
		t.Errorf("node create without a password: %v", err)
	}
	// A wrong password is the BMC's business: the node enrolls with a
	// fault. The password never shows.
	var nodes []*api.Node
	c, err := apiclient.New(env.URL, apiclient.Options{Token: env.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"enroll-1", "enroll-2", "enroll-3"} {
		n, err := env.App.Store.GetNode(ctx, name)
		if err != nil {
			t.Fatalf("%s not enrolled: %v", name, err)
		}
		env.WaitNode(t, n.ID, 30*time.Second, func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
		an, err := c.GetNode(ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, an)
	}
	// Names in the opposite order of the ids, which the API lists by.
	slices.SortFunc(nodes, func(a, b *api.Node) int { return strings.Compare(a.ID, b.ID) })
	for i, n := range nodes {
		name := []string{"rack-c", "rack-b", "rack-a"}[i]
		if _, err := c.PatchNode(ctx, n.ID, api.NodePatch{Name: &name}, ""); err != nil {
			t.Fatal(err)
		}
		n.Name = name
	}
	faulted := nodes[2] // rack-a
	if err := env.Sim.SetFault(faulted.BMC.SystemID, sim.FaultDown); err != nil {
		t.Fatal(err)
	}
	down := env.WaitNode(t, faulted.ID, 30*time.Second, func(n *baremetal.Node) bool { return n.Fault == baremetal.FaultBMCUnreachable })

	out = mustCLI(t, runNode, "list")
	if a, b, c := strings.Index(out, "\nrack-a "), strings.Index(out, "\nrack-b "), strings.Index(out, "\nrack-c "); a < 0 || a >= b || b >= c {
		t.Errorf("node list not by name:\n%s", out)
	}
	if !strings.Contains(out, "LAST ERROR") || !strings.Contains(rowOf(out, "rack-a"), clip(down.LastError, 60)) {
		t.Errorf("node list: rack-a's last error %q not in its row:\n%s", down.LastError, out)
	}

	out = mustCLI(t, runNode, "show", "rack-a")
	for _, want := range []string{"node:", "rack-a (id " + faulted.ID + ")", "state:", "available, power", "fault:", "bmc_unreachable since ",
		"last error:", down.LastError, "class:", "gpu", "bmc:", "redfish " + env.Sim.URL() + ", user admin, system " + faulted.BMC.SystemID, "maintenance:", "no"} {
		if !strings.Contains(out, want) {
			t.Errorf("node show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "{") || strings.Contains(out, "password") {
		t.Errorf("node show is not a summary, or shows a password:\n%s", out)
	}
	var shown api.Node
	if err := json.Unmarshal([]byte(mustCLI(t, runNode, "show", "rack-a", "-o", "json")), &shown); err != nil || shown.ID != faulted.ID {
		t.Errorf("node show -o json: %+v, %v", shown, err)
	}

	// Events tell properties by the API's names.
	cpus := 4
	if _, err := c.PatchNode(ctx, "rack-b", api.NodePatch{Properties: &api.PropertiesPatch{CPUs: &cpus}}, ""); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, runNode, "events", "rack-b"); !strings.Contains(out, "cpus=4") || strings.Contains(out, "CPUs:") {
		t.Errorf("node events do not tell properties by the API's names:\n%s", out)
	}

	// An instance on rack-b (rack-a is faulted, rack-c will be retired).
	mustCLI(t, runNode, "maintenance", "rack-c", "--reason", "RMA")
	member := env.MemberToken(t, "p1")
	mc, err := apiclient.New(env.URL, apiclient.Options{Token: member})
	if err != nil {
		t.Fatal(err)
	}
	const userData = "#cloud-config\npassword: hunter2\n"
	inst, err := mc.CreateInstance(ctx, api.InstanceCreate{Name: "web-1", ResourceClass: "gpu", UserData: userData,
		Image: api.Image{URL: env.Sim.URL() + "/sim/images/demo.img"}})
	if err != nil {
		t.Fatal(err)
	}

	// A node in maintenance waits for it to be cleared: the CLI says how.
	out = mustCLI(t, runNode, "delete", "rack-c")
	if !strings.Contains(out, "controller node maintenance rack-c --off") || !strings.Contains(out, "controller node delete rack-c --force") ||
		strings.Contains(out, "PATCH") || strings.Contains(out, "force=true") {
		t.Errorf("node delete of a node in maintenance printed %q; want the CLI's commands", out)
	}
	t.Setenv(bmcPasswordEnv, "password")
	if _, err := cliRun(t, runNode, "create", "--name", "rack-c", "--class", "gpu", "--bmc-address", "https://10.0.0.9", "--bmc-username", "admin"); err == nil ||
		!strings.Contains(err.Error(), "still being deleted") || !strings.Contains(err.Error(), "controller node delete rack-c --force") {
		t.Errorf("node create of the name of a node being deleted: %v; want the CLI's command to force its delete", err)
	}

	t.Setenv("BAREMETAL_TOKEN", member)
	out = mustCLI(t, runInstance, "list")
	if row := rowOf(out, "web-1"); !strings.Contains(row, " rack-b ") || strings.Contains(row, inst.NodeID) {
		t.Errorf("instance list: web-1 row %q; want its node's name, not its id:\n%s", row, out)
	}
	out = mustCLI(t, runInstance, "show", "web-1")
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "--show-user-data") || !strings.Contains(out, "node:") || !strings.Contains(out, "rack-b") {
		t.Errorf("instance show: want a summary naming the node, without the user data:\n%s", out)
	}
	if out := mustCLI(t, runInstance, "show", "web-1", "--show-user-data"); !strings.Contains(out, "password: hunter2") {
		t.Errorf("instance show --show-user-data lacks it:\n%s", out)
	}
	for _, args := range [][]string{{"show", "web-1", "-o", "json"}, {"list", "-o", "json"}} {
		out := mustCLI(t, runInstance, args...)
		if strings.Contains(out, "hunter2") || !strings.Contains(out, `"user_data": null`) {
			t.Errorf("instance %v: user_data not null:\n%s", args, out)
		}
	}
	var withData api.Instance
	if err := json.Unmarshal([]byte(mustCLI(t, runInstance, "show", "web-1", "-o", "json", "--show-user-data")), &withData); err != nil || withData.UserData != userData {
		t.Errorf("instance show -o json --show-user-data: %q, %v", withData.UserData, err)
	}
}

// node show says what the controller is doing on a node: its flow, the
// step it is at of how many and since when, the flow's steps, and the
// deploy agent's progress; "-" for a node in no flow.
func TestCLINodeShowsItsFlow(t *testing.T) {
	started := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	n := &api.Node{Name: "n1", ProvisionState: api.StateCleaning,
		Flow:  &api.NodeFlow{Name: "cleanup", Steps: []string{"boot_agent", "erase", "power_off", "clear_boot"}, Step: "erase", StepIndex: 1, StepStartedAt: started},
		Agent: &api.AgentActivity{Purpose: api.AgentPurposeClean, Command: api.AgentErase, State: api.AgentCommandRunning, Progress: 42}}
	var b strings.Builder
	if err := printNode(&b, n); err != nil {
		t.Fatal(err)
	}
	want := "flow:               cleanup, step 2 of 4: erase since 2026-12-06T10:00:00Z (boot_agent > erase > power_off > clear_boot); agent: erase running, 42%\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("node show:\n%s\nwant the row\n%s", b.String(), want)
	}
	b.Reset()
	n.Flow, n.Agent = nil, nil
	if err := printNode(&b, n); err != nil || !strings.Contains(b.String(), "flow:               -\n") {
		t.Errorf("node show of a node in no flow (%v):\n%s", err, b.String())
	}
}

// TestCLIConsoleLog: node console-log prints what was recorded (the last
// lines with --lines, JSON with -o json) and says why when nothing was.
func TestCLIConsoleLog(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	nodes := env.EnrollNodes(t, 1, "clicon", "gpu")
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	if _, err := cliRun(t, runNode, "console-log", "clicon-0"); err == nil || !strings.Contains(err.Error(), "nothing was recorded") {
		t.Errorf("console-log of a node never recorded: %v", err)
	}
	if _, err := cliRun(t, runNode, "console-log", "nosuch"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("console-log of no node: %v; want the node's 404", err)
	}
	st := env.App.Store
	ctx := t.Context()
	if ok, err := st.ClaimConsole(ctx, nodes[0].ID, "test", time.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := st.SaveConsoleLog(ctx, nodes[0].ID, "test", "SeaBIOS\nLinux version 6.1\nlogin: \n", time.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if out := mustCLI(t, runNode, "console-log", "clicon-0"); out != "SeaBIOS\nLinux version 6.1\nlogin: \n" {
		t.Errorf("console-log:\n%q", out)
	}
	if out := mustCLI(t, runNode, "console-log", "clicon-0", "--lines", "1"); out != "login: \n" {
		t.Errorf("console-log --lines 1:\n%q", out)
	}
	if out := mustCLI(t, runNode, "console-log", "clicon-0", "-o", "json"); !strings.Contains(out, `"recording": true`) {
		t.Errorf("console-log -o json:\n%s", out)
	}
}
