-- Nodes: PostgreSQL's reads (the writes are in ../../queries/nodes.sql).
-- Each selects * from the view node_rows (migration 0012): a node's
-- columns but bmc_key, and the time of its last inspection.

-- name: GetNode :one
-- By id, or by name when no id matches: one round trip for both, and an
-- id match wins over a name match.
SELECT * FROM node_rows
WHERE id = sqlc.arg(id_or_name) OR name = sqlc.arg(id_or_name)
ORDER BY id = sqlc.arg(id_or_name) DESC
LIMIT 1;

-- name: GetNodeForUpdate :one
-- GetNode, locking the node's row until the transaction ends (see
-- store.Tx): a read-modify-write waits for a concurrent writer instead of
-- failing on its version.
SELECT * FROM node_rows
WHERE id = sqlc.arg(id_or_name) OR name = sqlc.arg(id_or_name)
ORDER BY id = sqlc.arg(id_or_name) DESC
LIMIT 1
FOR UPDATE;

-- name: ListNodes :many
-- A page of nodes after the cursor (id '' is before every id), but those
-- in state hide_state ('' hides none): every list without a filter.
SELECT * FROM node_rows
WHERE id > sqlc.arg(after) AND provision_state <> sqlc.arg(hide_state)
ORDER BY id
LIMIT sqlc.arg(page_limit)::bigint;

-- name: ListNodesFiltered :many
-- ListNodes with filters: one left at its zero value ('' or NULL)
-- selects every node. CASE, not OR: the generic plan (pgx prepares the
-- statement) then stays a scan of nodes_pkey in order that stops at the
-- limit, where OR makes the planner expect one row and sort them all.
SELECT * FROM node_rows
WHERE id > sqlc.arg(after) AND provision_state <> sqlc.arg(hide_state)
  AND CASE WHEN sqlc.arg(provision_state)::text = '' THEN true ELSE provision_state = sqlc.arg(provision_state) END
  AND CASE WHEN sqlc.narg(maintenance)::boolean IS NULL THEN true ELSE maintenance = sqlc.narg(maintenance) END
  AND CASE WHEN sqlc.arg(fault)::text = '' THEN true ELSE fault = sqlc.arg(fault) END
  AND CASE WHEN sqlc.narg(faulted)::boolean IS NULL THEN true ELSE (fault <> '') = sqlc.narg(faulted) END
  AND CASE WHEN sqlc.arg(resource_class)::text = '' THEN true ELSE resource_class = sqlc.arg(resource_class) END
  AND CASE WHEN sqlc.narg(due_before)::timestamptz IS NULL THEN true
      ELSE next_check_at IS NULL OR next_check_at <= sqlc.narg(due_before) END
  AND CASE WHEN sqlc.arg(owner)::text = '' THEN true ELSE owner = sqlc.arg(owner) END
  AND CASE WHEN sqlc.arg(visible_to)::text = '' THEN true ELSE owner = '' OR owner = sqlc.arg(visible_to) END
  AND CASE WHEN sqlc.narg(schedulable)::boolean IS NULL THEN true
      ELSE (provision_state = 'available' AND NOT maintenance AND fault = '' AND instance_id = '') = sqlc.narg(schedulable) END
  AND cpus >= sqlc.arg(min_cpus)::bigint AND memory_mb >= sqlc.arg(min_memory_mb)::bigint AND local_gb >= sqlc.arg(min_disk_gb)::bigint
  AND CASE WHEN sqlc.arg(cpu_arch)::text = '' THEN true ELSE lower(cpu_arch) = lower(sqlc.arg(cpu_arch)) END
  AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(sqlc.arg(required_traits)::text::jsonb)
      WHERE strpos(',' || node_rows.traits || ',' || node_rows.derived_traits || ',', ',' || value || ',') = 0)
  AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(sqlc.arg(forbidden_traits)::text::jsonb)
      WHERE strpos(',' || node_rows.traits || ',' || node_rows.derived_traits || ',', ',' || value || ',') > 0)
ORDER BY id
LIMIT sqlc.arg(page_limit)::bigint;

-- name: GetNodes :many
-- The ids are one JSON array, as in SQLite (where that keeps the
-- statement the same whatever their number).
SELECT * FROM node_rows
WHERE id IN (SELECT jsonb_array_elements_text(sqlc.arg(ids_json)::text::jsonb))
ORDER BY id;

