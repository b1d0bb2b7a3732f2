package postgres

import (
	"context"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/postgres/internal/dbsqlc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlstore"
)

// querier is the code sqlc generates from the queries (internal/dbsqlc)
// as the shared code calls it (sqlstore.Querier); this file is written by
// hand. The queries of plain types are sqlc's own methods (embedded); a
// query whose row or parameters sqlc declares in dbsqlc has its row
// converted to the struct of the same fields in sqlstore/rows.go (the
// functions at the end), a conversion that does not compile once the two
// differ. sqlite/querier.go is the same over SQLite's generated code.
type querier struct{ *dbsqlc.Queries }

var _ sqlstore.Querier = querier{}

// newQuerier returns the generated queries on db (the writer, the read
// pool or a transaction).
func newQuerier(db dbsqlc.DBTX) querier { return querier{dbsqlc.New(db)} }

func (q querier) GetNode(ctx context.Context, idOrName string) (*sqlstore.NodeRow, error) {
	return node(q.Queries.GetNode(ctx, idOrName))
}

func (q querier) ListNodes(ctx context.Context, after, hideState string, pageLimit int64) ([]*sqlstore.NodeRow, error) {
	return nodes(q.Queries.ListNodes(ctx, after, hideState, pageLimit))
}

func (q querier) ListNodesFiltered(ctx context.Context, f sqlstore.NodeListFilter) ([]*sqlstore.NodeRow, error) {
	return nodes(q.Queries.ListNodesFiltered(ctx, dbsqlc.ListNodesFilteredParams(f)))
}

func (q querier) GetNodes(ctx context.Context, idsJSON string) ([]*sqlstore.NodeRow, error) {
	return nodes(q.Queries.GetNodes(ctx, idsJSON))
}

func (q querier) ClaimNode(ctx context.Context, c sqlstore.NodeClaimArgs) (*sqlstore.NodeRow, error) {
	return node(q.Queries.ClaimNode(ctx, c.ResourceClass, c.Driver, c.Project, c.MinCpus, c.MinMemoryMB, c.MinDiskGB,
		c.CPUArch, c.RequiredTraits, c.ForbiddenTraits))
}

// GetNodeForUpdate is PostgreSQL's own (Tx.GetNodeForUpdate).
func (q querier) GetNodeForUpdate(ctx context.Context, idOrName string) (*sqlstore.NodeRow, error) {
	return node(q.Queries.GetNodeForUpdate(ctx, idOrName))
}

func (q querier) CountNodes(ctx context.Context) ([]*sqlstore.NodeCountRow, error) {
	return nodeCounts(q.Queries.CountNodes(ctx))
}

func (q querier) InsertNode(ctx context.Context, arg sqlstore.NodeWrite) (int64, error) {
	return q.Queries.InsertNode(ctx, dbsqlc.InsertNodeParams(arg))
}

func (q querier) UpdateNode(ctx context.Context, arg sqlstore.NodeWrite) (int64, error) {
	return q.Queries.UpdateNode(ctx, dbsqlc.UpdateNodeParams(arg))
}

func (q querier) NodeByBMCKey(ctx context.Context, bmcKey *string) (*sqlstore.BMCHolderRow, error) {
	return keyHolder(q.Queries.NodeByBMCKey(ctx, bmcKey))
}

func (q querier) NodesOnBMCEndpoint(ctx context.Context, endpoint, past *string) ([]*sqlstore.BMCHolderRow, error) {
	return endpointHolders(q.Queries.NodesOnBMCEndpoint(ctx, endpoint, past))
}

func (q querier) NodesByBMCKeys(ctx context.Context, key1, key2, key3 *string) ([]*sqlstore.BMCHolderRow, error) {
	return keyedHolders(q.Queries.NodesByBMCKeys(ctx, key1, key2, key3))
}

func (q querier) UnkeyedNodes(ctx context.Context) ([]*sqlstore.UnkeyedNodeRow, error) {
	return unkeyedNodes(q.Queries.UnkeyedNodes(ctx))
}

func (q querier) ListEvents(ctx context.Context, nodeID string, after, pageLimit int64) ([]*sqlstore.EventRow, error) {
	return events(q.Queries.ListEvents(ctx, nodeID, after, pageLimit))
}

func (q querier) GetInstance(ctx context.Context, idOrName string) ([]*sqlstore.InstanceRow, error) {
	return instances(q.Queries.GetInstance(ctx, idOrName))
}

func (q querier) ListInstances(ctx context.Context, after, project string, pageLimit int64) ([]*sqlstore.InstanceRow, error) {
	return instances(q.Queries.ListInstances(ctx, after, project, pageLimit))
}

func (q querier) ListInstancesByName(ctx context.Context, name, after, project, nodeID string,
	pageLimit int64) ([]*sqlstore.InstanceRow, error) {
	return instances(q.Queries.ListInstancesByName(ctx, name, after, project, nodeID, pageLimit))
}

