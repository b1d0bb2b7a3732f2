-- Which of a node's properties the operator set (an override per
-- property: inspection never changes those), and what inspection last
-- found for each (the deploy agent, or the BMC's inventory at verify),
-- kept under an override so that clearing it brings the value back.
--
-- Before this migration the two were not told apart: inspection filled
-- only empty properties, so every property already set is taken as the
-- operator's, which it never overwrote, and as the best known inspected
-- value, so that clearing the override keeps it until the next
-- inspection.
ALTER TABLE nodes ADD COLUMN cpus_override INTEGER NOT NULL DEFAULT 0 CHECK (cpus_override IN (0, 1));
ALTER TABLE nodes ADD COLUMN memory_mb_override INTEGER NOT NULL DEFAULT 0 CHECK (memory_mb_override IN (0, 1));
ALTER TABLE nodes ADD COLUMN local_gb_override INTEGER NOT NULL DEFAULT 0 CHECK (local_gb_override IN (0, 1));
ALTER TABLE nodes ADD COLUMN cpu_arch_override INTEGER NOT NULL DEFAULT 0 CHECK (cpu_arch_override IN (0, 1));
ALTER TABLE nodes ADD COLUMN inspected_cpus INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN inspected_memory_mb INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN inspected_local_gb INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN inspected_cpu_arch TEXT NOT NULL DEFAULT '';
UPDATE nodes SET
    cpus_override = cpus <> 0, memory_mb_override = memory_mb <> 0,
    local_gb_override = local_gb <> 0, cpu_arch_override = cpu_arch <> '',
    inspected_cpus = cpus, inspected_memory_mb = memory_mb,
    inspected_local_gb = local_gb, inspected_cpu_arch = cpu_arch;
