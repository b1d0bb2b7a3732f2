package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// ---- agent sessions and inventories ----

const agentColumns = `node_id, purpose, token_sealed, token_hash, command, status, inventory, boot_id,
	last_seen_at, created_at, updated_at, version, netboot_ids`

func (q queries) scanAgentSession(row pgx.Row) (*baremetal.AgentSession, error) {
	var (
		s                baremetal.AgentSession
		purpose, sealed  string
		netboot          string
		seen             *time.Time
		created, updated time.Time
	)
	if err := row.Scan(&s.NodeID, &purpose, &sealed, &s.TokenHash, &s.Command, &s.Status, &s.Inventory, &s.BootID,
		&seen, &created, &updated, &s.Version, &netboot); err != nil {
		return nil, err
	}
	s.NetbootIDs = store.DecodeNetbootIDs(netboot)
	var err error
	if s.Token, err = q.box.Open(sealed); err != nil {
		return nil, fmt.Errorf("agent session of node %s: token: %w", s.NodeID, err)
	}
	s.Purpose, s.LastSeenAt, s.CreatedAt, s.UpdatedAt = baremetal.AgentPurpose(purpose), utcPtr(seen), utc(created), utc(updated)
	return &s, nil
}

func (q queries) PutAgentSession(ctx context.Context, s *baremetal.AgentSession) error {
	if !store.Storable(s.NodeID) {
		return store.NotFound("node", s.NodeID)
	}
	sealed, err := q.box.Seal(s.Token)
	if err != nil {
		return wrap("put agent session", err)
	}
	now := store.Now()
	_, err = q.db.Exec(ctx, `INSERT INTO agent_sessions (`+agentColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, 1, $11)
		ON CONFLICT (node_id) DO UPDATE SET purpose = excluded.purpose, token_sealed = excluded.token_sealed,
			token_hash = excluded.token_hash, command = excluded.command, status = excluded.status,
			inventory = excluded.inventory, boot_id = excluded.boot_id, last_seen_at = excluded.last_seen_at,
			created_at = excluded.created_at, updated_at = excluded.updated_at, version = 1,
			netboot_ids = excluded.netboot_ids`,
		s.NodeID, string(s.Purpose), sealed, s.TokenHash, s.Command, s.Status, s.Inventory, s.BootID,
		tsPtr(s.LastSeenAt), now, store.EncodeNetbootIDs(s.NetbootIDs))
	switch {
	case foreignKeyViolation(err):
		return store.NotFound("node", s.NodeID)
	case uniqueViolation(err, "agent_sessions_token_hash_key"):
		return store.Duplicate("token_hash", "an agent session with this token already exists", err)
	case err != nil:
		return wrap("put agent session", err)
	}
	s.CreatedAt, s.UpdatedAt, s.Version, s.LastSeenAt = now, now, 1, tsPtr(s.LastSeenAt)
	return nil
}

func (q queries) getAgentSession(ctx context.Context, where, arg string) (*baremetal.AgentSession, error) {
	notFound := &baremetal.Error{Code: baremetal.CodeNotFound, Message: "agent session not found"}
	if !store.Storable(arg) {
		return nil, notFound
	}
	s, err := q.scanAgentSession(q.db.QueryRow(ctx, `SELECT `+agentColumns+` FROM agent_sessions WHERE `+where+` = $1`, arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, wrap("get agent session", err)
	}
	return s, nil
}

func (q queries) GetAgentSession(ctx context.Context, nodeID string) (*baremetal.AgentSession, error) {
	return q.getAgentSession(ctx, "node_id", nodeID)
}

func (q queries) GetAgentSessionByTokenHash(ctx context.Context, hash string) (*baremetal.AgentSession, error) {
	return q.getAgentSession(ctx, "token_hash", hash)
}

func (q queries) FindAgentSessionsByNetbootID(ctx context.Context, id string) ([]*baremetal.AgentSession, error) {
	rows, err := q.db.Query(ctx, `SELECT `+agentColumns+` FROM agent_sessions WHERE netboot_ids LIKE $1`,
		store.NetbootIDPattern(id))
	if err != nil {
		return nil, wrap("find agent sessions by netboot id", err)
	}
	defer rows.Close()
	var out []*baremetal.AgentSession
	for rows.Next() {
		s, err := q.scanAgentSession(rows)
		if err != nil {
			return nil, wrap("find agent sessions by netboot id", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("find agent sessions by netboot id", err)
	}
	return out, nil
}

func (q queries) UpdateAgentSession(ctx context.Context, s *baremetal.AgentSession) error {
	now := store.Now()
	tag, err := q.db.Exec(ctx, `UPDATE agent_sessions SET command = $1, status = $2, inventory = $3, boot_id = $4,
		last_seen_at = $5, updated_at = $6, version = version + 1 WHERE node_id = $7 AND version = $8`,
		s.Command, s.Status, s.Inventory, s.BootID, tsPtr(s.LastSeenAt), now, s.NodeID, s.Version)
	if err != nil {
		return wrap("update agent session", err)
	}
	if err := q.checkWrittenBy(ctx, tag, "agent session", "agent_sessions", "node_id", s.NodeID, s.Version); err != nil {
		return err
	}
	s.Version++
	s.UpdatedAt, s.LastSeenAt = now, tsPtr(s.LastSeenAt)
	return nil
}

func (q queries) DeleteAgentSession(ctx context.Context, nodeID string) error {
	if !store.Storable(nodeID) {
		return nil
	}
	if _, err := q.db.Exec(ctx, `DELETE FROM agent_sessions WHERE node_id = $1`, nodeID); err != nil {
		return wrap("delete agent session", err)
	}
	return nil
}

func (q queries) SetInventory(ctx context.Context, inv *baremetal.Inventory) error {
	if !store.Storable(inv.NodeID) {
		return store.NotFound("node", inv.NodeID)
	}
	at := ts(inv.InspectedAt)
	_, err := q.db.Exec(ctx, `INSERT INTO node_inventories (node_id, data, inspected_at) VALUES ($1, $2, $3)
		ON CONFLICT (node_id) DO UPDATE SET data = excluded.data, inspected_at = excluded.inspected_at`,
		inv.NodeID, inv.Data, at)
	switch {
	case foreignKeyViolation(err):
		return store.NotFound("node", inv.NodeID)
	case err != nil:
		return wrap("set inventory", err)
	}
	inv.InspectedAt = at
	return nil
}

func (q queries) GetInventory(ctx context.Context, nodeID string) (*baremetal.Inventory, error) {
	notFound := &baremetal.Error{Code: baremetal.CodeNotFound, Message: fmt.Sprintf("node %s has not been inspected", nodeID)}
	if !store.Storable(nodeID) {
		return nil, notFound
	}
	var (
		inv baremetal.Inventory
		at  time.Time
	)
	err := q.db.QueryRow(ctx, `SELECT node_id, data, inspected_at FROM node_inventories WHERE node_id = $1`, nodeID).
		Scan(&inv.NodeID, &inv.Data, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, wrap("get inventory", err)
	}
	inv.InspectedAt = utc(at)
	return &inv, nil
}

// ---- idempotency keys ----

// idempotencyTTL is how long a create's key is honoured.
const idempotencyTTL = 24 * time.Hour

func (q queries) PutIdempotencyKey(ctx context.Context, k *baremetal.IdempotencyKey) error {
	if !store.Storable(k.Key) || !store.Storable(k.TokenID) {
		return &baremetal.Error{Code: baremetal.CodeInvalid, Field: "key", Message: "the Idempotency-Key holds characters that cannot be stored"}
	}
	now := store.Now()
	if _, err := q.db.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < $1`, now.Add(-idempotencyTTL)); err != nil {
		return wrap("expire idempotency keys", err)
	}
	_, err := q.db.Exec(ctx, `INSERT INTO idempotency_keys (token_id, key, kind, request_hash, resource_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, k.TokenID, k.Key, k.Kind, k.RequestHash, k.ResourceID, now)
	switch {
	case uniqueViolation(err, "idempotency_keys_pkey"):
		return store.Duplicate("key", "this Idempotency-Key was used already", err)
	case err != nil:
		return wrap("put idempotency key", err)
	}
	k.CreatedAt = now
	return nil
}

func (q queries) GetIdempotencyKey(ctx context.Context, tokenID, key string) (*baremetal.IdempotencyKey, error) {
	notFound := &baremetal.Error{Code: baremetal.CodeNotFound, Message: "idempotency key not found"}
	if !store.Storable(key) || !store.Storable(tokenID) {
		return nil, notFound
	}
	var (
		k  baremetal.IdempotencyKey
		at time.Time
	)
	err := q.db.QueryRow(ctx, `SELECT token_id, key, kind, request_hash, resource_id, created_at FROM idempotency_keys
		WHERE token_id = $1 AND key = $2 AND created_at >= $3`, tokenID, key, store.Now().Add(-idempotencyTTL)).
		Scan(&k.TokenID, &k.Key, &k.Kind, &k.RequestHash, &k.ResourceID, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, wrap("get idempotency key", err)
	}
	k.CreatedAt = utc(at)
	return &k, nil
}
