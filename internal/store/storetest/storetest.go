package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Run runs the conformance suite against the stores made by open. open must
// return a new, empty store on each call and close it when t ends
// (OpenSQLite and OpenPostgres do both). Subtests run in parallel, each on
// its own store.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"NodeCRUD", testNodeCRUD},
		{"NodePropertyOverrides", testNodePropertyOverrides},
		{"NodePropertyOverridesMigration", testNodePropertyOverridesMigration},
		{"NodeCleanInspectSettings", testNodeCleanInspectSettings},
		{"NodeCleanInspectMigration", testNodeCleanInspectMigration},
		{"NodeFlow", testNodeFlow},
		{"NodeFlowMigration", testNodeFlowMigration},
		{"NodeNotFound", testNodeNotFound},
		{"NodeDuplicateName", testNodeDuplicateName},
		{"NodeExplicitID", testNodeExplicitID},
		{"NodeIDBeatsName", testNodeIDBeatsName},
		{"NodeStaleWrites", testNodeStaleWrites},
		{"NodeConcurrentUpdates", testNodeConcurrentUpdates},
		{"NodeListFilters", testNodeListFilters},
		{"NodeDuplicateBMC", testNodeDuplicateBMC},
		{"NodeDuplicateBMCRace", testNodeDuplicateBMCRace},
		{"NodeDuplicateBMCLegacy", testNodeDuplicateBMCLegacy},
		{"NodesOnBMC", testNodesOnBMC},
		{"NodesWithBMCKeys", testNodesWithBMCKeys},
		{"NodeListDefaultLimit", testNodeListDefaultLimit},
		{"GetNodes", testGetNodes},
		{"CountNodes", testCountNodes},
		{"BadCursor", testBadCursor},
		{"BadLookups", testBadLookups},
		{"DomainLimits", testDomainLimits},
		{"Events", testEvents},
		{"EventsGoWithNode", testEventsGoWithNode},
		{"InsertEvents", testInsertEvents},
		{"Instances", testInstances},
		{"InstanceNames", testInstanceNames},
		{"InstanceStaleWrites", testInstanceStaleWrites},
		{"InstanceList", testInstanceList},
		{"Tokens", testTokens},
		{"Quotas", testQuotas},
		{"AgentSessions", testAgentSessions},
		{"AgentActivity", testAgentActivity},
		{"InstanceDeployMethod", testInstanceDeployMethod},
		{"IdempotencyKeys", testIdempotencyKeys},
		{"TxCommit", testTxCommit},
		{"TxRollback", testTxRollback},
		{"TxPanic", testTxPanic},
		{"TxNodeForUpdate", testTxNodeForUpdate},
		{"TxClaimNode", testTxClaimNode},
		{"ClaimNodeBestFit", testClaimNodeBestFit},
		{"NodeListPlacementFilters", testNodeListPlacementFilters},
		{"NodeTraitsRoundTrip", testNodeTraitsRoundTrip},
		{"HardwareSettingsRoundTrip", testHardwareSettingsRoundTrip},
		{"ConsoleLog", testConsoleLog},
		{"TxClaimNodeRace", testTxClaimNodeRace},
		{"PasswordEncryptedAtRest", testPasswordAtRest},
		{"Persistence", testPersistence},
		{"TimestampRoundTrip", testTimestamps},
		{"MigrateIsIdempotent", testMigrateIdempotent},
		{"CanceledContext", testCanceledContext},
		{"PingAndDialect", testPingAndDialect},
	}
	tests = append(tests, ipPoolTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// ---- fixtures and comparisons ----

// nodeSeq numbers the fixtures' Redfish systems: every node is its own
// physical server (the stores refuse two nodes on one BMC endpoint).
var nodeSeq atomic.Int64

func newNode(name string) *baremetal.Node {
	return &baremetal.Node{
		Name:   name,
		Driver: baremetal.DriverRedfish,
		BMC: baremetal.BMC{
			Address:  "https://10.0.0.1:8443",
			Username: "admin",
			Password: "pw-" + name + "-Zq8!",
			Insecure: true,
			SystemID: fmt.Sprintf("/redfish/v1/Systems/%d", nodeSeq.Add(1)),
		},
		ResourceClass:  "gpu",
		Properties:     baremetal.Properties{CPUs: 64, MemoryMB: 262144, LocalGB: 960, CPUArch: "x86_64"},
		PowerState:     baremetal.PowerOff,
		ProvisionState: baremetal.StateEnroll,
	}
}

func newInstance(project, name string) *baremetal.Instance {
	return &baremetal.Instance{
		Name:          name,
		Project:       project,
		ResourceClass: "gpu",
		Image:         baremetal.Image{URL: "https://images.example/" + name + ".qcow2", Checksum: "sha256:abc"},
		UserData:      "#cloud-config\n",
		Metadata:      map[string]string{"team": "infra", "name": name},
		State:         baremetal.InstanceDeploying,
		PowerState:    baremetal.PowerOn,
	}
}

// show renders a value with every field, times in RFC 3339 with their
// zone, so that comparisons catch a lost nanosecond or a non-UTC zone;
// the node's password (hidden from JSON) is added.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	if n, ok := v.(*baremetal.Node); ok && n != nil {
		return string(b) + " password=" + n.BMC.Password
	}
	return string(b)
}

func same(t *testing.T, what string, want, got any) {
	t.Helper()
	if w, g := show(want), show(got); w != g {
		t.Errorf("%s differs:\nwant %s\n got %s", what, w, g)
	}
}

func ctxOf(t *testing.T) context.Context { return t.Context() }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code baremetal.Code, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %s error, got success", code)
	}
	if got := baremetal.ErrorCode(err); got != code {
		t.Fatalf("want code %s, got %s (%v)", code, got, err)
	}
	if got := baremetal.ErrorField(err); got != field {
		t.Fatalf("want field %q, got %q (%v)", field, got, err)
	}
}

func insertNode(t *testing.T, q store.Queries, n *baremetal.Node) *baremetal.Node {
	t.Helper()
	must(t, q.InsertNode(ctxOf(t), n))
	return n
}

func getNode(t *testing.T, q store.Queries, idOrName string) *baremetal.Node {
	t.Helper()
	n, err := q.GetNode(ctxOf(t), idOrName)
	must(t, err)
	return n
}

// ---- nodes ----

func testNodeCRUD(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	before := store.Now()
	n := insertNode(t, s, newNode("rack1-n1"))
	if n.ID == "" || n.Version != 1 {
		t.Fatalf("after insert: id %q version %d, want a generated id and version 1", n.ID, n.Version)
	}
	if n.CreatedAt.Before(before) || !n.UpdatedAt.Equal(n.CreatedAt) {
		t.Errorf("after insert: created %v updated %v, want both now (>= %v)", n.CreatedAt, n.UpdatedAt, before)
	}

	same(t, "node by id", n, getNode(t, s, n.ID))
	same(t, "node by name", n, getNode(t, s, "rack1-n1"))

	got := getNode(t, s, n.ID)
	got.Maintenance, got.MaintenanceReason = true, "replacing a DIMM"
	got.Fault, got.LastError = baremetal.FaultBMCUnreachable, "dial tcp: i/o timeout"
	got.BMCFailures = 3
	got.BMC.Password = "rotated-password"
	got.Name = "rack1-n1-renamed"
	got.Properties.CPUArch = "aarch64"
	must(t, s.UpdateNode(ctx, got))
	if got.Version != 2 || got.UpdatedAt.Before(got.CreatedAt) {
		t.Errorf("after update: version %d updated %v, want 2 and >= created", got.Version, got.UpdatedAt)
	}
	same(t, "updated node", got, getNode(t, s, n.ID))
	if _, err := s.GetNode(ctx, "rack1-n1"); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Errorf("old name still finds the node: %v", err)
	}

	must(t, s.DeleteNode(ctx, n.ID, got.Version))
	_, err := s.GetNode(ctx, n.ID)
	wantCode(t, err, baremetal.CodeNotFound, "")
}

