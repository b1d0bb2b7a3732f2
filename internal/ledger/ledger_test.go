package ledger_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlite"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testlog"
)

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db.sqlite"), storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func enroll(t *testing.T, l *ledger.Ledger, name string) *baremetal.Node {
	t.Helper()
	n := &baremetal.Node{Name: name, Driver: baremetal.DriverRedfish, PowerState: baremetal.PowerUnknown,
		ProvisionState: baremetal.StateAvailable,
		BMC:            baremetal.BMC{Address: "https://10.0.0.1", Username: "admin", Password: "s3cret-pw"}}
	err := l.InTx(context.Background(), func(tx *ledger.Tx) error {
		return tx.Enroll(context.Background(), n, ledger.Token("t1"), "enrolled")
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func events(t *testing.T, st store.Store, id string) []*baremetal.Event {
	t.Helper()
	evs, _, err := st.ListEvents(context.Background(), id, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func find(evs []*baremetal.Event, typ, field string) *baremetal.Event {
	for _, e := range evs {
		if e.Type == typ && e.Field == field {
			return e
		}
	}
	return nil
}

// Maintenance is the operator's: the controller and an instance's OS are
// refused, an operator is not, and a refused change writes nothing.
func TestMaintenanceOnlyByOperators(t *testing.T) {
	st := openStore(t)
	l := ledger.New(st, nil)
	ctx := context.Background()
	n := enroll(t, l, "n1")
	set := func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		n.Maintenance, n.MaintenanceReason = true, "disk swap"
		return nil
	}
	for _, a := range []ledger.Actor{ledger.Controller, ledger.Instance("i1")} {
		if _, err := l.Update(ctx, n.ID, a, set); err == nil || !strings.Contains(err.Error(), "only an operator") {
			t.Fatalf("%s set maintenance: err %v", a, err)
		}
		got, _ := st.GetNode(ctx, n.ID)
		if got.Maintenance || got.Version != n.Version {
			t.Fatalf("%s: node changed (maintenance %v, version %d→%d)", a, got.Maintenance, n.Version, got.Version)
		}
	}
	got, err := l.Update(ctx, n.ID, ledger.Token("t1"), set)
	if err != nil || !got.Maintenance {
		t.Fatalf("operator: %v %+v", err, got)
	}
	e := find(events(t, st, n.ID), "maintenance", "maintenance")
	if e == nil || e.Actor != "token:t1" || e.Message != "maintenance set: disk swap" || e.Old != "false" || e.New != "true" {
		t.Fatalf("maintenance event %+v", e)
	}
	// Enrolling in maintenance is an operator's act too.
	m := &baremetal.Node{Name: "n2", Driver: baremetal.DriverRedfish, ProvisionState: baremetal.StateEnroll,
		Maintenance: true, MaintenanceReason: "x", BMC: baremetal.BMC{Address: "https://10.0.0.2"}}
	err = l.InTx(ctx, func(tx *ledger.Tx) error { return tx.Enroll(ctx, m, ledger.Controller, "x") })
	if err == nil {
		t.Fatal("the controller enrolled a node in maintenance")
	}
}

// One diff tells every field that changed, whoever changed it, and never a
// password.
func TestEveryFieldChangeIsAnEvent(t *testing.T) {
	st := openStore(t)
	l := ledger.New(st, nil)
	ctx := context.Background()
	n := enroll(t, l, "n1")
	_, err := l.Update(ctx, n.ID, ledger.Token("t9"), func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
		n.BMC.Address = "https://10.0.0.9"
		n.BMC.Password = "rotated-pw"
		n.ResourceClass = "gpu"
		if err := n.Transition(baremetal.StateEnroll); err != nil {
			return err
		}
		c.Reason = "BMC changed; re-verifying"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, st, n.ID)
	for _, want := range [][2]string{{"updated", "bmc.address"}, {"updated", "bmc.password"}, {"updated", "resource_class"}, {"provision_state", "provision_state"}} {
		e := find(evs, want[0], want[1])
		if e == nil {
			t.Fatalf("no %s event of %s", want[0], want[1])
		}
		if e.Actor != "token:t9" {
			t.Errorf("%s event actor %q", want[1], e.Actor)
		}
	}
	if e := find(evs, "provision_state", "provision_state"); e.Message != "BMC changed; re-verifying" || e.Old != "available" || e.New != "enroll" {
		t.Errorf("provision_state event %+v", e)
	}
	for _, e := range evs {
		if strings.Contains(e.Old+e.New+e.Message, "pw") {
			t.Errorf("event %s/%s shows a password: %+v", e.Type, e.Field, e)
		}
	}
}

func TestDiffOnePerChange(t *testing.T) {
	now := time.Now()
	since := now.Add(-4*time.Minute - 12*time.Second)
	before := &baremetal.Node{Fault: baremetal.FaultBMCUnreachable, FaultSince: &since, PowerState: baremetal.PowerUnknown, ProvisionState: baremetal.StateCleaning}
	after := &baremetal.Node{PowerState: baremetal.PowerOff, ProvisionState: baremetal.StateAvailable}
	evs := ledger.Diff(before, after, &ledger.Change{Reason: "cleaned"}, now)
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3: %+v", len(evs), evs)
	}
	if e := find(evs, "fault", "fault"); e == nil || e.Message != "BMC reachable again after 4m12s" {
		t.Errorf("no reachable-again event: %+v", e)
	}
	if e := find(evs, "provision_state", "provision_state"); e == nil || e.Message != "cleaned" {
		t.Errorf("provision_state event %+v", e)
	}
	if evs := ledger.Diff(before, before, &ledger.Change{}, now); len(evs) != 0 {
		t.Errorf("no change, %d events", len(evs))
	}
}

// A change of properties is told with the API's names of the members
// that are known ("cpus=32 memory_mb=65536"), not as a Go struct
// ("{CPUs:32 MemoryMB:65536 LocalGB:0 CPUArch:}"): events are read by
// people and scripts that know the API.
func TestDiffPropertiesInAPINames(t *testing.T) {
	before := &baremetal.Node{Properties: baremetal.Properties{CPUs: 4}}
	after := &baremetal.Node{Properties: baremetal.Properties{CPUs: 32, MemoryMB: 65536, LocalGB: 100, CPUArch: "x86_64"}}
	evs := ledger.Diff(before, after, &ledger.Change{}, time.Now())
	e := find(evs, "updated", "properties")
	if e == nil {
		t.Fatalf("no properties event: %+v", evs)
	}
	if e.Old != "cpus=4" || e.New != "cpus=32 memory_mb=65536 local_gb=100 cpu_arch=x86_64" {
		t.Errorf("properties event old %q, new %q", e.Old, e.New)
	}
	// Unknown before (never inspected, no override): nothing to show.
	evs = ledger.Diff(&baremetal.Node{}, before, &ledger.Change{}, time.Now())
	if e := find(evs, "updated", "properties"); e == nil || e.Old != "" || e.New != "cpus=4" {
		t.Errorf("properties event from none: %+v", e)
	}
}

// Concurrent writers of one node all land: version conflicts are retried
// on a fresh read, none is lost.
func TestConcurrentWritersAllLand(t *testing.T) {
	st := openStore(t)
	l := ledger.New(st, nil)
	ctx := context.Background()
	n := enroll(t, l, "n1")
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
				n.BMCFailures++
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := st.GetNode(ctx, n.ID); got.BMCFailures != writers {
		t.Fatalf("BMCFailures = %d, want %d", got.BMCFailures, writers)
	}
}

// ErrSkip writes nothing and is no error; a fault raised is logged once,
// after the commit.
func TestSkipAndFaultLog(t *testing.T) {
	st := openStore(t)
	var logs testlog.Buffer
	l := ledger.New(st, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	n := enroll(t, l, "n1")
	got, err := l.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		n.Name = "changed"
		return ledger.ErrSkip
	})
	if err != nil || got.Name != "n1" {
		if got != nil {
			t.Fatalf("skip: %v, name %q", err, got.Name)
		}
		t.Fatalf("skip: %v", err)
	}
	if cur, _ := st.GetNode(ctx, n.ID); cur.Version != n.Version {
		t.Fatal("a skipped mutation wrote")
	}
	boom := errors.New("boom")
	_, err = l.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		n.Fault, n.LastError = baremetal.FaultBMCError, "500"
		return boom
	})
	if !errors.Is(err, boom) || strings.Contains(logs.String(), "node fault") {
		t.Fatalf("a rolled-back fault was logged or the error lost: %v\n%s", err, logs.String())
	}
	if _, err := l.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		n.SetActionFault(baremetal.FaultPowerMismatch, "power on not observed", time.Now())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(logs.String(), `msg="node fault" node=n1 fault=power_mismatch`); c != 1 {
		t.Fatalf("%d fault lines:\n%s", c, logs.String())
	}
}

