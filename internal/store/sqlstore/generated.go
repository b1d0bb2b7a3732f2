package sqlstore

import "context"

// The rows below are what every dialect's generated code returns and
// takes, field for field as sqlc names and types them (see sqlc.yaml).
// Each is the core type of the constraint of one of Bind's type
// parameters: a dialect whose query returns other columns, in another
// order or of another type, does not compile. They are aliases of
// unnamed struct types because only those can be the core type of a
// constraint (~T).

// nodeRow is a node as every read returns it: a row of the view
// node_rows (migrations 0012, 0014), the nodes row but bmc_key and its
// inventory's inspected_at (zero when none).
type nodeRow = struct {
	ID                string
	Name              string
	Driver            string
	BMCAddress        string
	BMCUsername       string
	BMCPasswordSealed string
	BMCInsecure       bool
	BMCSystemID       string
	BMCCipherSuite    int64
	ResourceClass     string
	CPUs              int64
	MemoryMB          int64
	LocalGB           int64
	CPUArch           string
	Maintenance       bool
	MaintenanceReason string
	PowerState        string
	ProvisionState    string
	Fault             string
	LastError         string
	FaultSince        *Time
	BMCFailures       int64
	NextCheckAt       *Time
	LastSeenAt        *Time
	InstanceID        string
	CreatedAt         Time
	UpdatedAt         Time
	Version           int64
	CPUsOverride      bool
	MemoryMBOverride  bool
	LocalGBOverride   bool
	CPUArchOverride   bool
	InspectedCPUs     int64
	InspectedMemoryMB int64
	InspectedLocalGB  int64
	InspectedCPUArch  string
	CleanErase        string
	InspectOnEnroll   *bool
	Flow              string
	InspectedAt       Time
}

// nodeWrite is the parameters of InsertNode and UpdateNode: the node's
// columns, its bmc_key, the time of the write, the version it replaces
// (0 for an insert) and the id.
type nodeWrite = struct {
	Name              string
	Driver            string
	BMCAddress        string
	BMCUsername       string
	BMCPasswordSealed string
	BMCInsecure       bool
	BMCSystemID       string
	BMCCipherSuite    int64
	ResourceClass     string
	CPUs              int64
	MemoryMB          int64
	LocalGB           int64
	CPUArch           string
	Maintenance       bool
	MaintenanceReason string
	PowerState        string
	ProvisionState    string
	Fault             string
	LastError         string
	FaultSince        *Time
	BMCFailures       int64
	NextCheckAt       *Time
	LastSeenAt        *Time
	InstanceID        string
	CPUsOverride      bool
	MemoryMBOverride  bool
	LocalGBOverride   bool
	CPUArchOverride   bool
	InspectedCPUs     int64
	InspectedMemoryMB int64
	InspectedLocalGB  int64
	InspectedCPUArch  string
	CleanErase        string
	InspectOnEnroll   *bool
	Flow              string
	BMCKey            *string
	Now               Time
	Version           int64
	ID                string
}

type countRow = struct {
	ProvisionState string
	Fault          string
	Maintenance    bool
	Count          int64
}

// holderRow is the node holding a BMC key (NodeByBMCKey), or one of the
// nodes on a BMC endpoint (NodesOnBMCEndpoint).
type holderRow = struct {
	ID             string
	Name           string
	BMCAddress     string
	BMCSystemID    string
	ProvisionState string
}

// unkeyedRow is a node without a bmc_key (UnkeyedNodes).
type unkeyedRow = struct {
	ID          string
	Name        string
	Driver      string
	BMCAddress  string
	BMCSystemID string
}

type instanceRow = struct {
	ID               string
	Name             string
	Project          string
	NodeID           string
	ResourceClass    string
	ImageURL         string
	ImageChecksum    string
	UserData         string
	Metadata         string
	State            string
	PowerState       string
	LastError        string
	ReadyTokenHash   string
	Ready            bool
	CreatedAt        Time
	UpdatedAt        Time
	Version          int64
	ReadyTokenSealed string
	DeployTimeoutMS  int64
	BootedAt         *Time
	DeployMethod     string
	RootDevice       string
}

