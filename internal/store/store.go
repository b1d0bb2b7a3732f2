// Package store persists the domain. Two implementations sit behind one
// interface: sqlite (the embedded default, modernc.org/sqlite) and postgres
// (pgx/v5). storetest holds the conformance suite both must pass.
//
// Every write is version-checked: UpdateNode/UpdateInstance/Delete* succeed
// only when the row's stored version equals the given one, and return a
// baremetal.CodeConflict error otherwise. A stale write is never silent.
package store

import (
	"context"
	"net/netip"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// Store is a database holding nodes, instances, events, tokens and quotas,
// plus River's job tables (in the same database, so a state change and the
// job it needs commit together).
type Store interface {
	Queries
	// InTx runs fn in one transaction; fn's error rolls it back. It
	// returns after the commit, so fn's writes are durable by then. With
	// the embedded SQLite store there is one writer connection: inside fn
	// use only tx, never the Store, or the call blocks until its deadline;
	// and transactions waiting for that connection are committed together
	// (group commit, one fsync for all), each fn in a savepoint of its own,
	// so its writes stay all or nothing.
	InTx(ctx context.Context, fn func(tx Tx) error) error
	// Ping checks that the database answers (readyz).
	Ping(ctx context.Context) error
	// Classify returns err as Unavailable (op names the operation) when
	// it is a driver error saying the database cannot be reached, and err
	// unchanged otherwise. The Store's own methods do this already; it is
	// for code that uses the database through Native, such as River.
	Classify(op string, err error) error
	// Dialect is "sqlite" or "postgres".
	Dialect() string
	// Native returns the driver handle River needs: *sql.DB for sqlite,
	// *pgxpool.Pool for postgres.
	Native() any
	// ReadNative returns a driver handle for reads only, of the same
	// types as Native: on SQLite the read pool, so a read of River's
	// tables (which the store does not own) does not wait for the one
	// writer connection; on PostgreSQL the same pool as Native.
	ReadNative() any
	Close() error
}

// Tx is an open transaction.
type Tx interface {
	Queries
	// GetNodeForUpdate is GetNode that also locks the node's row until the
	// transaction ends, for a read-modify-write that must not lose to a
	// concurrent writer: with a plain read, PostgreSQL lets another
	// transaction update the row in between, and the version-checked write
	// then fails with a conflict the caller must retry after a pause. With
	// the lock the read waits for that writer and sees its result. (SQLite
	// transactions hold the database's write lock from BEGIN; there it is
	// GetNode.)
	GetNodeForUpdate(ctx context.Context, idOrName string) (*baremetal.Node, error)
	// ClaimNode returns the first node, in id order, that can take a new
	// instance as c asks (available, not in maintenance, without fault or
	// instance), its row locked until the transaction ends; not found when
	// none is left. On PostgreSQL a node another transaction holds locked
	// is passed over while another is free (SKIP LOCKED), so concurrent
	// creates claim different nodes; when none is free it waits for the
	// locked ones, which their holders may leave free. (SQLite transactions
	// hold the database's write lock from BEGIN; there it is a read.)
	ClaimNode(ctx context.Context, c NodeClaim) (*baremetal.Node, error)
	// Native returns the driver transaction for River's InsertTx:
	// *sql.Tx for sqlite, pgx.Tx for postgres.
	Native() any
}

// NodeClaim is what a new instance asks of its node (Tx.ClaimNode): the
// placement (resource class, empty for any; requirements; the project,
// which nodes owned by another do not serve) and the driver (empty for
// any). Of the nodes that fit, the claim takes the best fit
// (baremetal.BestFitLess).
type NodeClaim struct {
	baremetal.Placement
	Driver baremetal.Driver
}

// Fits reports whether n is a node c would claim.
func (c NodeClaim) Fits(n *baremetal.Node) bool {
	return n.Schedulable() && c.Placement.Fits(n) && (c.Driver == "" || n.Driver == c.Driver)
}

// Storable reports whether every string of c is one a store can hold: a
// claim with one that is not matches no node.
func (c NodeClaim) Storable() bool {
	r := c.Requirements
	for _, t := range append(append([]string{}, r.RequiredTraits...), r.ForbiddenTraits...) {
		// The queries find a trait with its commas around it in the
		// comma-joined column: an empty one, or one holding a comma,
		// would match what no trait is (the domain refuses both).
		if t == "" || strings.Contains(t, ",") {
			return false
		}
	}
	return Storable(append(append([]string{c.ResourceClass, string(c.Driver), c.Project, r.CPUArch}, r.RequiredTraits...), r.ForbiddenTraits...)...)
}

// NoFreeNode is ClaimNode's not-found error.
func NoFreeNode(c NodeClaim) error {
	return baremetal.Errorf(baremetal.CodeNotFound, "no free node of class %q and driver %q fits", c.ResourceClass, c.Driver)
}

// Queries are the row operations available on a Store and inside a Tx.
//
// Not-found lookups return a baremetal.CodeNotFound error; unique
// violations (node name, instance name per project, token name) return
// baremetal.CodeConflict naming the field, and a node on the BMC endpoint
// of another (baremetal.BMCKey) CodeConflict on "bmc.address" naming that
// node (store.DuplicateBMC); version mismatches return
// baremetal.CodeConflict with Field "version".
type Queries interface {
	// GetNode finds a node by id, or by name when no id matches.
	GetNode(ctx context.Context, idOrName string) (*baremetal.Node, error)
	// ListNodes returns up to f.Limit nodes ordered by id after f.After,
	// and the cursor of the next page ("" at the end).
	ListNodes(ctx context.Context, f NodeFilter) ([]*baremetal.Node, string, error)
	// InsertNode stores a new node; it sets CreatedAt, UpdatedAt, Version=1.
	InsertNode(ctx context.Context, n *baremetal.Node) error
	// UpdateNode writes all fields of n if the stored version is n.Version,
	// then increments n.Version and sets n.UpdatedAt.
	UpdateNode(ctx context.Context, n *baremetal.Node) error
	// DeleteNode removes a node (and its events) if its version matches.
	DeleteNode(ctx context.Context, id string, version int64) error
	// GetNodes returns the nodes with the given ids (not names) in one
	// query, ordered by id; ids that match no node are left out. At most
	// MaxPageLimit ids.
	GetNodes(ctx context.Context, ids []string) ([]*baremetal.Node, error)
	// CountNodes counts every node by provision state, fault and
	// maintenance (the nodes-by-state metrics).
	CountNodes(ctx context.Context) ([]NodeCount, error)
	// NodesOnBMC returns the nodes on one BMC, oldest first: those whose
	// BMC key is endpoint (a baremetal.BMCEndpointKey) or endpoint
	// followed by a system. Nodes without a key (see BackfillBMCKeys)
	// are not among them.
	NodesOnBMC(ctx context.Context, endpoint string) ([]BMCHolder, error)
	// NodesWithBMCKeys returns the nodes whose BMC key is one of keys (at
	// most MaxBMCKeys; "" stands for none), oldest first as NodesOnBMC
	// orders them: a lookup in the unique index per key, where NodesOnBMC
	// reads every node on the BMC.
	NodesWithBMCKeys(ctx context.Context, keys ...string) ([]BMCHolder, error)

	// InsertEvent appends an event; it sets ID and Time when zero.
	InsertEvent(ctx context.Context, e *baremetal.Event) error
	// InsertEvents appends events in order, as InsertEvent each (in one
	// round trip on PostgreSQL: a change of a node is often several
	// events). IDs and times are set only when all were written.
	InsertEvents(ctx context.Context, evs []*baremetal.Event) error
	// ListEvents returns a node's events oldest first, after cursor.
	ListEvents(ctx context.Context, nodeID string, p Page) ([]*baremetal.Event, string, error)

	GetInstance(ctx context.Context, idOrName string) (*baremetal.Instance, error)
	ListInstances(ctx context.Context, f InstanceFilter) ([]*baremetal.Instance, string, error)
	InsertInstance(ctx context.Context, i *baremetal.Instance) error
	UpdateInstance(ctx context.Context, i *baremetal.Instance) error
	DeleteInstance(ctx context.Context, id string, version int64) error
	CountInstances(ctx context.Context, project string) (int, error)

	InsertToken(ctx context.Context, t *baremetal.Token) error
	// GetTokenByHash finds a token by the hash of its secret.
	GetTokenByHash(ctx context.Context, hash string) (*baremetal.Token, error)
	GetToken(ctx context.Context, id string) (*baremetal.Token, error)
	ListTokens(ctx context.Context, p Page) ([]*baremetal.Token, string, error)
	DeleteToken(ctx context.Context, id string) error
	// CountTokens counts all tokens (bootstrap: is this a first start?).
	CountTokens(ctx context.Context) (int, error)

	// PutAgentSession stores s as its node's one agent session, replacing
	// any earlier one (whose token then stops working); it sets CreatedAt,
	// UpdatedAt and Version=1. The token is sealed at rest.
	PutAgentSession(ctx context.Context, s *baremetal.AgentSession) error
	// GetAgentSession returns a node's agent session.
	GetAgentSession(ctx context.Context, nodeID string) (*baremetal.AgentSession, error)
	// GetAgentSessionByTokenHash finds a session by the hash of its token.
	GetAgentSessionByTokenHash(ctx context.Context, hash string) (*baremetal.AgentSession, error)
	// FindAgentSessionsByNetbootID returns the sessions whose NetbootIDs
	// hold id (none: an empty list, no error).
	FindAgentSessionsByNetbootID(ctx context.Context, id string) ([]*baremetal.AgentSession, error)
	// ListAgentActivity returns, ordered by node id, what the agents of
	// the nodes whose ids are from fromID to toID (both included; a page
	// of nodes, listed by id, is such a range) are doing: their sessions
	// without the tokens.
	ListAgentActivity(ctx context.Context, fromID, toID string) ([]*baremetal.AgentActivity, error)
	// UpdateAgentSession writes s if the stored version is s.Version.
	UpdateAgentSession(ctx context.Context, s *baremetal.AgentSession) error
	// DeleteAgentSession removes a node's session (none is no error).
	DeleteAgentSession(ctx context.Context, nodeID string) error
	// SetInventory stores a node's inventory, replacing the last one.
	SetInventory(ctx context.Context, inv *baremetal.Inventory) error
	// GetInventory returns a node's inventory; not found before the first
	// inspection. Sessions and inventories go with their node.
	GetInventory(ctx context.Context, nodeID string) (*baremetal.Inventory, error)
	// GetBIOSRegistry returns the BIOS attribute registry of that name,
	// not found when none is stored; PutBIOSRegistry stores one (a name
	// stored already is replaced).
	GetBIOSRegistry(ctx context.Context, name string) (baremetal.BIOSRegistry, error)
	PutBIOSRegistry(ctx context.Context, name string, reg baremetal.BIOSRegistry) error
	// ClaimConsole makes holder (a controller process) the recorder of a
	// node's console until until, unless another holder's lease runs
	// after now; it reports whether holder has it. A holder renews its
	// lease the same way. Not found when the node is gone.
	ClaimConsole(ctx context.Context, nodeID, holder string, until time.Time) (bool, error)
	// SaveConsoleLog replaces the node's console log and renews the
	// lease, if holder still has it (false when another took it over).
	SaveConsoleLog(ctx context.Context, nodeID, holder, log string, until time.Time) (bool, error)
	// ReleaseConsole ends holder's lease, if it has it.
	ReleaseConsole(ctx context.Context, nodeID, holder string) error
	// GetConsoleLog returns a node's console log; not found when nothing
	// was ever recorded.
	GetConsoleLog(ctx context.Context, nodeID string) (*baremetal.ConsoleLog, error)
	// GetInventories returns the inventories of the nodes with the given
	// ids (at most MaxPageLimit: a page of nodes), ordered by node id; a
	// node never inspected, or gone, has none in the list.
	GetInventories(ctx context.Context, nodeIDs []string) ([]*baremetal.Inventory, error)

	// PutIdempotencyKey records a create under a token's key; a key the
	// token used already is a conflict on "key". Keys older than a day are
	// removed on the way.
	PutIdempotencyKey(ctx context.Context, k *baremetal.IdempotencyKey) error
	// GetIdempotencyKey finds a token's key (not found when unused or
	// older than a day).
	GetIdempotencyKey(ctx context.Context, tokenID, key string) (*baremetal.IdempotencyKey, error)

	// GetQuota returns a project's quota; Instances is -1 when none is set.
	GetQuota(ctx context.Context, project string) (*baremetal.Quota, error)
	// SetQuota creates or replaces a project's quota.
	SetQuota(ctx context.Context, q *baremetal.Quota) error

	IPPools
}

// IPPools are the address pools and their allocations (issue 28). Every
// change of a pool's allocations, ranges or existence takes the pool's
// lock first (PostgreSQL: its row, FOR UPDATE; SQLite: the database's
// write lock, which a transaction holds from BEGIN), so that they happen
// one after another per pool, across connections and replicas. Called on
// the Store, each method is one transaction of its own; inside InTx, on
// the Tx, it is part of the caller's, and the pool stays locked until it
// ends: an instance create that allocates keeps other creates from that
// pool waiting until it commits or rolls back (keep it short).
type IPPools interface {
	// InsertIPPool stores a new pool (validated: CodeInvalid naming the
	// field); it sets ID (unless given), CreatedAt, UpdatedAt, Version=1.
	// A taken name is CodeConflict on "name".
	InsertIPPool(ctx context.Context, p *baremetal.IPPool) error
	// GetIPPool finds a pool by id, or by name when no id matches.
	GetIPPool(ctx context.Context, idOrName string) (*baremetal.IPPool, error)
	// ListIPPools returns up to p.Limit pools ordered by id after p.After,
	// and the cursor of the next page ("" at the end).
	ListIPPools(ctx context.Context, p Page) ([]*baremetal.IPPool, string, error)
	// UpdateIPPool writes every field of p if the stored version is
	// p.Version, then increments p.Version and sets p.UpdatedAt. The
	// cidr may not change (CodeInvalid on "cidr"). A change of ranges or
	// gateway that would leave held addresses out of the allocatable ones
	// is CodeConflict on "ranges" (or "gateway") naming them
	// (PoolLeavesOut).
	UpdateIPPool(ctx context.Context, p *baremetal.IPPool) error
	// DeleteIPPool removes a pool if its version matches and it holds no
	// allocation: while it does, CodeConflict naming how many.
	DeleteIPPool(ctx context.Context, id string, version int64) error

	// AllocateAddress takes the lowest free address of the pool's
	// allocatable ones (baremetal.IPPool.Allocatable: its ranges, never
	// its gateway, network or broadcast address) for instanceID
	// (required: CodeInvalid on "instance_id" without) on nodeID ("" when
	// the instance has no node yet: such an address is freed by
	// ReleaseInstanceAddresses at once). Two callers never get one
	// address: allocations of a pool run one after another under its
	// lock. Call it in the instance create's transaction (tx.
	// AllocateAddress) so that the address and the instance commit
	// together, or roll back together. A transaction that allocates from
	// several pools must take them in one order (say, by pool id): on
	// PostgreSQL two creates taking two pools' locks in opposite orders
	// deadlock, and one fails. A full pool is CodeConflict on "pool"
	// ("ip pool X has no free address in its ranges"); an unknown pool
	// CodeNotFound.
	AllocateAddress(ctx context.Context, poolIDOrName, instanceID, nodeID string) (baremetal.IPAllocation, error)
	// ReleaseInstanceAddresses is for the instance's delete: its
	// addresses stay held by their node (instance id cleared) until
	// FreeNodeAddresses, so that they are not handed out again while the
	// node, still cleaning, may run the old OS with them. Addresses held
	// by no node are freed at once. It returns how many addresses the
	// instance had.
	ReleaseInstanceAddresses(ctx context.Context, instanceID string) (int, error)
	// FreeNodeAddresses is for the end of a node's cleanup (or its
	// deletion): the addresses the node held for deleted instances are
	// free again. An address of a live instance on the node is kept. It
	// returns how many were freed.
	FreeNodeAddresses(ctx context.Context, nodeID string) (int, error)
	// FreeInstanceAddress frees one address of an instance at once: no
	// machine can be running with it (the instance's node was deleted, or
	// gave the instance up before booting it). It reports whether the
	// instance held it.
	FreeInstanceAddress(ctx context.Context, instanceID, poolID string, addr netip.Addr) (bool, error)
	// ReleaseInstanceAddress hands one address of a live instance to its
	// node (a rebuilt network no longer asks for it, but the old OS may run
	// with it until the rebuild boots): FreeNodeAddresses frees it then.
	ReleaseInstanceAddress(ctx context.Context, instanceID, poolID string, addr netip.Addr) (bool, error)
	// ListAllocations lists allocations: a pool's, in address order,
	// paginated (f.Page); or an instance's or a node's (all of them, by
	// pool and address; the other filters narrow them). At least one of
	// PoolID (an id), InstanceID and NodeID is required.
	ListAllocations(ctx context.Context, f AllocationFilter) ([]*baremetal.IPAllocation, string, error)
}

// AllocationFilter selects allocations (IPPools.ListAllocations).
type AllocationFilter struct {
	Page
	PoolID     string
	InstanceID string
	NodeID     string
}

// Page selects a page of a list: up to Limit items after the cursor After.
type Page struct {
	After string
	Limit int
}

// NodeFilter selects nodes. Zero values do not filter.
type NodeFilter struct {
	Page
	ProvisionState baremetal.ProvisionState
	Maintenance    *bool
	// Fault filters on a fault value; "any" matches every faulted node and
	// "none" every healthy one.
	Fault         string
	ResourceClass string
	// IncludeDeleting includes nodes in state deleting, hidden by default.
	IncludeDeleting bool
	// DueBefore, when set, selects nodes whose NextCheckAt is nil or not
	// after it (power sync backoff).
	DueBefore *time.Time
	// Owner selects the nodes a project owns; VisibleTo those a member of
	// the project may see (unowned, or owned by it).
	Owner     string
	VisibleTo string
	// Schedulable, when set, selects the nodes that can (or cannot) take
	// an instance now (baremetal.Node.Schedulable).
	Schedulable *bool
	// Requirements selects the nodes whose hardware and traits meet them
	// (baremetal.Placement.Unmet), whatever their state.
	Requirements baremetal.Requirements
}

// NodeCount is how many nodes share a provision state, fault and
// maintenance flag.
type NodeCount struct {
	ProvisionState baremetal.ProvisionState
	Fault          baremetal.Fault
	Maintenance    bool
	Count          int
}

// InstanceFilter selects instances. Zero values do not filter.
type InstanceFilter struct {
	Page
	Project string
	// Name matches exactly (names are unique per project).
	Name   string
	NodeID string
}

// MaxPageLimit caps any page size.
const MaxPageLimit = 1000

// MaxBMCKeys is how many keys one NodesWithBMCKeys looks up.
const MaxBMCKeys = 3