// testNodePropertyOverrides: which properties are the operator's and
// what inspection found are stored with the node, each property on its
// own, through insert and update; a node without either reads back
// without either.
func testNodePropertyOverrides(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	plain := newNode("plain")
	plain.Properties = baremetal.Properties{}
	plain = insertNode(t, s, plain)
	got := getNode(t, s, plain.ID)
	if got.Overrides != (baremetal.PropertyOverrides{}) || got.Inspected != (baremetal.Properties{}) {
		t.Errorf("a node without overrides reads back overrides %+v, inspected %+v", got.Overrides, got.Inspected)
	}

	n := newNode("overridden")
	n.Properties = baremetal.Properties{}
	n.SetOverrides(baremetal.Properties{CPUs: 128, CPUArch: "aarch64"})
	n = insertNode(t, s, n)
	got = getNode(t, s, n.ID)
	same(t, "node with overrides", n, got)
	if got.Overrides != (baremetal.PropertyOverrides{CPUs: true, CPUArch: true}) {
		t.Errorf("overrides after insert: %+v", got.Overrides)
	}

	got.RecordInspection(baremetal.Properties{CPUs: 32, MemoryMB: 65536, LocalGB: 64, CPUArch: "x86_64"}, false)
	must(t, s.UpdateNode(ctx, got))
	inspected := getNode(t, s, n.ID)
	same(t, "inspected node", got, inspected)
	if want := (baremetal.Properties{CPUs: 128, MemoryMB: 65536, LocalGB: 64, CPUArch: "aarch64"}); inspected.Properties != want {
		t.Errorf("properties after inspection: %+v, want %+v", inspected.Properties, want)
	}
	if want := (baremetal.Properties{CPUs: 32, MemoryMB: 65536, LocalGB: 64, CPUArch: "x86_64"}); inspected.Inspected != want {
		t.Errorf("inspected after inspection: %+v, want %+v", inspected.Inspected, want)
	}

	// Each override clears on its own.
	inspected.SetOverrides(baremetal.Properties{CPUArch: "aarch64", LocalGB: 2000})
	must(t, s.UpdateNode(ctx, inspected))
	cleared := getNode(t, s, n.ID)
	same(t, "node with cpus cleared", inspected, cleared)
	if cleared.Overrides != (baremetal.PropertyOverrides{LocalGB: true, CPUArch: true}) || cleared.Properties.CPUs != 32 || cleared.Properties.LocalGB != 2000 {
		t.Errorf("after clearing cpus and overriding local_gb: overrides %+v, properties %+v", cleared.Overrides, cleared.Properties)
	}
}

// testNodePropertyOverridesMigration: a database from before migration
// 0008, where inspection filled only empty properties and never
// overwrote a set one, opens with every set property an override (so
// inspection still leaves it alone) and remembered as inspected (so
// clearing the override keeps the value until the next inspection).
func testNodePropertyOverridesMigration(t *testing.T, s store.Store) {
	full := insertNode(t, s, newNode("pre8-full"))
	part := newNode("pre8-part")
	part.Properties = baremetal.Properties{MemoryMB: 2048}
	part = insertNode(t, s, part)
	undoNodeColumns(t, s, 8, "cpus_override", "memory_mb_override", "local_gb_override", "cpu_arch_override",
		"inspected_cpus", "inspected_memory_mb", "inspected_local_gb", "inspected_cpu_arch")
	must(t, s.Close())
	s2 := reopen(t, s)

	got := getNode(t, s2, full.ID)
	if got.Overrides != (baremetal.PropertyOverrides{CPUs: true, MemoryMB: true, LocalGB: true, CPUArch: true}) ||
		got.Inspected != full.Properties || got.Properties != full.Properties {
		t.Errorf("%s migrated: overrides %+v, inspected %+v, properties %+v; want all overrides, inspected = properties = %+v",
			got.Name, got.Overrides, got.Inspected, got.Properties, full.Properties)
	}
	got = getNode(t, s2, part.ID)
	if got.Overrides != (baremetal.PropertyOverrides{MemoryMB: true}) || got.Inspected != part.Properties || got.Properties != part.Properties {
		t.Errorf("%s migrated: overrides %+v, inspected %+v, properties %+v; want memory_mb overridden, inspected = properties = %+v",
			got.Name, got.Overrides, got.Inspected, got.Properties, part.Properties)
	}
	got.SetOverrides(baremetal.Properties{})
	must(t, s2.UpdateNode(ctxOf(t), got))
	if got = getNode(t, s2, part.ID); got.Properties != part.Properties {
		t.Errorf("migrated override cleared: %+v, want the value kept %+v", got.Properties, part.Properties)
	}
}

// testNodeCleanInspectSettings: a node's own clean_erase and
// inspect_on_enroll (unset, true, false) are stored through insert and
// update, and unset reads back unset (not false).
func testNodeCleanInspectSettings(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	plain := insertNode(t, s, newNode("follows"))
	got := getNode(t, s, plain.ID)
	if got.CleanErase != baremetal.CleanEraseDefault || got.InspectOnEnroll != nil {
		t.Errorf("a node without settings reads back clean_erase %q, inspect_on_enroll %v", got.CleanErase, ptrString(got.InspectOnEnroll))
	}

	yes, no := true, false
	n := newNode("own")
	n.CleanErase, n.InspectOnEnroll = baremetal.CleanEraseFull, &yes
	n = insertNode(t, s, n)
	got = getNode(t, s, n.ID)
	same(t, "node with its own settings", n, got)
	if got.CleanErase != baremetal.CleanEraseFull || got.InspectOnEnroll == nil || !*got.InspectOnEnroll {
		t.Errorf("after insert: clean_erase %q, inspect_on_enroll %v; want full, true", got.CleanErase, ptrString(got.InspectOnEnroll))
	}

	for _, c := range []struct {
		erase   baremetal.CleanErase
		inspect *bool
	}{{baremetal.CleanEraseOff, &no}, {baremetal.CleanEraseMetadata, nil}, {baremetal.CleanEraseDefault, &yes}, {baremetal.CleanEraseDefault, nil}} {
		got.CleanErase, got.InspectOnEnroll = c.erase, c.inspect
		must(t, s.UpdateNode(ctx, got))
		back := getNode(t, s, n.ID)
		same(t, fmt.Sprintf("node updated to clean_erase %q, inspect_on_enroll %v", c.erase, ptrString(c.inspect)), got, back)
		if back.CleanErase != c.erase || ptrString(back.InspectOnEnroll) != ptrString(c.inspect) {
			t.Errorf("after update: clean_erase %q, inspect_on_enroll %v; want %q, %v",
				back.CleanErase, ptrString(back.InspectOnEnroll), c.erase, ptrString(c.inspect))
		}
		got = back
	}
}

// testNodeCleanInspectMigration: nodes from before migration 0011 open
// following the controller (no erase mode of their own, inspection on
// enroll as the controller's flag says), and take settings afterwards.
func testNodeCleanInspectMigration(t *testing.T, s store.Store) {
	old := insertNode(t, s, newNode("pre11"))
	undoNodeColumns(t, s, 11, "clean_erase", "inspect_on_enroll")
	must(t, s.Close())
	s2 := reopen(t, s)

	got := getNode(t, s2, old.ID)
	if got.CleanErase != baremetal.CleanEraseDefault || got.InspectOnEnroll != nil {
		t.Errorf("migrated node: clean_erase %q, inspect_on_enroll %v; want both unset", got.CleanErase, ptrString(got.InspectOnEnroll))
	}
	no := false
	got.CleanErase, got.InspectOnEnroll = baremetal.CleanEraseOff, &no
	must(t, s2.UpdateNode(ctxOf(t), got))
	if back := getNode(t, s2, old.ID); back.CleanErase != baremetal.CleanEraseOff || ptrString(back.InspectOnEnroll) != "false" {
		t.Errorf("migrated node updated: clean_erase %q, inspect_on_enroll %v; want off, false", back.CleanErase, ptrString(back.InspectOnEnroll))
	}
}

// testNodeFlow: a node's flow (name, steps, current step, when it
// started, notes) is stored through insert and update and reads back as
// written; a node in no flow reads back without one.
func testNodeFlow(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	plain := insertNode(t, s, newNode("idle"))
	if got := getNode(t, s, plain.ID); got.Flow != nil {
		t.Errorf("a node in no flow reads back flow %+v", got.Flow)
	}

	n := newNode("busy")
	n.Flow = &baremetal.Flow{Name: "cleanup", Steps: []string{"boot_agent", "erase", "power_off", "clear_boot"},
		Step: "boot_agent", StepStartedAt: time.Now()}
	n = insertNode(t, s, n)
	got := getNode(t, s, n.ID)
	same(t, "node in a flow", n, got)

	got.Flow = &baremetal.Flow{Name: "cleanup", Steps: got.Flow.Steps, Step: "power_off", StepStartedAt: time.Now().Add(time.Minute),
		Notes: map[string]string{"erased": "disks erased (metadata): 2 disks"}}
	must(t, s.UpdateNode(ctx, got))
	back := getNode(t, s, n.ID)
	same(t, "node at its next step", got, back)
	if back.Flow == nil || back.Flow.Step != "power_off" || back.Flow.StepIndex() != 2 || back.Flow.Notes["erased"] == "" {
		t.Errorf("after update: flow %+v", back.Flow)
	}

	back.Flow = nil
	must(t, s.UpdateNode(ctx, back))
	if again := getNode(t, s, n.ID); again.Flow != nil {
		t.Errorf("flow ended, reads back %+v", again.Flow)
	}
}

