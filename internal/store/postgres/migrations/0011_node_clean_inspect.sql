-- A node's own cleaning erase mode ('' = its resource class's, else the
-- controller's; or metadata, full, off) and its own choice of inspection
-- on enroll (NULL = the controller's --inspect-on-enroll). Every node
-- before this migration follows the controller, as it did.
ALTER TABLE nodes ADD COLUMN clean_erase text NOT NULL DEFAULT '' CHECK (clean_erase IN ('', 'metadata', 'full', 'off'));
ALTER TABLE nodes ADD COLUMN inspect_on_enroll boolean;
