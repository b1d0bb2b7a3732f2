-- Creates carried out under a client's Idempotency-Key, per token.

-- name: ExpireIdempotencyKeys :exec
DELETE FROM idempotency_keys WHERE created_at < sqlc.arg(before);

-- name: InsertIdempotencyKey :exec
INSERT INTO idempotency_keys (token_id, key, kind, request_hash, resource_id, created_at)
VALUES (?, ?, ?, ?, ?, ?);

-- name: GetIdempotencyKey :one
SELECT * FROM idempotency_keys WHERE token_id = ? AND key = ? AND created_at >= sqlc.arg(since);