// testNodeFlowMigration: nodes from before migration 0014 open in no
// flow, and take one afterwards.
func testNodeFlowMigration(t *testing.T, s store.Store) {
	old := insertNode(t, s, newNode("pre14"))
	undoNodeColumns(t, s, 14, "flow")
	must(t, s.Close())
	s2 := reopen(t, s)

	got := getNode(t, s2, old.ID)
	if got.Flow != nil {
		t.Errorf("migrated node: flow %+v, want none", got.Flow)
	}
	got.Flow = &baremetal.Flow{Name: "retire", Steps: []string{"remove"}, Step: "remove", StepStartedAt: time.Now()}
	must(t, s2.UpdateNode(ctxOf(t), got))
	if back := getNode(t, s2, old.ID); back.Flow == nil || back.Flow.Name != "retire" {
		t.Errorf("migrated node updated: flow %+v", back.Flow)
	}
}

// undoNodeColumns puts s's schema back to before the migration version,
// which added columns to nodes: it undoes 0012 (the view node_rows reads
// every column, so none can be dropped under it) and the migrations after
// version that add a column and create the view again (0014), then drops
// the columns. Reopening the store applies them all again, in order, as
// on a database that an older controller left.
func undoNodeColumns(t *testing.T, s store.Store, version int, columns ...string) {
	t.Helper()
	rawExec(t, s, `DROP VIEW node_rows`)
	rawExec(t, s, `DELETE FROM schema_migrations WHERE version = 12`)
	// 0019 creates the view again too: undone, it is applied again after
	// version, and the view has every column.
	rawExec(t, s, `DROP INDEX nodes_free`)
	for _, col := range []string{"traits", "derived_traits", "owner"} {
		rawExec(t, s, `ALTER TABLE nodes DROP COLUMN `+col)
	}
	rawExec(t, s, `ALTER TABLE instances DROP COLUMN requirements`)
	rawExec(t, s, `DELETE FROM schema_migrations WHERE version = 19`)
	// 0020 likewise.
	rawExec(t, s, `ALTER TABLE nodes DROP COLUMN hardware_settings`)
	rawExec(t, s, `ALTER TABLE nodes DROP COLUMN hardware_observed`)
	rawExec(t, s, `DROP TABLE bios_registries`)
	rawExec(t, s, `DELETE FROM schema_migrations WHERE version = 20`)
	rawExec(t, s, `ALTER TABLE nodes DROP COLUMN health`)
	rawExec(t, s, `DELETE FROM schema_migrations WHERE version = 21`)
	if version < 14 {
		rawExec(t, s, `DELETE FROM schema_migrations WHERE version = 14`)
		columns = append(columns, "flow")
	}
	for _, col := range columns {
		rawExec(t, s, `ALTER TABLE nodes DROP COLUMN `+col)
	}
	rawExec(t, s, fmt.Sprintf(`DELETE FROM schema_migrations WHERE version = %d`, version))
}

// ptrString shows a tri-state: "unset", "true" or "false".
func ptrString(b *bool) string {
	if b == nil {
		return "unset"
	}
	return strconv.FormatBool(*b)
}

func testNodeNotFound(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	_, err := s.GetNode(ctx, "ghost")
	wantCode(t, err, baremetal.CodeNotFound, "")
	if msg := baremetal.ErrorMessage(err); msg != `node "ghost" not found` {
		t.Errorf("message %q", msg)
	}
	ghost := newNode("ghost")
	ghost.ID, ghost.Version = "00000000-0000-4000-8000-000000000000", 1
	wantCode(t, s.UpdateNode(ctx, ghost), baremetal.CodeNotFound, "")
	wantCode(t, s.DeleteNode(ctx, ghost.ID, 1), baremetal.CodeNotFound, "")
}

func testNodeDuplicateName(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	a := insertNode(t, s, newNode("a"))
	b := insertNode(t, s, newNode("b"))

	dup := newNode("a")
	wantCode(t, s.InsertNode(ctx, dup), baremetal.CodeConflict, "name")
	if dup.ID != "" || dup.Version != 0 {
		t.Errorf("a failed insert changed the node: id %q version %d", dup.ID, dup.Version)
	}

	rename := getNode(t, s, b.ID)
	rename.Name = "a"
	wantCode(t, s.UpdateNode(ctx, rename), baremetal.CodeConflict, "name")
	if rename.Version != 1 {
		t.Errorf("a failed update changed the version to %d", rename.Version)
	}
	same(t, "node a", a, getNode(t, s, "a"))
	same(t, "node b", b, getNode(t, s, "b"))
}

func testNodeExplicitID(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	n := newNode("fixed")
	n.ID = "11111111-2222-4333-8444-555555555555"
	insertNode(t, s, n)
	if n.ID != "11111111-2222-4333-8444-555555555555" {
		t.Errorf("insert replaced the given id with %q", n.ID)
	}
	again := newNode("other")
	again.ID = n.ID
	wantCode(t, s.InsertNode(ctx, again), baremetal.CodeConflict, "id")
}

// A node named like another node's id: the id lookup wins.
func testNodeIDBeatsName(t *testing.T, s store.Store) {
	a := insertNode(t, s, newNode("a"))
	b := insertNode(t, s, newNode(a.ID))
	if got := getNode(t, s, a.ID); got.ID != a.ID {
		t.Errorf("GetNode(%s) found %s (the node with that name), want the node with that id", a.ID, got.ID)
	}
	if got := getNode(t, s, b.ID); got.ID != b.ID {
		t.Errorf("GetNode(%s) found %s", b.ID, got.ID)
	}
}

func testNodeStaleWrites(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	n := insertNode(t, s, newNode("n"))
	first, second := getNode(t, s, n.ID), getNode(t, s, n.ID)

	first.Maintenance, first.MaintenanceReason = true, "first writer"
	must(t, s.UpdateNode(ctx, first))

	second.ResourceClass = "second writer"
	err := s.UpdateNode(ctx, second)
	wantCode(t, err, baremetal.CodeConflict, "version")
	if msg := baremetal.ErrorMessage(err); !strings.Contains(msg, "version 1, stored 2") {
		t.Errorf("stale update message %q does not name both versions", msg)
	}
	if second.Version != 1 {
		t.Errorf("a rejected update changed the caller's version to %d", second.Version)
	}
	same(t, "node after stale update", first, getNode(t, s, n.ID))

	err = s.DeleteNode(ctx, n.ID, 1)
	wantCode(t, err, baremetal.CodeConflict, "version")
	same(t, "node after stale delete", first, getNode(t, s, n.ID))

	must(t, s.DeleteNode(ctx, n.ID, 2))
}

// Writers racing on one version: exactly one wins, whatever the database.
func testNodeConcurrentUpdates(t *testing.T, s store.Store) {
	n := insertNode(t, s, newNode("raced"))
	const writers = 8
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		mine := *n
		mine.LastError = fmt.Sprintf("writer %d", i)
		wg.Go(func() { errs[i] = s.UpdateNode(ctxOf(t), &mine) })
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case baremetal.IsCode(err, baremetal.CodeConflict) && baremetal.ErrorField(err) == "version":
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d writers won the race on one version, want exactly 1", wins)
	}
	if got := getNode(t, s, n.ID); got.Version != 2 {
		t.Errorf("version after the race %d, want 2", got.Version)
	}
}

