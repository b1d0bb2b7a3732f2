-- The addresses an instance's network gives its OS (baremetal.
-- InstanceAddress list as JSON, '' for none): its static ones and those
-- allocated from IP pools (ip_allocations holds those).
ALTER TABLE instances ADD COLUMN addresses text NOT NULL DEFAULT '';
