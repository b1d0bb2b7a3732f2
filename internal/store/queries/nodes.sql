-- Nodes: the queries written once for both dialects (sqlc.yaml reads this
-- directory for each). Their reads are in each dialect's
-- nodes.<dialect>.sql, where the SQL differs.

-- name: CountNodes :many
SELECT provision_state, fault, maintenance, count(*) AS count
FROM nodes
GROUP BY provision_state, fault, maintenance;

-- name: InsertNode :execrows
-- The node writes (InsertNode, UpdateNode) take the same parameters in
-- the same order: every column, bmc_key, now (the time of the write),
-- the version the write replaces (0 for a new node) and the id.
INSERT INTO nodes (
    name, driver, bmc_address, bmc_username, bmc_password_sealed, bmc_insecure, bmc_system_id,
    bmc_cipher_suite, resource_class, cpus, memory_mb, local_gb, cpu_arch, maintenance,
    maintenance_reason, power_state, provision_state, fault, last_error, fault_since, bmc_failures,
    next_check_at, last_seen_at, instance_id, cpus_override, memory_mb_override, local_gb_override,
    cpu_arch_override, inspected_cpus, inspected_memory_mb, inspected_local_gb, inspected_cpu_arch,
    clean_erase, inspect_on_enroll, flow, traits, derived_traits, owner, hardware_settings, hardware_observed, health, bmc_key, created_at, updated_at, version, id
) VALUES (
    sqlc.arg(name), sqlc.arg(driver), sqlc.arg(bmc_address), sqlc.arg(bmc_username),
    sqlc.arg(bmc_password_sealed), sqlc.arg(bmc_insecure), sqlc.arg(bmc_system_id),
    sqlc.arg(bmc_cipher_suite), sqlc.arg(resource_class), sqlc.arg(cpus), sqlc.arg(memory_mb),
    sqlc.arg(local_gb), sqlc.arg(cpu_arch), sqlc.arg(maintenance), sqlc.arg(maintenance_reason),
    sqlc.arg(power_state), sqlc.arg(provision_state), sqlc.arg(fault), sqlc.arg(last_error),
    sqlc.narg(fault_since), sqlc.arg(bmc_failures), sqlc.narg(next_check_at),
    sqlc.narg(last_seen_at), sqlc.arg(instance_id), sqlc.arg(cpus_override),
    sqlc.arg(memory_mb_override), sqlc.arg(local_gb_override), sqlc.arg(cpu_arch_override),
    sqlc.arg(inspected_cpus), sqlc.arg(inspected_memory_mb), sqlc.arg(inspected_local_gb),
    sqlc.arg(inspected_cpu_arch), sqlc.arg(clean_erase), sqlc.narg(inspect_on_enroll),
    sqlc.arg(flow), sqlc.arg(traits), sqlc.arg(derived_traits), sqlc.arg(owner),
    sqlc.arg(hardware_settings), sqlc.arg(hardware_observed), sqlc.arg(health), sqlc.narg(bmc_key), sqlc.arg(now), sqlc.arg(now), CAST(sqlc.arg(version) AS BIGINT) + 1,
    sqlc.arg(id)
);

