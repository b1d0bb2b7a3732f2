package jobs

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// PassStats describes one power-sync pass (or batch).
type PassStats struct {
	// Nodes is how many nodes the pass looked at.
	Nodes int
	// Skipped nodes were backing off (NextCheckAt in the future).
	Skipped int
	// OK and Failed count the power reads that answered and that failed.
	OK     int
	Failed int
	// Detached reads were still waiting for their BMC when the batch
	// finished; they finish (by BMCTimeout) and are written in the
	// background (lateWriter), so a hung BMC never holds a batch.
	Detached int
	// Changed is how many nodes were written (power state, fault, ...).
	Changed int
	// Woken nodes were read before their backoff ended because their BMC
	// answered again for another node (see syncNodes).
	Woken    int
	Duration time.Duration
}

// SyncPass runs one full power-sync pass in this process: every node,
// those in maintenance (observing is allowed in maintenance) and those
// being retired included, except those backing off. It is what the
// periodic power_sync job distributes across replicas, run locally: for
// tests, benchmarks and a controller without River leadership. Unlike a
// batch it waits for every read, hung BMCs included (each bounded by
// BMCTimeout), so its stats count every node.
func (r *Runner) SyncPass(ctx context.Context) (PassStats, error) {
	start := time.Now()
	nodes, err := r.listNodes(ctx)
	if err != nil {
		return PassStats{}, err
	}
	due, skipped := dueNodes(nodes, start)
	st, err := r.syncNodes(ctx, due, waitingBehind(due, backingOffBehind(nodes, start)), false)
	st.Nodes = len(nodes)
	st.Skipped = skipped
	st.Duration = time.Since(start)
	r.metrics.syncPass.Observe(st.Duration.Seconds())
	return st, err
}

// listNodes pages through every node. Those being retired are read too:
// while their BMC is dead their retire backs off like any job, and the
// power sync is what sees the BMC answer again (their fault clears, and
// the retire is woken: obsWriter.nudgeCleared).
func (r *Runner) listNodes(ctx context.Context) ([]*baremetal.Node, error) {
	var all []*baremetal.Node
	f := store.NodeFilter{Page: store.Page{Limit: store.MaxPageLimit}, IncludeDeleting: true}
	for {
		page, next, err := r.store.ListNodes(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("list nodes for power sync: %w", err)
		}
		all = append(all, page...)
		if next == "" || len(page) == 0 {
			return all, nil
		}
		f.After = next
	}
}

// dueNodes drops nodes whose backoff has not expired: a dead BMC is asked
// again only after NextCheckAt, so it costs the pass nothing meanwhile.
func dueNodes(nodes []*baremetal.Node, now time.Time) (due []*baremetal.Node, skipped int) {
	due = make([]*baremetal.Node, 0, len(nodes))
	for _, n := range nodes {
		if n.NextCheckAt != nil && n.NextCheckAt.After(now) {
			skipped++
			continue
		}
		due = append(due, n)
	}
	return due, skipped
}

// bmcOf names the BMC a node is reached through: its driver and endpoint
// (scheme, host, port). One BMC may manage several systems, each its own
// node (a chassis, an emulator): they share it.
func bmcOf(n *baremetal.Node) string {
	address, err := baremetal.NormalizeBMCAddress(n.Driver, n.BMC.Address)
	if err != nil {
		address = n.BMC.Address
	}
	return string(n.Driver) + " " + address
}

// backingOff reports whether n is skipped by the sync because its BMC
// failed: NextCheckAt in the future.
func backingOff(n *baremetal.Node, now time.Time) bool {
	return n.BMCFailures > 0 && n.NextCheckAt != nil && n.NextCheckAt.After(now)
}

// backingOffBehind indexes the nodes of all that back off (backingOff) by
// their BMC (bmcOf), for waitingBehind.
func backingOffBehind(all []*baremetal.Node, now time.Time) map[string][]string {
	idx := map[string][]string{}
	for _, n := range all {
		if backingOff(n, now) {
			b := bmcOf(n)
			idx[b] = append(idx[b], n.ID)
		}
	}
	return idx
}

