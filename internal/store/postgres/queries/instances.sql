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

-- name: InsertInstance :execrows
-- The instance writes take the same parameters in the same order, as the
-- node writes do.
INSERT INTO instances (
    name, project, node_id, resource_class, image_url, image_checksum, user_data, metadata, state,
    power_state, last_error, ready_token_hash, ready, ready_token_sealed, deploy_timeout_ms,
    booted_at, deploy_method, root_device, created_at, updated_at, version, id
) VALUES (
    sqlc.arg(name), sqlc.arg(project), sqlc.arg(node_id), sqlc.arg(resource_class),
    sqlc.arg(image_url), sqlc.arg(image_checksum), sqlc.arg(user_data), sqlc.arg(metadata),
    sqlc.arg(state), sqlc.arg(power_state), sqlc.arg(last_error), sqlc.arg(ready_token_hash),
    sqlc.arg(ready), sqlc.arg(ready_token_sealed), sqlc.arg(deploy_timeout_ms),
    sqlc.narg(booted_at), sqlc.arg(deploy_method), sqlc.arg(root_device), sqlc.arg(now),
    sqlc.arg(now), sqlc.arg(version)::bigint + 1, sqlc.arg(id)
);

-- name: UpdateInstance :execrows
-- Writes every column if the stored version is the given one.
UPDATE instances SET
    name = sqlc.arg(name), project = sqlc.arg(project), node_id = sqlc.arg(node_id),
    resource_class = sqlc.arg(resource_class), image_url = sqlc.arg(image_url),
    image_checksum = sqlc.arg(image_checksum), user_data = sqlc.arg(user_data),
    metadata = sqlc.arg(metadata), state = sqlc.arg(state), power_state = sqlc.arg(power_state),
    last_error = sqlc.arg(last_error), ready_token_hash = sqlc.arg(ready_token_hash),
    ready = sqlc.arg(ready), ready_token_sealed = sqlc.arg(ready_token_sealed),
    deploy_timeout_ms = sqlc.arg(deploy_timeout_ms), booted_at = sqlc.narg(booted_at),
    deploy_method = sqlc.arg(deploy_method), root_device = sqlc.arg(root_device),
    updated_at = sqlc.arg(now), version = version + 1
WHERE version = sqlc.arg(version) AND id = sqlc.arg(id);

-- name: DeleteInstance :execrows
DELETE FROM instances WHERE id = $1 AND version = $2;

-- name: InstanceVersion :one
SELECT version FROM instances WHERE id = $1;

-- name: CountInstances :one
-- A project's instances; '' counts every project's.
SELECT count(*) FROM instances WHERE sqlc.arg(project)::text = '' OR project = sqlc.arg(project);