// instanceWrite is the parameters of InsertInstance and UpdateInstance,
// in the order of nodeWrite's.
type instanceWrite = struct {
	Name             string
	Project          string
	NodeID           string
	ResourceClass    string
	ImageURL         string
	ImageChecksum    string
	UserData         string
	Metadata         string
	State            string
	PowerState       string
	LastError        string
	ReadyTokenHash   string
	Ready            bool
	ReadyTokenSealed string
	DeployTimeoutMS  int64
	BootedAt         *Time
	DeployMethod     string
	RootDevice       string
	Now              Time
	Version          int64
	ID               string
}

type eventRow = struct {
	ID      int64
	NodeID  string
	Time    Time
	Actor   string
	Type    string
	Field   string
	Old     string
	New     string
	Message string
}

type tokenRow = struct {
	ID        string
	Name      string
	Role      string
	Project   string
	Hash      string
	ExpiresAt *Time
	CreatedAt Time
}

type sessionRow = struct {
	NodeID      string
	Purpose     string
	TokenSealed string
	TokenHash   string
	Command     string
	Status      string
	Inventory   string
	BootID      string
	LastSeenAt  *Time
	CreatedAt   Time
	UpdatedAt   Time
	Version     int64
	NetbootIDs  string
	IdentityIDs string
	AgentAddr   string
	Refused     string
}

// activityRow is an agent session without its token and inventory
// (ListAgentActivity).
type activityRow = struct {
	NodeID     string
	Purpose    string
	Command    string
	Status     string
	LastSeenAt *Time
}

type inventoryRow = struct {
	NodeID      string
	Data        string
	InspectedAt Time
}

type keyRow = struct {
	TokenID     string
	Key         string
	Kind        string
	RequestHash string
	ResourceID  string
	CreatedAt   Time
}

type (
	nodeShape          interface{ ~nodeRow }
	nodeWriteShape     interface{ ~nodeWrite }
	countShape         interface{ ~countRow }
	holderShape        interface{ ~holderRow }
	unkeyedShape       interface{ ~unkeyedRow }
	instanceShape      interface{ ~instanceRow }
	instanceWriteShape interface{ ~instanceWrite }
	eventShape         interface{ ~eventRow }
	tokenShape         interface{ ~tokenRow }
	sessionShape       interface{ ~sessionRow }
	activityShape      interface{ ~activityRow }
	inventoryShape     interface{ ~inventoryRow }
	keyShape           interface{ ~keyRow }
)

// Plain is the part of a dialect's generated code whose signatures name
// none of the dialect's own types, so that Queries calls it directly.
// Parameters come in the order the queries name them; :execrows queries
// return the number of rows they changed.
type Plain interface {
	DeleteNode(ctx context.Context, id string, version int64) (int64, error)
	NodeVersion(ctx context.Context, id string) (int64, error)
	SetNodeBMCKey(ctx context.Context, bmcKey *string, id string) error

	InsertEvent(ctx context.Context, nodeID string, time Time, actor, typ, field, old, new, message string) (int64, error)

	DeleteInstance(ctx context.Context, id string, version int64) (int64, error)
	InstanceVersion(ctx context.Context, id string) (int64, error)
	CountInstances(ctx context.Context, project string) (int64, error)

	InsertToken(ctx context.Context, id, name, role, project, hash string, expiresAt *Time, createdAt Time) error
	DeleteToken(ctx context.Context, id string) (int64, error)
	CountTokens(ctx context.Context) (int64, error)

	GetQuota(ctx context.Context, project string) (int64, error)
	SetQuota(ctx context.Context, project string, instances int64) error

	PutAgentSession(ctx context.Context, nodeID, purpose, tokenSealed, tokenHash, command, status, inventory, bootID string,
		lastSeenAt *Time, createdAt Time, netbootIDs, identityIDs string) error
	UpdateAgentSession(ctx context.Context, command, status, inventory, bootID string, lastSeenAt *Time, updatedAt Time,
		agentAddr, refused, nodeID string, version int64) (int64, error)
	AgentSessionVersion(ctx context.Context, nodeID string) (int64, error)
	DeleteAgentSession(ctx context.Context, nodeID string) error

	SetInventory(ctx context.Context, nodeID, data string, inspectedAt Time) error

	ExpireIdempotencyKeys(ctx context.Context, before Time) error
	InsertIdempotencyKey(ctx context.Context, tokenID, key, kind, requestHash, resourceID string, createdAt Time) error
}

