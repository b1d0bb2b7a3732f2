-- Instances: the writes, written once for both dialects. The reads are in
-- each dialect's instances.<dialect>.sql.

-- name: InsertInstance :execrows
-- The instance writes take the same parameters in the same order, as the
-- node writes do.
INSERT INTO instances (
    name, project, node_id, resource_class, image_url, image_checksum, user_data, metadata, state,
    power_state, last_error, ready_token_hash, ready, ready_token_sealed, deploy_timeout_ms,
    booted_at, deploy_method, root_device, rebuilds, network, addresses, requirements, created_at, updated_at, version, id
) VALUES (
    sqlc.arg(name), sqlc.arg(project), sqlc.arg(node_id), sqlc.arg(resource_class),
    sqlc.arg(image_url), sqlc.arg(image_checksum), sqlc.arg(user_data), sqlc.arg(metadata),
    sqlc.arg(state), sqlc.arg(power_state), sqlc.arg(last_error), sqlc.arg(ready_token_hash),
    sqlc.arg(ready), sqlc.arg(ready_token_sealed), sqlc.arg(deploy_timeout_ms),
    sqlc.narg(booted_at), sqlc.arg(deploy_method), sqlc.arg(root_device), sqlc.arg(rebuilds), sqlc.arg(network), sqlc.arg(addresses), sqlc.arg(requirements), sqlc.arg(now),
    sqlc.arg(now), CAST(sqlc.arg(version) AS BIGINT) + 1, sqlc.arg(id)
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
    rebuilds = sqlc.arg(rebuilds), network = sqlc.arg(network),
    addresses = sqlc.arg(addresses), requirements = sqlc.arg(requirements), updated_at = sqlc.arg(now), version = version + 1
WHERE version = sqlc.arg(version) AND id = sqlc.arg(id);

-- name: DeleteInstance :execrows
DELETE FROM instances WHERE id = sqlc.arg(id) AND version = sqlc.arg(version);

-- name: InstanceVersion :one
SELECT version FROM instances WHERE id = sqlc.arg(id);

-- name: CountInstances :one
-- A project's instances; '' counts every project's.
SELECT count(*) FROM instances WHERE CAST(sqlc.arg(project) AS TEXT) = '' OR project = sqlc.arg(project);