func testNodeListFilters(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	now := store.Now()
	past, future := now.Add(-time.Minute), now.Add(time.Hour)
	var all []*baremetal.Node
	states := baremetal.ProvisionStates
	faults := []baremetal.Fault{baremetal.FaultNone, baremetal.FaultBMCUnreachable, baremetal.FaultNone, baremetal.FaultPowerMismatch}
	for i := range 30 {
		n := newNode(fmt.Sprintf("node-%02d", i))
		n.ProvisionState = states[i%len(states)]
		n.Fault = faults[i%len(faults)]
		n.Maintenance = i%3 == 0
		n.ResourceClass = []string{"gpu", "cpu"}[(i/2)%2]
		switch i % 3 {
		case 1:
			n.NextCheckAt = &past
		case 2:
			n.NextCheckAt = &future
		}
		all = append(all, insertNode(t, s, n))
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })

	yes, no := true, false
	cases := []struct {
		name string
		f    store.NodeFilter
		want func(*baremetal.Node) bool
	}{
		{"all but deleting", store.NodeFilter{}, func(n *baremetal.Node) bool { return n.ProvisionState != baremetal.StateDeleting }},
		{"include deleting", store.NodeFilter{IncludeDeleting: true}, func(*baremetal.Node) bool { return true }},
		{"state deleting", store.NodeFilter{ProvisionState: baremetal.StateDeleting}, func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateDeleting }},
		{"state available", store.NodeFilter{ProvisionState: baremetal.StateAvailable}, func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable }},
		{"maintenance", store.NodeFilter{Maintenance: &yes, IncludeDeleting: true}, func(n *baremetal.Node) bool { return n.Maintenance }},
		{"not maintenance", store.NodeFilter{Maintenance: &no, IncludeDeleting: true}, func(n *baremetal.Node) bool { return !n.Maintenance }},
		{"fault any", store.NodeFilter{Fault: "any", IncludeDeleting: true}, func(n *baremetal.Node) bool { return n.Fault != "" }},
		{"fault none", store.NodeFilter{Fault: "none", IncludeDeleting: true}, func(n *baremetal.Node) bool { return n.Fault == "" }},
		{"fault power_mismatch", store.NodeFilter{Fault: "power_mismatch", IncludeDeleting: true}, func(n *baremetal.Node) bool { return n.Fault == baremetal.FaultPowerMismatch }},
		{"resource class", store.NodeFilter{ResourceClass: "cpu"}, func(n *baremetal.Node) bool {
			return n.ResourceClass == "cpu" && n.ProvisionState != baremetal.StateDeleting
		}},
		{"due now", store.NodeFilter{DueBefore: &now, IncludeDeleting: true}, func(n *baremetal.Node) bool { return n.NextCheckAt == nil || !n.NextCheckAt.After(now) }},
		{"combined", store.NodeFilter{Fault: "any", Maintenance: &no, ResourceClass: "gpu"}, func(n *baremetal.Node) bool {
			return n.Fault != "" && !n.Maintenance && n.ResourceClass == "gpu" && n.ProvisionState != baremetal.StateDeleting
		}},
	}
	for _, c := range cases {
		var want []string
		for _, n := range all {
			if c.want(n) {
				want = append(want, n.ID)
			}
		}
		if len(want) == 0 {
			t.Fatalf("%s: fixture selects nothing; the case tests nothing", c.name)
		}
		for _, limit := range []int{4, 7, 100} {
			f := c.f
			f.Limit = limit
			var got []string
			pages := 0
			for {
				page, next, err := s.ListNodes(ctx, f)
				must(t, err)
				pages++
				if len(page) > limit {
					t.Fatalf("%s: page of %d nodes, limit %d", c.name, len(page), limit)
				}
				for _, n := range page {
					got = append(got, n.ID)
					if n.BMC.Password == "" {
						t.Fatalf("%s: listed node %s lacks its password", c.name, n.Name)
					}
				}
				if next == "" {
					break
				}
				if len(page) != limit {
					t.Fatalf("%s: short page (%d of %d) with a next cursor", c.name, len(page), limit)
				}
				f.After = next
				if pages > 100 {
					t.Fatalf("%s: pagination does not end", c.name)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, limit %d:\nwant %v\n got %v", c.name, limit, want, got)
			}
			if wantPages := (len(want) + limit - 1) / limit; pages != wantPages && pages != wantPages+1 {
				t.Errorf("%s, limit %d: %d pages for %d nodes", c.name, limit, pages, len(want))
			}
		}
	}
	// A full listing gives the nodes exactly as GetNode does.
	page, _, err := s.ListNodes(ctx, store.NodeFilter{IncludeDeleting: true, Page: store.Page{Limit: 1000}})
	must(t, err)
	for i, n := range page {
		same(t, "listed node", all[i], n)
	}
}

// testGetNodes: one query for a batch of ids, names do not match, missing
// ids are left out, the order is by id, and the rows are whole nodes
// (password opened, times as stored).
func testGetNodes(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	var ids []string
	byID := map[string]*baremetal.Node{}
	for i := range 5 {
		n := newNode(fmt.Sprintf("batch-%d", i))
		n.BMC.Address = fmt.Sprintf("https://10.0.7.%d", i+1)
		insertNode(t, s, n)
		ids = append(ids, n.ID)
		byID[n.ID] = getNode(t, s, n.ID)
	}
	got, err := s.GetNodes(ctx, []string{ids[3], "no-such-id", ids[0], "batch-1", ids[4]})
	must(t, err)
	want := []string{ids[0], ids[3], ids[4]}
	slices.Sort(want)
	if len(got) != len(want) {
		t.Fatalf("GetNodes returned %d nodes, want %d (%v)", len(got), len(want), want)
	}
	for i, n := range got {
		if n.ID != want[i] {
			t.Fatalf("GetNodes[%d] = %s, want %s (ordered by id)", i, n.ID, want[i])
		}
		same(t, "GetNodes node", byID[n.ID], n)
	}
	none, err := s.GetNodes(ctx, nil)
	must(t, err)
	if len(none) != 0 {
		t.Fatalf("GetNodes(nil) = %d nodes", len(none))
	}
	tooMany := make([]string, store.MaxPageLimit+1)
	if _, err := s.GetNodes(ctx, tooMany); err == nil {
		t.Fatalf("GetNodes with %d ids: want an error", len(tooMany))
	}
	// Inside a transaction too (the power sync batch may read there).
	must(t, s.InTx(ctx, func(tx store.Tx) error {
		in, err := tx.GetNodes(ctx, ids)
		if err == nil && len(in) != len(ids) {
			err = fmt.Errorf("in tx: %d nodes, want %d", len(in), len(ids))
		}
		return err
	}))
}

func testCountNodes(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	empty, err := s.CountNodes(ctx)
	must(t, err)
	if len(empty) != 0 {
		t.Fatalf("CountNodes on an empty store = %+v", empty)
	}
	mk := func(i int, state baremetal.ProvisionState, fault baremetal.Fault, maint bool) {
		n := newNode(fmt.Sprintf("count-%d", i))
		n.BMC.Address = fmt.Sprintf("https://10.0.8.%d", i+1)
		n.ProvisionState, n.Fault, n.Maintenance = state, fault, maint
		insertNode(t, s, n)
	}
	mk(0, baremetal.StateAvailable, baremetal.FaultNone, false)
	mk(1, baremetal.StateAvailable, baremetal.FaultNone, false)
	mk(2, baremetal.StateAvailable, baremetal.FaultBMCUnreachable, false)
	mk(3, baremetal.StateActive, baremetal.FaultNone, true)
	mk(4, baremetal.StateDeleting, baremetal.FaultNone, false) // deleting nodes count too
	got, err := s.CountNodes(ctx)
	must(t, err)
	key := func(c store.NodeCount) string {
		return fmt.Sprintf("%s/%s/%t", c.ProvisionState, c.Fault, c.Maintenance)
	}
	gotMap := map[string]int{}
	for _, c := range got {
		gotMap[key(c)] += c.Count
	}
	want := map[string]int{
		key(store.NodeCount{ProvisionState: baremetal.StateAvailable}):                                       2,
		key(store.NodeCount{ProvisionState: baremetal.StateAvailable, Fault: baremetal.FaultBMCUnreachable}): 1,
		key(store.NodeCount{ProvisionState: baremetal.StateActive, Maintenance: true}):                       1,
		key(store.NodeCount{ProvisionState: baremetal.StateDeleting}):                                        1,
	}
	if fmt.Sprint(gotMap) != fmt.Sprint(want) || len(got) != len(want) {
		t.Fatalf("CountNodes = %v (%d rows), want %v", gotMap, len(got), want)
	}
}

func testNodeListDefaultLimit(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	must(t, s.InTx(ctx, func(tx store.Tx) error {
		for i := range store.DefaultPageLimit + 1 {
			if err := tx.InsertNode(ctx, newNode(fmt.Sprintf("n%03d", i))); err != nil {
				return err
			}
		}
		return nil
	}))
	page, next, err := s.ListNodes(ctx, store.NodeFilter{})
	must(t, err)
	if len(page) != store.DefaultPageLimit || next == "" {
		t.Fatalf("default page: %d nodes, next %q; want %d and a cursor", len(page), next, store.DefaultPageLimit)
	}
	page, next, err = s.ListNodes(ctx, store.NodeFilter{Page: store.Page{After: next, Limit: -5}})
	must(t, err)
	if len(page) != 1 || next != "" {
		t.Fatalf("last page: %d nodes, next %q; want 1 and no cursor", len(page), next)
	}
	page, _, err = s.ListNodes(ctx, store.NodeFilter{Page: store.Page{Limit: store.MaxPageLimit + 1}})
	must(t, err)
	if len(page) != store.DefaultPageLimit+1 {
		t.Fatalf("big page: %d nodes", len(page))
	}
}

func testBadCursor(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	for _, c := range []string{"***", "=", "%%"} {
		_, _, err := s.ListNodes(ctx, store.NodeFilter{Page: store.Page{After: c}})
		wantCode(t, err, baremetal.CodeInvalid, "cursor")
		_, _, err = s.ListInstances(ctx, store.InstanceFilter{Page: store.Page{After: c}})
		wantCode(t, err, baremetal.CodeInvalid, "cursor")
		_, _, err = s.ListTokens(ctx, store.Page{After: c})
		wantCode(t, err, baremetal.CodeInvalid, "cursor")
		_, _, err = s.ListEvents(ctx, "x", store.Page{After: c})
		wantCode(t, err, baremetal.CodeInvalid, "cursor")
	}
	// A node cursor is not an event cursor.
	_, _, err := s.ListEvents(ctx, "x", store.Page{After: store.EncodeCursor("not-a-number")})
	wantCode(t, err, baremetal.CodeInvalid, "cursor")
}