// waitingBehind returns the ids of the nodes (of idx, backingOffBehind)
// that back off behind the BMC of one of the due nodes that had failed:
// those a pass reads at once if that BMC answers again (obsWriter.wake).
func waitingBehind(due []*baremetal.Node, idx map[string][]string) []string {
	if len(idx) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var ids []string
	for _, n := range due {
		if n.BMCFailures == 0 {
			continue // a BMC found back is one that had failed
		}
		if b := bmcOf(n); !seen[b] {
			seen[b] = true
			ids = append(ids, idx[b]...)
		}
	}
	return ids
}

// observation is one power read of the sync.
type observation struct {
	node *baremetal.Node // as listed, before the read
	ps   bmc.PowerState
	err  error
	at   time.Time
	// behind is the pass's nodes backing off behind the BMCs it reads
	// (waitingBehind): those read at once if this read finds the node's
	// BMC back (obsWriter.wake).
	behind []string
}

// writeBatch is how many observations share one write transaction: enough
// to make a first pass over thousands of nodes cheap, few enough that the
// single SQLite writer is never held for long (River needs it too, and a
// user's DELETE waits for it). When every BMC hangs, every observation is
// a write; at 100 per transaction a pass held the writer for tens of
// milliseconds at a time. At 20 a transaction takes a few milliseconds and
// the commits add about one fsync per 20 nodes.
const writeBatch = 20

// syncNodes reads the power of nodes with bounded concurrency and writes
// the observations that change something. Reads run in the shared slots
// (PowerSyncWorkers per process); one writer goroutine batches the writes,
// which suits SQLite's single writer and keeps PostgreSQL round trips low.
//
// Dead BMCs must not slow the pass down (they are the normal case in a big
// fleet, not the exception), so a read does not keep its slot while it
// waits for one:
//
//   - A read still unanswered after the straggler threshold (1.5× the
//     recent healthy latency, see stragglerWait) hands its slot to the
//     next node and finishes, by BMCTimeout at the latest, in the
//     straggler pool.
//   - Nodes whose last BMC call failed are started first, straight into
//     the straggler pool, so their timeouts overlap the healthy nodes'
//     reads instead of following them.
//
// The straggler pool holds up to 16×PowerSyncWorkers reads: waiting costs
// a goroutine and a socket, not CPU, and the cap still bounds the total.
//
// With detach (power_sync_batch jobs), nodes in the straggler pool are not
// waited for at all: the batch returns once its other reads are done, and
// the stragglers' observations are written by the process's lateWriter
// when they arrive. A pass is split into many batches, several per
// process and spread over replicas; if each waited for its slowest BMC,
// every batch holding one hung BMC would cost a whole BMCTimeout and the
// pass would take (batches with a hung BMC / batches in flight) ×
// BMCTimeout — minutes for a big fleet with 1% of its BMCs hung. Detached,
// a pass takes about the healthy time, and its hung reads all end within
// one BMCTimeout of their start. Without detach (SyncPass) the pass waits
// for them too: about the healthy time plus one BMCTimeout.
//
// A read that finds a node's BMC back after failures clears its fault and
// wakes its waiting jobs (nudgeCleared). The BMC is likely back for the
// other systems it manages too (a chassis, an emulator): the nodes of
// waiting that back off behind it are read at once (obsWriter.wake), by
// the batch or, for a detached read, by the lateWriter.
func (r *Runner) syncNodes(ctx context.Context, nodes []*baremetal.Node, waiting []string, detach bool) (PassStats, error) {
	st := PassStats{Nodes: len(nodes)}
	if len(nodes) == 0 {
		return st, nil
	}
	// Detached reads outlive the batch job (whose context River cancels
	// when Work returns), so every read of a detaching batch runs under
	// the runner's own context; each is bounded by BMCTimeout anyway.
	readCtx := ctx
	if detach {
		readCtx = r.lateCtx
	}
	// Suspects first (stable, so the rest keep the listing's order).
	ordered := make([]*baremetal.Node, 0, len(nodes))
	for _, n := range nodes {
		if n.BMCFailures > 0 {
			ordered = append(ordered, n)
		}
	}
	for _, n := range nodes {
		if n.BMCFailures == 0 {
			ordered = append(ordered, n)
		}
	}
	obs := make(chan observation, writeBatch)
	var (
		wg       sync.WaitGroup
		detached atomic.Int64
	)
	go func() {
		defer close(obs)
		defer wg.Wait()
		for _, n := range ordered {
			if n.BMCFailures > 0 {
				select {
				case r.syncStragglers <- struct{}{}:
					if detach {
						detached.Add(1)
						go func() {
							ps, err := r.readPower(readCtx, n)
							<-r.syncStragglers
							r.sendLate(observation{node: n, ps: ps, err: err, at: time.Now(), behind: waiting})
						}()
						continue
					}
					wg.Go(func() {
						ps, err := r.readPower(readCtx, n)
						<-r.syncStragglers
						obs <- observation{node: n, ps: ps, err: err, at: time.Now(), behind: waiting}
					})
					continue
				default: // pool full: take a slot like everyone else
				}
			}
			select {
			case r.syncSlots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Go(func() {
				ps, gone, err := r.readForSync(readCtx, n, detach, waiting)
				if gone {
					detached.Add(1)
					return
				}
				obs <- observation{node: n, ps: ps, err: err, at: time.Now(), behind: waiting}
			})
		}
	}()

	w := obsWriter{r: r}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
loop:
	for {
		select {
		case o, ok := <-obs:
			if !ok {
				break loop
			}
			if o.err != nil && readCtx.Err() != nil {
				continue // our own cancellation, not the BMC's fault
			}
			if o.err != nil {
				st.Failed++
			} else {
				st.OK++
			}
			w.add(ctx, o)
		case <-tick.C:
			w.flush(ctx)
		}
	}
	w.flush(ctx)
	st.Changed = w.changed
	st.Detached = int(detached.Load())
	err := w.err
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		var woken PassStats
		woken, err = w.wake(ctx, detach)
		st.Woken += woken.Woken
		st.OK += woken.OK
		st.Failed += woken.Failed
		st.Detached += woken.Detached
		st.Changed += woken.Changed
	}
	w.nudgeCleared(ctx)
	return st, err
}

