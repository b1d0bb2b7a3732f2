package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// ---- tokens ----

func token(r *TokenRow) *baremetal.Token {
	return &baremetal.Token{ID: r.ID, Name: r.Name, Role: baremetal.Role(r.Role), Project: r.Project, Hash: r.Hash,
		ExpiresAt: (*time.Time)(r.ExpiresAt), CreatedAt: time.Time(r.CreatedAt)}
}

func (q Queries) InsertToken(ctx context.Context, t *baremetal.Token) error {
	id, now := newID(t.ID), store.Now()
	err := q.w.InsertToken(ctx, id, t.Name, string(t.Role), t.Project, t.Hash, (*Time)(t.ExpiresAt), Time(now))
	if err != nil {
		switch q.unique(err) {
		case TokensNameKey:
			return store.Duplicate("name", fmt.Sprintf("a token named %q already exists", t.Name), err)
		case TokensHashKey:
			// Never echo the hash: it identifies a credential.
			return store.Duplicate("hash", "a token with this secret already exists", err)
		case TokensPkey:
			return store.Duplicate("id", fmt.Sprintf("a token with id %q already exists", id), err)
		}
		return q.wrap("insert token", err)
	}
	t.ID, t.CreatedAt, t.ExpiresAt = id, now, store.TimestampPtr(t.ExpiresAt)
	return nil
}

func (q Queries) GetTokenByHash(ctx context.Context, hash string) (*baremetal.Token, error) {
	return q.getToken(ctx, hash, Querier.GetTokenByHash, &baremetal.Error{Code: baremetal.CodeNotFound, Message: "token not found"})
}

func (q Queries) GetToken(ctx context.Context, id string) (*baremetal.Token, error) {
	return q.getToken(ctx, id, Querier.GetToken, store.NotFound("token", id))
}

func (q Queries) getToken(ctx context.Context, key string, get func(Querier, context.Context, string) (*TokenRow, error),
	notFound error) (*baremetal.Token, error) {
	if !store.Storable(key) {
		return nil, notFound
	}
	r, err := get(q.r, ctx, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, q.wrap("get token", err)
	}
	return token(r), nil
}

func (q Queries) ListTokens(ctx context.Context, p store.Page) ([]*baremetal.Token, string, error) {
	after, err := store.DecodeIDCursor(p.After)
	if err != nil {
		return nil, "", err
	}
	limit := store.PageLimit(p.Limit)
	rs, err := q.r.ListTokens(ctx, after, int64(limit)+1)
	if err != nil {
		return nil, "", q.wrap("list tokens", err)
	}
	var list []*baremetal.Token
	for _, r := range rs {
		list = append(list, token(r))
	}
	list, next := store.TrimPage(list, limit, func(x *baremetal.Token) string { return x.ID })
	return list, next, nil
}

func (q Queries) DeleteToken(ctx context.Context, id string) error {
	if !store.Storable(id) {
		return store.NotFound("token", id)
	}
	n, err := q.w.DeleteToken(ctx, id)
	if err != nil {
		return q.wrap("delete token", err)
	}
	if n == 0 {
		return store.NotFound("token", id)
	}
	return nil
}

func (q Queries) CountTokens(ctx context.Context) (int, error) {
	n, err := q.r.CountTokens(ctx)
	if err != nil {
		return 0, q.wrap("count tokens", err)
	}
	return int(n), nil
}

// ---- agent sessions and inventories ----

func (q Queries) session(r *SessionRow) (*baremetal.AgentSession, error) {
	s := &baremetal.AgentSession{NodeID: r.NodeID, Purpose: baremetal.AgentPurpose(r.Purpose), TokenHash: r.TokenHash,
		Command: r.Command, Status: r.Status, Inventory: r.Inventory, BootID: r.BootID,
		NetbootIDs: store.DecodeNetbootIDs(r.NetbootIDs), IdentityIDs: store.DecodeNetbootIDs(r.IdentityIDs),
		AgentAddr: r.AgentAddr, Refused: r.Refused, LastSeenAt: (*time.Time)(r.LastSeenAt),
		CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt), Version: r.Version}
	var err error
	if s.Token, err = q.box.Open(r.TokenSealed); err != nil {
		return nil, fmt.Errorf("agent session of node %s: token: %w", s.NodeID, err)
	}
	return s, nil
}

