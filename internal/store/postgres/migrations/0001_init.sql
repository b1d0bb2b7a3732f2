-- Initial schema; mirrors the SQLite one. Ids are COLLATE "C" so that
-- ORDER BY id and the "id > cursor" pagination compare bytes, exactly as
-- SQLite does, whatever the database's default collation. Timestamps are
-- timestamptz (microseconds, the precision both stores keep).

CREATE TABLE nodes (
    id                  text COLLATE "C" NOT NULL,
    name                text        NOT NULL,
    driver              text        NOT NULL,
    bmc_address         text        NOT NULL DEFAULT '',
    bmc_username        text        NOT NULL DEFAULT '',
    -- secret.Box output ("v1:..."), or '' when no password is set.
    bmc_password_sealed text        NOT NULL DEFAULT '',
    bmc_insecure        boolean     NOT NULL DEFAULT false,
    bmc_system_id       text        NOT NULL DEFAULT '',
    bmc_cipher_suite    integer     NOT NULL DEFAULT 0,
    resource_class      text        NOT NULL DEFAULT '',
    cpus                integer     NOT NULL DEFAULT 0,
    memory_mb           integer     NOT NULL DEFAULT 0,
    local_gb            integer     NOT NULL DEFAULT 0,
    cpu_arch            text        NOT NULL DEFAULT '',
    maintenance         boolean     NOT NULL DEFAULT false,
    maintenance_reason  text        NOT NULL DEFAULT '',
    power_state         text        NOT NULL DEFAULT '',
    provision_state     text        NOT NULL,
    fault               text        NOT NULL DEFAULT '',
    last_error          text        NOT NULL DEFAULT '',
    fault_since         timestamptz,
    bmc_failures        integer     NOT NULL DEFAULT 0,
    next_check_at       timestamptz,
    last_seen_at        timestamptz,
    instance_id         text        NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    version             bigint      NOT NULL,
    CONSTRAINT nodes_pkey PRIMARY KEY (id),
    CONSTRAINT nodes_name_key UNIQUE (name)
);

-- Events go with their node (ON DELETE CASCADE); the index serves both
-- the per-node listing and the cascade.
CREATE TABLE events (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    node_id text COLLATE "C" NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    time    timestamptz NOT NULL,
    actor   text NOT NULL DEFAULT '',
    type    text NOT NULL DEFAULT '',
    field   text NOT NULL DEFAULT '',
    old     text NOT NULL DEFAULT '',
    new     text NOT NULL DEFAULT '',
    message text NOT NULL DEFAULT ''
);
CREATE INDEX events_node_id_id ON events (node_id, id);

CREATE TABLE instances (
    id               text COLLATE "C" NOT NULL,
    name             text        NOT NULL,
    project          text        NOT NULL,
    -- No foreign key: an instance may wait for a node, and a node's
    -- cleanup outlives its deleted instance.
    node_id          text COLLATE "C" NOT NULL DEFAULT '',
    resource_class   text        NOT NULL DEFAULT '',
    image_url        text        NOT NULL DEFAULT '',
    image_checksum   text        NOT NULL DEFAULT '',
    user_data        text        NOT NULL DEFAULT '',
    metadata         jsonb       NOT NULL DEFAULT '{}',
    state            text        NOT NULL,
    power_state      text        NOT NULL DEFAULT '',
    last_error       text        NOT NULL DEFAULT '',
    ready_token_hash text        NOT NULL DEFAULT '',
    ready            boolean     NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    version          bigint      NOT NULL,
    CONSTRAINT instances_pkey PRIMARY KEY (id),
    CONSTRAINT instances_project_name_key UNIQUE (project, name)
);
CREATE INDEX instances_node_id ON instances (node_id);
CREATE INDEX instances_name ON instances (name);

CREATE TABLE tokens (
    id         text COLLATE "C" NOT NULL,
    name       text        NOT NULL DEFAULT '',
    role       text        NOT NULL,
    project    text        NOT NULL DEFAULT '',
    hash       text        NOT NULL,
    expires_at timestamptz,
    created_at timestamptz NOT NULL,
    CONSTRAINT tokens_pkey PRIMARY KEY (id),
    CONSTRAINT tokens_hash_key UNIQUE (hash)
);
-- Names are optional; only given names must be unique.
CREATE UNIQUE INDEX tokens_name_key ON tokens (name) WHERE name <> '';

CREATE TABLE quotas (
    project   text    NOT NULL PRIMARY KEY,
    instances integer NOT NULL
);