// obsWriter turns power reads into node writes. Most reads change nothing:
// it decides on the listed copy of the node and opens a transaction only
// for the rest, writeBatch observations per transaction.
type obsWriter struct {
	r       *Runner
	pending []observation
	cleared []string // nodes whose BMC fault the writes cleared
	// recovered holds the BMCs (bmcOf) of the cleared nodes, behind the
	// nodes their passes saw backing off behind those BMCs (wake).
	recovered map[string]bool
	behind    map[string]bool
	changed   int
	err       error // the first write error; later batches are dropped
}

func (w *obsWriter) add(ctx context.Context, o observation) {
	if o.err != nil {
		w.r.metrics.syncNodes.WithLabelValues("failed").Inc()
	} else {
		w.r.metrics.syncNodes.WithLabelValues("ok").Inc()
	}
	cp := *o.node
	w.r.observePower(&cp, o.ps, o.err, o.at)
	if !ledger.Same(o.node, &cp) {
		w.pending = append(w.pending, o)
	}
	if len(w.pending) >= writeBatch {
		w.flush(ctx)
	}
}

func (w *obsWriter) flush(ctx context.Context) {
	if len(w.pending) == 0 || w.err != nil {
		w.pending = w.pending[:0]
		return
	}
	changed, c, err := w.r.writeObservations(ctx, w.pending)
	w.changed += changed
	w.r.metrics.syncNodes.WithLabelValues("changed").Add(float64(changed))
	w.cleared = append(w.cleared, c...)
	for _, o := range w.pending {
		if len(o.behind) == 0 || !slices.Contains(c, o.node.ID) {
			continue
		}
		if w.recovered == nil {
			w.recovered, w.behind = map[string]bool{}, map[string]bool{}
		}
		w.recovered[bmcOf(o.node)] = true
		for _, id := range o.behind {
			w.behind[id] = true
		}
	}
	if err != nil {
		w.err = err
	}
	w.pending = w.pending[:0]
}

// nudgeCleared wakes the waiting jobs of nodes whose fault just cleared.
func (w *obsWriter) nudgeCleared(ctx context.Context) {
	for _, id := range w.cleared {
		w.r.nudge(ctx, id)
	}
	w.cleared = w.cleared[:0]
}

