package sqlstore

// The rows and parameters of the queries, as the shared code reads and
// writes them (Querier). Hand-written: each is the struct sqlc generates
// for its query in both dialects, field for field as sqlc names and types
// them (sqlc.yaml), so that each dialect's querier.go converts its own
// row to it, a pointer conversion that compiles only while the fields
// are the same. A query that gains a column gains a field here.

// NodeRow is a node as every read of one returns it: a row of the view
// node_rows (migrations 0012, 0014), the nodes row but bmc_key and its
// inventory's inspected_at (zero when none).
type NodeRow struct {
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
	Traits            string
	DerivedTraits     string
	Owner             string
	HardwareSettings  string
	HardwareObserved  string
	Health            string
	InspectedAt       Time
}

// NodeWrite is the parameters of InsertNode and UpdateNode: the node's
// columns, its bmc_key, the time of the write, the version it replaces
// (0 for an insert) and the id.
type NodeWrite struct {
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
	Traits            string
	DerivedTraits     string
	Owner             string
	HardwareSettings  string
	HardwareObserved  string
	Health            string
	BMCKey            *string
	Now               Time
	Version           int64
	ID                string
}

// NodeCountRow is one group of CountNodes.
type NodeCountRow struct {
	ProvisionState string
	Fault          string
	Maintenance    bool
	Count          int64
}

// BMCHolderRow is the node holding a BMC key (NodeByBMCKey), or one of the
// nodes on a BMC endpoint (NodesOnBMCEndpoint).
type BMCHolderRow struct {
	ID             string
	Name           string
	BMCAddress     string
	BMCSystemID    string
	ProvisionState string
}

// UnkeyedNodeRow is a node without a bmc_key (UnkeyedNodes).
type UnkeyedNodeRow struct {
	ID          string
	Name        string
	Driver      string
	BMCAddress  string
	BMCSystemID string
}

// InstanceRow is an instance as every read returns it.
type InstanceRow struct {
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
	Rebuilds         int64
	Network          string
	Addresses        string
	Requirements     string
}

// InstanceWrite is the parameters of InsertInstance and UpdateInstance,
// in the order of NodeWrite's.
type InstanceWrite struct {
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
	Rebuilds         int64
	Network          string
	Addresses        string
	Requirements     string
	Now              Time
	Version          int64
	ID               string
}

// EventRow is an event (ListEvents).
type EventRow struct {
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

// TokenRow is an API token.
type TokenRow struct {
	ID        string
	Name      string
	Role      string
	Project   string
	Hash      string
	ExpiresAt *Time
	CreatedAt Time
}

// SessionRow is a node's agent session.
type SessionRow struct {
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

// ActivityRow is an agent session without its token and inventory
// (ListAgentActivity).
type ActivityRow struct {
	NodeID     string
	Purpose    string
	Command    string
	Status     string
	LastSeenAt *Time
}

// ConsoleRow is a node's console log and its recorder's lease.
type ConsoleRow struct {
	NodeID     string
	Log        string
	Holder     string
	LeaseUntil *Time
	UpdatedAt  Time
}

// InventoryRow is a node's inventory (GetInventory).
type InventoryRow struct {
	NodeID      string
	Data        string
	InspectedAt Time
}

// IdempotencyKeyRow is a create recorded under a token's key.
type IdempotencyKeyRow struct {
	TokenID     string
	Key         string
	Kind        string
	RequestHash string
	ResourceID  string
	CreatedAt   Time
}

// IPPoolRow is an address pool (migration 0015).
type IPPoolRow struct {
	ID            string
	Name          string
	CIDR          string
	Gateway       string
	Ranges        string
	DNSServers    string
	SearchDomains string
	Description   string
	CreatedAt     Time
	UpdatedAt     Time
	Version       int64
}

// IPAllocationRow is an address held in a pool.
type IPAllocationRow struct {
	PoolID     string
	Address    string
	Ord        int64
	InstanceID *string
	NodeID     *string
	CreatedAt  Time
}

// NodeListFilter is the parameters of ListNodesFiltered: every filter of
// store.NodeFilter, the traits as JSON arrays.
type NodeListFilter struct {
	After           string
	HideState       string
	ProvisionState  string
	Maintenance     *bool
	Fault           string
	Faulted         *bool
	ResourceClass   string
	DueBefore       *Time
	Owner           string
	VisibleTo       string
	Schedulable     *bool
	MinCpus         int64
	MinMemoryMB     int64
	MinDiskGB       int64
	CPUArch         string
	RequiredTraits  string
	ForbiddenTraits string
	PageLimit       int64
}

// NodeClaimArgs is the parameters of ClaimNode and NextFreeNode (after
// the cursor): a store.NodeClaim, the traits as JSON arrays.
type NodeClaimArgs struct {
	ResourceClass   string
	Driver          string
	Project         string
	MinCpus         int64
	MinMemoryMB     int64
	MinDiskGB       int64
	CPUArch         string
	RequiredTraits  string
	ForbiddenTraits string
}
