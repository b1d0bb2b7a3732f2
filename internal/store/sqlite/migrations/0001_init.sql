-- Initial schema. Timestamps are TEXT in the fixed-width UTC form
-- 2006-01-02T15:04:05.000000Z, so they sort and compare as strings
-- (next_check_at <= ?) and read back exactly. Booleans are 0/1.
-- STRICT makes SQLite reject a value of the wrong type instead of
-- silently storing it.

CREATE TABLE nodes (
    id                  TEXT    NOT NULL PRIMARY KEY,
    name                TEXT    NOT NULL,
    driver              TEXT    NOT NULL,
    bmc_address         TEXT    NOT NULL DEFAULT '',
    bmc_username        TEXT    NOT NULL DEFAULT '',
    -- secret.Box output ("v1:..."), or '' when no password is set.
    bmc_password_sealed TEXT    NOT NULL DEFAULT '',
    bmc_insecure        INTEGER NOT NULL DEFAULT 0,
    bmc_system_id       TEXT    NOT NULL DEFAULT '',
    bmc_cipher_suite    INTEGER NOT NULL DEFAULT 0,
    resource_class      TEXT    NOT NULL DEFAULT '',
    cpus                INTEGER NOT NULL DEFAULT 0,
    memory_mb           INTEGER NOT NULL DEFAULT 0,
    local_gb            INTEGER NOT NULL DEFAULT 0,
    cpu_arch            TEXT    NOT NULL DEFAULT '',
    maintenance         INTEGER NOT NULL DEFAULT 0,
    maintenance_reason  TEXT    NOT NULL DEFAULT '',
    power_state         TEXT    NOT NULL DEFAULT '',
    provision_state     TEXT    NOT NULL,
    fault               TEXT    NOT NULL DEFAULT '',
    last_error          TEXT    NOT NULL DEFAULT '',
    fault_since         TEXT,
    bmc_failures        INTEGER NOT NULL DEFAULT 0,
    next_check_at       TEXT,
    last_seen_at        TEXT,
    instance_id         TEXT    NOT NULL DEFAULT '',
    created_at          TEXT    NOT NULL,
    updated_at          TEXT    NOT NULL,
    version             INTEGER NOT NULL,
    CONSTRAINT nodes_name_key UNIQUE (name)
) STRICT;

-- Events go with their node (ON DELETE CASCADE); the index serves both
-- the per-node listing and the cascade.
CREATE TABLE events (
    id      INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    node_id TEXT    NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    time    TEXT    NOT NULL,
    actor   TEXT    NOT NULL DEFAULT '',
    type    TEXT    NOT NULL DEFAULT '',
    field   TEXT    NOT NULL DEFAULT '',
    old     TEXT    NOT NULL DEFAULT '',
    new     TEXT    NOT NULL DEFAULT '',
    message TEXT    NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX events_node_id_id ON events (node_id, id);

CREATE TABLE instances (
    id               TEXT    NOT NULL PRIMARY KEY,
    name             TEXT    NOT NULL,
    project          TEXT    NOT NULL,
    -- No foreign key: an instance may wait for a node, and a node's
    -- cleanup outlives its deleted instance.
    node_id          TEXT    NOT NULL DEFAULT '',
    resource_class   TEXT    NOT NULL DEFAULT '',
    image_url        TEXT    NOT NULL DEFAULT '',
    image_checksum   TEXT    NOT NULL DEFAULT '',
    user_data        TEXT    NOT NULL DEFAULT '',
    metadata         TEXT    NOT NULL DEFAULT '{}', -- JSON object
    state            TEXT    NOT NULL,
    power_state      TEXT    NOT NULL DEFAULT '',
    last_error       TEXT    NOT NULL DEFAULT '',
    ready_token_hash TEXT    NOT NULL DEFAULT '',
    ready            INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL,
    version          INTEGER NOT NULL,
    CONSTRAINT instances_project_name_key UNIQUE (project, name)
) STRICT;
CREATE INDEX instances_node_id ON instances (node_id);
CREATE INDEX instances_name ON instances (name);

CREATE TABLE tokens (
    id         TEXT NOT NULL PRIMARY KEY,
    name       TEXT NOT NULL DEFAULT '',
    role       TEXT NOT NULL,
    project    TEXT NOT NULL DEFAULT '',
    hash       TEXT NOT NULL,
    expires_at TEXT,
    created_at TEXT NOT NULL,
    CONSTRAINT tokens_hash_key UNIQUE (hash)
) STRICT;
-- Names are optional; only given names must be unique.
CREATE UNIQUE INDEX tokens_name_key ON tokens (name) WHERE name <> '';

CREATE TABLE quotas (
    project   TEXT    NOT NULL PRIMARY KEY,
    instances INTEGER NOT NULL
) STRICT;
