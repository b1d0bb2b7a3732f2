package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// Test timing: everything in milliseconds so the package runs quickly,
// with the same ratios as production (BMCTimeout < PowerChangeTimeout,
// RetryBase < MaxBackoff).
func testConfig(t testing.TB, st store.Store, op bmc.Opener) Config {
	return Config{
		Store:              st,
		BMC:                op,
		Logger:             testLogger(t),
		Workers:            10,
		BMCTimeout:         300 * time.Millisecond,
		PowerChangeTimeout: 600 * time.Millisecond,
		PowerPollInterval:  20 * time.Millisecond,
		PowerSyncWorkers:   16,
		FaultThreshold:     3,
		RetryBase:          20 * time.Millisecond,
		MaxBackoff:         150 * time.Millisecond,
		MaintenancePoll:    40 * time.Millisecond,
		BusyPoll:           20 * time.Millisecond,
		FetchCooldown:      5 * time.Millisecond,
		FetchPollInterval:  20 * time.Millisecond,
	}
}

// testLogger shows the runner's and River's logs with -v when
// JOBS_TEST_LOG is set; quiet otherwise.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("JOBS_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// dbs runs fn on a fresh SQLite store and on a fresh PostgreSQL database.
func dbs(t *testing.T, fn func(t *testing.T, open func(testing.TB) store.Store)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, storetest.OpenSQLite) })
	t.Run("postgres", func(t *testing.T) { fn(t, storetest.OpenPostgres) })
}

// harness is a runner on a real store, with BMCs behind bmcCtl.
type harness struct {
	t   testing.TB
	ctx context.Context
	st  store.Store
	r   *Runner
	bmc bmcCtl
	// address of the BMCs (the sim's URL).
	address string
	// inventory: the BMCs report inventory (the sim does, the fake not).
	inventory bool
	fleet     *sim.Fleet
	fake      *fakeBMCs
}

// bmcCtl controls the test BMCs: the simulated fleet or the in-memory fake.
type bmcCtl interface {
	SetFault(system string, f sim.Fault) error
	SetIgnorePower(system string, ignore bool) error
	Power(system string) (string, error)
	SetPower(system string, on bool) error
}

type harnessOpt func(*Config)