func (q querier) ListInstancesByNode(ctx context.Context, nodeID, after, project string,
	pageLimit int64) ([]*sqlstore.InstanceRow, error) {
	return instances(q.Queries.ListInstancesByNode(ctx, nodeID, after, project, pageLimit))
}

func (q querier) InsertInstance(ctx context.Context, arg sqlstore.InstanceWrite) (int64, error) {
	return q.Queries.InsertInstance(ctx, dbsqlc.InsertInstanceParams(arg))
}

func (q querier) UpdateInstance(ctx context.Context, arg sqlstore.InstanceWrite) (int64, error) {
	return q.Queries.UpdateInstance(ctx, dbsqlc.UpdateInstanceParams(arg))
}

func (q querier) GetTokenByHash(ctx context.Context, hash string) (*sqlstore.TokenRow, error) {
	return token(q.Queries.GetTokenByHash(ctx, hash))
}

func (q querier) GetToken(ctx context.Context, id string) (*sqlstore.TokenRow, error) {
	return token(q.Queries.GetToken(ctx, id))
}

func (q querier) ListTokens(ctx context.Context, after string, pageLimit int64) ([]*sqlstore.TokenRow, error) {
	return tokens(q.Queries.ListTokens(ctx, after, pageLimit))
}

func (q querier) GetAgentSession(ctx context.Context, nodeID string) (*sqlstore.SessionRow, error) {
	return session(q.Queries.GetAgentSession(ctx, nodeID))
}

func (q querier) GetAgentSessionByTokenHash(ctx context.Context, tokenHash string) (*sqlstore.SessionRow, error) {
	return session(q.Queries.GetAgentSessionByTokenHash(ctx, tokenHash))
}

func (q querier) FindAgentSessionsByNetbootID(ctx context.Context, pattern string) ([]*sqlstore.SessionRow, error) {
	return sessions(q.Queries.FindAgentSessionsByNetbootID(ctx, pattern))
}

func (q querier) ListAgentActivity(ctx context.Context, fromID, toID string) ([]*sqlstore.ActivityRow, error) {
	return activities(q.Queries.ListAgentActivity(ctx, fromID, toID))
}

func (q querier) GetInventory(ctx context.Context, nodeID string) (*sqlstore.InventoryRow, error) {
	return inventory(q.Queries.GetInventory(ctx, nodeID))
}

func (q querier) GetConsole(ctx context.Context, nodeID string) (*sqlstore.ConsoleRow, error) {
	r, err := q.Queries.GetConsole(ctx, nodeID)
	return (*sqlstore.ConsoleRow)(r), err
}

func (q querier) GetInventories(ctx context.Context, idsJSON string) ([]*sqlstore.InventoryRow, error) {
	rs, err := q.Queries.GetInventories(ctx, idsJSON)
	return sqlstore.Rows(rs, err, inventory)
}

func (q querier) GetIdempotencyKey(ctx context.Context, tokenID, key string, since sqlstore.Time) (*sqlstore.IdempotencyKeyRow, error) {
	return idempotencyKey(q.Queries.GetIdempotencyKey(ctx, tokenID, key, since))
}

// The conversions of the generated rows to sqlstore's: of one row, and
// of a list (sqlstore.Rows).

func node(r *dbsqlc.NodeRow, e error) (*sqlstore.NodeRow, error) { return (*sqlstore.NodeRow)(r), e }
func nodeCount(r *dbsqlc.CountNodesRow, e error) (*sqlstore.NodeCountRow, error) {
	return (*sqlstore.NodeCountRow)(r), e
}
func keyHolder(r *dbsqlc.NodeByBMCKeyRow, e error) (*sqlstore.BMCHolderRow, error) {
	return (*sqlstore.BMCHolderRow)(r), e
}
func endpointHolder(r *dbsqlc.NodesOnBMCEndpointRow, e error) (*sqlstore.BMCHolderRow, error) {
	return (*sqlstore.BMCHolderRow)(r), e
}
func unkeyedNode(r *dbsqlc.UnkeyedNodesRow, e error) (*sqlstore.UnkeyedNodeRow, error) {
	return (*sqlstore.UnkeyedNodeRow)(r), e
}
func event(r *dbsqlc.Event, e error) (*sqlstore.EventRow, error) { return (*sqlstore.EventRow)(r), e }
func instance(r *dbsqlc.Instance, e error) (*sqlstore.InstanceRow, error) {
	return (*sqlstore.InstanceRow)(r), e
}
func token(r *dbsqlc.Token, e error) (*sqlstore.TokenRow, error) { return (*sqlstore.TokenRow)(r), e }
func session(r *dbsqlc.AgentSession, e error) (*sqlstore.SessionRow, error) {
	return (*sqlstore.SessionRow)(r), e
}
func activity(r *dbsqlc.ListAgentActivityRow, e error) (*sqlstore.ActivityRow, error) {
	return (*sqlstore.ActivityRow)(r), e
}
func inventory(r *dbsqlc.NodeInventory, e error) (*sqlstore.InventoryRow, error) {
	return (*sqlstore.InventoryRow)(r), e
}
func idempotencyKey(r *dbsqlc.IdempotencyKey, e error) (*sqlstore.IdempotencyKeyRow, error) {
	return (*sqlstore.IdempotencyKeyRow)(r), e
}