// Generated is the code sqlc generates for a dialect (from the shared
// queries and its own), as the shared code calls it. Its type parameters
// are the dialect's own row and parameter types, of the shapes above.
type Generated[
	N nodeShape, NI, NU nodeWriteShape, C countShape, H, HL holderShape, U unkeyedShape,
	I instanceShape, II, IU instanceWriteShape, E eventShape, T tokenShape, S sessionShape,
	A activityShape, V inventoryShape, K keyShape,
] interface {
	Plain

	GetNode(ctx context.Context, idOrName string) (*N, error)
	ListNodes(ctx context.Context, after, hideState string, pageLimit int64) ([]*N, error)
	ListNodesFiltered(ctx context.Context, after, hideState, provisionState string, maintenance *bool, fault string,
		faulted *bool, resourceClass string, dueBefore *Time, pageLimit int64) ([]*N, error)
	GetNodes(ctx context.Context, idsJSON string) ([]*N, error)
	InsertNode(ctx context.Context, arg NI) (int64, error)
	UpdateNode(ctx context.Context, arg NU) (int64, error)
	CountNodes(ctx context.Context) ([]*C, error)
	NodeByBMCKey(ctx context.Context, bmcKey *string) (*H, error)
	NodesOnBMCEndpoint(ctx context.Context, endpoint, past *string) ([]*HL, error)
	UnkeyedNodes(ctx context.Context) ([]*U, error)

	GetInstance(ctx context.Context, idOrName string) ([]*I, error)
	ListInstances(ctx context.Context, after, project string, pageLimit int64) ([]*I, error)
	ListInstancesByName(ctx context.Context, name, after, project, nodeID string, pageLimit int64) ([]*I, error)
	ListInstancesByNode(ctx context.Context, nodeID, after, project string, pageLimit int64) ([]*I, error)
	InsertInstance(ctx context.Context, arg II) (int64, error)
	UpdateInstance(ctx context.Context, arg IU) (int64, error)

	ListEvents(ctx context.Context, nodeID string, after, pageLimit int64) ([]*E, error)

	GetTokenByHash(ctx context.Context, hash string) (*T, error)
	GetToken(ctx context.Context, id string) (*T, error)
	ListTokens(ctx context.Context, after string, pageLimit int64) ([]*T, error)

	GetAgentSession(ctx context.Context, nodeID string) (*S, error)
	GetAgentSessionByTokenHash(ctx context.Context, tokenHash string) (*S, error)
	FindAgentSessionsByNetbootID(ctx context.Context, pattern string) ([]*S, error)
	ListAgentActivity(ctx context.Context, fromID, toID string) ([]*A, error)
	GetInventory(ctx context.Context, nodeID string) (*V, error)
	GetIdempotencyKey(ctx context.Context, tokenID, key string, since Time) (*K, error)
}

// nodeFilter is a ListNodes call: without filters (but hideState) it is
// ListNodes, else ListNodesFiltered.
type nodeFilter struct {
	after, hideState string
	filtered         bool
	provisionState   string
	maintenance      *bool
	fault            string
	faulted          *bool
	resourceClass    string
	dueBefore        *Time
	limit            int64
}

// typed holds the calls of Generated that name the dialect's own types,
// each turned into a function of the shared rows; a list is handed to
// its caller row by row (yield), without a second slice of it. Bind makes
// it once per dialect.
type typed[Q any] struct {
	getNode        func(Q, context.Context, string) (nodeRow, error)
	listNodes      func(Q, context.Context, nodeFilter, func(nodeRow) error) error
	getNodes       func(Q, context.Context, string, func(nodeRow) error) error
	insertNode     func(Q, context.Context, nodeWrite) (int64, error)
	updateNode     func(Q, context.Context, nodeWrite) (int64, error)
	countNodes     func(Q, context.Context, func(countRow) error) error
	nodeByBMCKey   func(Q, context.Context, *string) (holderRow, error)
	nodesOnBMC     func(Q, context.Context, string, func(holderRow) error) error
	unkeyedNodes   func(Q, context.Context, func(unkeyedRow) error) error
	getInstance    func(Q, context.Context, string, func(instanceRow) error) error
	listInstances  func(Q, context.Context, instanceFilter, func(instanceRow) error) error
	insertInstance func(Q, context.Context, instanceWrite) (int64, error)
	updateInstance func(Q, context.Context, instanceWrite) (int64, error)
	listEvents     func(Q, context.Context, eventFilter, func(eventRow) error) error
	getTokenByHash func(Q, context.Context, string) (tokenRow, error)
	getToken       func(Q, context.Context, string) (tokenRow, error)
	listTokens     func(Q, context.Context, tokenFilter, func(tokenRow) error) error
	getSession     func(Q, context.Context, string) (sessionRow, error)
	getSessionHash func(Q, context.Context, string) (sessionRow, error)
	findSessions   func(Q, context.Context, string, func(sessionRow) error) error
	listActivity   func(Q, context.Context, activityFilter, func(activityRow) error) error
	getInventory   func(Q, context.Context, string) (inventoryRow, error)
	getKey         func(Q, context.Context, keyFilter) (keyRow, error)
}

