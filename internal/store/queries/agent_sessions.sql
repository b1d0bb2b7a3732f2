-- The deploy agent's session on a node: at most one per node, replaced
-- by the next boot (whose new token makes the old one useless).

-- name: PutAgentSession :exec
-- A new boot's session starts unbound (agent_addr and refused empty).
INSERT INTO agent_sessions (
    node_id, purpose, token_sealed, token_hash, command, status, inventory, boot_id,
    last_seen_at, created_at, updated_at, version, netboot_ids, identity_ids, agent_addr, refused
) VALUES (
    sqlc.arg(node_id), sqlc.arg(purpose), sqlc.arg(token_sealed), sqlc.arg(token_hash), sqlc.arg(command),
    sqlc.arg(status), sqlc.arg(inventory), sqlc.arg(boot_id), sqlc.narg(last_seen_at), sqlc.arg(created_at),
    sqlc.arg(created_at), 1, sqlc.arg(netboot_ids), sqlc.arg(identity_ids), '', ''
)
ON CONFLICT (node_id) DO UPDATE SET
    purpose = excluded.purpose, token_sealed = excluded.token_sealed, token_hash = excluded.token_hash,
    command = excluded.command, status = excluded.status, inventory = excluded.inventory,
    boot_id = excluded.boot_id, last_seen_at = excluded.last_seen_at, created_at = excluded.created_at,
    updated_at = excluded.updated_at, version = 1, netboot_ids = excluded.netboot_ids,
    identity_ids = excluded.identity_ids, agent_addr = '', refused = '';

-- name: GetAgentSession :one
SELECT * FROM agent_sessions WHERE node_id = sqlc.arg(node_id);

-- name: GetAgentSessionByTokenHash :one
SELECT * FROM agent_sessions WHERE token_hash = sqlc.arg(token_hash);

-- name: FindAgentSessionsByNetbootID :many
-- netboot_ids is space-framed (" a b "): pattern is "% id %"
-- (store.NetbootIDPattern).
SELECT * FROM agent_sessions WHERE netboot_ids LIKE sqlc.arg(pattern);

-- name: UpdateAgentSession :execrows
UPDATE agent_sessions SET
    command = sqlc.arg(command), status = sqlc.arg(status), inventory = sqlc.arg(inventory), boot_id = sqlc.arg(boot_id), last_seen_at = sqlc.narg(last_seen_at), updated_at = sqlc.arg(updated_at),
    agent_addr = sqlc.arg(agent_addr), refused = sqlc.arg(refused), version = version + 1
WHERE node_id = sqlc.arg(node_id) AND version = sqlc.arg(version);

-- name: AgentSessionVersion :one
SELECT version FROM agent_sessions WHERE node_id = sqlc.arg(node_id);

-- name: DeleteAgentSession :exec
DELETE FROM agent_sessions WHERE node_id = sqlc.arg(node_id);

-- name: ListAgentActivity :many
-- What the agents of a range of nodes are doing (a page of nodes, whose
-- ids are listed in order, is one range): the sessions without their
-- tokens and inventories, for the API's Node.agent.
SELECT node_id, purpose, command, status, last_seen_at FROM agent_sessions
WHERE node_id >= sqlc.arg(from_id) AND node_id <= sqlc.arg(to_id)
ORDER BY node_id;