func nodes(rs []*dbsqlc.NodeRow, e error) ([]*sqlstore.NodeRow, error) {
	return sqlstore.Rows(rs, e, node)
}
func nodeCounts(rs []*dbsqlc.CountNodesRow, e error) ([]*sqlstore.NodeCountRow, error) {
	return sqlstore.Rows(rs, e, nodeCount)
}
func keyedHolder(r *dbsqlc.NodesByBMCKeysRow, e error) (*sqlstore.BMCHolderRow, error) {
	return (*sqlstore.BMCHolderRow)(r), e
}
func keyedHolders(rs []*dbsqlc.NodesByBMCKeysRow, e error) ([]*sqlstore.BMCHolderRow, error) {
	return sqlstore.Rows(rs, e, keyedHolder)
}
func endpointHolders(rs []*dbsqlc.NodesOnBMCEndpointRow, e error) ([]*sqlstore.BMCHolderRow, error) {
	return sqlstore.Rows(rs, e, endpointHolder)
}
func unkeyedNodes(rs []*dbsqlc.UnkeyedNodesRow, e error) ([]*sqlstore.UnkeyedNodeRow, error) {
	return sqlstore.Rows(rs, e, unkeyedNode)
}
func events(rs []*dbsqlc.Event, e error) ([]*sqlstore.EventRow, error) {
	return sqlstore.Rows(rs, e, event)
}
func instances(rs []*dbsqlc.Instance, e error) ([]*sqlstore.InstanceRow, error) {
	return sqlstore.Rows(rs, e, instance)
}
func tokens(rs []*dbsqlc.Token, e error) ([]*sqlstore.TokenRow, error) {
	return sqlstore.Rows(rs, e, token)
}
func sessions(rs []*dbsqlc.AgentSession, e error) ([]*sqlstore.SessionRow, error) {
	return sqlstore.Rows(rs, e, session)
}
func activities(rs []*dbsqlc.ListAgentActivityRow, e error) ([]*sqlstore.ActivityRow, error) {
	return sqlstore.Rows(rs, e, activity)
}

func (q querier) GetIPPool(ctx context.Context, idOrName string) (*sqlstore.IPPoolRow, error) {
	return ipPool(q.Queries.GetIPPool(ctx, idOrName))
}

func (q querier) GetIPPoolForUpdate(ctx context.Context, idOrName string) (*sqlstore.IPPoolRow, error) {
	return ipPool(q.Queries.GetIPPoolForUpdate(ctx, idOrName))
}

func (q querier) ListIPPools(ctx context.Context, after string, pageLimit int64) ([]*sqlstore.IPPoolRow, error) {
	return ipPools(q.Queries.ListIPPools(ctx, after, pageLimit))
}

func (q querier) ListIPAllocationsByPool(ctx context.Context, poolID string, fromOrd, pageLimit int64) ([]*sqlstore.IPAllocationRow, error) {
	return ipAllocations(q.Queries.ListIPAllocationsByPool(ctx, poolID, fromOrd, pageLimit))
}

func (q querier) ListIPAllocationsByInstance(ctx context.Context, instanceID string) ([]*sqlstore.IPAllocationRow, error) {
	return ipAllocations(q.Queries.ListIPAllocationsByInstance(ctx, instanceID))
}

func (q querier) ListIPAllocationsByNode(ctx context.Context, nodeID string) ([]*sqlstore.IPAllocationRow, error) {
	return ipAllocations(q.Queries.ListIPAllocationsByNode(ctx, nodeID))
}

func (q querier) IPAllocationsBetween(ctx context.Context, poolID string, lo, hi, pageLimit int64) ([]*sqlstore.IPAllocationRow, error) {
	return ipAllocations(q.Queries.IPAllocationsBetween(ctx, poolID, lo, hi, pageLimit))
}

func ipPool(r *dbsqlc.IPPool, e error) (*sqlstore.IPPoolRow, error) {
	return (*sqlstore.IPPoolRow)(r), e
}
func ipAllocation(r *dbsqlc.IPAllocation, e error) (*sqlstore.IPAllocationRow, error) {
	return (*sqlstore.IPAllocationRow)(r), e
}
func ipPools(rs []*dbsqlc.IPPool, e error) ([]*sqlstore.IPPoolRow, error) {
	return sqlstore.Rows(rs, e, ipPool)
}
func ipAllocations(rs []*dbsqlc.IPAllocation, e error) ([]*sqlstore.IPAllocationRow, error) {
	return sqlstore.Rows(rs, e, ipAllocation)
}
