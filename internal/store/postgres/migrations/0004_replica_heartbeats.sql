-- One row per running controller (replica): its id is also its River
-- client id, so a running job's river_job.attempted_by names the replica
-- running it. The replica refreshes last_seen every few seconds; a job
-- whose replica's row has gone stale belongs to a dead process and is made
-- runnable again by a live replica (internal/jobs/recovery.go). Times come
-- from the database's clock (now()), so replicas' clocks need not agree.
CREATE TABLE replica_heartbeats (
    id         text        NOT NULL PRIMARY KEY,
    started_at timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL
);
