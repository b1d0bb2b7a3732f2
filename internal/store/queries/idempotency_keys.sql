-- Creates carried out under a client's Idempotency-Key, per token.

-- name: ExpireIdempotencyKeys :exec
DELETE FROM idempotency_keys WHERE created_at < sqlc.arg(before);

-- name: InsertIdempotencyKey :exec
INSERT INTO idempotency_keys (token_id, key, kind, request_hash, resource_id, created_at)
VALUES (sqlc.arg(token_id), sqlc.arg(key), sqlc.arg(kind), sqlc.arg(request_hash), sqlc.arg(resource_id), sqlc.arg(created_at));

-- name: GetIdempotencyKey :one
SELECT * FROM idempotency_keys WHERE token_id = sqlc.arg(token_id) AND key = sqlc.arg(key) AND created_at >= sqlc.arg(since);
