-- Per-project instance quotas; a project without a row has none.

-- name: GetQuota :one
SELECT instances FROM quotas WHERE project = sqlc.arg(project);

-- name: SetQuota :exec
INSERT INTO quotas (project, instances) VALUES (sqlc.arg(project), sqlc.arg(instances))
ON CONFLICT (project) DO UPDATE SET instances = excluded.instances;