// ---- events ----

func testEvents(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	a := insertNode(t, s, newNode("a"))
	b := insertNode(t, s, newNode("b"))

	var want []*baremetal.Event
	for i := range 9 {
		e := &baremetal.Event{NodeID: a.ID, Actor: baremetal.ActorController, Type: "fault", Field: "fault",
			Old: "", New: "bmc_unreachable", Message: fmt.Sprintf("event %d", i)}
		must(t, s.InsertEvent(ctx, e))
		if e.ID == 0 || e.Time.IsZero() {
			t.Fatalf("InsertEvent left id %d time %v", e.ID, e.Time)
		}
		if len(want) > 0 && e.ID <= want[len(want)-1].ID {
			t.Fatalf("event ids do not grow: %d after %d", e.ID, want[len(want)-1].ID)
		}
		want = append(want, e)
		// Interleave another node's events: they must not show up.
		must(t, s.InsertEvent(ctx, &baremetal.Event{NodeID: b.ID, Actor: "admin-token", Type: "maintenance", Message: "other"}))
	}
	at := time.Date(2020, 1, 2, 3, 4, 5, 6789, time.UTC)
	e := &baremetal.Event{NodeID: a.ID, Time: at, Actor: "tok-1", Type: "maintenance", Field: "maintenance", Old: "false", New: "true", Message: "set by operator"}
	must(t, s.InsertEvent(ctx, e))
	if !e.Time.Equal(at.Truncate(time.Microsecond)) {
		t.Errorf("explicit event time became %v", e.Time)
	}
	want = append(want, e)

	var got []*baremetal.Event
	p := store.Page{Limit: 3}
	for {
		page, next, err := s.ListEvents(ctx, a.ID, p)
		must(t, err)
		got = append(got, page...)
		if next == "" {
			break
		}
		p.After = next
	}
	same(t, "events oldest first", want, got)

	none, next, err := s.ListEvents(ctx, "no-such-node", store.Page{})
	must(t, err)
	if len(none) != 0 || next != "" {
		t.Errorf("events of an unknown node: %d, next %q", len(none), next)
	}
	err = s.InsertEvent(ctx, &baremetal.Event{NodeID: "no-such-node", Type: "x"})
	wantCode(t, err, baremetal.CodeNotFound, "")
}

func testInsertEvents(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	a := insertNode(t, s, newNode("a"))
	must(t, s.InsertEvents(ctx, nil))
	at := time.Date(2021, 5, 6, 7, 8, 9, 123456789, time.UTC)
	evs := []*baremetal.Event{
		{NodeID: a.ID, Actor: "controller", Type: "properties", Field: "properties", Old: "{}", New: "{CPUs:8}", Message: "first"},
		{NodeID: a.ID, Actor: "controller", Type: "provision_state", Field: "provision_state", Old: "enroll", New: "available", Message: "second", Time: at},
		{NodeID: a.ID, Actor: "controller", Type: "power_state", Field: "power_state", Old: "unknown", New: "off", Message: "third"},
	}
	must(t, s.InsertEvents(ctx, evs))
	for i, e := range evs {
		if e.ID == 0 || e.Time.IsZero() {
			t.Fatalf("event %d: InsertEvents left id %d time %v", i, e.ID, e.Time)
		}
		if i > 0 && e.ID <= evs[i-1].ID {
			t.Errorf("event ids do not grow in insertion order: %d after %d", e.ID, evs[i-1].ID)
		}
	}
	if !evs[1].Time.Equal(at.Truncate(time.Microsecond)) {
		t.Errorf("explicit event time became %v", evs[1].Time)
	}
	got, _, err := s.ListEvents(ctx, a.ID, store.Page{})
	must(t, err)
	same(t, "events inserted together", evs, got)

	// A missing node writes none of them and sets no ids.
	bad := []*baremetal.Event{{NodeID: a.ID, Type: "x", Message: "before"}, {NodeID: "no-such-node", Type: "x"}}
	err = s.InTx(ctx, func(tx store.Tx) error { return tx.InsertEvents(ctx, bad) })
	wantCode(t, err, baremetal.CodeNotFound, "")
	if bad[0].ID != 0 || bad[1].ID != 0 {
		t.Errorf("a failed InsertEvents set ids %d, %d", bad[0].ID, bad[1].ID)
	}
	got, _, err = s.ListEvents(ctx, a.ID, store.Page{})
	must(t, err)
	if len(got) != len(evs) {
		t.Errorf("%d events after a failed InsertEvents, want %d", len(got), len(evs))
	}
}

func testEventsGoWithNode(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	n := insertNode(t, s, newNode("doomed"))
	keep := insertNode(t, s, newNode("keep"))
	for range 3 {
		must(t, s.InsertEvent(ctx, &baremetal.Event{NodeID: n.ID, Type: "provision_state", Message: "m"}))
	}
	must(t, s.InsertEvent(ctx, &baremetal.Event{NodeID: keep.ID, Type: "provision_state", Message: "m"}))
	must(t, s.DeleteNode(ctx, n.ID, n.Version))
	if got := rawCount(t, s, "SELECT count(*) FROM events WHERE node_id = '"+n.ID+"'"); got != 0 {
		t.Errorf("%d events of a deleted node remain", got)
	}
	kept, _, err := s.ListEvents(ctx, keep.ID, store.Page{})
	must(t, err)
	if len(kept) != 1 {
		t.Errorf("another node's events: %d, want 1", len(kept))
	}
}

// ---- instances ----

func testInstances(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	i := newInstance("proj-a", "web-1")
	must(t, s.InsertInstance(ctx, i))
	if i.ID == "" || i.Version != 1 || i.CreatedAt.IsZero() || !i.UpdatedAt.Equal(i.CreatedAt) {
		t.Fatalf("after insert: %+v", i)
	}
	got, err := s.GetInstance(ctx, i.ID)
	must(t, err)
	same(t, "instance by id", i, got)
	got, err = s.GetInstance(ctx, "web-1")
	must(t, err)
	same(t, "instance by name", i, got)

	got.State, got.Ready, got.NodeID = baremetal.InstanceActive, true, "node-1"
	got.Metadata = nil
	got.ReadyTokenHash, got.ReadyToken = "deadbeef", "rdy_not-stored-in-the-clear"
	got.DeployTimeout = 90 * time.Minute
	booted := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	got.BootedAt = &booted
	must(t, s.UpdateInstance(ctx, got))
	if got.Version != 2 {
		t.Errorf("version after update %d", got.Version)
	}
	again, err := s.GetInstance(ctx, i.ID)
	must(t, err)
	same(t, "updated instance", got, again)

	n, err := s.CountInstances(ctx, "proj-a")
	must(t, err)
	if n != 1 {
		t.Errorf("CountInstances = %d", n)
	}
	must(t, s.DeleteInstance(ctx, i.ID, got.Version))
	_, err = s.GetInstance(ctx, i.ID)
	wantCode(t, err, baremetal.CodeNotFound, "")
	if msg := baremetal.ErrorMessage(err); msg != fmt.Sprintf("instance %q not found", i.ID) {
		t.Errorf("message %q", msg)
	}
	n, err = s.CountInstances(ctx, "proj-a")
	must(t, err)
	if n != 0 {
		t.Errorf("CountInstances after delete = %d", n)
	}
	wantCode(t, s.DeleteInstance(ctx, i.ID, got.Version), baremetal.CodeNotFound, "")
}

func testInstanceNames(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	a := newInstance("proj-a", "db")
	must(t, s.InsertInstance(ctx, a))
	wantCode(t, s.InsertInstance(ctx, newInstance("proj-a", "db")), baremetal.CodeConflict, "name")

	// Names are per project.
	b := newInstance("proj-b", "db")
	must(t, s.InsertInstance(ctx, b))
	_, err := s.GetInstance(ctx, "db")
	wantCode(t, err, baremetal.CodeConflict, "name")
	got, err := s.GetInstance(ctx, b.ID)
	must(t, err)
	same(t, "instance by id", b, got)

	// Renaming into a taken name is a conflict and changes nothing.
	c := newInstance("proj-a", "cache")
	must(t, s.InsertInstance(ctx, c))
	rename := *c
	rename.Name = "db"
	wantCode(t, s.UpdateInstance(ctx, &rename), baremetal.CodeConflict, "name")
	got, err = s.GetInstance(ctx, c.ID)
	must(t, err)
	same(t, "instance after failed rename", c, got)

	for project, want := range map[string]int{"proj-a": 2, "proj-b": 1, "proj-none": 0, "": 3} {
		n, err := s.CountInstances(ctx, project)
		must(t, err)
		if n != want {
			t.Errorf("CountInstances(%q) = %d, want %d", project, n, want)
		}
	}
}

