-- Serial console (issue 31): the last lines each node's console printed
-- while the controller recorded it (booting the agent or an image), as
-- cleaned text bounded by the recorder, and which controller process
-- records it now (holder, until lease_until): one SOL session per BMC,
-- so one recorder per node among all replicas.
CREATE TABLE node_consoles (
    node_id     text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
    log         text        NOT NULL DEFAULT '',
    holder      text        NOT NULL DEFAULT '',
    lease_until timestamptz,
    updated_at  timestamptz NOT NULL
);
