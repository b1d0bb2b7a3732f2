-- A node's events, oldest first. The id always comes from the database:
-- cursors rely on ids growing in insertion order.

-- name: InsertEvent :one
INSERT INTO events (node_id, time, actor, type, field, old, new, message)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id;

-- name: InsertEventBatch :batchone
-- InsertEvent for several events in one round trip (store.Queries.InsertEvents).
INSERT INTO events (node_id, time, actor, type, field, old, new, message)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id;

-- name: ListEvents :many
SELECT * FROM events WHERE node_id = sqlc.arg(node_id) AND id > sqlc.arg(after) ORDER BY id LIMIT sqlc.arg(page_limit)::bigint;
