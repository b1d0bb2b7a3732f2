-- API tokens. A token is found by the hash of its secret, never by the
-- secret.

-- name: InsertToken :exec
INSERT INTO tokens (id, name, role, project, hash, expires_at, created_at) VALUES (sqlc.arg(id), sqlc.arg(name), sqlc.arg(role), sqlc.arg(project), sqlc.arg(hash), sqlc.narg(expires_at), sqlc.arg(created_at));

-- name: GetTokenByHash :one
SELECT * FROM tokens WHERE hash = sqlc.arg(hash);

-- name: GetToken :one
SELECT * FROM tokens WHERE id = sqlc.arg(id);

-- name: ListTokens :many
SELECT * FROM tokens WHERE id > sqlc.arg(after) ORDER BY id LIMIT CAST(sqlc.arg(page_limit) AS BIGINT);

-- name: DeleteToken :execrows
DELETE FROM tokens WHERE id = sqlc.arg(id);

-- name: CountTokens :one
SELECT count(*) FROM tokens;
