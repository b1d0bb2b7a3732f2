-- One physical server, one node: bmc_key is the node's normalized BMC
-- endpoint (baremetal.BMCKey: host, port, Redfish system path), unique
-- across nodes. The controller computes it in Go and fills it for the rows
-- that predate this migration when it opens the database (Migrate then
-- backfillBMCKeys). NULL means "not claimed": unique indexes let any number
-- of NULLs through, so a database that already holds two nodes on one
-- endpoint migrates; the later node keeps NULL and a warning is logged at
-- every start until one of them is deleted or moved.
ALTER TABLE nodes ADD COLUMN bmc_key text COLLATE "C";
CREATE UNIQUE INDEX nodes_bmc_key_key ON nodes (bmc_key);
