-- Nodes: SQLite's reads (the writes are in ../../queries/nodes.sql). Each
-- selects * from the view node_rows (migration 0012): a node's columns but
-- bmc_key, and the time of its last inspection.

-- name: GetNode :one
-- By id, or by name when no id matches: one round trip for both, and an
-- id match wins over a name match. (?1 is id_or_name: sqlc leaves a
-- sqlc.arg in ORDER BY as it is.)
SELECT * FROM node_rows
WHERE id = sqlc.arg(id_or_name) OR name = sqlc.arg(id_or_name)
ORDER BY id = ?1 DESC
LIMIT 1;

-- name: ListNodes :many
-- A page of nodes after the cursor (id '' is before every id), but those
-- in state hide_state ('' hides none): every list without a filter.
SELECT * FROM node_rows
WHERE id > sqlc.arg(after) AND provision_state <> sqlc.arg(hide_state)
ORDER BY id
LIMIT sqlc.arg(page_limit);

-- name: ListNodesFiltered :many
-- ListNodes with filters: one left at its zero value ('' or NULL)
-- selects every node.
SELECT * FROM node_rows
WHERE id > sqlc.arg(after) AND provision_state <> sqlc.arg(hide_state)
  AND (CAST(sqlc.arg(provision_state) AS TEXT) = '' OR provision_state = sqlc.arg(provision_state))
  AND (maintenance = CAST(sqlc.narg(maintenance) AS BOOLEAN) OR sqlc.narg(maintenance) IS NULL)
  AND (CAST(sqlc.arg(fault) AS TEXT) = '' OR fault = sqlc.arg(fault))
  AND ((fault <> '') = CAST(sqlc.narg(faulted) AS BOOLEAN) OR sqlc.narg(faulted) IS NULL)
  AND (CAST(sqlc.arg(resource_class) AS TEXT) = '' OR resource_class = sqlc.arg(resource_class))
  AND (next_check_at <= sqlc.narg(due_before) OR next_check_at IS NULL OR sqlc.narg(due_before) IS NULL)
ORDER BY id
LIMIT sqlc.arg(page_limit);

-- name: GetNodes :many
-- The ids are one JSON array, so that the statement is the same whatever
-- their number (one cached statement, no limit on variables).
SELECT * FROM node_rows
WHERE id IN (SELECT value FROM json_each(CAST(sqlc.arg(ids_json) AS TEXT)))
ORDER BY id;

-- name: ClaimNode :one
-- The first node, in id order, that can take a new instance of the
-- resource class and driver (either empty for any): available, in service, without
-- fault or instance. No lock to take: the transaction holds the
-- database's write lock (BEGIN IMMEDIATE), so no other create can take
-- the node before it ends.
SELECT * FROM node_rows
WHERE provision_state = 'available' AND NOT maintenance AND fault = '' AND instance_id = ''
  AND (CAST(sqlc.arg(resource_class) AS TEXT) = '' OR resource_class = sqlc.arg(resource_class))
  AND (CAST(sqlc.arg(driver) AS TEXT) = '' OR driver = sqlc.arg(driver))
ORDER BY id
LIMIT 1;

-- name: GetInventories :many
-- The inventories of a page of nodes, the ids one JSON array as in
-- GetNodes.
SELECT * FROM node_inventories
WHERE node_id IN (SELECT value FROM json_each(CAST(sqlc.arg(ids_json) AS TEXT)))
ORDER BY node_id;
