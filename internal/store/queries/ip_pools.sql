-- Address pools and their allocations (migration 0015): the queries both
-- dialects run as written. The reads by id or name, one of them locking,
-- are in each dialect's ip_pools.<dialect>.sql.

-- name: InsertIPPool :exec
-- The pool writes take the same parameters in the same order: the
-- columns, now (the time of the write), the version the write replaces
-- (0 for a new pool) and the id.
INSERT INTO ip_pools (
    name, cidr, gateway, ranges, dns_servers, search_domains, description,
    created_at, updated_at, version, id
) VALUES (
    sqlc.arg(name), sqlc.arg(cidr), sqlc.arg(gateway), sqlc.arg(ranges), sqlc.arg(dns_servers),
    sqlc.arg(search_domains), sqlc.arg(description), sqlc.arg(now), sqlc.arg(now),
    CAST(sqlc.arg(version) AS BIGINT) + 1, sqlc.arg(id)
);

-- name: UpdateIPPool :execrows
-- Writes every settable column if the stored version is the given one.
UPDATE ip_pools SET
    name = sqlc.arg(name), cidr = sqlc.arg(cidr), gateway = sqlc.arg(gateway), ranges = sqlc.arg(ranges),
    dns_servers = sqlc.arg(dns_servers), search_domains = sqlc.arg(search_domains),
    description = sqlc.arg(description), updated_at = sqlc.arg(now), version = version + 1
WHERE version = sqlc.arg(version) AND id = sqlc.arg(id);

-- name: DeleteIPPool :execrows
DELETE FROM ip_pools WHERE id = sqlc.arg(id) AND version = sqlc.arg(version);

-- name: IPPoolVersion :one
SELECT version FROM ip_pools WHERE id = sqlc.arg(id);

-- name: ListIPPools :many
SELECT * FROM ip_pools WHERE id > sqlc.arg(after) ORDER BY id LIMIT CAST(sqlc.arg(page_limit) AS BIGINT);

-- name: CountIPAllocations :one
SELECT count(*) FROM ip_allocations WHERE pool_id = sqlc.arg(pool_id);

-- name: CountIPAllocationsBetween :one
-- How many of a pool's addresses from lo to hi are held: an index-only
-- count of the (pool_id, ord) range, which the search for the lowest
-- free address halves until it finds it (sqlstore.firstFree).
SELECT count(*) FROM ip_allocations WHERE pool_id = sqlc.arg(pool_id) AND ord >= sqlc.arg(lo) AND ord <= sqlc.arg(hi);

-- name: InsertIPAllocation :exec
INSERT INTO ip_allocations (pool_id, address, ord, instance_id, node_id, created_at)
VALUES (sqlc.arg(pool_id), sqlc.arg(address), sqlc.arg(ord), sqlc.narg(instance_id), sqlc.narg(node_id), sqlc.arg(created_at));

-- name: DeleteUnheldInstanceAddresses :execrows
-- An instance's addresses that no node holds: nothing booted with them.
DELETE FROM ip_allocations WHERE instance_id = CAST(sqlc.arg(instance_id) AS TEXT) AND node_id IS NULL;

-- name: ReleaseInstanceAddresses :execrows
-- The instance is gone; its node keeps holding the addresses until its
-- cleanup is done (FreeNodeAddresses).
UPDATE ip_allocations SET instance_id = NULL WHERE instance_id = CAST(sqlc.arg(instance_id) AS TEXT);

-- name: FreeInstanceAddress :execrows
-- One address of an instance that no machine can be running with (its
-- node is gone, or never booted it).
DELETE FROM ip_allocations
WHERE instance_id = CAST(sqlc.arg(instance_id) AS TEXT) AND pool_id = sqlc.arg(pool_id) AND address = sqlc.arg(address);

-- name: ReleaseInstanceAddress :execrows
-- One address of a live instance that its rebuilt network no longer asks
-- for: its node holds it until the rebuilt OS boots.
UPDATE ip_allocations SET instance_id = NULL
WHERE instance_id = CAST(sqlc.arg(instance_id) AS TEXT) AND pool_id = sqlc.arg(pool_id) AND address = sqlc.arg(address);

-- name: FreeNodeAddresses :execrows
DELETE FROM ip_allocations WHERE node_id = CAST(sqlc.arg(node_id) AS TEXT) AND instance_id IS NULL;

-- name: ListIPAllocationsByPool :many
-- From from_ord on (the smallest int64 for the first page: the ord of
-- offset 0, allocatable in a /31 or /32).
SELECT * FROM ip_allocations
WHERE pool_id = sqlc.arg(pool_id) AND ord >= sqlc.arg(from_ord)
ORDER BY ord
LIMIT CAST(sqlc.arg(page_limit) AS BIGINT);

-- name: ListIPAllocationsByInstance :many
SELECT * FROM ip_allocations WHERE instance_id = CAST(sqlc.arg(instance_id) AS TEXT) ORDER BY pool_id, ord;

-- name: ListIPAllocationsByNode :many
SELECT * FROM ip_allocations WHERE node_id = CAST(sqlc.arg(node_id) AS TEXT) ORDER BY pool_id, ord;

-- name: IPAllocationsBetween :many
-- A pool's held addresses from lo to hi, in order, at most page_limit:
-- those a change of the pool's ranges or gateway would leave out.
SELECT * FROM ip_allocations
WHERE pool_id = sqlc.arg(pool_id) AND ord >= sqlc.arg(lo) AND ord <= sqlc.arg(hi)
ORDER BY ord
LIMIT CAST(sqlc.arg(page_limit) AS BIGINT);
