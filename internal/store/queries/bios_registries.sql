-- BIOS attribute registries, one per name (see migration 0020).

-- name: GetBIOSRegistry :one
SELECT data FROM bios_registries WHERE name = sqlc.arg(name);

-- name: PutBIOSRegistry :exec
-- A registry's name changes with its content (the BIOS version is in
-- it), so one already stored is the same: the insert keeps it.
INSERT INTO bios_registries (name, data) VALUES (sqlc.arg(name), sqlc.arg(data))
ON CONFLICT (name) DO UPDATE SET data = excluded.data;
