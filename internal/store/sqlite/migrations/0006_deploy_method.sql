-- How an instance's image reaches its node: "live" (the BMC boots it from
-- virtual media, what every instance before this migration did) or
-- "image" (the deploy agent writes it to the root disk chosen by the
-- root_device hints, a JSON object).
ALTER TABLE instances ADD COLUMN deploy_method TEXT NOT NULL DEFAULT 'live';
ALTER TABLE instances ADD COLUMN root_device TEXT NOT NULL DEFAULT '{}';
