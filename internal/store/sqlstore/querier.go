package sqlstore

import "context"

// Querier is the queries the shared code runs, as each dialect's
// generated code has them (internal/dbsqlc, which sqlc generates from the
// shared queries/<table>.sql and the dialect's own
// queries/<table>.<dialect>.sql), with the rows of rows.go. Parameters
// come in the order the queries name them; :execrows queries return the
// number of rows they changed; a read of one row that finds none returns
// sql.ErrNoRows (pgx's ErrNoRows is one, for errors.Is).
//
// Each dialect's querier.go makes its generated *dbsqlc.Queries a
// Querier: the queries of plain types are sqlc's methods as they are, and
// those whose row or parameters sqlc declares in the dialect's package
// convert them to the struct of rows.go. A query added to both dialects
// is a method here, and in each querier.go when it returns a row.
type Querier interface {
	// nodes.sql and nodes.<dialect>.sql
	GetNode(ctx context.Context, idOrName string) (*NodeRow, error)
	ListNodes(ctx context.Context, after, hideState string, pageLimit int64) ([]*NodeRow, error)
	ListNodesFiltered(ctx context.Context, f NodeListFilter) ([]*NodeRow, error)
	GetNodes(ctx context.Context, idsJSON string) ([]*NodeRow, error)
	CountNodes(ctx context.Context) ([]*NodeCountRow, error)
	InsertNode(ctx context.Context, arg NodeWrite) (int64, error)
	UpdateNode(ctx context.Context, arg NodeWrite) (int64, error)
	DeleteNode(ctx context.Context, id string, version int64) (int64, error)
	NodeVersion(ctx context.Context, id string) (int64, error)
	NodeByBMCKey(ctx context.Context, bmcKey *string) (*BMCHolderRow, error)
	NodesOnBMCEndpoint(ctx context.Context, endpoint, past *string) ([]*BMCHolderRow, error)
	NodesByBMCKeys(ctx context.Context, key1, key2, key3 *string) ([]*BMCHolderRow, error)
	UnkeyedNodes(ctx context.Context) ([]*UnkeyedNodeRow, error)
	SetNodeBMCKey(ctx context.Context, bmcKey *string, id string) error
	// ClaimNode locks the row it returns where the database can (see
	// store.Tx.ClaimNode).
	ClaimNode(ctx context.Context, c NodeClaimArgs) (*NodeRow, error)

	// events.<dialect>.sql
	InsertEvent(ctx context.Context, nodeID string, time Time, actor, typ, field, old, new, message string) (int64, error)
	ListEvents(ctx context.Context, nodeID string, after, pageLimit int64) ([]*EventRow, error)

	// instances.sql and instances.<dialect>.sql
	GetInstance(ctx context.Context, idOrName string) ([]*InstanceRow, error)
	ListInstances(ctx context.Context, after, project string, pageLimit int64) ([]*InstanceRow, error)
	ListInstancesByName(ctx context.Context, name, after, project, nodeID string, pageLimit int64) ([]*InstanceRow, error)
	ListInstancesByNode(ctx context.Context, nodeID, after, project string, pageLimit int64) ([]*InstanceRow, error)
	InsertInstance(ctx context.Context, arg InstanceWrite) (int64, error)
	UpdateInstance(ctx context.Context, arg InstanceWrite) (int64, error)
	DeleteInstance(ctx context.Context, id string, version int64) (int64, error)
	InstanceVersion(ctx context.Context, id string) (int64, error)
	CountInstances(ctx context.Context, project string) (int64, error)

	// quotas.sql
	GetQuota(ctx context.Context, project string) (int64, error)
	SetQuota(ctx context.Context, project string, instances int64) error

	// tokens.sql
	InsertToken(ctx context.Context, id, name, role, project, hash string, expiresAt *Time, createdAt Time) error
	GetTokenByHash(ctx context.Context, hash string) (*TokenRow, error)
	GetToken(ctx context.Context, id string) (*TokenRow, error)
	ListTokens(ctx context.Context, after string, pageLimit int64) ([]*TokenRow, error)
	DeleteToken(ctx context.Context, id string) (int64, error)
	CountTokens(ctx context.Context) (int64, error)

	// agent_sessions.sql
	PutAgentSession(ctx context.Context, nodeID, purpose, tokenSealed, tokenHash, command, status, inventory, bootID string,
		lastSeenAt *Time, createdAt Time, netbootIDs, identityIDs string) error
	GetAgentSession(ctx context.Context, nodeID string) (*SessionRow, error)
	GetAgentSessionByTokenHash(ctx context.Context, tokenHash string) (*SessionRow, error)
	FindAgentSessionsByNetbootID(ctx context.Context, pattern string) ([]*SessionRow, error)
	ListAgentActivity(ctx context.Context, fromID, toID string) ([]*ActivityRow, error)
	UpdateAgentSession(ctx context.Context, command, status, inventory, bootID string, lastSeenAt *Time, updatedAt Time,
		agentAddr, refused, nodeID string, version int64) (int64, error)
	AgentSessionVersion(ctx context.Context, nodeID string) (int64, error)
	DeleteAgentSession(ctx context.Context, nodeID string) error

	// node_inventories.sql
	SetInventory(ctx context.Context, nodeID, data string, inspectedAt Time) error
	GetInventory(ctx context.Context, nodeID string) (*InventoryRow, error)
	GetBIOSRegistry(ctx context.Context, name string) (string, error)
	// node_consoles.sql
	ClaimConsole(ctx context.Context, nodeID, holder string, leaseUntil *Time, now Time) (int64, error)
	SaveConsoleLog(ctx context.Context, log string, leaseUntil *Time, now Time, nodeID, holder string) (int64, error)
	ReleaseConsole(ctx context.Context, nodeID, holder string) error
	GetConsole(ctx context.Context, nodeID string) (*ConsoleRow, error)
	PutBIOSRegistry(ctx context.Context, name, data string) error
	// nodes.<dialect>.sql
	GetInventories(ctx context.Context, idsJSON string) ([]*InventoryRow, error)

	// idempotency_keys.sql
	ExpireIdempotencyKeys(ctx context.Context, before Time) error
	InsertIdempotencyKey(ctx context.Context, tokenID, key, kind, requestHash, resourceID string, createdAt Time) error
	GetIdempotencyKey(ctx context.Context, tokenID, key string, since Time) (*IdempotencyKeyRow, error)

	// ip_pools.sql and ip_pools.<dialect>.sql
	InsertIPPool(ctx context.Context, name, cidr, gateway, ranges, dnsServers, searchDomains, description string,
		now Time, version int64, id string) error
	UpdateIPPool(ctx context.Context, name, cidr, gateway, ranges, dnsServers, searchDomains, description string,
		now Time, version int64, id string) (int64, error)
	DeleteIPPool(ctx context.Context, id string, version int64) (int64, error)
	IPPoolVersion(ctx context.Context, id string) (int64, error)
	GetIPPool(ctx context.Context, idOrName string) (*IPPoolRow, error)
	// GetIPPoolForUpdate locks the pool's row where the database can (see
	// store.IPPools).
	GetIPPoolForUpdate(ctx context.Context, idOrName string) (*IPPoolRow, error)
	ListIPPools(ctx context.Context, after string, pageLimit int64) ([]*IPPoolRow, error)
	CountIPAllocations(ctx context.Context, poolID string) (int64, error)
	CountIPAllocationsBetween(ctx context.Context, poolID string, lo, hi int64) (int64, error)
	InsertIPAllocation(ctx context.Context, poolID, address string, ord int64, instanceID, nodeID *string, createdAt Time) error
	DeleteUnheldInstanceAddresses(ctx context.Context, instanceID string) (int64, error)
	ReleaseInstanceAddresses(ctx context.Context, instanceID string) (int64, error)
	FreeNodeAddresses(ctx context.Context, nodeID string) (int64, error)
	FreeInstanceAddress(ctx context.Context, instanceID, poolID, address string) (int64, error)
	ReleaseInstanceAddress(ctx context.Context, instanceID, poolID, address string) (int64, error)
	ListIPAllocationsByPool(ctx context.Context, poolID string, fromOrd, pageLimit int64) ([]*IPAllocationRow, error)
	ListIPAllocationsByInstance(ctx context.Context, instanceID string) ([]*IPAllocationRow, error)
	ListIPAllocationsByNode(ctx context.Context, nodeID string) ([]*IPAllocationRow, error)
	IPAllocationsBetween(ctx context.Context, poolID string, lo, hi, pageLimit int64) ([]*IPAllocationRow, error)
}

// Rows converts a list query's rows to the shared ones with one, the
// dialect's conversion of one row; a failed query's error passes.
func Rows[R, S any](rs []*R, err error, one func(*R, error) (*S, error)) ([]*S, error) {
	if err != nil {
		return nil, err
	}
	out := make([]*S, len(rs))
	for i, r := range rs {
		out[i], _ = one(r, nil)
	}
	return out, nil
}
