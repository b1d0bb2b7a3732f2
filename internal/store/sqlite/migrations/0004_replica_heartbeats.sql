-- One row per running controller (replica): its id is also its River
-- client id, so a running job's river_job.attempted_by names the replica
-- running it. The replica refreshes last_seen every few seconds; a job
-- whose replica's row has gone stale belongs to a dead process and is made
-- runnable again (internal/jobs/recovery.go). Times are written by the one
-- controller that holds the SQLite database, in the 0001 text form.
CREATE TABLE replica_heartbeats (
    id         TEXT NOT NULL PRIMARY KEY,
    started_at TEXT NOT NULL,
    last_seen  TEXT NOT NULL
) STRICT;
