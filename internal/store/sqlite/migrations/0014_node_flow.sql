-- A node's flow: the controller's work in progress on it (deploy,
-- cleanup, inspect, retire) as the flow's name, its declared steps, the
-- current step and when it started, and what earlier steps noted for
-- later ones, in one JSON object ('' when the node is in no flow). Only
-- the controller writes it, at each step's start; the API shows it. The
-- view node_rows is created again with the column (see 0012).
ALTER TABLE nodes ADD COLUMN flow text NOT NULL DEFAULT '';
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
    nodes.flow,
    (SELECT inspected_at FROM node_inventories i WHERE i.node_id = nodes.id) AS inspected_at
FROM nodes;
