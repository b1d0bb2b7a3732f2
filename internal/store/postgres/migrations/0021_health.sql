-- Hardware health (issue 31): what the controller last read of a node's
-- hardware health from its BMC (baremetal.Health as JSON, '' for never).
-- The view node_rows is created again with the column (see 0012).
ALTER TABLE nodes ADD COLUMN health text NOT NULL DEFAULT '';
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
    nodes.flow, nodes.traits, nodes.derived_traits, nodes.owner, nodes.hardware_settings, nodes.hardware_observed,
    nodes.health,
    (SELECT inspected_at FROM node_inventories i WHERE i.node_id = nodes.id) AS inspected_at
FROM nodes;
