-- Hardware settings (issue 30): what the operator declares on a node
-- (baremetal.HardwareSettings as JSON, '' for none) and what the
-- controller last read of them from the BMC (baremetal.HardwareObserved
-- as JSON, '' for never). BIOS attribute registries are kept once per
-- registry name (nodes of one model and BIOS version share one, and a
-- registry is tens of KiB): baremetal.BIOSRegistry as JSON. The view
-- node_rows is created again with the columns (see 0012).
ALTER TABLE nodes ADD COLUMN hardware_settings text NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN hardware_observed text NOT NULL DEFAULT '';
CREATE TABLE bios_registries (
    name text PRIMARY KEY,
    data text NOT NULL
);
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
    (SELECT inspected_at FROM node_inventories i WHERE i.node_id = nodes.id) AS inspected_at
FROM nodes;
