package jobs

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Crash recovery: the jobs a dead controller was running run again within
// seconds, instead of waiting for River's rescuer (measured on v0.51: it acts only
// on the leader, every 30 s, on jobs running longer than
// RescueStuckJobsAfter, which must exceed the longest job timeout; over a
// minute in practice, and none of it configurable).
//
// Every Runner has a replica id, which is also its River client id, so the
// last entry of a running job's river_job.attempted_by names the replica
// running it. The replica keeps a row in replica_heartbeats (migration
// 0004) fresh every HeartbeatInterval, from before River starts.
//
//   - SQLite: the store holds an exclusive lock on its database for as long
//     as it is open (sqlite.Open), so one controller uses it at a time and
//     every job still running at start was orphaned by a dead one. Start
//     makes them runnable before River starts.
//   - PostgreSQL: at start and at every heartbeat, each replica makes
//     runnable the running jobs whose replica's heartbeat is older than
//     ReplicaTimeout. It is one UPDATE whose condition is on the job row
//     itself, so two replicas rescuing at once, or a job re-fetched by a
//     live replica in between, cannot go wrong. A replica with no row at all
//     (a controller from before this table, during an upgrade) is left to
//     River's rescuer, which stays on as the backstop.
//
// A rescued job keeps its attempt count: the interrupted attempt counts and
// its error says what happened. One whose attempts are used up gets one
// more (max_attempts = attempt + 1, as River's JobRetry does): a crash is
// not the job's failure, and discarding a deploy or a cleanup would leave
// its node stuck. The job is available at once, not after a backoff.
//
// Running an interrupted job again is safe: every kind re-reads its node and
// acts from its current state (verify and power sync read the BMC; deploy,
// cleanup, power and retire ask the BMC for an end state - power on or off,
// boot override, media - that a repeat leaves unchanged, and write the node
// only when it is still in the state they expect; retire removes a record
// that may already be gone).
//
// River's API offers no way to move a running job (JobRetry leaves running
// jobs alone) and its driver interface is not for callers, so this writes
// river_job directly; the columns are those of River's own migrations
// (attempt, attempted_by, errors, max_attempts, metadata, scheduled_at,
// state) in v0.51.

