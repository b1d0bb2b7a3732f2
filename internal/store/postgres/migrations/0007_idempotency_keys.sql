-- Creates carried out under a client's Idempotency-Key (POST /v1/nodes,
-- POST /v1/instances), per token: a retried create whose first answer was
-- lost gets the object made the first time. Kept for a day.
CREATE TABLE idempotency_keys (
    token_id     text NOT NULL,
    key          text NOT NULL,
    kind         text NOT NULL,
    request_hash text NOT NULL,
    resource_id  text NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (token_id, key)
);
