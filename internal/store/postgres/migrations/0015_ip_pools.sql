-- Address pools (issue 28); mirrors the SQLite migration, whose comments
-- say what each column holds.
CREATE TABLE ip_pools (
    id             text COLLATE "C" NOT NULL,
    name           text        NOT NULL,
    cidr           text        NOT NULL,
    gateway        text        NOT NULL DEFAULT '',
    ranges         text        NOT NULL DEFAULT '[]',
    dns_servers    text        NOT NULL DEFAULT '[]',
    search_domains text        NOT NULL DEFAULT '[]',
    description    text        NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    version        bigint      NOT NULL,
    CONSTRAINT ip_pools_pkey PRIMARY KEY (id),
    CONSTRAINT ip_pools_name_key UNIQUE (name)
);

CREATE TABLE ip_allocations (
    pool_id     text COLLATE "C" NOT NULL REFERENCES ip_pools (id),
    address     text        NOT NULL,
    ord         bigint      NOT NULL,
    instance_id text COLLATE "C",
    node_id     text COLLATE "C",
    created_at  timestamptz NOT NULL,
    CONSTRAINT ip_allocations_pool_id_address_key UNIQUE (pool_id, address),
    CONSTRAINT ip_allocations_pool_id_ord_key UNIQUE (pool_id, ord)
);
CREATE INDEX ip_allocations_instance_id ON ip_allocations (instance_id) WHERE instance_id IS NOT NULL;
CREATE INDEX ip_allocations_node_id ON ip_allocations (node_id) WHERE node_id IS NOT NULL;