// newReplicaID names this process among the controllers sharing a
// database: host and pid for people, random bytes so a restarted container
// (pid 1 again) is a new replica. River allows at most 100 characters.
func newReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "controller"
	}
	if len(host) > 60 {
		host = host[:60]
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// rescued is a job made runnable again, for the log.
type rescued struct {
	id      int64
	kind    string
	attempt int
	nodeID  string
	replica string
}

// Heartbeats on SQLite are written in the 0001 schema's text form by the
// one controller holding the database, so they compare as strings.
const sqliteTimeLayout = "2006-01-02T15:04:05.000000Z"

// rescueLock is the advisory lock key of the rescue pass on PostgreSQL
// ("bmrescue" in ASCII; the store's migration lock is another key).
const rescueLock int64 = 0x626d726573637565

const (
	pgBeat = `INSERT INTO replica_heartbeats (id, started_at, last_seen) VALUES ($1, now(), now())
		ON CONFLICT (id) DO UPDATE SET last_seen = now()`

	// The jobs whose replica's heartbeat went stale. array_upper: River
	// appends to attempted_by, so the last entry is the current attempt's.
	// cancel_attempted_at (River's JobCancel on a running job) is not
	// handled: the controller never cancels a job from outside it.
	pgRescueDead = `UPDATE river_job SET
			state = 'available',
			scheduled_at = now(),
			max_attempts = greatest(max_attempts, attempt + 1),
			errors = array_append(errors, jsonb_build_object(
				'at', now(), 'attempt', attempt, 'trace', '',
				'error', 'controller replica ' || attempted_by[array_upper(attempted_by, 1)] ||
					' stopped heartbeating during this attempt; run again by replica ' || $1::text)),
			metadata = metadata || jsonb_build_object('river:rescue_count',
				CASE WHEN jsonb_typeof(metadata -> 'river:rescue_count') = 'number'
					THEN (metadata ->> 'river:rescue_count')::int ELSE 0 END + 1)
		WHERE state = 'running'
			AND attempted_by[array_upper(attempted_by, 1)] IN (
				SELECT id FROM replica_heartbeats WHERE last_seen < now() - make_interval(secs => $2))
		RETURNING id, kind, attempt, coalesce(args ->> 'node_id', ''), attempted_by[array_upper(attempted_by, 1)]`

	// A dead replica's row goes once none of its jobs is left running.
	pgForget = `DELETE FROM replica_heartbeats h
		WHERE h.last_seen < now() - make_interval(secs => $1)
			AND NOT EXISTS (SELECT 1 FROM river_job j
				WHERE j.state = 'running' AND j.attempted_by[array_upper(j.attempted_by, 1)] = h.id)`

	pgLeave = `DELETE FROM replica_heartbeats WHERE id = $1`

	sqliteBeat = `INSERT INTO replica_heartbeats (id, started_at, last_seen) VALUES (?1, ?2, ?2)
		ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen`

	// Every running job: only called at start, under the store's lock.
	// River's SQLite schema keeps errors, metadata and attempted_by as
	// JSONB blobs and its times as 'YYYY-MM-DD HH:MM:SS.SSS' UTC text
	// (datetime('now', 'subsec')); errors' "at" is RFC 3339, as Go's
	// encoding/json writes it.
	sqliteRescueAll = `UPDATE river_job SET
			state = 'available',
			scheduled_at = datetime('now', 'subsec'),
			max_attempts = max(max_attempts, attempt + 1),
			errors = jsonb(json_insert(json(coalesce(errors, jsonb('[]'))), '$[#]', json_object(
				'at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'attempt', attempt, 'trace', '',
				'error', 'the controller stopped during this attempt (' ||
					coalesce(json_extract(attempted_by, '$[#-1]'), 'unknown') || '); run again at start by ' || ?1))),
			metadata = jsonb_set(metadata, '$."river:rescue_count"',
				coalesce(CASE json_type(metadata, '$."river:rescue_count"')
					WHEN 'integer' THEN json_extract(metadata, '$."river:rescue_count"') END, 0) + 1)
		WHERE state = 'running'
		RETURNING id, kind, attempt, coalesce(json_extract(args, '$.node_id'), ''),
			coalesce(json_extract(attempted_by, '$[#-1]'), '')`

	// The previous controller's heartbeat and its River leadership (which
	// would otherwise keep the new one from leading, and so from
	// scheduling retries and periodic jobs, until it expires).
	sqliteForgetOthers = `DELETE FROM replica_heartbeats WHERE id <> ?1`
	sqliteForgetLeader = `DELETE FROM river_leader`

	sqliteLeave = `DELETE FROM replica_heartbeats WHERE id = ?1`
)

// recoverAtStart writes this replica's first heartbeat and rescues what is
// orphaned, before River starts.
func (r *Runner) recoverAtStart(ctx context.Context) error {
	var jobs []rescued
	err := r.store.InTx(ctx, func(tx store.Tx) error {
		if err := r.beatTx(ctx, tx); err != nil {
			return err
		}
		var err error
		if r.store.Dialect() == "sqlite" {
			if jobs, err = queryRescued(ctx, tx, sqliteRescueAll, r.replicaID); err != nil {
				return err
			}
			if err := execNative(ctx, tx, sqliteForgetOthers, r.replicaID); err != nil {
				return err
			}
			return execNative(ctx, tx, sqliteForgetLeader)
		}
		jobs, err = r.rescueDeadTx(ctx, tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("recover interrupted jobs: %w", err)
	}
	r.logRescued(ctx, jobs)
	return nil
}

// heartbeat records that this replica is alive and, on PostgreSQL, rescues
// the jobs of replicas that are not.
func (r *Runner) heartbeat(ctx context.Context) error {
	var jobs []rescued
	err := r.store.InTx(ctx, func(tx store.Tx) error {
		if err := r.beatTx(ctx, tx); err != nil {
			return err
		}
		if r.store.Dialect() == "sqlite" {
			return nil
		}
		var err error
		jobs, err = r.rescueDeadTx(ctx, tx)
		return err
	})
	if err != nil {
		return err
	}
	r.logRescued(ctx, jobs)
	return nil
}

func (r *Runner) beatTx(ctx context.Context, tx store.Tx) error {
	if r.store.Dialect() == "sqlite" {
		return execNative(ctx, tx, sqliteBeat, r.replicaID, time.Now().UTC().Format(sqliteTimeLayout))
	}
	return execNative(ctx, tx, pgBeat, r.replicaID)
}

func (r *Runner) rescueDeadTx(ctx context.Context, tx store.Tx) ([]rescued, error) {
	// One replica rescues at a time: two UPDATEs of the same rows in
	// different orders could deadlock (PostgreSQL would abort one). The
	// others skip this pass rather than wait; they are back in a
	// HeartbeatInterval.
	ptx, ok := tx.Native().(pgx.Tx)
	if !ok {
		return nil, fmt.Errorf("store transaction %T is not PostgreSQL's", tx.Native())
	}
	var mine bool
	if err := ptx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, rescueLock).Scan(&mine); err != nil {
		return nil, err
	}
	if !mine {
		return nil, nil
	}
	secs := r.cfg.ReplicaTimeout.Seconds()
	jobs, err := queryRescued(ctx, tx, pgRescueDead, r.replicaID, secs)
	if err != nil {
		return nil, err
	}
	return jobs, execNative(ctx, tx, pgForget, secs)
}

// leave removes this replica's heartbeat after a clean stop, so nobody
// waits for it to go stale. Best effort: a row left behind only goes stale.
func (r *Runner) leave(ctx context.Context) {
	q := pgLeave
	if r.store.Dialect() == "sqlite" {
		q = sqliteLeave
	}
	err := r.store.InTx(ctx, func(tx store.Tx) error { return execNative(ctx, tx, q, r.replicaID) })
	if err != nil {
		r.log.WarnContext(ctx, "remove replica heartbeat", "replica", r.replicaID, "err", err)
	}
}

// heartbeats runs until ctx ends (Stop cancels it). A replica that could
// not record a heartbeat for longer than ReplicaTimeout while alive (its
// database unreachable, say) may have had its running jobs run again by
// another replica; it says so, loudly, when it gets through again.
func (r *Runner) heartbeats(ctx context.Context) {
	t := time.NewTicker(r.cfg.HeartbeatInterval)
	defer t.Stop()
	lastOK := time.Now()
	failed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		began := time.Now()
		bctx, cancel := context.WithTimeout(ctx, r.cfg.ReplicaTimeout/2)
		err := r.heartbeat(bctx)
		cancel()
		took := time.Since(began)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failed = true
			r.log.WarnContext(ctx, "record replica heartbeat", "replica", r.replicaID, "since_last", time.Since(lastOK).Round(time.Second), "err", err)
			continue
		}
		// A heartbeat that failed, or one that hung (a pool waiting for a
		// connection to a database that went away fails nothing until it
		// times out), both mean the database was away: the agents'
		// heartbeats failed too meanwhile, so their silence counts from
		// now (agentStall). A database merely so slow that a one-row
		// write takes longer than the interval counts too: the agents'
		// reports may have failed as well, and the stall rule's mistake
		// is the costly one (it power-cycles a node mid-write), while
		// waiting longer only leaves a hung agent to --agent-timeout.
		if failed || took > r.cfg.HeartbeatInterval {
			r.storeBack.Store(time.Now().UnixNano())
			failed = false
			r.log.InfoContext(ctx, "replica heartbeat recorded again", "replica", r.replicaID, "gap", time.Since(lastOK).Round(time.Second))
		}
		if gap := time.Since(lastOK); gap > r.cfg.ReplicaTimeout {
			r.log.ErrorContext(ctx, "this replica's heartbeat was not recorded for longer than the replica timeout: other replicas may have run its running jobs again",
				"replica", r.replicaID, "gap", gap.Round(time.Second), "replica_timeout", r.cfg.ReplicaTimeout)
		}
		lastOK = time.Now()
	}
}

