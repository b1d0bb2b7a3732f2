package jobs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// A node's work (deploy, cleanup, inspect, retire) is a flow: a declared
// list of steps that moves the node on from one provision state, run by
// one engine (runFlow) inside the River job of its kind. The job keeps
// what River gives it: one per node and kind (uniqueness), one mutating
// job per node at a time (exclusive.go), retries, snoozes, rescue after a
// crash. The flow adds where it stands: each step, as it starts, is
// written on the node (baremetal.Flow: the API shows it, an event says
// it), so a retried, snoozed or rescued job, on this replica or another,
// picks up at its step. Steps are small and idempotent (a crash may run
// one again), and say what comes next (stepResult); an error goes to the
// flow's fail, which records what it means for the node (fault
// accounting, last_error) and decides between retrying, waiting, going
// to another step and giving up, as that flow must (a deploy gives up, a
// cleanup never does). New work is new steps.
//
// What a step finds that a later step says or needs (what the erase did,
// how the image boots) goes in flowRun.notes, kept on the node when the flow
// moves on. A step that waits for the deploy agent reads what it needs
// from the agent's session, which outlives the job.

// flow is a named list of steps.
type flow struct {
	// name is the flow's, and its job kind's: deploy, cleanup, ...
	name string
	// state is the provision state the flow moves a node on from: the
	// flow is over when the node has left it.
	state baremetal.ProvisionState
	steps []flowStep
	// fail decides what a step's error means (see flow's comment).
	fail func(ctx context.Context, r *flowRun, err error) (stepResult, error)
	// extraRuns raises the bound on steps run in one attempt, for a flow
	// whose steps legitimately go round (one volume change per run).
	extraRuns int
}

// flowStep is one small, idempotent piece of a flow.
type flowStep struct {
	name string
	run  func(ctx context.Context, r *flowRun) (stepResult, error)
}

// stepResult is what a step (or a flow's fail) says comes next: the next
// step (the zero stepResult), a wait before this step runs again, another
// step, or the end of the flow.
type stepResult struct {
	wait time.Duration
	goTo string
	end  bool
}

// nextStep, flowOver (its last write ended it, or the node moved on),
// waitFor (run this step again after d, the job snoozed meanwhile,
// holding nothing) and goTo (go on with another step).
var (
	nextStep = stepResult{}
	flowOver = stepResult{end: true}
)

func waitFor(d time.Duration) stepResult { return stepResult{wait: d} }
func goTo(step string) stepResult        { return stepResult{goTo: step} }

func (f *flow) names() []string {
	names := make([]string, len(f.steps))
	for i, s := range f.steps {
		names[i] = s.name
	}
	return names
}

// index is the position of the named step, -1 when the flow has none.
func (f *flow) index(name string) int {
	return slices.IndexFunc(f.steps, func(s flowStep) bool { return s.name == name })
}

// flowRun is one flow on one node, as a job works it.
type flowRun struct {
	*nodeWork
	job  *rivertype.JobRow
	flow *flow
	// node is the node as the current step started (written then).
	node *baremetal.Node
	// at is the current step's position in flow.steps.
	at int
	// notes are what the flow's steps noted so far (see flow's comment).
	notes map[string]string

	// What the flow is about, besides the node: the instance a deploy
	// boots, the deleted instance a cleanup follows (for its event).
	inst            *baremetal.Instance
	deletedInstance string
}

// runFlow is how the job of every flow works: it takes the node's
// mutating slot (begin, which waits out maintenance when maintenance
// says so), lets pick choose the flow (nil: nothing to do) and what it is
// about, and runs the flow from the step the node is at.
func (r *nodeWork) runFlow(ctx context.Context, job *rivertype.JobRow, nodeID string, maintenance bool,
	pick func(ctx context.Context, r *flowRun) (*flow, error)) error {
	n, err := r.begin(ctx, job, nodeID, maintenance)
	if n == nil {
		return err
	}
	rn := &flowRun{nodeWork: r, job: job, node: n}
	f, err := pick(ctx, rn)
	if f == nil || err != nil {
		return err
	}
	rn.flow = f
	if !rn.current(n) {
		return nil
	}
	// Every attempt of a flow (a resumed wait, a retry, on any replica)
	// makes sure the node's console is being recorded: after a restart
	// the recording resumes with the flow.
	if r.cfg.Console != nil {
		r.cfg.Console.Record(n.ID)
	}
	return rn.work(ctx)
}