// wake reads, at once, the nodes backing off behind the BMCs that the
// written reads found back (recovered, behind): a BMC that answers again
// for one of its systems is likely back for the others, which would
// otherwise wait out their backoff, their faults and waiting work with
// them. Each such node is read once for that recovery: one still dead
// backs off again. The reads go as a pass's do (detach as for the pass);
// it returns their stats, Woken counting the nodes read.
func (w *obsWriter) wake(ctx context.Context, detach bool) (PassStats, error) {
	recovered, behind := w.recovered, w.behind
	w.recovered, w.behind = nil, nil
	if len(recovered) == 0 {
		return PassStats{}, nil
	}
	ids := make([]string, 0, len(behind))
	for id := range behind {
		ids = append(ids, id)
	}
	var wake []*baremetal.Node
	now := time.Now()
	for chunk := range slices.Chunk(ids, store.MaxPageLimit) {
		loaded, err := w.r.store.GetNodes(ctx, chunk)
		if err != nil {
			return PassStats{}, fmt.Errorf("power sync: load %d nodes behind BMCs that answer again: %w", len(chunk), err)
		}
		for _, n := range loaded {
			// Still backing off: not read (and found back) meanwhile.
			if backingOff(n, now) && recovered[bmcOf(n)] {
				wake = append(wake, n)
			}
		}
	}
	if len(wake) == 0 {
		return PassStats{}, nil
	}
	w.r.log.InfoContext(ctx, "power sync: a BMC answers again; reading the nodes backing off behind it now", "nodes", len(wake))
	st, err := w.r.syncNodes(ctx, wake, nil, detach)
	st.Woken = len(wake)
	return st, err
}

// sendLate hands a detached read's observation to the lateWriter; when the
// runner is stopping it is dropped (the next pass reads the node again).
func (r *Runner) sendLate(o observation) {
	select {
	case r.late <- o:
	case <-r.lateCtx.Done():
	}
}

// lateWriter writes the observations of detached reads (see syncNodes) as
// they arrive, batched like a pass's own. It runs from Start until Stop.
// A write error is logged and the observations dropped: they only say what
// the next pass will read again.
func (r *Runner) lateWriter() {
	defer close(r.lateDone)
	ctx := r.lateCtx
	w := obsWriter{r: r}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	flush := func(ctx context.Context) {
		w.flush(ctx)
		if w.err != nil {
			r.log.WarnContext(ctx, "power sync: write late observations", "err", w.err)
			w.err = nil
		}
		// The reads of nodes that had failed are the ones a batch detaches
		// (syncNodes), so this is where most BMCs are found back.
		if _, err := w.wake(ctx, true); err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "power sync: read the nodes behind BMCs that answer again", "err", err)
		}
		w.nudgeCleared(ctx)
	}
	for {
		select {
		case o := <-r.late:
			if o.err != nil && ctx.Err() != nil {
				continue // cancelled by Stop, not the BMC's fault
			}
			w.add(ctx, o)
		case <-tick.C:
			flush(ctx)
		case <-ctx.Done():
			// Stopping: keep what already arrived, briefly.
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			flush(final)
			cancel()
			return
		}
	}
}