-- name: ClaimNode :one
-- The node that best fits a new instance (baremetal.BestFitLess: nodes
-- the project owns, then the smallest known hardware, then id) among
-- those that can take it: available, in service, without fault or
-- instance, of the resource class and driver (either empty for any), not
-- owned by another project, with the minimum hardware (a property 0 is
-- unknown and meets no minimum), the architecture, every required trait
-- and no forbidden one (the traits are JSON arrays; a node's are
-- comma-joined, so a trait is found by a string search with its commas).
-- baremetal.Placement.Unmet is the same filter in Go. Its row stays locked until the
-- transaction ends, and a row another transaction holds locked is passed
-- over (SKIP LOCKED): concurrent creates, which all see the same free
-- nodes in the same order, each take a different one instead of all
-- taking the first and all but one failing on its version. (A row taken
-- by a transaction that committed after this statement began is locked
-- too, then passed over: see Tx.ClaimNode.)
SELECT * FROM node_rows
WHERE provision_state = 'available' AND NOT maintenance AND fault = '' AND instance_id = ''
  AND CASE WHEN sqlc.arg(resource_class)::text = '' THEN true ELSE resource_class = sqlc.arg(resource_class) END
  AND CASE WHEN sqlc.arg(driver)::text = '' THEN true ELSE driver = sqlc.arg(driver) END
  AND (owner = '' OR owner = sqlc.arg(project))
  AND cpus >= sqlc.arg(min_cpus)::bigint AND memory_mb >= sqlc.arg(min_memory_mb)::bigint AND local_gb >= sqlc.arg(min_disk_gb)::bigint
  AND CASE WHEN sqlc.arg(cpu_arch)::text = '' THEN true ELSE lower(cpu_arch) = lower(sqlc.arg(cpu_arch)) END
  AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(sqlc.arg(required_traits)::text::jsonb)
      WHERE strpos(',' || node_rows.traits || ',' || node_rows.derived_traits || ',', ',' || value || ',') = 0)
  AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(sqlc.arg(forbidden_traits)::text::jsonb)
      WHERE strpos(',' || node_rows.traits || ',' || node_rows.derived_traits || ',', ',' || value || ',') > 0)
ORDER BY (owner = ''), (memory_mb = 0), memory_mb, cpus, local_gb, id
LIMIT 1
FOR UPDATE SKIP LOCKED;

-- name: NextFreeNode :one
-- The id of the first node after the cursor that ClaimNode's filter
-- matches, as committed, locked or not: where ClaimNode found every free
-- node locked by other transactions, those are waited for one by one
-- (GetNodeForUpdate), as their holders may leave them free.
SELECT id FROM nodes
WHERE id > sqlc.arg(after) AND provision_state = 'available' AND NOT maintenance AND fault = '' AND instance_id = ''
  AND CASE WHEN sqlc.arg(resource_class)::text = '' THEN true ELSE resource_class = sqlc.arg(resource_class) END
  AND CASE WHEN sqlc.arg(driver)::text = '' THEN true ELSE driver = sqlc.arg(driver) END
  AND (owner = '' OR owner = sqlc.arg(project))
  AND cpus >= sqlc.arg(min_cpus)::bigint AND memory_mb >= sqlc.arg(min_memory_mb)::bigint AND local_gb >= sqlc.arg(min_disk_gb)::bigint
  AND CASE WHEN sqlc.arg(cpu_arch)::text = '' THEN true ELSE lower(cpu_arch) = lower(sqlc.arg(cpu_arch)) END
  AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(sqlc.arg(required_traits)::text::jsonb)
      WHERE strpos(',' || nodes.traits || ',' || nodes.derived_traits || ',', ',' || value || ',') = 0)
  AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(sqlc.arg(forbidden_traits)::text::jsonb)
      WHERE strpos(',' || nodes.traits || ',' || nodes.derived_traits || ',', ',' || value || ',') > 0)
ORDER BY id
LIMIT 1;

-- name: GetInventories :many
-- The inventories of a page of nodes, the ids one JSON array as in
-- GetNodes.
SELECT * FROM node_inventories
WHERE node_id IN (SELECT jsonb_array_elements_text(sqlc.arg(ids_json)::text::jsonb))
ORDER BY node_id;