func (r *Runner) logRescued(ctx context.Context, jobs []rescued) {
	for _, j := range jobs {
		r.metrics.jobsRescued.WithLabelValues(j.kind).Inc()
		r.log.WarnContext(ctx, "job interrupted by a dead controller runs again", "job", j.id, "kind", j.kind,
			"node", j.nodeID, "attempt", j.attempt, "dead_replica", j.replica, "replica", r.replicaID)
	}
}

// execNative and queryRescued run SQL on the store transaction's driver
// handle: river_job and replica_heartbeats are not the store's rows. The
// SQL is per dialect, so are the placeholders.
func execNative(ctx context.Context, tx store.Tx, q string, args ...any) error {
	switch n := tx.Native().(type) {
	case *sql.Tx:
		_, err := n.ExecContext(ctx, q, args...)
		return err
	case pgx.Tx:
		_, err := n.Exec(ctx, q, args...)
		return err
	default:
		return fmt.Errorf("store transaction %T: no SQL handle", n)
	}
}

func queryRescued(ctx context.Context, tx store.Tx, q string, args ...any) ([]rescued, error) {
	// The rows of either driver; only their Close differs (pgx's returns
	// nothing), and each closes its own.
	var rows interface {
		Next() bool
		Scan(...any) error
		Err() error
	}
	switch n := tx.Native().(type) {
	case *sql.Tx:
		rs, err := n.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		defer rs.Close()
		rows = rs
	case pgx.Tx:
		rs, err := n.Query(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		defer rs.Close()
		rows = rs
	default:
		return nil, fmt.Errorf("store transaction %T: no SQL handle", n)
	}
	var out []rescued
	for rows.Next() {
		var j rescued
		if err := rows.Scan(&j.id, &j.kind, &j.attempt, &j.nodeID, &j.replica); err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}
