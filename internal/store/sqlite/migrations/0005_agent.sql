-- The deploy agent: one session per node while the controller has the
-- agent booted on it (its per-boot token sealed like BMC passwords, the
-- command handed out and the agent's last report), and the node's
-- inventory as the agent last reported it. Both go with their node.
CREATE TABLE agent_sessions (
    node_id       TEXT    NOT NULL PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
    purpose       TEXT    NOT NULL,
    token_sealed  TEXT    NOT NULL,
    token_hash    TEXT    NOT NULL UNIQUE,
    command       TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL DEFAULT '',
    inventory     TEXT    NOT NULL DEFAULT '',
    boot_id       TEXT    NOT NULL DEFAULT '',
    last_seen_at  TEXT,
    created_at    TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL,
    version       INTEGER NOT NULL
) STRICT;

CREATE TABLE node_inventories (
    node_id      TEXT NOT NULL PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
    data         TEXT NOT NULL,
    inspected_at TEXT NOT NULL
) STRICT;