func newHarness(t testing.TB, st store.Store, op bmc.Opener, ctl bmcCtl, address string, opts ...harnessOpt) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cfg := testConfig(t, st, op)
	for _, o := range opts {
		o(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h := &harness{t: t, ctx: ctx, st: st, r: r, bmc: ctl, address: address}
	return h
}

func (h *harness) start() {
	h.t.Helper()
	if err := h.r.Start(h.ctx); err != nil {
		h.t.Fatalf("Start: %v", err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.r.Stop(ctx); err != nil {
			h.t.Errorf("Stop: %v", err)
		}
	})
}

// addNode stores a node on system sys in state ps.
func (h *harness) addNode(name, sys string, ps baremetal.ProvisionState, maintenance bool) *baremetal.Node {
	h.t.Helper()
	n := &baremetal.Node{
		Name:   name,
		Driver: baremetal.DriverRedfish,
		BMC: baremetal.BMC{
			Address: h.address, Username: "admin", Password: "password", SystemID: sys,
		},
		ResourceClass:  "baremetal",
		PowerState:     baremetal.PowerUnknown,
		ProvisionState: ps,
		Maintenance:    maintenance,
	}
	if maintenance {
		n.MaintenanceReason = "operator: replacing a DIMM"
	}
	if err := h.st.InsertNode(h.ctx, n); err != nil {
		h.t.Fatalf("insert node %s: %v", name, err)
	}
	return n
}

// addInstance stores an instance deploying on n and links n to it.
func (h *harness) addInstance(n *baremetal.Node, name string) *baremetal.Instance {
	h.t.Helper()
	inst := &baremetal.Instance{
		Name: name, Project: "p1", NodeID: n.ID, ResourceClass: "baremetal",
		Image: baremetal.Image{URL: "http://images.example/" + name + ".iso"},
		State: baremetal.InstanceDeploying,
	}
	h.inTx(func(tx store.Tx) error {
		if err := tx.InsertInstance(h.ctx, inst); err != nil {
			return err
		}
		cur, err := tx.GetNode(h.ctx, n.ID)
		if err != nil {
			return err
		}
		cur.InstanceID = inst.ID
		return tx.UpdateNode(h.ctx, cur)
	})
	return inst
}

func (h *harness) inTx(fn func(tx store.Tx) error) {
	h.t.Helper()
	if err := h.st.InTx(h.ctx, fn); err != nil {
		h.t.Fatalf("transaction: %v", err)
	}
}

// enqueue inserts a job the way the service layer does: in a transaction.
func (h *harness) enqueue(args river.JobArgs) int64 {
	h.t.Helper()
	var id int64
	h.inTx(func(tx store.Tx) error {
		var err error
		id, err = h.r.InsertTx(h.ctx, tx, args)
		return err
	})
	return id
}

// setNode changes a node as an operator or the API would (not through the
// runner), e.g. to end maintenance or delete its instance.
func (h *harness) setNode(id string, fn func(n *baremetal.Node)) {
	h.t.Helper()
	for {
		n := h.node(id)
		fn(n)
		err := h.st.UpdateNode(h.ctx, n)
		if baremetal.IsCode(err, baremetal.CodeConflict) {
			continue
		}
		if err != nil {
			h.t.Fatalf("update node: %v", err)
		}
		return
	}
}

func (h *harness) node(id string) *baremetal.Node {
	h.t.Helper()
	n, err := h.st.GetNode(h.ctx, id)
	if err != nil {
		h.t.Fatalf("get node %s: %v", id, err)
	}
	return n
}

// waitNode polls until cond holds for the node, failing after timeout.
func (h *harness) waitNode(id string, timeout time.Duration, what string, cond func(n *baremetal.Node) bool) *baremetal.Node {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n := h.node(id)
		if cond(n) {
			return n
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("node %s: not %s after %s: state=%s power=%s fault=%q failures=%d last_error=%q maintenance=%v\njobs: %s",
				n.Name, what, timeout, n.ProvisionState, n.PowerState, n.Fault, n.BMCFailures, n.LastError, n.Maintenance, h.jobsOf(id))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) waitGone(id string, timeout time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, err := h.st.GetNode(h.ctx, id)
		if baremetal.IsCode(err, baremetal.CodeNotFound) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("node %s still exists after %s (err %v); jobs: %s", id, timeout, err, h.jobsOf(id))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) jobsOf(nodeID string) string {
	jobs, err := h.r.ListJobs(h.ctx, nodeID, "")
	if err != nil {
		return "list jobs: " + err.Error()
	}
	var b strings.Builder
	for _, j := range jobs {
		fmt.Fprintf(&b, "\n  %d %s %s attempt=%d/%d err=%q", j.ID, j.Kind, j.State, j.Attempt, j.MaxAttempts, j.LastError)
	}
	return b.String()
}

func (h *harness) events(nodeID string) []*baremetal.Event {
	h.t.Helper()
	var all []*baremetal.Event
	p := store.Page{Limit: store.MaxPageLimit}
	for {
		evs, next, err := h.st.ListEvents(h.ctx, nodeID, p)
		if err != nil {
			h.t.Fatalf("list events: %v", err)
		}
		all = append(all, evs...)
		if next == "" {
			return all
		}
		p.After = next
	}
}

// findEvent returns the first event of type typ whose message contains sub.
func findEvent(evs []*baremetal.Event, typ, sub string) *baremetal.Event {
	for _, e := range evs {
		if e.Type == typ && strings.Contains(e.Message, sub) {
			return e
		}
	}
	return nil
}

func dumpEvents(evs []*baremetal.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "\n  %s %s %s→%s %q (%s)", e.Type, e.Field, e.Old, e.New, e.Message, e.Actor)
	}
	return b.String()
}

func (h *harness) fault(sys string, f sim.Fault) {
	h.t.Helper()
	if err := h.bmc.SetFault(sys, f); err != nil {
		h.t.Fatalf("set fault: %v", err)
	}
}