-- name: UpdateNode :execrows
-- Writes every column if the stored version is the given one. bmc_key
-- stays NULL while the BMC settings stay as they are: a duplicate left by
-- an old database (store.BackfillBMCKeys) must stay writable by the power
-- sync; moving it to another endpoint claims that endpoint's key.
UPDATE nodes SET
    name = sqlc.arg(name), driver = sqlc.arg(driver), bmc_address = sqlc.arg(bmc_address),
    bmc_username = sqlc.arg(bmc_username), bmc_password_sealed = sqlc.arg(bmc_password_sealed),
    bmc_insecure = sqlc.arg(bmc_insecure), bmc_system_id = sqlc.arg(bmc_system_id),
    bmc_cipher_suite = sqlc.arg(bmc_cipher_suite), resource_class = sqlc.arg(resource_class),
    cpus = sqlc.arg(cpus), memory_mb = sqlc.arg(memory_mb), local_gb = sqlc.arg(local_gb),
    cpu_arch = sqlc.arg(cpu_arch), maintenance = sqlc.arg(maintenance),
    maintenance_reason = sqlc.arg(maintenance_reason), power_state = sqlc.arg(power_state),
    provision_state = sqlc.arg(provision_state), fault = sqlc.arg(fault),
    last_error = sqlc.arg(last_error), fault_since = sqlc.narg(fault_since),
    bmc_failures = sqlc.arg(bmc_failures), next_check_at = sqlc.narg(next_check_at),
    last_seen_at = sqlc.narg(last_seen_at), instance_id = sqlc.arg(instance_id),
    cpus_override = sqlc.arg(cpus_override), memory_mb_override = sqlc.arg(memory_mb_override),
    local_gb_override = sqlc.arg(local_gb_override),
    cpu_arch_override = sqlc.arg(cpu_arch_override), inspected_cpus = sqlc.arg(inspected_cpus),
    inspected_memory_mb = sqlc.arg(inspected_memory_mb),
    inspected_local_gb = sqlc.arg(inspected_local_gb),
    inspected_cpu_arch = sqlc.arg(inspected_cpu_arch), clean_erase = sqlc.arg(clean_erase),
    inspect_on_enroll = sqlc.narg(inspect_on_enroll), flow = sqlc.arg(flow),
    traits = sqlc.arg(traits), derived_traits = sqlc.arg(derived_traits), owner = sqlc.arg(owner),
    hardware_settings = sqlc.arg(hardware_settings), hardware_observed = sqlc.arg(hardware_observed),
    health = sqlc.arg(health),
    bmc_key = CASE
        WHEN bmc_key IS NULL AND driver = sqlc.arg(driver) AND bmc_address = sqlc.arg(bmc_address)
            AND bmc_system_id = sqlc.arg(bmc_system_id) THEN NULL
        ELSE CAST(sqlc.narg(bmc_key) AS TEXT)
    END,
    updated_at = sqlc.arg(now), version = version + 1
WHERE version = sqlc.arg(version) AND id = sqlc.arg(id);

-- name: DeleteNode :execrows
-- Its events, agent session and inventory go by ON DELETE CASCADE.
DELETE FROM nodes WHERE id = sqlc.arg(id) AND version = sqlc.arg(version);

-- name: NodeVersion :one
SELECT version FROM nodes WHERE id = sqlc.arg(id);

-- name: NodeByBMCKey :one
-- The node holding a BMC endpoint, to name it in a conflict.
SELECT id, name, bmc_address, bmc_system_id, provision_state FROM nodes WHERE bmc_key = sqlc.narg(bmc_key);

-- name: NodesOnBMCEndpoint :many
-- The nodes on one BMC (baremetal.BMCEndpointKey), oldest first: their
-- bmc_key is the endpoint's key or it followed by "/" and a system path,
-- which is the range [endpoint, past) when past is the endpoint's key
-- followed by "0" (the byte after "/"). Both databases compare bmc_key
-- byte by byte (SQLite's BINARY collation, PostgreSQL's COLLATE "C"), so
-- the range holds those keys alone and is read off the unique index.
SELECT id, name, bmc_address, bmc_system_id, provision_state FROM nodes
WHERE bmc_key >= sqlc.arg(endpoint) AND bmc_key < sqlc.arg(past)
ORDER BY created_at, id;

-- name: NodesByBMCKeys :many
-- The nodes holding any of three BMC keys (NULL: none), oldest first, as
-- NodesOnBMCEndpoint orders them: the few keys a machine's node may hold,
-- each a lookup in the unique index, instead of every node on its BMC.
SELECT id, name, bmc_address, bmc_system_id, provision_state FROM nodes
WHERE bmc_key IN (sqlc.narg(key1), sqlc.narg(key2), sqlc.narg(key3))
ORDER BY created_at, id;

-- name: UnkeyedNodes :many
-- The nodes that BackfillBMCKeys gives their key, oldest first.
SELECT id, name, driver, bmc_address, bmc_system_id FROM nodes WHERE bmc_key IS NULL ORDER BY created_at, id;

-- name: SetNodeBMCKey :exec
UPDATE nodes SET bmc_key = sqlc.narg(bmc_key) WHERE id = sqlc.arg(id);
