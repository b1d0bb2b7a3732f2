-- Address pools: SQLite's reads by id or name (the rest is in
-- ../../queries/ip_pools.sql).

-- name: GetIPPool :one
-- By id, or by name when no id matches. (?1 is id_or_name: sqlc leaves a
-- sqlc.arg in ORDER BY as it is.)
SELECT * FROM ip_pools
WHERE id = sqlc.arg(id_or_name) OR name = sqlc.arg(id_or_name)
ORDER BY id = ?1 DESC
LIMIT 1;

-- name: GetIPPoolForUpdate :one
-- GetIPPool: a SQLite transaction holds the database's write lock from
-- BEGIN, so no other writer changes the pool or its allocations before
-- it ends (see the PostgreSQL one).
SELECT * FROM ip_pools
WHERE id = sqlc.arg(id_or_name) OR name = sqlc.arg(id_or_name)
ORDER BY id = ?1 DESC
LIMIT 1;
