-- A node's events, oldest first. The id always comes from the database:
-- cursors rely on ids growing in insertion order.

-- name: InsertEvent :execlastid
INSERT INTO events (node_id, time, actor, type, field, old, new, message)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);

-- name: ListEvents :many
SELECT * FROM events WHERE node_id = sqlc.arg(node_id) AND id > sqlc.arg(after) ORDER BY id LIMIT sqlc.arg(page_limit);