// instanceFilter is a ListInstances call: the filter picks the statement
// whose index serves it (see instances.sql).
type instanceFilter struct {
	after, project, name, nodeID string
	limit                        int64
}

type eventFilter struct {
	nodeID       string
	after, limit int64
}

type tokenFilter struct {
	after string
	limit int64
}

// activityFilter is a range of node ids, both ends included.
type activityFilter struct {
	fromID, toID string
}

type keyFilter struct {
	tokenID, key string
	since        Time
}

// Bind binds a dialect: its generated code (the type of the second
// argument: a nil *dbsqlc.Queries, only its type is used) and its errors. The
// type parameters after Q are inferred from Q's methods.
func Bind[
	Q Generated[N, NI, NU, C, H, HL, U, I, II, IU, E, T, S, A, V, K],
	N nodeShape, NI, NU nodeWriteShape, C countShape, H, HL holderShape, U unkeyedShape,
	I instanceShape, II, IU instanceWriteShape, E eventShape, T tokenShape, S sessionShape,
	A activityShape, V inventoryShape, K keyShape,
](d Dialect, _ Q) *Binding[Q] {
	return &Binding[Q]{dialect: d, typed: typed[Q]{
		getNode: one(Q.GetNode, nodeOf[N]),
		listNodes: func(q Q, ctx context.Context, f nodeFilter, yield func(nodeRow) error) error {
			var rs []*N
			var err error
			if f.filtered {
				rs, err = q.ListNodesFiltered(ctx, f.after, f.hideState, f.provisionState, f.maintenance, f.fault,
					f.faulted, f.resourceClass, f.dueBefore, f.limit)
			} else {
				rs, err = q.ListNodes(ctx, f.after, f.hideState, f.limit)
			}
			return each(rs, err, nodeOf[N], yield)
		},
		getNodes:     many(Q.GetNodes, nodeOf[N]),
		insertNode:   write(Q.InsertNode, nodeWriteAs[NI]),
		updateNode:   write(Q.UpdateNode, nodeWriteAs[NU]),
		countNodes:   all(Q.CountNodes, countOf[C]),
		nodeByBMCKey: one(Q.NodeByBMCKey, holderOf[H]),
		nodesOnBMC: func(q Q, ctx context.Context, endpoint string, yield func(holderRow) error) error {
			past := endpoint + "0" // see NodesOnBMCEndpoint
			rs, err := q.NodesOnBMCEndpoint(ctx, &endpoint, &past)
			return each(rs, err, holderOf[HL], yield)
		},
		unkeyedNodes: all(Q.UnkeyedNodes, unkeyedOf[U]),
		getInstance:  many(Q.GetInstance, instanceOf[I]),
		listInstances: func(q Q, ctx context.Context, f instanceFilter, yield func(instanceRow) error) error {
			var rs []*I
			var err error
			switch {
			case f.name != "":
				rs, err = q.ListInstancesByName(ctx, f.name, f.after, f.project, f.nodeID, f.limit)
			case f.nodeID != "":
				rs, err = q.ListInstancesByNode(ctx, f.nodeID, f.after, f.project, f.limit)
			default:
				rs, err = q.ListInstances(ctx, f.after, f.project, f.limit)
			}
			return each(rs, err, instanceOf[I], yield)
		},
		insertInstance: write(Q.InsertInstance, instanceWriteAs[II]),
		updateInstance: write(Q.UpdateInstance, instanceWriteAs[IU]),
		listEvents: func(q Q, ctx context.Context, f eventFilter, yield func(eventRow) error) error {
			rs, err := q.ListEvents(ctx, f.nodeID, f.after, f.limit)
			return each(rs, err, eventOf[E], yield)
		},
		getTokenByHash: one(Q.GetTokenByHash, tokenOf[T]),
		getToken:       one(Q.GetToken, tokenOf[T]),
		listTokens: func(q Q, ctx context.Context, f tokenFilter, yield func(tokenRow) error) error {
			rs, err := q.ListTokens(ctx, f.after, f.limit)
			return each(rs, err, tokenOf[T], yield)
		},
		getSession:     one(Q.GetAgentSession, sessionOf[S]),
		getSessionHash: one(Q.GetAgentSessionByTokenHash, sessionOf[S]),
		findSessions:   many(Q.FindAgentSessionsByNetbootID, sessionOf[S]),
		getInventory:   one(Q.GetInventory, inventoryOf[V]),
		listActivity: func(q Q, ctx context.Context, f activityFilter, yield func(activityRow) error) error {
			rs, err := q.ListAgentActivity(ctx, f.fromID, f.toID)
			return each(rs, err, activityOf[A], yield)
		},
		getKey: func(q Q, ctx context.Context, f keyFilter) (keyRow, error) {
			r, err := q.GetIdempotencyKey(ctx, f.tokenID, f.key, f.since)
			if err != nil {
				return keyRow{}, err
			}
			return keyRow(*r), nil
		},
	}}
}