func testInstanceStaleWrites(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	i := newInstance("p", "vm")
	must(t, s.InsertInstance(ctx, i))
	first, second := *i, *i
	first.PowerState = baremetal.PowerOff
	must(t, s.UpdateInstance(ctx, &first))
	second.LastError = "stale"
	err := s.UpdateInstance(ctx, &second)
	wantCode(t, err, baremetal.CodeConflict, "version")
	if msg := baremetal.ErrorMessage(err); !strings.Contains(msg, "version 1, stored 2") {
		t.Errorf("message %q", msg)
	}
	wantCode(t, s.DeleteInstance(ctx, i.ID, 1), baremetal.CodeConflict, "version")
	got, err := s.GetInstance(ctx, i.ID)
	must(t, err)
	same(t, "instance after stale writes", &first, got)
}

func testInstanceList(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	var all []*baremetal.Instance
	for k := range 12 {
		i := newInstance([]string{"p1", "p2", "p3"}[k%3], fmt.Sprintf("vm-%02d", k))
		i.NodeID = []string{"node-x", "node-y"}[k%2]
		must(t, s.InsertInstance(ctx, i))
		all = append(all, i)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	for _, f := range []store.InstanceFilter{{}, {Project: "p2"}, {NodeID: "node-y"}, {Project: "p1", NodeID: "node-x"}} {
		var want []*baremetal.Instance
		for _, i := range all {
			if (f.Project == "" || i.Project == f.Project) && (f.NodeID == "" || i.NodeID == f.NodeID) {
				want = append(want, i)
			}
		}
		f.Limit = 2
		var got []*baremetal.Instance
		for {
			page, next, err := s.ListInstances(ctx, f)
			must(t, err)
			got = append(got, page...)
			if next == "" {
				break
			}
			f.After = next
		}
		same(t, fmt.Sprintf("instances %+v", f), want, got)
	}
}

// ---- tokens ----

func testTokens(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	n, err := s.CountTokens(ctx)
	must(t, err)
	if n != 0 {
		t.Fatalf("a new store has %d tokens", n)
	}
	exp := time.Now().Add(24 * time.Hour)
	admin := &baremetal.Token{Name: "bootstrap", Role: baremetal.RoleAdmin, Hash: strings.Repeat("a", 64)}
	member := &baremetal.Token{Role: baremetal.RoleMember, Project: "proj-a", Hash: strings.Repeat("b", 64), ExpiresAt: &exp}
	anon := &baremetal.Token{Role: baremetal.RoleMember, Project: "proj-b", Hash: strings.Repeat("c", 64)}
	for _, tok := range []*baremetal.Token{admin, member, anon} {
		must(t, s.InsertToken(ctx, tok))
		if tok.ID == "" || tok.CreatedAt.IsZero() {
			t.Fatalf("after insert: %+v", tok)
		}
	}
	if !member.ExpiresAt.Equal(exp.Truncate(time.Microsecond)) {
		t.Errorf("ExpiresAt after insert %v", member.ExpiresAt)
	}

	got, err := s.GetTokenByHash(ctx, member.Hash)
	must(t, err)
	same(t, "token by hash", member, got)
	got, err = s.GetToken(ctx, admin.ID)
	must(t, err)
	same(t, "token by id", admin, got)

	_, err = s.GetTokenByHash(ctx, strings.Repeat("f", 64))
	wantCode(t, err, baremetal.CodeNotFound, "")
	if strings.Contains(err.Error(), "ffff") {
		t.Errorf("not-found error echoes the hash: %v", err)
	}
	_, err = s.GetToken(ctx, "nope")
	wantCode(t, err, baremetal.CodeNotFound, "")

	wantCode(t, s.InsertToken(ctx, &baremetal.Token{Name: "bootstrap", Role: baremetal.RoleAdmin, Hash: strings.Repeat("d", 64)}), baremetal.CodeConflict, "name")
	err = s.InsertToken(ctx, &baremetal.Token{Name: "x", Role: baremetal.RoleAdmin, Hash: admin.Hash})
	wantCode(t, err, baremetal.CodeConflict, "hash")
	if strings.Contains(err.Error(), admin.Hash) {
		t.Errorf("conflict error echoes the hash: %v", err)
	}

	all := []*baremetal.Token{admin, member, anon}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	var listed []*baremetal.Token
	p := store.Page{Limit: 2}
	for {
		page, next, err := s.ListTokens(ctx, p)
		must(t, err)
		listed = append(listed, page...)
		if next == "" {
			break
		}
		p.After = next
	}
	same(t, "listed tokens", all, listed)

	n, err = s.CountTokens(ctx)
	must(t, err)
	if n != 3 {
		t.Errorf("CountTokens = %d", n)
	}
	must(t, s.DeleteToken(ctx, member.ID))
	wantCode(t, s.DeleteToken(ctx, member.ID), baremetal.CodeNotFound, "")
	_, err = s.GetTokenByHash(ctx, member.Hash)
	wantCode(t, err, baremetal.CodeNotFound, "")
	n, err = s.CountTokens(ctx)
	must(t, err)
	if n != 2 {
		t.Errorf("CountTokens after delete = %d", n)
	}
}

// ---- quotas ----

func testQuotas(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	q, err := s.GetQuota(ctx, "proj-a")
	must(t, err)
	if q.Project != "proj-a" || q.Instances != -1 {
		t.Errorf("unset quota = %+v, want proj-a/-1", q)
	}
	must(t, s.SetQuota(ctx, &baremetal.Quota{Project: "proj-a", Instances: 5}))
	must(t, s.SetQuota(ctx, &baremetal.Quota{Project: "proj-b", Instances: 0}))
	must(t, s.SetQuota(ctx, &baremetal.Quota{Project: "proj-a", Instances: 7}))
	for project, want := range map[string]int{"proj-a": 7, "proj-b": 0, "proj-c": -1} {
		q, err := s.GetQuota(ctx, project)
		must(t, err)
		if q.Instances != want || q.Project != project {
			t.Errorf("quota %s = %+v, want %d", project, q, want)
		}
	}
}

// ---- transactions ----

func testTxCommit(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	var n *baremetal.Node
	var inst *baremetal.Instance
	must(t, s.InTx(ctx, func(tx store.Tx) error {
		if tx.Native() == nil {
			t.Error("Tx.Native() is nil")
		}
		n = newNode("in-tx")
		if err := tx.InsertNode(ctx, n); err != nil {
			return err
		}
		// A transaction sees its own writes.
		got, err := tx.GetNode(ctx, "in-tx")
		if err != nil {
			return err
		}
		got.ProvisionState = baremetal.StateAvailable
		if err := tx.UpdateNode(ctx, got); err != nil {
			return err
		}
		n = got
		if err := tx.InsertEvent(ctx, &baremetal.Event{NodeID: n.ID, Type: "provision_state", Old: "enroll", New: "available"}); err != nil {
			return err
		}
		inst = newInstance("p", "vm")
		inst.NodeID = n.ID
		if err := tx.InsertInstance(ctx, inst); err != nil {
			return err
		}
		return tx.SetQuota(ctx, &baremetal.Quota{Project: "p", Instances: 3})
	}))
	same(t, "committed node", n, getNode(t, s, n.ID))
	got, err := s.GetInstance(ctx, inst.ID)
	must(t, err)
	same(t, "committed instance", inst, got)
	events, _, err := s.ListEvents(ctx, n.ID, store.Page{})
	must(t, err)
	if len(events) != 1 {
		t.Errorf("%d committed events, want 1", len(events))
	}
	q, err := s.GetQuota(ctx, "p")
	must(t, err)
	if q.Instances != 3 {
		t.Errorf("committed quota %d", q.Instances)
	}
}

// testTxNodeForUpdate: GetNodeForUpdate reads like GetNode, and while a
// transaction holds a node it read for update, no other transaction can
// read it for update (it waits; here until its context ends).
func testTxNodeForUpdate(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	n := newNode("locked")
	must(t, s.InsertNode(ctx, n))
	locked := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.InTx(ctx, func(tx store.Tx) error {
			got, err := tx.GetNodeForUpdate(ctx, "locked")
			if err != nil {
				close(locked)
				return err
			}
			same(t, "node read for update", n, got)
			if _, err := tx.GetNodeForUpdate(ctx, "ghost"); !baremetal.IsCode(err, baremetal.CodeNotFound) {
				t.Errorf("GetNodeForUpdate(ghost): %v, want not_found", err)
			}
			close(locked)
			<-release
			got.BMCFailures = 7
			return tx.UpdateNode(ctx, got)
		})
	}()
	<-locked
	// The holder is parked until release: this wait can only end with the
	// deadline, however long the deadline is.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := s.InTx(short, func(tx store.Tx) error {
		_, err := tx.GetNodeForUpdate(short, n.ID)
		return err
	})
	cancel()
	if err == nil {
		t.Error("a second transaction read the node for update while the first held it")
	}
	close(release)
	must(t, <-done)
	if got := getNode(t, s, n.ID); got.BMCFailures != 7 || got.Version != n.Version+1 {
		t.Errorf("after the locked update: failures %d version %d, want 7 and %d", got.BMCFailures, got.Version, n.Version+1)
	}
}

