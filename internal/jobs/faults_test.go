package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testlog"
)

func unitRunner(t *testing.T) *Runner {
	t.Helper()
	cfg := Config{RetryBase: time.Second, MaxBackoff: time.Minute, FaultThreshold: 3}.withDefaults()
	return &Runner{nodeWork: &nodeWork{cfg: cfg}}
}

func TestBackoffDoublesUpToTheCap(t *testing.T) {
	r := unitRunner(t)
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 7: time.Minute, 100: time.Minute} {
		for range 20 {
			got := r.backoff(n)
			if got > want || got < want*4/5 {
				t.Fatalf("backoff(%d) = %s, want within 20%% below %s", n, got, want)
			}
		}
	}
}

// Every node job kind retries on nodeWork's backoff (nodeWorker), not on
// River's default schedule (a zero time from WorkerDefaults).
func TestNodeJobsRetryOnTheBackoff(t *testing.T) {
	w := unitRunner(t).nodeWork
	for kind, after := range map[string]time.Duration{
		"verify":  retryAfter(&verifyWorker{nodeWorker[VerifyArgs]{nodeWork: w}}),
		"deploy":  retryAfter(&deployWorker{nodeWorker[DeployArgs]{nodeWork: w}}),
		"cleanup": retryAfter(&cleanupWorker{nodeWorker[CleanupArgs]{nodeWork: w}}),
		"power":   retryAfter(&powerWorker{nodeWorker[PowerArgs]{nodeWork: w}}),
		"retire":  retryAfter(&retireWorker{nodeWorker[RetireArgs]{nodeWork: w}}),
		"inspect": retryAfter(&inspectWorker{nodeWorker[InspectArgs]{nodeWork: w}}),
	} {
		if want := 8 * time.Second; after < want*4/5 || after > want+time.Second {
			t.Errorf("%s: retry in %s after the 4th attempt, want the backoff's %s (less up to 20%%)", kind, after, want)
		}
	}
}

// retryAfter is how long after now w retries a job on its 4th attempt.
func retryAfter[T river.JobArgs](w interface{ NextRetry(*river.Job[T]) time.Time }) time.Duration {
	now := time.Now()
	return w.NextRetry(&river.Job[T]{JobRow: &rivertype.JobRow{Attempt: 4}}).Sub(now)
}

func TestFaultKinds(t *testing.T) {
	r := unitRunner(t)
	now := time.Now()
	for kind, want := range map[bmc.Kind]baremetal.Fault{
		bmc.KindUnreachable: baremetal.FaultBMCUnreachable,
		bmc.KindAuth:        baremetal.FaultBMCAuthFailed,
		bmc.KindBMCError:    baremetal.FaultBMCError,
	} {
		n := &baremetal.Node{Driver: baremetal.DriverRedfish, PowerState: baremetal.PowerOn, BMC: baremetal.BMC{Password: "s3cret-pw"}}
		// The error as a job gets it: through the controller's boundary
		// with its drivers, which redacts it.
		c, err := bmc.Drivers{"redfish": quotingDriver{kind}}.Open(context.Background(), endpoint(n))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.PowerState(context.Background())
		for i := 1; i <= 3; i++ {
			r.noteFailure(n, "power state", err, now)
			if i < 3 && (n.Fault != "" || n.PowerState != baremetal.PowerOn) {
				t.Fatalf("%s: fault %q / power %s after %d failures", kind, n.Fault, n.PowerState, i)
			}
		}
		if n.Fault != want || n.PowerState != baremetal.PowerUnknown || n.FaultSince == nil || n.NextCheckAt == nil {
			t.Errorf("%s: %+v", kind, n)
		}
		if strings.Contains(n.LastError, "s3cret-pw") {
			t.Errorf("%s: last_error leaks the password: %q", kind, n.LastError)
		}
		r.noteSuccess(n, now)
		if n.Fault != "" || n.FaultSince != nil || n.BMCFailures != 0 || n.NextCheckAt != nil || n.LastError != "" {
			t.Errorf("%s: not cleared: %+v", kind, n)
		}
	}
}

// quotingDriver fails every power read with an error of its kind that
// quotes the credentials, unredacted.
type quotingDriver struct{ kind bmc.Kind }

func (d quotingDriver) Open(_ context.Context, ep bmc.Endpoint) (bmc.Client, error) {
	return echoClient{msg: "refused for user admin:" + ep.Password, kind: d.kind}, nil
}