// The conversions between a dialect's types and the shared ones: the
// types have one underlying struct type, so each is a copy. (sqlc
// returns rows by pointer: see sqlc.yaml.)
func nodeOf[R nodeShape](r *R) nodeRow                        { return nodeRow(*r) }
func countOf[R countShape](r *R) countRow                     { return countRow(*r) }
func holderOf[R holderShape](r *R) holderRow                  { return holderRow(*r) }
func unkeyedOf[R unkeyedShape](r *R) unkeyedRow               { return unkeyedRow(*r) }
func instanceOf[R instanceShape](r *R) instanceRow            { return instanceRow(*r) }
func eventOf[R eventShape](r *R) eventRow                     { return eventRow(*r) }
func tokenOf[R tokenShape](r *R) tokenRow                     { return tokenRow(*r) }
func sessionOf[R sessionShape](r *R) sessionRow               { return sessionRow(*r) }
func activityOf[R activityShape](r *R) activityRow            { return activityRow(*r) }
func inventoryOf[R inventoryShape](r *R) inventoryRow         { return inventoryRow(*r) }
func nodeWriteAs[P nodeWriteShape](w nodeWrite) P             { return P(w) }
func instanceWriteAs[P instanceWriteShape](w instanceWrite) P { return P(w) }

// one makes a query of one argument that returns one row return the
// shared row.
func one[Q, A, R, S any](f func(Q, context.Context, A) (*R, error), c func(*R) S) func(Q, context.Context, A) (S, error) {
	return func(q Q, ctx context.Context, a A) (S, error) {
		r, err := f(q, ctx, a)
		if err != nil {
			var none S
			return none, err
		}
		return c(r), nil
	}
}

// many is one for a query that returns a list.
func many[Q, A, R, S any](f func(Q, context.Context, A) ([]*R, error), c func(*R) S) func(Q, context.Context, A, func(S) error) error {
	return func(q Q, ctx context.Context, a A, yield func(S) error) error {
		rs, err := f(q, ctx, a)
		return each(rs, err, c, yield)
	}
}

// all is many for a query without arguments.
func all[Q, R, S any](f func(Q, context.Context) ([]*R, error), c func(*R) S) func(Q, context.Context, func(S) error) error {
	return func(q Q, ctx context.Context, yield func(S) error) error {
		rs, err := f(q, ctx)
		return each(rs, err, c, yield)
	}
}

// write makes a write whose parameters are a struct take the shared one.
func write[Q, W, P any](f func(Q, context.Context, P) (int64, error), c func(W) P) func(Q, context.Context, W) (int64, error) {
	return func(q Q, ctx context.Context, w W) (int64, error) {
		return f(q, ctx, c(w))
	}
}

// each hands the rows of a list query, converted, to yield, unless the
// query failed; yield's error stops it.
func each[R, S any](rs []*R, err error, c func(*R) S, yield func(S) error) error {
	if err != nil {
		return err
	}
	for _, r := range rs {
		if err := yield(c(r)); err != nil {
			return err
		}
	}
	return nil
}