// testTxClaimNode: ClaimNode takes the first node in id order that can
// take an instance of the class and driver asked (available, in service,
// without fault or instance), and is not found when none is left.
func testTxClaimNode(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	// free inserts an available node whose id puts it k-th in id order
	// (the unfit ones first), changed by change.
	free := func(k int, name, class string, driver baremetal.Driver, change func(*baremetal.Node)) *baremetal.Node {
		n := newNode(name)
		n.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", k)
		n.ResourceClass, n.Driver, n.ProvisionState = class, driver, baremetal.StateAvailable
		if driver == baremetal.DriverIPMI {
			n.BMC = baremetal.BMC{Address: fmt.Sprintf("ipmi://10.9.0.%d", k), Username: "u", Password: "p"}
		}
		if change != nil {
			change(n)
		}
		return insertNode(t, s, n)
	}
	free(1, "maint", "gpu", baremetal.DriverRedfish, func(n *baremetal.Node) { n.Maintenance, n.MaintenanceReason = true, "fan" })
	free(2, "faulted", "gpu", baremetal.DriverRedfish, func(n *baremetal.Node) { n.Fault = baremetal.FaultBMCUnreachable })
	free(3, "cleaning", "gpu", baremetal.DriverRedfish, func(n *baremetal.Node) { n.ProvisionState = baremetal.StateCleaning })
	free(4, "hosting", "gpu", baremetal.DriverRedfish, func(n *baremetal.Node) { n.InstanceID = "some-instance" })
	cpu := free(5, "other-class", "cpu", baremetal.DriverRedfish, nil)
	ipmi := free(6, "ipmi", "gpu", baremetal.DriverIPMI, nil)
	redfish := free(7, "redfish", "gpu", baremetal.DriverRedfish, nil)

	claim := func(c store.NodeClaim) (*baremetal.Node, error) {
		var got *baremetal.Node
		err := s.InTx(ctx, func(tx store.Tx) error {
			var err error
			got, err = tx.ClaimNode(ctx, c)
			return err
		})
		return got, err
	}
	for _, tc := range []struct {
		c    store.NodeClaim
		want *baremetal.Node
	}{
		{store.NodeClaim{Placement: baremetal.Placement{ResourceClass: "gpu"}}, ipmi},
		{store.NodeClaim{Placement: baremetal.Placement{ResourceClass: "gpu"}, Driver: baremetal.DriverRedfish}, redfish},
		{store.NodeClaim{Placement: baremetal.Placement{ResourceClass: "gpu"}, Driver: baremetal.DriverIPMI}, ipmi},
		{store.NodeClaim{}, cpu},
		{store.NodeClaim{Placement: baremetal.Placement{ResourceClass: "cpu"}, Driver: baremetal.DriverIPMI}, nil},
		{store.NodeClaim{Placement: baremetal.Placement{ResourceClass: "none"}}, nil},
		{store.NodeClaim{Placement: baremetal.Placement{ResourceClass: "bad\xff\x00"}}, nil},
	} {
		got, err := claim(tc.c)
		if tc.want == nil {
			if !baremetal.IsCode(err, baremetal.CodeNotFound) {
				t.Errorf("ClaimNode(%+v) = %v, %v; want not found", tc.c, got, err)
			}
			continue
		}
		must(t, err)
		same(t, fmt.Sprintf("node claimed for %+v", tc.c), tc.want, got)
	}
}

// testTxClaimNodeRace: a node claimed by an open transaction is not
// claimed by another: that one takes the next free node (at once on
// PostgreSQL, after the first commits on SQLite, whose transactions take
// turns), and when the claimed node was the last, it waits for the
// holder and gets the node if the holder rolls back, nothing if the
// holder took it.
func testTxClaimNodeRace(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	c := store.NodeClaim{Placement: baremetal.Placement{ResourceClass: "race"}}
	add := func(name string) *baremetal.Node {
		n := newNode(name)
		n.ResourceClass, n.ProvisionState = "race", baremetal.StateAvailable
		return insertNode(t, s, n)
	}
	// hold claims a node in a transaction of its own and keeps it open
	// until release is closed; then it takes the node (commit) or not
	// (rollback).
	hold := func(take bool) (claimed *baremetal.Node, release chan struct{}, done chan error) {
		got, release, done := make(chan *baremetal.Node, 1), make(chan struct{}), make(chan error, 1)
		go func() {
			done <- s.InTx(ctx, func(tx store.Tx) error {
				n, err := tx.ClaimNode(ctx, c)
				got <- n
				if err != nil {
					return err
				}
				<-release
				if !take {
					return errRollback
				}
				n.ProvisionState, n.InstanceID = baremetal.StateDeploying, "taken"
				return tx.UpdateNode(ctx, n)
			})
		}()
		claimed = <-got
		if claimed == nil {
			t.Fatal("the holder claimed nothing")
		}
		return claimed, release, done
	}
	other := func() chan *baremetal.Node {
		out := make(chan *baremetal.Node, 1)
		go func() {
			var n *baremetal.Node
			err := s.InTx(ctx, func(tx store.Tx) error {
				var err error
				n, err = tx.ClaimNode(ctx, c)
				return err
			})
			if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
				t.Errorf("second claim: %v", err)
			}
			out <- n
		}()
		return out
	}
	a, b := add("race-a"), add("race-b")
	first, release, done := hold(true)
	second := other()
	time.Sleep(50 * time.Millisecond) // PostgreSQL: the second claim is done by now
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := <-second
	if got == nil || got.ID == first.ID || (got.ID != a.ID && got.ID != b.ID) {
		t.Fatalf("claimed %v while another transaction held %s; want the other node", got, first.Name)
	}

	// race-b (or race-a) is the last free node now: the second claim waits.
	for _, take := range []bool{false, true} {
		last, release, done := hold(take)
		second := other()
		time.Sleep(50 * time.Millisecond)
		close(release)
		if err := <-done; err != nil && !errors.Is(err, errRollback) {
			t.Fatal(err)
		}
		got := <-second
		switch {
		case !take && (got == nil || got.ID != last.ID):
			t.Errorf("holder rolled back: second claim got %v, want %s", got, last.Name)
		case take && got != nil:
			t.Errorf("holder took the last node: second claim got %s, want none", got.Name)
		}
	}
}

var errRollback = errors.New("storetest: roll back")

func testTxRollback(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	existing := insertNode(t, s, newNode("existing"))
	var id string
	err := s.InTx(ctx, func(tx store.Tx) error {
		n := newNode("rolled-back")
		if err := tx.InsertNode(ctx, n); err != nil {
			return err
		}
		id = n.ID
		if err := tx.InsertEvent(ctx, &baremetal.Event{NodeID: n.ID, Type: "x"}); err != nil {
			return err
		}
		upd := *existing
		upd.Maintenance = true
		if err := tx.UpdateNode(ctx, &upd); err != nil {
			return err
		}
		if err := tx.InsertInstance(ctx, newInstance("p", "vm")); err != nil {
			return err
		}
		if err := tx.InsertToken(ctx, &baremetal.Token{Role: baremetal.RoleAdmin, Hash: "h"}); err != nil {
			return err
		}
		if err := tx.SetQuota(ctx, &baremetal.Quota{Project: "p", Instances: 1}); err != nil {
			return err
		}
		return fmt.Errorf("wrapped: %w", errRollback)
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("InTx returned %v, want fn's error", err)
	}
	_, err = s.GetNode(ctx, id)
	wantCode(t, err, baremetal.CodeNotFound, "")
	same(t, "node updated in a rolled-back tx", existing, getNode(t, s, existing.ID))
	assertEmptyExcept(t, s, 1)
}

func testTxPanic(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("InTx swallowed the panic")
			}
		}()
		_ = s.InTx(ctx, func(tx store.Tx) error {
			if err := tx.InsertNode(ctx, newNode("panicked")); err != nil {
				return err
			}
			panic("storetest: boom")
		})
	}()
	// The store is still usable (the connection went back) and empty.
	assertEmptyExcept(t, s, 0)
	insertNode(t, s, newNode("after-panic"))
}