func (q Queries) PutAgentSession(ctx context.Context, s *baremetal.AgentSession) error {
	if !store.Storable(s.NodeID) {
		return store.NotFound("node", s.NodeID)
	}
	sealed, err := q.box.Seal(s.Token)
	if err != nil {
		return q.wrap("put agent session", err)
	}
	now := store.Now()
	err = q.w.PutAgentSession(ctx, s.NodeID, string(s.Purpose), sealed, s.TokenHash, s.Command, s.Status, s.Inventory,
		s.BootID, (*Time)(s.LastSeenAt), Time(now), store.EncodeNetbootIDs(s.NetbootIDs), store.EncodeNetbootIDs(s.IdentityIDs))
	switch {
	case err == nil:
	case q.dialect.ForeignKeyViolation(err):
		return store.NotFound("node", s.NodeID)
	case q.unique(err) == AgentSessionsTokenHashKey:
		return store.Duplicate("token_hash", "an agent session with this token already exists", err)
	default:
		return q.wrap("put agent session", err)
	}
	s.CreatedAt, s.UpdatedAt, s.Version = now, now, 1
	s.LastSeenAt = store.TimestampPtr(s.LastSeenAt)
	s.AgentAddr, s.Refused = "", "" // a new boot starts unbound
	return nil
}

var errNoSession = &baremetal.Error{Code: baremetal.CodeNotFound, Message: "agent session not found"}

func (q Queries) GetAgentSession(ctx context.Context, nodeID string) (*baremetal.AgentSession, error) {
	return q.getSession(ctx, nodeID, Querier.GetAgentSession)
}

func (q Queries) GetAgentSessionByTokenHash(ctx context.Context, hash string) (*baremetal.AgentSession, error) {
	return q.getSession(ctx, hash, Querier.GetAgentSessionByTokenHash)
}

func (q Queries) getSession(ctx context.Context, key string,
	get func(Querier, context.Context, string) (*SessionRow, error)) (*baremetal.AgentSession, error) {
	if !store.Storable(key) {
		return nil, errNoSession
	}
	r, err := get(q.r, ctx, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, q.wrap("get agent session", err)
	}
	s, err := q.session(r)
	if err != nil {
		return nil, q.wrap("get agent session", err)
	}
	return s, nil
}

func (q Queries) FindAgentSessionsByNetbootID(ctx context.Context, id string) ([]*baremetal.AgentSession, error) {
	rs, err := q.r.FindAgentSessionsByNetbootID(ctx, store.NetbootIDPattern(id))
	if err != nil {
		return nil, q.wrap("find agent sessions by netboot id", err)
	}
	var out []*baremetal.AgentSession
	for _, r := range rs {
		s, err := q.session(r)
		if err != nil {
			return nil, q.wrap("find agent sessions by netboot id", err)
		}
		out = append(out, s)
	}
	return out, nil
}

func (q Queries) ListAgentActivity(ctx context.Context, fromID, toID string) ([]*baremetal.AgentActivity, error) {
	if !store.Storable(fromID, toID) {
		return nil, nil // no node has such an id
	}
	rs, err := q.r.ListAgentActivity(ctx, fromID, toID)
	if err != nil {
		return nil, q.wrap("list agent activity", err)
	}
	var out []*baremetal.AgentActivity
	for _, r := range rs {
		out = append(out, &baremetal.AgentActivity{NodeID: r.NodeID, Purpose: baremetal.AgentPurpose(r.Purpose),
			Command: r.Command, Status: r.Status, LastSeenAt: (*time.Time)(r.LastSeenAt)})
	}
	return out, nil
}

func (q Queries) UpdateAgentSession(ctx context.Context, s *baremetal.AgentSession) error {
	now := store.Now()
	changed, err := q.w.UpdateAgentSession(ctx, s.Command, s.Status, s.Inventory, s.BootID, (*Time)(s.LastSeenAt), Time(now),
		s.AgentAddr, s.Refused, s.NodeID, s.Version)
	if err != nil {
		return q.wrap("update agent session", err)
	}
	if err := q.checkWritten(ctx, changed, "agent session", s.NodeID, s.Version, Querier.AgentSessionVersion); err != nil {
		return err
	}
	s.Version++
	s.UpdatedAt, s.LastSeenAt = now, store.TimestampPtr(s.LastSeenAt)
	return nil
}