// Nodes are written by this package alone: no other non-test code in the
// tree calls the store's node writes. The service and the jobs both go
// through a ledger.Tx, whose embedded store.Tx would otherwise let them.
func TestOnlyTheLedgerWritesNodes(t *testing.T) {
	root := filepath.Join("..", "..")
	write := regexp.MustCompile(`\b(tx|Tx|store|st)\.(UpdateNode|InsertNode|DeleteNode)\(`)
	allowed := []string{filepath.Join("internal", "ledger"), filepath.Join("internal", "store")}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		for _, a := range allowed {
			if strings.HasPrefix(rel, a+string(filepath.Separator)) {
				return nil
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if write.MatchString(line) {
				t.Errorf("%s:%d writes a node outside the ledger: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// UpdateRead writes against the caller's read when nothing changed since
// it, and otherwise runs fn again on a fresh read: the change made
// meanwhile is kept, never overwritten with the stale copy. The caller's
// node is left as it was.
func TestUpdateReadFallsBackOnAChangeMeanwhile(t *testing.T) {
	st := openStore(t)
	l := ledger.New(st, nil)
	ctx := context.Background()
	n := enroll(t, l, "n1")
	calls := 0
	setClass := func(class string) ledger.Func {
		return func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
			calls++
			n.ResourceClass = class
			return nil
		}
	}

	read, err := st.GetNode(ctx, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.UpdateRead(ctx, read, ledger.Controller, setClass("gpu"))
	if err != nil || got.ResourceClass != "gpu" || got.Version != read.Version+1 || calls != 1 {
		t.Fatalf("fresh read: %v, class %q, version %d (read %d), fn ran %d times", err, got.ResourceClass, got.Version, read.Version, calls)
	}
	if read.ResourceClass != "" {
		t.Fatalf("the caller's node was changed: class %q", read.ResourceClass)
	}

	// read is stale now; someone else also changes the node.
	if _, err := l.Update(ctx, n.ID, ledger.Token("t1"), func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		n.BMC.Username = "root"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	calls = 0
	got, err = l.UpdateRead(ctx, read, ledger.Controller, setClass("storage"))
	if err != nil || calls != 2 {
		t.Fatalf("stale read: %v, fn ran %d times, want 2 (the stale copy, then a fresh read)", err, calls)
	}
	cur, err := st.GetNode(ctx, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cur.ResourceClass != "storage" || cur.BMC.Username != "root" || got.Version != cur.Version {
		t.Fatalf("after a stale read: class %q username %q version %d (returned %d); want storage, root", cur.ResourceClass, cur.BMC.Username, cur.Version, got.Version)
	}
	if e := find(events(t, st, n.ID), "updated", "resource_class"); e == nil || e.Actor != string(ledger.Controller) {
		t.Fatalf("resource_class event %+v", e)
	}
}
