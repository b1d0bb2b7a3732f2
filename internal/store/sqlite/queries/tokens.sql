-- API tokens. A token is found by the hash of its secret, never by the
-- secret.

-- name: InsertToken :exec
INSERT INTO tokens (id, name, role, project, hash, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?);

-- name: GetTokenByHash :one
SELECT * FROM tokens WHERE hash = ?;

-- name: GetToken :one
SELECT * FROM tokens WHERE id = ?;

-- name: ListTokens :many
SELECT * FROM tokens WHERE id > sqlc.arg(after) ORDER BY id LIMIT sqlc.arg(page_limit);

-- name: DeleteToken :execrows
DELETE FROM tokens WHERE id = ?;

-- name: CountTokens :one
SELECT count(*) FROM tokens;
