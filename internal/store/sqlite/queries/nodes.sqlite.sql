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
  AND (CAST(sqlc.arg(owner) AS TEXT) = '' OR owner = sqlc.arg(owner))
  AND (CAST(sqlc.arg(visible_to) AS TEXT) = '' OR owner = '' OR owner = sqlc.arg(visible_to))
  AND ((provision_state = 'available' AND NOT maintenance AND fault = '' AND instance_id = '') = CAST(sqlc.narg(schedulable) AS BOOLEAN)
      OR sqlc.narg(schedulable) IS NULL)
  AND cpus >= CAST(sqlc.arg(min_cpus) AS INTEGER) AND memory_mb >= CAST(sqlc.arg(min_memory_mb) AS INTEGER)
  AND local_gb >= CAST(sqlc.arg(min_disk_gb) AS INTEGER)
  AND (CAST(sqlc.arg(cpu_arch) AS TEXT) = '' OR lower(cpu_arch) = lower(sqlc.arg(cpu_arch)))
  AND NOT EXISTS (SELECT 1 FROM json_each(CAST(sqlc.arg(required_traits) AS TEXT)) r
      WHERE instr(',' || node_rows.traits || ',' || node_rows.derived_traits || ',', ',' || r.value || ',') = 0)
  AND NOT EXISTS (SELECT 1 FROM json_each(CAST(sqlc.arg(forbidden_traits) AS TEXT)) f
      WHERE instr(',' || node_rows.traits || ',' || node_rows.derived_traits || ',', ',' || f.value || ',') > 0)
ORDER BY id
LIMIT sqlc.arg(page_limit);

-- name: GetNodes :many
-- The ids are one JSON array, so that the statement is the same whatever
-- their number (one cached statement, no limit on variables).
SELECT * FROM node_rows
WHERE id IN (SELECT value FROM json_each(CAST(sqlc.arg(ids_json) AS TEXT)))
ORDER BY id;

-- name: ClaimNode :one
-- The node that best fits a new instance among those that can take it
-- (see nodes.postgres.sql; baremetal.Placement.Unmet is the same filter
-- in Go). No lock to take: the transaction holds the database's write
-- lock (BEGIN IMMEDIATE), so no other create can take the node before it
-- ends.
SELECT * FROM node_rows
WHERE provision_state = 'available' AND NOT maintenance AND fault = '' AND instance_id = ''
  AND (CAST(sqlc.arg(resource_class) AS TEXT) = '' OR resource_class = sqlc.arg(resource_class))
  AND (CAST(sqlc.arg(driver) AS TEXT) = '' OR driver = sqlc.arg(driver))
  AND (owner = '' OR owner = sqlc.arg(project))
  AND cpus >= CAST(sqlc.arg(min_cpus) AS INTEGER) AND memory_mb >= CAST(sqlc.arg(min_memory_mb) AS INTEGER)
  AND local_gb >= CAST(sqlc.arg(min_disk_gb) AS INTEGER)
  AND (CAST(sqlc.arg(cpu_arch) AS TEXT) = '' OR lower(cpu_arch) = lower(sqlc.arg(cpu_arch)))
  AND NOT EXISTS (SELECT 1 FROM json_each(CAST(sqlc.arg(required_traits) AS TEXT)) r
      WHERE instr(',' || node_rows.traits || ',' || node_rows.derived_traits || ',', ',' || r.value || ',') = 0)
  AND NOT EXISTS (SELECT 1 FROM json_each(CAST(sqlc.arg(forbidden_traits) AS TEXT)) f
      WHERE instr(',' || node_rows.traits || ',' || node_rows.derived_traits || ',', ',' || f.value || ',') > 0)
ORDER BY (owner = ''), (memory_mb = 0), memory_mb, cpus, local_gb, id
LIMIT 1;

-- name: GetInventories :many
-- The inventories of a page of nodes, the ids one JSON array as in
-- GetNodes.
SELECT * FROM node_inventories
WHERE node_id IN (SELECT value FROM json_each(CAST(sqlc.arg(ids_json) AS TEXT)))
ORDER BY node_id;
