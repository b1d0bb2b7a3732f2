-- Instances. The lists pick their statement by filter, so that each one
-- can use its index: by name (instances_name), by node
-- (instances_node_id), else in id order. Their optional filters are CASE,
-- not OR, for the generic plan's sake (see ListNodesFiltered).

-- name: GetInstance :many
-- By id or name: names are unique per project only, so two rows by name
-- are ambiguous; an id match comes first.
SELECT * FROM instances
WHERE id = sqlc.arg(id_or_name) OR name = sqlc.arg(id_or_name)
ORDER BY id = sqlc.arg(id_or_name) DESC, id
LIMIT 2;

-- name: ListInstances :many
SELECT * FROM instances
WHERE id > sqlc.arg(after)
  AND CASE WHEN sqlc.arg(project)::text = '' THEN true ELSE project = sqlc.arg(project) END
ORDER BY id
LIMIT sqlc.arg(page_limit)::bigint;

-- name: ListInstancesByName :many
SELECT * FROM instances
WHERE name = sqlc.arg(name)
  AND id > sqlc.arg(after)
  AND CASE WHEN sqlc.arg(project)::text = '' THEN true ELSE project = sqlc.arg(project) END
  AND CASE WHEN sqlc.arg(node_id)::text = '' THEN true ELSE node_id = sqlc.arg(node_id) END
ORDER BY id
LIMIT sqlc.arg(page_limit)::bigint;

-- name: ListInstancesByNode :many
SELECT * FROM instances
WHERE node_id = sqlc.arg(node_id)
  AND id > sqlc.arg(after)
  AND CASE WHEN sqlc.arg(project)::text = '' THEN true ELSE project = sqlc.arg(project) END
ORDER BY id
LIMIT sqlc.arg(page_limit)::bigint;