// readForSync reads n's power while holding one of the sync slots, and
// releases it: at once for a prompt answer, after the straggler threshold
// for a slow one, which then waits in the straggler pool. With detach, a
// read that moves to the straggler pool is not waited for: it reports
// gone, and its observation goes to the lateWriter when it arrives.
func (r *Runner) readForSync(ctx context.Context, n *baremetal.Node, detach bool, behind []string) (ps bmc.PowerState, gone bool, err error) {
	type result struct {
		ps  bmc.PowerState
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	started := time.Now()
	go func() {
		ps, err := r.readPower(ctx, n)
		done <- result{ps, err, time.Now()}
	}()
	// The threshold is looked at again while no healthy latency is known:
	// at start-up every read of the first batches begins before any answer
	// came back, and a hung BMC among them would otherwise keep its slot
	// (and its batch) for the no-data threshold, a tenth of BMCTimeout,
	// though its neighbours answered in milliseconds.
	for {
		left := r.stragglerWait() - time.Since(started)
		if left <= 0 {
			break
		}
		if r.syncLatency.Load() <= 0 {
			left = min(left, stragglerRecheck)
		}
		t := time.NewTimer(left)
		select {
		case res := <-done:
			t.Stop()
			<-r.syncSlots
			if res.err == nil {
				r.noteLatency(time.Since(started))
			}
			return res.ps, false, res.err
		case <-t.C:
		}
	}
	select {
	case r.syncStragglers <- struct{}{}:
		<-r.syncSlots
		if detach {
			go func() {
				res := <-done
				<-r.syncStragglers
				r.sendLate(observation{node: n, ps: res.ps, err: res.err, at: res.at, behind: behind})
			}()
			return "", true, nil
		}
		res := <-done
		<-r.syncStragglers
		return res.ps, false, res.err
	case res := <-done:
		// The straggler pool is full: keep the slot (back-pressure).
		<-r.syncSlots
		return res.ps, false, res.err
	}
}

// stragglerRecheck is how often a read started before any healthy latency
// was known looks again at the straggler threshold.
const stragglerRecheck = 20 * time.Millisecond

// noteLatency folds a healthy read's duration into the moving average the
// straggler threshold is derived from.
func (r *Runner) noteLatency(d time.Duration) {
	for {
		old := r.syncLatency.Load()
		next := int64(d)
		if old > 0 {
			next = old + (int64(d)-old)/16 // EWMA, α = 1/16
		}
		if r.syncLatency.CompareAndSwap(old, next) {
			return
		}
	}
}

// stragglerWait is how long a sync read keeps its slot: 1.5× the recent
// healthy latency (most healthy answers come within it; the others merely
// wait as stragglers, which costs nothing but a goroutine), at least 20 ms,
// at most a quarter of BMCTimeout; before any healthy read has been seen,
// a tenth of BMCTimeout.
func (r *Runner) stragglerWait() time.Duration {
	lo, hi := 20*time.Millisecond, max(r.cfg.BMCTimeout/4, 20*time.Millisecond)
	avg := time.Duration(r.syncLatency.Load())
	if avg <= 0 {
		return min(max(r.cfg.BMCTimeout/10, lo), hi)
	}
	return min(max(3*avg/2, lo), hi)
}

// writeObservations applies observations to the nodes, re-read fresh in
// one transaction, so a concurrent change (a job, an admin) is never
// overwritten: the observation is applied to whatever is stored now. It
// returns how many nodes were written and which had a BMC fault cleared.
func (r *Runner) writeObservations(ctx context.Context, obs []observation) (int, []string, error) {
	var (
		changed int
		cleared []string
	)
	err := r.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		changed, cleared = 0, nil // a retried transaction counts afresh
		for _, o := range obs {
			var wasFaulted bool
			n, wrote, err := tx.Mutate(ctx, o.node.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
				wasFaulted = n.Fault.BMC() || n.BMCFailures > 0
				r.observePower(n, o.ps, o.err, o.at)
				return nil
			})
			if baremetal.IsCode(err, baremetal.CodeNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return err
			}
			if wrote {
				changed++
			}
			if wasFaulted && n.BMCFailures == 0 {
				cleared = append(cleared, n.ID)
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("write power observations: %w", err)
	}
	return changed, cleared, nil
}

// powerSyncWorker is the periodic pass. River's leader enqueues one per
// PowerSyncInterval (unique per period); whichever replica takes it splits
// the due nodes into power_sync_batch jobs, which all replicas work. Each
// node is in exactly one batch and each batch runs on one replica, so each
// node is read by exactly one replica per pass.
type powerSyncWorker struct {
	river.WorkerDefaults[PowerSyncArgs]
	r *Runner
}

func (w *powerSyncWorker) Work(ctx context.Context, job *river.Job[PowerSyncArgs]) error {
	return w.r.finish(ctx, job.JobRow, w.r.fanOut(ctx))
}

func (r *Runner) fanOut(ctx context.Context) error {
	start := time.Now()
	// A pass slower than the interval must not pile passes up: skip this
	// one while any batch of the previous one is waiting or running.
	res, err := r.q.JobList(ctx, river.NewJobListParams().
		Kinds(PowerSyncBatchArgs{}.Kind()).
		States(unfinishedStates...).
		First(1))
	if err != nil {
		return fmt.Errorf("power sync: look for unfinished batches: %w", err)
	}
	if len(res.Jobs) > 0 {
		r.log.InfoContext(ctx, "skipping power sync pass: the previous one is still running")
		return nil
	}
	nodes, err := r.listNodes(ctx)
	if err != nil {
		return err
	}
	r.reconcile(ctx, nodes)
	now := time.Now()
	due, skipped := dueNodes(nodes, now)
	behind := backingOffBehind(nodes, now)
	var params []river.InsertManyParams
	for i := 0; i < len(due); i += r.cfg.PowerSyncBatchSize {
		batch := due[i:min(i+r.cfg.PowerSyncBatchSize, len(due))]
		ids := make([]string, len(batch))
		for j, n := range batch {
			ids[j] = n.ID
		}
		params = append(params, river.InsertManyParams{Args: PowerSyncBatchArgs{NodeIDs: ids,
			Waiting: waitingBehind(batch, behind)}})
	}
	r.metrics.syncNodes.WithLabelValues("skipped").Add(float64(skipped))
	if len(params) == 0 {
		r.metrics.syncPass.Observe(time.Since(start).Seconds())
		return nil
	}
	inserted, err := r.q.InsertMany(ctx, params)
	if err != nil {
		return fmt.Errorf("power sync: enqueue %d batches: %w", len(params), err)
	}
	ids := make([]int64, len(inserted))
	for i, j := range inserted {
		ids[i] = j.Job.ID
	}
	r.log.DebugContext(ctx, "power sync pass fanned out", "nodes", len(due), "skipped", skipped, "batches", len(params))
	if err := r.waitBatches(ctx, ids); err != nil {
		// Only the metric is lost: the batches run whatever happens here.
		r.log.InfoContext(ctx, "power sync: stopped waiting for the pass's batches", "err", err)
		return nil
	}
	d := time.Since(start)
	r.metrics.syncPass.Observe(d.Seconds())
	r.log.DebugContext(ctx, "power sync pass done", "nodes", len(due), "duration", d)
	return nil
}

// unfinishedStates are the states of a job that has yet to run or finish.
var unfinishedStates = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled, rivertype.JobStatePending}

