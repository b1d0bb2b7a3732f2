-- Rebuilds in place: how many times the instance was rebuilt on its node
-- (0 for the first deploy). A rebuild's deploy differs from the first one:
-- failing on its image keeps the node, and its agent commands are named
-- by it.
ALTER TABLE instances ADD COLUMN rebuilds integer NOT NULL DEFAULT 0;
