package jobs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/safetext"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// HealthSyncArgs is the periodic pass that reads every node's hardware
// health and the new entries of its BMC's event log
// (Config.HealthInterval), apart from the power sync: health takes
// several requests per node (system, chassis, thermal, power, log) and
// changes slowly. It queues a ReadHealthArgs per node due.
type HealthSyncArgs struct{}

func (HealthSyncArgs) Kind() string { return "health_sync" }

func (HealthSyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, Queue: QueuePowerSync}
}

// ReadHealthArgs reads one node's health and new event log entries. It
// only observes: no mutating slot, it runs in maintenance too, and BMC
// trouble is left to the power sync's fault accounting (three tries,
// then the next pass).
type ReadHealthArgs struct {
	NodeID string `json:"node_id" river:"unique"`
}

func (ReadHealthArgs) Kind() string { return "read_health" }

func (ReadHealthArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: uniquePerNode}
}

type healthSyncWorker struct {
	river.WorkerDefaults[HealthSyncArgs]
	r *Runner
}

// Work queues a read of every node due (queueDue).
func (w *healthSyncWorker) Work(ctx context.Context, _ *river.Job[HealthSyncArgs]) error {
	iv := w.r.cfg.HealthInterval
	return w.r.queueDue(ctx, func(n *baremetal.Node, now time.Time) river.JobArgs {
		if !healthDue(n, iv, now) {
			return nil
		}
		return ReadHealthArgs{NodeID: n.ID}
	})
}

// healthDue reports whether n's health should be read now: not while its
// BMC is unverified or faulted (nothing to read; the power sync deals
// with it), nor while it is being retired.
func healthDue(n *baremetal.Node, iv time.Duration, now time.Time) bool {
	if n.ProvisionState == baremetal.StateEnroll || n.ProvisionState == baremetal.StateDeleting || n.Fault.BMC() {
		return false
	}
	at := n.Health.ReadAt
	return at == nil || now.Sub(*at) >= iv-iv/10
}

type readHealthWorker struct {
	river.WorkerDefaults[ReadHealthArgs]
	*nodeWork
}

// maxLogEntries bounds the event log entries recorded per read: a BMC
// that logged thousands since the last read (a flapping sensor) must not
// flood the node's events; the newest are kept.
const maxLogEntries = 50

func (w *readHealthWorker) Work(ctx context.Context, job *river.Job[ReadHealthArgs]) error {
	n, err := w.store.GetNode(ctx, job.Args.NodeID)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return ignoreGone(w.readHealth(ctx, n))
}

// readHealth reads n's health and new log entries and records them: the
// health on the node (raising or clearing hardware_critical), each new
// entry as a node event.
func (r *nodeWork) readHealth(ctx context.Context, n *baremetal.Node) error {
	var h bmc.Health
	var entries []bmc.LogEntry
	healthKnown, logKnown := true, true
	err := r.bmcCall(ctx, n, "read health", func(ctx context.Context, c bmc.Client) error {
		hg, err := bmc.Capability[bmc.HealthGetter](c)
		if err == nil {
			h, err = hg.Health(ctx)
		}
		switch {
		case bmc.KindOf(err) == bmc.KindUnsupported:
			healthKnown = false
		case err != nil:
			return err
		}
		lr, err := bmc.Capability[bmc.EventLogReader](c)
		if err == nil {
			max := maxLogEntries
			if n.Health.LogAfter == "" {
				max = 5 // the first read: the latest few, not the machine's history
			}
			entries, err = lr.EventLog(ctx, n.Health.LogAfter, max)
		}
		switch {
		case bmc.KindOf(err) == bmc.KindUnsupported:
			logKnown = false
		case err != nil:
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	_, err = r.ledger.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
		next := healthOf(h, healthKnown)
		next.LogAfter, next.ReadAt = n.Health.LogAfter, &now
		// The driver returns what came after LogAfter (all of a log
		// cleared since, whose ids start again): recorded as given.
		for _, e := range entries {
			next.LogAfter = e.ID
			c.Events = append(c.Events, &baremetal.Event{Type: "bmc_log", Field: "health",
				New: strings.ToLower(e.Severity), Message: logMessage(n, e)})
		}
		was := n.Health.StateOrUnknown()
		// A change of the hardware_critical fault is told by the ledger's
		// fault event (with last_error's reason); other changes here.
		if !n.RecordHealth(next, now) && was != next.StateOrUnknown() {
			c.Events = append(c.Events, &baremetal.Event{Type: "health", Field: "health", Old: was, New: next.StateOrUnknown(),
				Message: "hardware health " + next.StateOrUnknown() + reasonsText(next)})
		}
		if !logKnown && !healthKnown {
			// Nothing to read on this BMC: said once, in the health.
			n.Health.Reasons = []string{"the BMC (" + string(n.Driver) + ") reports no hardware health"}
		}
		return nil
	})
	return err
}

// healthOf is the domain's health of what the BMC said.
func healthOf(h bmc.Health, known bool) baremetal.Health {
	out := baremetal.Health{State: baremetal.HealthUnknown, HottestC: h.HottestC, FansFailed: h.FansFailed, PSUsFailed: h.PSUsFailed}
	if !known {
		return out
	}
	switch h.State {
	case bmc.HealthOK:
		out.State = baremetal.HealthOK
	case bmc.HealthWarning:
		out.State = baremetal.HealthWarning
	case bmc.HealthCritical:
		out.State = baremetal.HealthCritical
	}
	for _, r := range h.Reasons {
		if len(out.Reasons) == 10 {
			out.Reasons = append(out.Reasons, fmt.Sprintf("and %d more", len(h.Reasons)-10))
			break
		}
		out.Reasons = append(out.Reasons, safetext.Clip(safetext.Line(r), 200))
	}
	return out
}

func reasonsText(h baremetal.Health) string {
	if len(h.Reasons) == 0 {
		return ""
	}
	return ": " + strings.Join(h.Reasons[:min(3, len(h.Reasons))], "; ")
}

// logMessage is an event log entry as a node event's message: the BMC's
// words, cleaned of control characters and the node's secrets, bounded.
func logMessage(n *baremetal.Node, e bmc.LogEntry) string {
	msg := "BMC log"
	if e.Severity != "" {
		msg += " (" + e.Severity + ")"
	}
	if !e.Created.IsZero() {
		msg += " " + e.Created.UTC().Format(time.RFC3339)
	}
	return safetext.Clip(safetext.Line(scrub(n, msg+": "+e.Message)), 512)
}
