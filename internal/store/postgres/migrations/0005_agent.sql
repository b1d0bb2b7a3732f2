-- The deploy agent: one session per node while the controller has the
-- agent booted on it (its per-boot token sealed like BMC passwords, the
-- command handed out and the agent's last report), and the node's
-- inventory as the agent last reported it. Both go with their node.
CREATE TABLE agent_sessions (
    node_id       text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
    purpose       text        NOT NULL,
    token_sealed  text        NOT NULL,
    token_hash    text        NOT NULL UNIQUE,
    command       text        NOT NULL DEFAULT '',
    status        text        NOT NULL DEFAULT '',
    inventory     text        NOT NULL DEFAULT '',
    boot_id       text        NOT NULL DEFAULT '',
    last_seen_at  timestamptz,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    version       bigint      NOT NULL
);

CREATE TABLE node_inventories (
    node_id      text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
    data         text        NOT NULL,
    inspected_at timestamptz NOT NULL
);
