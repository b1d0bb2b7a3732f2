-- Placement (issue 29): a node's traits, the operator's (traits) and
-- those the controller derives from inspection and the BMC
-- (derived_traits), each comma-joined and sorted ('' for none; a trait
-- holds no comma), so the claim query matches a trait with one string
-- search, without parsing JSON per row; and the project that owns the
-- node ('' for none). An instance's requirements (baremetal.Requirements
-- as JSON, '' for none) are kept so that the API shows what placed it.
-- The view node_rows is created again with the columns (see 0012).
ALTER TABLE nodes ADD COLUMN traits text NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN derived_traits text NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN owner text NOT NULL DEFAULT '';
ALTER TABLE instances ADD COLUMN requirements text NOT NULL DEFAULT '';
DROP VIEW node_rows;
CREATE VIEW node_rows AS
SELECT nodes.id, nodes.name, nodes.driver, nodes.bmc_address, nodes.bmc_username, nodes.bmc_password_sealed,
    nodes.bmc_insecure, nodes.bmc_system_id, nodes.bmc_cipher_suite, nodes.resource_class, nodes.cpus,
    nodes.memory_mb, nodes.local_gb, nodes.cpu_arch, nodes.maintenance, nodes.maintenance_reason,
    nodes.power_state, nodes.provision_state, nodes.fault, nodes.last_error, nodes.fault_since,
    nodes.bmc_failures, nodes.next_check_at, nodes.last_seen_at, nodes.instance_id, nodes.created_at,
    nodes.updated_at, nodes.version, nodes.cpus_override, nodes.memory_mb_override,
    nodes.local_gb_override, nodes.cpu_arch_override, nodes.inspected_cpus, nodes.inspected_memory_mb,
    nodes.inspected_local_gb, nodes.inspected_cpu_arch, nodes.clean_erase, nodes.inspect_on_enroll,
    nodes.flow, nodes.traits, nodes.derived_traits, nodes.owner,
    (SELECT inspected_at FROM node_inventories i WHERE i.node_id = nodes.id) AS inspected_at
FROM nodes;
-- The free nodes, in best-fit order: a claim reads only these, however
-- many nodes are busy, and reads them in its ORDER BY's order (the same
-- expressions, owned nodes first), so that its LIMIT 1 stops at the
-- first node that fits instead of sorting every free node that does: on
-- 10,000 free nodes, 2 ms instead of 25-40 ms a claim, on both stores.
CREATE INDEX nodes_free ON nodes ((owner = ''), (memory_mb = 0), memory_mb, cpus, local_gb, id)
WHERE provision_state = 'available' AND instance_id = '' AND NOT maintenance AND fault = '';