// waitBatches waits until none of the jobs ids is unfinished, so that the
// pass's duration can be observed where the pass began, whichever replicas
// ran its batches. It polls (River has no completion notification across
// processes) from every 50 ms up to every second: a pass's duration is
// known to a few percent, at a handful of cheap indexed queries per pass.
func (r *Runner) waitBatches(ctx context.Context, ids []int64) error {
	wait := 50 * time.Millisecond
	for {
		res, err := r.q.JobList(ctx, river.NewJobListParams().IDs(ids...).States(unfinishedStates...).First(1))
		if err != nil {
			return err
		}
		if len(res.Jobs) == 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// powerSyncBatchWorker reads the power of one batch of nodes.
type powerSyncBatchWorker struct {
	river.WorkerDefaults[PowerSyncBatchArgs]
	r *Runner
}

func (w *powerSyncBatchWorker) Work(ctx context.Context, job *river.Job[PowerSyncBatchArgs]) error {
	return w.r.finish(ctx, job.JobRow, w.r.syncBatch(ctx, job.Args.NodeIDs, job.Args.Waiting))
}

func (r *Runner) syncBatch(ctx context.Context, ids, waiting []string) error {
	start := time.Now()
	// One query for the whole batch (PowerSyncBatchSize ≤ MaxPageLimit).
	nodes, err := r.store.GetNodes(ctx, ids)
	if err != nil {
		return fmt.Errorf("power sync batch: load %d nodes: %w", len(ids), err)
	}
	// The batch may have waited in the queue; a node may have failed
	// (and backed off) since the pass was planned.
	due, _ := dueNodes(nodes, time.Now())
	_, err = r.syncNodes(ctx, due, waiting, true)
	r.metrics.syncBatch.Observe(time.Since(start).Seconds())
	return err
}