// current reports whether n is still in this run's flow: in its state,
// and for a deploy with its instance.
func (r *flowRun) current(n *baremetal.Node) bool {
	return n.ProvisionState == r.flow.state && (r.inst == nil || n.InstanceID == r.inst.ID)
}

// work runs the steps from the one the node is at.
func (r *flowRun) work(ctx context.Context) error {
	r.at = 0
	if f := r.node.Flow; f != nil && f.Name == r.flow.name {
		r.at = max(r.flow.index(f.Step), 0)
		r.notes = maps.Clone(f.Notes)
	}
	for ran := 0; r.at < len(r.flow.steps); ran++ {
		if ran > 2*len(r.flow.steps)+r.flow.extraRuns {
			// Steps that send each other back and forth (a bug): fail the
			// attempt, which River retries, rather than spin.
			return fmt.Errorf("%s flow of node %s: its steps went round in circles (at %s)", r.flow.name, r.node.Name, r.stepName())
		}
		over, err := r.enter(ctx)
		if over || err != nil {
			return err
		}
		res, err := r.flow.steps[r.at].run(ctx, r)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if r.cfg.Console != nil {
				// The agent reports a failure over the network before its
				// last words reach the console through the BMC: let them
				// arrive before the failure's event takes the last lines
				// (outside the event's transaction).
				r.cfg.Console.Settle(ctx, r.node.ID, consoleSettle)
			}
			if res, err = r.flow.fail(ctx, r, err); err != nil {
				return err
			}
		}
		switch {
		case res.end:
			return nil
		case res.wait > 0:
			// What the step noted before it waits (a task it started)
			// must outlive the snooze: the next attempt reads the node.
			if err := r.saveNotes(ctx); err != nil {
				return err
			}
			return river.JobSnooze(res.wait)
		case res.goTo != "":
			i := r.flow.index(res.goTo)
			if i < 0 {
				return fmt.Errorf("%s flow: no step %q", r.flow.name, res.goTo)
			}
			r.at = i
		default:
			r.at++
		}
	}
	return nil
}

// enter records on the node that the current step starts, unless the node
// says so already (a step resumed), with the notes of the steps before
// and an event. over: the node left the flow meanwhile (deleted, or moved
// on by an operator or a user), which ends it quietly.
func (r *flowRun) enter(ctx context.Context) (over bool, err error) {
	s := r.flow.steps[r.at]
	if f := r.node.Flow; f != nil && f.Name == r.flow.name && f.Step == s.name && maps.Equal(f.Notes, r.notes) {
		return false, nil
	}
	n, err := r.ledger.Update(ctx, r.node.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
		over = !r.current(n)
		if over {
			return ledger.ErrSkip
		}
		now := time.Now()
		msg := fmt.Sprintf("%s: step %s (%d of %d) started", r.flow.name, s.name, r.at+1, len(r.flow.steps))
		if was := n.Flow; was != nil && was.Name == r.flow.name && was.Step != s.name {
			msg += fmt.Sprintf("; %s finished after %s", was.Step, baremetal.HumanDuration(now.Sub(was.StepStartedAt)))
		}
		// A new value, never a change in place: the ledger tells a
		// change by comparing with a copy of the node it read.
		n.Flow = &baremetal.Flow{Name: r.flow.name, Steps: r.flow.names(), Step: s.name, StepStartedAt: now, Notes: maps.Clone(r.notes)}
		c.Events = append(c.Events, &baremetal.Event{Type: "step", Field: "flow", New: r.flow.name + "/" + s.name, Message: msg})
		return nil
	})
	switch {
	case baremetal.IsCode(err, baremetal.CodeNotFound):
		return true, nil
	case err != nil:
		return false, err
	case !over:
		r.node = n
	}
	return over, nil
}

// saveNotes writes the notes on the node when they differ from what it
// holds, for a step that waits (the job snoozes and a later attempt, on
// any replica, resumes from the node).
func (r *flowRun) saveNotes(ctx context.Context) error {
	if f := r.node.Flow; f == nil || f.Name != r.flow.name || maps.Equal(f.Notes, r.notes) {
		return nil
	}
	n, err := r.ledger.Update(ctx, r.node.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		if !r.current(n) || n.Flow == nil || n.Flow.Name != r.flow.name || n.Flow.Step != r.stepName() {
			return ledger.ErrSkip
		}
		f := *n.Flow
		f.Notes = maps.Clone(r.notes)
		n.Flow = &f
		return nil
	})
	switch {
	case baremetal.IsCode(err, baremetal.CodeNotFound):
		return nil
	case err != nil:
		return err
	case n != nil && r.current(n):
		r.node = n
	}
	return nil
}

