package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// At most one mutating job (verify, deploy, cleanup, power, retire) acts on
// a node at a time. Uniqueness alone cannot give that: it is per kind, and
// a cleanup must be able to queue while a deploy of the same node runs.
//
// So every mutating job, when it starts, looks in river_job for another
// running mutating job of the same node that started before it (earlier
// attempted_at, ties broken by id). If there is one it snoozes for BusyPoll
// and looks again; snoozing uses no attempt. The rule is total, so of two
// jobs starting together exactly one proceeds, on any number of replicas:
// the job table is the one thing they all share.
//
// A job whose process died stays "running" until it is rescued
// (recovery.go: at start on SQLite, ReplicaTimeout after the last heartbeat
// on PostgreSQL); jobs behind it wait that long, which is the price of not
// acting on a node twice.

// busyNode reports whether another mutating job of nodeID is running and
// started before job. It reads river_job on the store's read handle: the
// running state of every job was committed before that job started, so a
// read pool sees it as the writer would, and on SQLite this read (one per
// job) does not queue for the one writer connection. One narrow query
// instead of River's JobList, which decodes every column of every row it
// returns: this runs at the start of every job.
func (r *nodeWork) busyNode(ctx context.Context, job *rivertype.JobRow, nodeID string) (bool, error) {
	var one int
	var err error
	switch db := r.store.ReadNative().(type) {
	case *sql.DB:
		err = db.QueryRowContext(ctx, busyNodeSQL("?", "?"), job.ID, nodeID).Scan(&one)
	case *pgxpool.Pool:
		err = db.QueryRow(ctx, busyNodeSQL("$1::bigint", "$2::text"), job.ID, nodeID).Scan(&one)
	default:
		err = fmt.Errorf("store %T: no SQL handle", db)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows), errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, r.store.Classify("list running jobs", fmt.Errorf("list running jobs of node %s: %w", nodeID, err))
	}
	return true, nil
}

// busyNodeSQL finds a running mutating job of a node (second parameter)
// that started before job me (first parameter): earlier attempted_at,
// ties (and a missing attempted_at) broken by id. The rule is total, so of
// two jobs starting together exactly one proceeds. The same text serves
// both dialects but for the placeholders; both store timestamps so that
// their order is time order (SQLite as fixed-format UTC text). The state
// and node_id conditions are those of store.RiverRunningNodeIndex, which
// finds the node's running jobs without reading every running job (there
// are as many as workers); keep them matching it.
func busyNodeSQL(meID, nodeID string) string {
	return `SELECT 1 FROM river_job o JOIN river_job me ON me.id = ` + meID + `
	WHERE o.state = 'running' AND o.kind IN (` + mutatingKindList + `)
		AND o.args ->> 'node_id' = ` + nodeID + ` AND o.id <> me.id
		AND (o.attempted_at < me.attempted_at
			OR ((o.attempted_at = me.attempted_at OR o.attempted_at IS NULL OR me.attempted_at IS NULL) AND o.id < me.id))
	LIMIT 1`
}

// mutatingKindList is mutatingKinds as SQL string literals (the kinds are
// our own snake_case constants, nothing to escape).
var mutatingKindList = "'" + strings.Join(mutatingKinds, "', '") + "'"

// KickNodeTx makes a node's pending BMC work run now instead of waiting out
// its backoff: the service layer calls it in the transaction that changes
// the node's BMC address or credentials. It queues a sync_node (which
// reads the power with the new credentials and clears the fault) and makes
// the node's waiting mutating jobs (a verify or cleanup backing off behind
// a wrong password) available at once. Everything goes through tx: on
// SQLite, anything else would wait for the transaction's own connection.
func (r *Runner) KickNodeTx(ctx context.Context, tx store.Tx, nodeID string) error {
	if _, err := r.q.InsertTx(ctx, tx, SyncNodeArgs{NodeID: nodeID}, nil); err != nil {
		return fmt.Errorf("kick node %s: enqueue sync_node: %w", nodeID, err)
	}
	return r.wakeTx(ctx, tx, nodeID)
}

// wakeTx makes the node's waiting mutating jobs available at once, in tx.
func (r *nodeWork) wakeTx(ctx context.Context, tx store.Tx, nodeID string) error {
	r.markWoken(nodeID)
	res, err := r.q.JobListTx(ctx, tx, waitingJobsOf(nodeID))
	if err != nil {
		return fmt.Errorf("kick node %s: list waiting jobs: %w", nodeID, err)
	}
	for _, j := range res.Jobs {
		if _, err := r.q.JobRetryTx(ctx, tx, j.ID); err != nil {
			return fmt.Errorf("kick node %s: retry job %d now: %w", nodeID, j.ID, err)
		}
	}
	return nil
}

func waitingJobsOf(nodeID string) *river.JobListParams {
	return river.NewJobListParams().
		States(rivertype.JobStateRetryable, rivertype.JobStateScheduled).
		Kinds(mutatingKinds...).
		Where(argsNodeID, river.NamedArgs{"node_id": nodeID}).
		First(20)
}

// nudge makes the node's waiting mutating jobs run now. It is called when
// a BMC fault clears (power sync, sync_node): a cleanup or verify backing
// off for minutes behind a BMC that just came back should not keep waiting.
func (r *nodeWork) nudge(ctx context.Context, nodeID string) {
	r.markWoken(nodeID)
	res, err := r.q.JobList(ctx, waitingJobsOf(nodeID))
	if err != nil {
		r.log.WarnContext(ctx, "list waiting jobs to nudge", "node", nodeID, "err", err)
		return
	}
	for _, j := range res.Jobs {
		if _, err := r.q.JobRetry(ctx, j.ID); err != nil {
			r.log.WarnContext(ctx, "nudge job", "node", nodeID, "job", j.ID, "err", err)
		}
	}
}
