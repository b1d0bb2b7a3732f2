-- Creates carried out under a client's Idempotency-Key (POST /v1/nodes,
-- POST /v1/instances), per token: a retried create whose first answer was
-- lost gets the object made the first time. Kept for a day.
CREATE TABLE idempotency_keys (
    token_id     TEXT NOT NULL,
    key          TEXT NOT NULL,
    kind         TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    resource_id  TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (token_id, key)
) STRICT;