func (q Queries) DeleteAgentSession(ctx context.Context, nodeID string) error {
	if !store.Storable(nodeID) {
		return nil
	}
	if err := q.w.DeleteAgentSession(ctx, nodeID); err != nil {
		return q.wrap("delete agent session", err)
	}
	return nil
}

func (q Queries) SetInventory(ctx context.Context, inv *baremetal.Inventory) error {
	if !store.Storable(inv.NodeID) {
		return store.NotFound("node", inv.NodeID)
	}
	at := store.Timestamp(inv.InspectedAt)
	err := q.w.SetInventory(ctx, inv.NodeID, inv.Data, Time(at))
	switch {
	case q.dialect.ForeignKeyViolation(err):
		return store.NotFound("node", inv.NodeID)
	case err != nil:
		return q.wrap("set inventory", err)
	}
	inv.InspectedAt = at
	return nil
}

func (q Queries) GetInventory(ctx context.Context, nodeID string) (*baremetal.Inventory, error) {
	notFound := &baremetal.Error{Code: baremetal.CodeNotFound, Message: fmt.Sprintf("node %s has not been inspected", nodeID)}
	if !store.Storable(nodeID) {
		return nil, notFound
	}
	r, err := q.r.GetInventory(ctx, nodeID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, q.wrap("get inventory", err)
	}
	return &baremetal.Inventory{NodeID: r.NodeID, Data: r.Data, InspectedAt: time.Time(r.InspectedAt)}, nil
}

// GetInventories passes the ids as one JSON array, as GetNodes.
func (q Queries) GetInventories(ctx context.Context, nodeIDs []string) ([]*baremetal.Inventory, error) {
	if len(nodeIDs) == 0 {
		return nil, nil
	}
	if len(nodeIDs) > store.MaxPageLimit {
		return nil, q.wrap("get inventories", fmt.Errorf("%d ids, at most %d", len(nodeIDs), store.MaxPageLimit))
	}
	keep := make([]string, 0, len(nodeIDs))
	for _, id := range nodeIDs {
		if store.Storable(id) {
			keep = append(keep, id)
		}
	}
	list, err := json.Marshal(keep)
	if err != nil {
		return nil, q.wrap("get inventories", err)
	}
	rs, err := q.r.GetInventories(ctx, string(list))
	if err != nil {
		return nil, q.wrap("get inventories", err)
	}
	out := make([]*baremetal.Inventory, len(rs))
	for i, r := range rs {
		out[i] = &baremetal.Inventory{NodeID: r.NodeID, Data: r.Data, InspectedAt: time.Time(r.InspectedAt)}
	}
	return out, nil
}

// ---- idempotency keys ----

// idempotencyTTL is how long a create's key is honoured.
const idempotencyTTL = 24 * time.Hour

func (q Queries) PutIdempotencyKey(ctx context.Context, k *baremetal.IdempotencyKey) error {
	if !store.Storable(k.Key, k.TokenID) {
		return &baremetal.Error{Code: baremetal.CodeInvalid, Field: "key", Message: "the Idempotency-Key holds characters that cannot be stored"}
	}
	now := store.Now()
	if err := q.w.ExpireIdempotencyKeys(ctx, Time(now.Add(-idempotencyTTL))); err != nil {
		return q.wrap("expire idempotency keys", err)
	}
	err := q.w.InsertIdempotencyKey(ctx, k.TokenID, k.Key, k.Kind, k.RequestHash, k.ResourceID, Time(now))
	switch {
	case err == nil:
	case q.unique(err) == IdempotencyKeysPkey:
		return store.Duplicate("key", "this Idempotency-Key was used already", err)
	default:
		return q.wrap("put idempotency key", err)
	}
	k.CreatedAt = now
	return nil
}

func (q Queries) GetIdempotencyKey(ctx context.Context, tokenID, key string) (*baremetal.IdempotencyKey, error) {
	notFound := &baremetal.Error{Code: baremetal.CodeNotFound, Message: "idempotency key not found"}
	if !store.Storable(key, tokenID) {
		return nil, notFound
	}
	r, err := q.r.GetIdempotencyKey(ctx, tokenID, key, Time(store.Now().Add(-idempotencyTTL)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, q.wrap("get idempotency key", err)
	}
	return &baremetal.IdempotencyKey{TokenID: r.TokenID, Key: r.Key, Kind: r.Kind, RequestHash: r.RequestHash,
		ResourceID: r.ResourceID, CreatedAt: time.Time(r.CreatedAt)}, nil
}
