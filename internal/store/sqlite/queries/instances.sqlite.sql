-- Instances. The lists pick their statement by filter, so that each one
-- can use its index: by name (instances_name), by node
-- (instances_node_id), else in id order.

-- name: GetInstance :many
-- By id or name: names are unique per project only, so two rows by name
-- are ambiguous; an id match comes first. (?1 is id_or_name: sqlc leaves
-- a sqlc.arg in ORDER BY as it is.)
SELECT * FROM instances
WHERE id = sqlc.arg(id_or_name) OR name = sqlc.arg(id_or_name)
ORDER BY id = ?1 DESC, id
LIMIT 2;

-- name: ListInstances :many
SELECT * FROM instances
WHERE id > sqlc.arg(after)
  AND (CAST(sqlc.arg(project) AS TEXT) = '' OR project = sqlc.arg(project))
ORDER BY id
LIMIT sqlc.arg(page_limit);

-- name: ListInstancesByName :many
SELECT * FROM instances
WHERE name = sqlc.arg(name)
  AND id > sqlc.arg(after)
  AND (CAST(sqlc.arg(project) AS TEXT) = '' OR project = sqlc.arg(project))
  AND (CAST(sqlc.arg(node_id) AS TEXT) = '' OR node_id = sqlc.arg(node_id))
ORDER BY id
LIMIT sqlc.arg(page_limit);

-- name: ListInstancesByNode :many
SELECT * FROM instances
WHERE node_id = sqlc.arg(node_id)
  AND id > sqlc.arg(after)
  AND (CAST(sqlc.arg(project) AS TEXT) = '' OR project = sqlc.arg(project))
ORDER BY id
LIMIT sqlc.arg(page_limit);