func TestActionFaultsOutliveBMCSuccess(t *testing.T) {
	r := unitRunner(t)
	now := time.Now()
	n := &baremetal.Node{}
	n.SetActionFault(baremetal.FaultPowerMismatch, "power on not observed", now)
	r.observePower(n, bmc.PowerOff, nil, now)
	if n.Fault != baremetal.FaultPowerMismatch || n.LastError == "" {
		t.Fatalf("a power read cleared power_mismatch: %+v", n)
	}
	// A BMC outage takes precedence, and its FaultSince starts anew.
	later := now.Add(time.Hour)
	for range 3 {
		r.noteFailure(n, "power state", errors.New("dial tcp: connection refused"), later)
	}
	if n.Fault != baremetal.FaultBMCUnreachable || !n.FaultSince.Equal(later) {
		t.Fatalf("fault %q since %v", n.Fault, n.FaultSince)
	}
}

// A fault raised and a fault cleared are each logged once, with the node's
// name: an operator tailing the log learns of them without the API.
func TestFaultsAreLoggedOnce(t *testing.T) {
	var logs testlog.Buffer
	h, sys := newFakeHarness(t, openSQLite(t), 1, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	id := h.addNode("rack1-u7", sys[0], baremetal.StateAvailable, false).ID
	h.fault(sys[0], sim.FaultDown)
	for range 6 { // past the threshold (3), and more failures after it
		if err := h.r.Sync(h.ctx, id); err == nil {
			t.Fatal("Sync of a down BMC succeeded")
		}
	}
	if n := h.node(id); n.Fault != baremetal.FaultBMCUnreachable {
		t.Fatalf("fault = %q, want bmc_unreachable", n.Fault)
	}
	h.fault(sys[0], sim.FaultNone)
	if err := h.r.Sync(h.ctx, id); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if got := strings.Count(out, `msg="node fault" `); got != 1 {
		t.Errorf("%d 'node fault' lines, want 1:\n%s", got, out)
	}
	if !strings.Contains(out, `level=WARN msg="node fault" node=rack1-u7 fault=bmc_unreachable`) {
		t.Errorf("no WARN line naming the node and fault:\n%s", out)
	}
	if got := strings.Count(out, `level=INFO msg="node fault cleared" node=rack1-u7 fault=bmc_unreachable`); got != 1 {
		t.Errorf("%d 'fault cleared' lines, want 1:\n%s", got, out)
	}
}

func TestLoudAttempt(t *testing.T) {
	var got []int
	for a := 1; a <= 5000; a++ {
		if loudAttempt(a) {
			got = append(got, a)
		}
	}
	if want := []int{3, 10, 30, 100, 300, 1000, 3000}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("logged attempts %v, want %v", got, want)
	}
}

// TestFailureWhileWokenRetriesAtOnce: River's JobRetry does not touch a
// running job, so an attempt that was running when its node was woken
// (its BMC answered again) and fails would wait out its backoff; finish
// snoozes it briefly instead. A failure of an attempt that started after
// the wake keeps its error (and its backoff).
func TestFailureWhileWokenRetriesAtOnce(t *testing.T) {
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &nodeWork{metrics: m, log: slog.New(slog.DiscardHandler)}
	started := time.Now()
	job := &rivertype.JobRow{ID: 1, Kind: "retire", Attempt: 1, AttemptedAt: &started, EncodedArgs: []byte(`{"node_id":"n1"}`)}
	failed := errors.New("bmc power state: unreachable")
	if got := r.finish(t.Context(), job, failed); got != failed {
		t.Fatalf("not woken: finish = %v, want the error", got)
	}
	r.markWoken("n2") // another node
	if got := r.finish(t.Context(), job, failed); got != failed {
		t.Fatalf("another node woken: finish = %v, want the error", got)
	}
	r.markWoken("n1")
	var snooze *rivertype.JobSnoozeError
	if got := r.finish(t.Context(), job, failed); !errors.As(got, &snooze) || snooze.Duration > time.Second {
		t.Fatalf("woken during the attempt: finish = %v, want a snooze of at most a second", got)
	}
	later := time.Now().Add(time.Millisecond)
	job.AttemptedAt = &later
	if got := r.finish(t.Context(), job, failed); got != failed {
		t.Fatalf("attempt after the wake: finish = %v, want the error", got)
	}
}
