-- Node consoles: the recorded log and its recorder's lease (migration 0022).

-- name: ClaimConsole :execrows
-- Takes the lease when nobody holds it, it ran out, or holder has it
-- already (renewal); the log stays.
INSERT INTO node_consoles (node_id, holder, lease_until, updated_at)
VALUES (sqlc.arg(node_id), sqlc.arg(holder), sqlc.arg(lease_until), sqlc.arg(now))
ON CONFLICT (node_id) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
WHERE node_consoles.holder = '' OR node_consoles.holder = excluded.holder
    OR node_consoles.lease_until IS NULL OR node_consoles.lease_until < excluded.updated_at;

-- name: SaveConsoleLog :execrows
-- Only the lease's holder writes the log.
UPDATE node_consoles SET log = sqlc.arg(log), lease_until = sqlc.arg(lease_until), updated_at = sqlc.arg(now)
WHERE node_id = sqlc.arg(node_id) AND holder = sqlc.arg(holder);

-- name: ReleaseConsole :exec
UPDATE node_consoles SET holder = '', lease_until = NULL
WHERE node_id = sqlc.arg(node_id) AND holder = sqlc.arg(holder);

-- name: GetConsole :one
SELECT * FROM node_consoles WHERE node_id = sqlc.arg(node_id);
