-- Address pools: PostgreSQL's reads by id or name (the rest is in
-- ../../queries/ip_pools.sql).

-- name: GetIPPool :one
-- By id, or by name when no id matches.
SELECT * FROM ip_pools
WHERE id = sqlc.arg(id_or_name) OR name = sqlc.arg(id_or_name)
ORDER BY id = sqlc.arg(id_or_name) DESC
LIMIT 1;

-- name: GetIPPoolForUpdate :one
-- GetIPPool, locking the pool's row until the transaction ends: every
-- change of a pool's allocations (AllocateAddress) and of its ranges
-- (UpdateIPPool) or existence (DeleteIPPool) takes this lock first, so
-- they run one after another per pool, across connections and replicas,
-- and each reads the allocations the one before committed (READ
-- COMMITTED: a statement after the lock wait sees them).
SELECT * FROM ip_pools
WHERE id = sqlc.arg(id_or_name) OR name = sqlc.arg(id_or_name)
ORDER BY id = sqlc.arg(id_or_name) DESC
LIMIT 1
FOR UPDATE;
