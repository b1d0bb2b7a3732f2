package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// ---- agent sessions and inventories ----

const agentColumns = `node_id, purpose, token_sealed, token_hash, command, status, inventory, boot_id,
	last_seen_at, created_at, updated_at, version, netboot_ids`

func (q queries) scanAgentSession(sc scanner) (*baremetal.AgentSession, error) {
	var (
		s                        baremetal.AgentSession
		sealed, created, updated string
		netboot                  string
		seen                     sql.NullString
	)
	if err := sc.Scan(&s.NodeID, &s.Purpose, &sealed, &s.TokenHash, &s.Command, &s.Status, &s.Inventory, &s.BootID,
		&seen, &created, &updated, &s.Version, &netboot); err != nil {
		return nil, err
	}
	s.NetbootIDs = store.DecodeNetbootIDs(netboot)
	var err error
	if s.Token, err = q.box.Open(sealed); err != nil {
		return nil, fmt.Errorf("agent session of node %s: token: %w", s.NodeID, err)
	}
	if s.LastSeenAt, err = parseTimePtr(seen); err != nil {
		return nil, err
	}
	if s.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	if s.UpdatedAt, err = parseTime(updated); err != nil {
		return nil, err
	}
	return &s, nil
}

func (q queries) PutAgentSession(ctx context.Context, s *baremetal.AgentSession) error {
	sealed, err := q.box.Seal(s.Token)
	if err != nil {
		return wrap("put agent session", err)
	}
	now := nowUTC()
	_, err = q.w.ExecContext(ctx, `INSERT INTO agent_sessions (`+agentColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?)
		ON CONFLICT (node_id) DO UPDATE SET purpose = excluded.purpose, token_sealed = excluded.token_sealed,
			token_hash = excluded.token_hash, command = excluded.command, status = excluded.status,
			inventory = excluded.inventory, boot_id = excluded.boot_id, last_seen_at = excluded.last_seen_at,
			created_at = excluded.created_at, updated_at = excluded.updated_at, version = 1,
			netboot_ids = excluded.netboot_ids`,
		s.NodeID, string(s.Purpose), sealed, s.TokenHash, s.Command, s.Status, s.Inventory, s.BootID,
		fmtTimePtr(s.LastSeenAt), fmtTime(now), fmtTime(now), store.EncodeNetbootIDs(s.NetbootIDs))
	switch {
	case foreignKeyViolation(err):
		return store.NotFound("node", s.NodeID)
	case uniqueViolation(err, "agent_sessions.token_hash"):
		return store.Duplicate("token_hash", "an agent session with this token already exists", err)
	case err != nil:
		return wrap("put agent session", err)
	}
	s.CreatedAt, s.UpdatedAt, s.Version = now, now, 1
	s.LastSeenAt = store.TimestampPtr(s.LastSeenAt)
	return nil
}

func (q queries) getAgentSession(ctx context.Context, where, arg string) (*baremetal.AgentSession, error) {
	s, err := q.scanAgentSession(q.r.QueryRowContext(ctx, `SELECT `+agentColumns+` FROM agent_sessions WHERE `+where+` = ?`, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &baremetal.Error{Code: baremetal.CodeNotFound, Message: "agent session not found"}
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
	rows, err := q.r.QueryContext(ctx, `SELECT `+agentColumns+` FROM agent_sessions WHERE netboot_ids LIKE ?`,
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
	now := nowUTC()
	res, err := q.w.ExecContext(ctx, `UPDATE agent_sessions SET command = ?, status = ?, inventory = ?, boot_id = ?,
		last_seen_at = ?, updated_at = ?, version = version + 1 WHERE node_id = ? AND version = ?`,
		s.Command, s.Status, s.Inventory, s.BootID, fmtTimePtr(s.LastSeenAt), fmtTime(now), s.NodeID, s.Version)
	if err != nil {
		return wrap("update agent session", err)
	}
	if err := q.checkWrittenBy(ctx, res, "agent session", "agent_sessions", "node_id", s.NodeID, s.Version); err != nil {
		return err
	}
	s.Version++
	s.UpdatedAt = now
	s.LastSeenAt = store.TimestampPtr(s.LastSeenAt)
	return nil
}

func (q queries) DeleteAgentSession(ctx context.Context, nodeID string) error {
	if _, err := q.w.ExecContext(ctx, `DELETE FROM agent_sessions WHERE node_id = ?`, nodeID); err != nil {
		return wrap("delete agent session", err)
	}
	return nil
}

func (q queries) SetInventory(ctx context.Context, inv *baremetal.Inventory) error {
	_, err := q.w.ExecContext(ctx, `INSERT INTO node_inventories (node_id, data, inspected_at) VALUES (?, ?, ?)
		ON CONFLICT (node_id) DO UPDATE SET data = excluded.data, inspected_at = excluded.inspected_at`,
		inv.NodeID, inv.Data, fmtTime(inv.InspectedAt))
	switch {
	case foreignKeyViolation(err):
		return store.NotFound("node", inv.NodeID)
	case err != nil:
		return wrap("set inventory", err)
	}
	inv.InspectedAt = store.Timestamp(inv.InspectedAt)
	return nil
}

func (q queries) GetInventory(ctx context.Context, nodeID string) (*baremetal.Inventory, error) {
	var (
		inv baremetal.Inventory
		at  string
	)
	err := q.r.QueryRowContext(ctx, `SELECT node_id, data, inspected_at FROM node_inventories WHERE node_id = ?`, nodeID).
		Scan(&inv.NodeID, &inv.Data, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &baremetal.Error{Code: baremetal.CodeNotFound, Message: fmt.Sprintf("node %s has not been inspected", nodeID)}
	}
	if err != nil {
		return nil, wrap("get inventory", err)
	}
	if inv.InspectedAt, err = parseTime(at); err != nil {
		return nil, err
	}
	return &inv, nil
}

// ---- idempotency keys ----

// idempotencyTTL is how long a create's key is honoured.
const idempotencyTTL = 24 * time.Hour

func (q queries) PutIdempotencyKey(ctx context.Context, k *baremetal.IdempotencyKey) error {
	now := nowUTC()
	if _, err := q.w.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE created_at < ?`, fmtTime(now.Add(-idempotencyTTL))); err != nil {
		return wrap("expire idempotency keys", err)
	}
	_, err := q.w.ExecContext(ctx, `INSERT INTO idempotency_keys (token_id, key, kind, request_hash, resource_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`, k.TokenID, k.Key, k.Kind, k.RequestHash, k.ResourceID, fmtTime(now))
	switch {
	case uniqueViolation(err, "idempotency_keys.token_id"), uniqueViolation(err, "idempotency_keys.key"):
		return store.Duplicate("key", "this Idempotency-Key was used already", err)
	case err != nil:
		return wrap("put idempotency key", err)
	}
	k.CreatedAt = now
	return nil
}

func (q queries) GetIdempotencyKey(ctx context.Context, tokenID, key string) (*baremetal.IdempotencyKey, error) {
	var (
		k  baremetal.IdempotencyKey
		at string
	)
	err := q.r.QueryRowContext(ctx, `SELECT token_id, key, kind, request_hash, resource_id, created_at FROM idempotency_keys
		WHERE token_id = ? AND key = ? AND created_at >= ?`, tokenID, key, fmtTime(nowUTC().Add(-idempotencyTTL))).
		Scan(&k.TokenID, &k.Key, &k.Kind, &k.RequestHash, &k.ResourceID, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &baremetal.Error{Code: baremetal.CodeNotFound, Message: "idempotency key not found"}
	}
	if err != nil {
		return nil, wrap("get idempotency key", err)
	}
	if k.CreatedAt, err = parseTime(at); err != nil {
		return nil, err
	}
	return &k, nil
}
