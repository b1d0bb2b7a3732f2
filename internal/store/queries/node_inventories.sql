-- The hardware inventory the deploy agent last reported for a node.

-- name: SetInventory :exec
INSERT INTO node_inventories (node_id, data, inspected_at) VALUES (sqlc.arg(node_id), sqlc.arg(data), sqlc.arg(inspected_at))
ON CONFLICT (node_id) DO UPDATE SET data = excluded.data, inspected_at = excluded.inspected_at;

-- name: GetInventory :one
SELECT * FROM node_inventories WHERE node_id = sqlc.arg(node_id);
