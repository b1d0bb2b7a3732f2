-- API tokens. A token is found by the hash of its secret, never by the
-- secret.

-- name: InsertToken :exec
INSERT INTO tokens (id, name, role, project, hash, expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: GetTokenByHash :one
SELECT * FROM tokens WHERE hash = $1;

-- name: GetToken :one
SELECT * FROM tokens WHERE id = $1;

-- name: ListTokens :many
SELECT * FROM tokens WHERE id > sqlc.arg(after) ORDER BY id LIMIT sqlc.arg(page_limit)::bigint;

-- name: DeleteToken :execrows
DELETE FROM tokens WHERE id = $1;

-- name: CountTokens :one
SELECT count(*) FROM tokens;