// note keeps what a step found for the flow's later steps.
func (r *flowRun) note(key, value string) {
	if r.notes == nil {
		r.notes = map[string]string{}
	}
	r.notes[key] = value
}

// failedEvent is the event that says the flow failed for good at step
// (what: why), for the write that records the failure.
//
// When the node's console was recorded, the event ends with its last
// lines: what the machine printed is the first thing an operator asks
// about a failed boot.
func (r *flowRun) failedEvent(step, what string) *baremetal.Event {
	msg := fmt.Sprintf("%s: step %s (%d of %d) failed: %s", r.flow.name, step, r.flow.index(step)+1, len(r.flow.steps), what)
	if lines := r.consoleTail(); len(lines) > 0 {
		msg += "\n" + ConsoleTailHeader + "\n" + strings.Join(lines, "\n")
	}
	return &baremetal.Event{Type: "step", Field: "flow", Old: r.flow.name + "/" + step, Message: msg}
}

// ConsoleTailHeader introduces the console lines of a failure's event.
const ConsoleTailHeader = "console (last lines):"

// consoleSettle bounds the wait for a failing node's console to go quiet.
const consoleSettle = 2 * time.Second

// consoleTailLines and consoleTailBytes bound the console lines a failed
// event carries: the screenful that shows a panic or a hung boot.
const (
	consoleTailLines = 25
	consoleTailBytes = 4 << 10
)

func (r *flowRun) consoleTail() []string {
	if r.cfg.Console == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	lines := r.cfg.Console.Tail(ctx, r.node.ID, consoleTailLines)
	size := 0
	for i := len(lines) - 1; i >= 0; i-- {
		size += len(lines[i]) + 1
		if size > consoleTailBytes {
			return lines[i+1:]
		}
	}
	return lines
}

// stepName is the current step's name.
func (r *flowRun) stepName() string { return r.flow.steps[r.at].name }

// stopped is asked between the polls of a wait (waitPower): has the node
// left the flow (instance deleted, node deleted or moved on)?
func (r *flowRun) stopped(ctx context.Context) bool {
	cur, err := r.store.GetNode(ctx, r.node.ID)
	if err != nil {
		return baremetal.IsCode(err, baremetal.CodeNotFound)
	}
	if !r.current(cur) {
		r.log.InfoContext(ctx, r.flow.name+" overtaken; stopping", "node", cur.Name, "state", cur.ProvisionState)
		return true
	}
	return false
}

// The steps several flows take.

// powerOffStep makes sure the machine is observed off.
func powerOffStep(ctx context.Context, r *flowRun) (stepResult, error) {
	return nextStep, r.powerOff(ctx, r.node, nil)
}

// clearBootStep clears the boot override and ejects virtual media.
func clearBootStep(ctx context.Context, r *flowRun) (stepResult, error) {
	return nextStep, r.clearBoot(ctx, r.node)
}

// keepTrying is the fail of the flows that never give up (cleanup,
// retire; inspect but for what ends an inspection): the node's record
// says what went wrong (a power change never observed is power_mismatch,
// a refusal bmc_refused, other BMC trouble counts towards a BMC fault)
// and the job retries, with backoff, forever; slowly after a refusal,
// which only a change on the BMC fixes.
func keepTrying(ctx context.Context, r *flowRun, err error) (stepResult, error) {
	n := r.node
	switch f := classify(err); {
	case f == failStopped:
		return flowOver, nil
	case f == failPowerTimeout:
		r.recordActionFault(ctx, n.ID, baremetal.FaultPowerMismatch, r.flow.name+": "+err.Error())
	case f == failRefused:
		r.recordRefused(ctx, n.ID, r.flow.name, err)
		return nextStep, r.refusedRetry(ctx, r.job.Kind, fmt.Errorf("%s node %s: %w", r.flow.name, n.Name, err))
	case f.bmcTrouble():
		r.recordBMCFailure(ctx, n.ID, r.flow.name, err)
	}
	return nextStep, r.retryForever(r.job, fmt.Errorf("%s node %s: %w", r.flow.name, n.Name, err))
}
