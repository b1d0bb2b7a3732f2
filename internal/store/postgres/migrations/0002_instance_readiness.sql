-- Readiness callback: the ready token sealed for the config drive, how
-- long the booted OS has to call back (0 = no callback awaited), and when
-- power-on was observed (the deadline counts from there).
ALTER TABLE instances ADD COLUMN ready_token_sealed text NOT NULL DEFAULT '';
ALTER TABLE instances ADD COLUMN deploy_timeout_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE instances ADD COLUMN booted_at timestamptz;
