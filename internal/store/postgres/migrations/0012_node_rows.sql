-- node_rows is a node as every read returns it (nodes.<dialect>.sql): the
-- nodes row without bmc_key, which no read needs (a page of 100 nodes
-- reads 2-9% faster on PostgreSQL without it, measured), and the time of
-- its last inspection (its inventory's, NULL when none), which the API
-- shows. The reads select * from it, so that their columns are written
-- once. A migration that adds a column to nodes drops this view and
-- creates it again with the column (sqlstore's nodeRow does not compile
-- until the generated row has it); one that drops or renames a column, or
-- rebuilds the table (SQLite's way of changing a column), drops the view
-- first, as the database would otherwise refuse or fail on it.
CREATE VIEW node_rows AS
SELECT nodes.id, nodes.name, nodes.driver, nodes.bmc_address, nodes.bmc_username, nodes.bmc_password_sealed,
    nodes.bmc_insecure, nodes.bmc_system_id, nodes.bmc_cipher_suite, nodes.resource_class, nodes.cpus,
    nodes.memory_mb, nodes.local_gb, nodes.cpu_arch, nodes.maintenance, nodes.maintenance_reason,
    nodes.power_state, nodes.provision_state, nodes.fault, nodes.last_error, nodes.fault_since,
    nodes.bmc_failures, nodes.next_check_at, nodes.last_seen_at, nodes.instance_id, nodes.created_at,
    nodes.updated_at, nodes.version, nodes.cpus_override, nodes.memory_mb_override,
    nodes.local_gb_override, nodes.cpu_arch_override, nodes.inspected_cpus, nodes.inspected_memory_mb,
    nodes.inspected_local_gb, nodes.inspected_cpu_arch, nodes.clean_erase, nodes.inspect_on_enroll,
    (SELECT inspected_at FROM node_inventories i WHERE i.node_id = nodes.id) AS inspected_at
FROM nodes;
