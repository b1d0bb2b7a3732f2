-- Address pools (issue 28): subnets whose addresses instances get one at
-- a time. A pool's ranges, DNS servers and search domains are JSON arrays
-- of strings ('[]' for none); gateway '' is none.
CREATE TABLE ip_pools (
    id             TEXT    NOT NULL PRIMARY KEY,
    name           TEXT    NOT NULL,
    cidr           TEXT    NOT NULL,
    gateway        TEXT    NOT NULL DEFAULT '',
    ranges         TEXT    NOT NULL DEFAULT '[]',
    dns_servers    TEXT    NOT NULL DEFAULT '[]',
    search_domains TEXT    NOT NULL DEFAULT '[]',
    description    TEXT    NOT NULL DEFAULT '',
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL,
    version        INTEGER NOT NULL,
    CONSTRAINT ip_pools_name_key UNIQUE (name)
) STRICT;

-- An address held for an instance on a node. ord is the address's offset
-- in its pool's subnet with the top bit flipped (sqlstore.AddressOrd), so
-- that offsets up to 2^64-1 (an IPv6 /64) sort as signed integers do: the
-- lowest free address is found by walking the (pool_id, ord) index, and
-- ord + 1 is the next address. instance_id is NULL once the instance is
-- deleted while its node, still cleaning, holds the address; node_id is
-- NULL for an address taken before the instance had a node. No foreign
-- key on either: a node's cleanup outlives its instance, and a deleted
-- node's addresses are freed by the retire that deletes it. The pool's
-- foreign key has no cascade: a pool with allocations is not deleted.
CREATE TABLE ip_allocations (
    pool_id     TEXT    NOT NULL REFERENCES ip_pools (id),
    address     TEXT    NOT NULL,
    ord         INTEGER NOT NULL,
    instance_id TEXT,
    node_id     TEXT,
    created_at  TEXT    NOT NULL,
    CONSTRAINT ip_allocations_pool_id_address_key UNIQUE (pool_id, address),
    CONSTRAINT ip_allocations_pool_id_ord_key UNIQUE (pool_id, ord)
) STRICT;
CREATE INDEX ip_allocations_instance_id ON ip_allocations (instance_id) WHERE instance_id IS NOT NULL;
CREATE INDEX ip_allocations_node_id ON ip_allocations (node_id) WHERE node_id IS NOT NULL;