// assertEmptyExcept checks that only nodes (wantNodes of them) exist.
func assertEmptyExcept(t *testing.T, s store.Store, wantNodes int) {
	t.Helper()
	ctx := ctxOf(t)
	nodes, _, err := s.ListNodes(ctx, store.NodeFilter{IncludeDeleting: true})
	must(t, err)
	insts, _, err := s.ListInstances(ctx, store.InstanceFilter{})
	must(t, err)
	toks, err := s.CountTokens(ctx)
	must(t, err)
	q, err := s.GetQuota(ctx, "p")
	must(t, err)
	events := rawCount(t, s, "SELECT count(*) FROM events")
	if len(nodes) != wantNodes || len(insts) != 0 || toks != 0 || q.Instances != -1 || events != 0 {
		t.Errorf("after rollback: %d nodes (want %d), %d instances, %d tokens, quota %d, %d events",
			len(nodes), wantNodes, len(insts), toks, q.Instances, events)
	}
}

// ---- at rest, persistence, time ----

func testPasswordAtRest(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	const plain = "Plaintext-BMC-Password-7f3a9c"
	n := newNode("secret")
	n.BMC.Password = plain
	insertNode(t, s, n)
	n.BMC.Password = plain + "-v2"
	must(t, s.UpdateNode(ctx, n))
	other := newNode("other")
	other.BMC.Password = plain
	insertNode(t, s, other)

	if got := getNode(t, s, n.ID); got.BMC.Password != plain+"-v2" {
		t.Errorf("password read back as %q", got.BMC.Password)
	}
	sealed := rawStrings(t, s, "SELECT bmc_password_sealed FROM nodes ORDER BY name")
	if len(sealed) != 2 || sealed[0] == sealed[1] {
		t.Errorf("equal passwords must not give equal ciphertexts: %q", sealed)
	}
	for _, v := range sealed {
		if !strings.HasPrefix(v, "v1:") || strings.Contains(v, plain) {
			t.Errorf("stored password %q is not sealed", v)
		}
	}
	assertNotOnDisk(t, s, plain)

	// Instance ready tokens are secrets too: the config drive needs them
	// back, so they are sealed like passwords.
	const token = "rdy_Plaintext-Ready-Token-5b2e"
	i := newInstance("proj-secret", "vm")
	i.ReadyToken = token
	must(t, s.InsertInstance(ctx, i))
	got, err := s.GetInstance(ctx, i.ID)
	must(t, err)
	if got.ReadyToken != token {
		t.Errorf("ready token read back as %q", got.ReadyToken)
	}
	for _, v := range rawStrings(t, s, "SELECT ready_token_sealed FROM instances WHERE project = 'proj-secret'") {
		if !strings.HasPrefix(v, "v1:") || strings.Contains(v, token) {
			t.Errorf("stored ready token %q is not sealed", v)
		}
	}
	assertNotOnDisk(t, s, token)
}

func testPersistence(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	since := time.Now().Add(-time.Hour)
	n := newNode("durable")
	n.Fault, n.FaultSince = baremetal.FaultBMCAuthFailed, &since
	insertNode(t, s, n)
	e := &baremetal.Event{NodeID: n.ID, Actor: "tok", Type: "fault", Message: "bmc said 401"}
	must(t, s.InsertEvent(ctx, e))
	i := newInstance("p", "vm")
	must(t, s.InsertInstance(ctx, i))
	tok := &baremetal.Token{Name: "ci", Role: baremetal.RoleAdmin, Hash: "abc"}
	must(t, s.InsertToken(ctx, tok))
	must(t, s.SetQuota(ctx, &baremetal.Quota{Project: "p", Instances: 4}))
	must(t, s.Close())

	s2 := reopen(t, s)
	same(t, "node after reopen", n, getNode(t, s2, n.ID))
	events, _, err := s2.ListEvents(ctx, n.ID, store.Page{})
	must(t, err)
	same(t, "events after reopen", []*baremetal.Event{e}, events)
	gotI, err := s2.GetInstance(ctx, i.ID)
	must(t, err)
	same(t, "instance after reopen", i, gotI)
	gotT, err := s2.GetTokenByHash(ctx, "abc")
	must(t, err)
	same(t, "token after reopen", tok, gotT)
	q, err := s2.GetQuota(ctx, "p")
	must(t, err)
	if q.Instances != 4 {
		t.Errorf("quota after reopen %d", q.Instances)
	}
}

func testTimestamps(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	at := time.Date(2031, 5, 6, 7, 8, 9, 123456789, zone)
	want := time.Date(2031, 5, 6, 1, 38, 9, 123456000, time.UTC)
	later := at.Add(time.Microsecond)

	n := newNode("timed")
	n.FaultSince, n.NextCheckAt, n.LastSeenAt = &at, &at, &at
	insertNode(t, s, n)
	got := getNode(t, s, n.ID)
	for name, v := range map[string]*time.Time{"fault_since": got.FaultSince, "next_check_at": got.NextCheckAt, "last_seen_at": got.LastSeenAt} {
		if v == nil || !v.Equal(want) || v.Location() != time.UTC || v.Nanosecond() != 123456000 {
			t.Errorf("%s read back as %v, want %v", name, v, want)
		}
	}
	for name, v := range map[string]time.Time{"created_at": got.CreatedAt, "updated_at": got.UpdatedAt} {
		if v.Location() != time.UTC || v.Nanosecond()%1000 != 0 {
			t.Errorf("%s = %v: want UTC in whole microseconds", name, v)
		}
	}
	same(t, "node returned by insert vs read", n, got)

	// DueBefore compares at microsecond precision, inclusive.
	m := newNode("later")
	m.NextCheckAt = &later
	insertNode(t, s, m)
	page, _, err := s.ListNodes(ctx, store.NodeFilter{DueBefore: &at})
	must(t, err)
	if len(page) != 1 || page[0].ID != n.ID {
		t.Errorf("DueBefore %v selected %d nodes, want only %s", at, len(page), n.Name)
	}

	e := &baremetal.Event{NodeID: n.ID, Time: at, Type: "x"}
	must(t, s.InsertEvent(ctx, e))
	events, _, err := s.ListEvents(ctx, n.ID, store.Page{})
	must(t, err)
	if len(events) != 1 || !events[0].Time.Equal(want) || events[0].Time.Location() != time.UTC {
		t.Errorf("event time read back as %v", events)
	}
	tok := &baremetal.Token{Role: baremetal.RoleAdmin, Hash: "h", ExpiresAt: &at}
	must(t, s.InsertToken(ctx, tok))
	gotT, err := s.GetToken(ctx, tok.ID)
	must(t, err)
	if gotT.ExpiresAt == nil || !gotT.ExpiresAt.Equal(want) || gotT.ExpiresAt.Location() != time.UTC {
		t.Errorf("token expiry read back as %v", gotT.ExpiresAt)
	}
}

// Migrator is implemented by both stores: Open migrates, and a controller
// `migrate` subcommand may call it again.
type Migrator interface {
	Migrate(ctx context.Context) error
}

func testMigrateIdempotent(t *testing.T, s store.Store) {
	m, ok := s.(Migrator)
	if !ok {
		t.Fatalf("%T has no Migrate method", s)
	}
	ctx := ctxOf(t)
	insertNode(t, s, newNode("survivor"))
	ours := rawCount(t, s, "SELECT count(*) FROM schema_migrations")
	river := rawCount(t, s, "SELECT count(*) FROM river_migration")
	if ours == 0 || river == 0 {
		t.Fatalf("after Open: %d store migrations, %d River migrations recorded", ours, river)
	}
	must(t, m.Migrate(ctx))
	must(t, m.Migrate(ctx))
	if got := rawCount(t, s, "SELECT count(*) FROM schema_migrations"); got != ours {
		t.Errorf("store migrations %d → %d after re-running", ours, got)
	}
	if got := rawCount(t, s, "SELECT count(*) FROM river_migration"); got != river {
		t.Errorf("River migrations %d → %d after re-running", river, got)
	}
	getNode(t, s, "survivor")
}

func testCanceledContext(t *testing.T, s store.Store) {
	n := insertNode(t, s, newNode("n"))
	ctx, cancel := context.WithCancel(ctxOf(t))
	cancel()
	calls := map[string]error{
		"GetNode":    func() error { _, err := s.GetNode(ctx, n.ID); return err }(),
		"ListNodes":  func() error { _, _, err := s.ListNodes(ctx, store.NodeFilter{}); return err }(),
		"InsertNode": s.InsertNode(ctx, newNode("m")),
		"UpdateNode": s.UpdateNode(ctx, n),
		"InTx":       s.InTx(ctx, func(store.Tx) error { return nil }),
		"Ping":       s.Ping(ctx),
	}
	for name, err := range calls {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: %v, want context.Canceled", name, err)
		}
	}
	same(t, "node after canceled writes", n, getNode(t, s, n.ID))
}

func testPingAndDialect(t *testing.T, s store.Store) {
	must(t, s.Ping(ctxOf(t)))
	switch s.Dialect() {
	case "sqlite", "postgres":
	default:
		t.Errorf("Dialect() = %q", s.Dialect())
	}
	if s.Native() == nil {
		t.Error("Native() is nil")
	}
}
