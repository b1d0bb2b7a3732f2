package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/secret"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Queries implements store.Queries on a dialect's generated code (a
// Querier), on one store or transaction (New).
//
// Lookups by a key that no store could hold (store.Storable) answer "not
// found" or an empty list without asking the database: PostgreSQL would
// refuse the statement (and, in a transaction, every later one).
type Queries struct {
	dialect Dialect
	box     *secret.Box
	r, w, x Querier
}

var _ store.Queries = Queries{}

// New returns the store.Queries of one store or transaction of dialect d.
// read serves reads; write the writes and the reads that must see them (a
// write's version check); explain the reads that explain a failed write
// (naming the node that holds a BMC endpoint): on PostgreSQL a failed
// statement fails every later one in its transaction, so there it is the
// pool, where on SQLite it is the transaction itself (one connection:
// anything else would wait for it). box seals and opens secrets.
func New(d Dialect, box *secret.Box, read, write, explain Querier) Queries {
	return Queries{dialect: d, box: box, r: read, w: write, x: explain}
}

func (q Queries) wrap(op string, err error) error { return Wrap(q.dialect, op, err) }

func (q Queries) unique(err error) string { return q.dialect.UniqueViolation(err) }

func newID(id string) string {
	if id != "" {
		return id
	}
	return uuid.NewString()
}

// checkWritten turns a version-checked write that changed no row into
// the right error: the row is gone (not found) or has another version
// (conflict). stored reads the row's version.
func (q Queries) checkWritten(ctx context.Context, changed int64, kind, id string, version int64,
	stored func(Querier, context.Context, string) (int64, error)) error {
	if changed > 0 {
		return nil
	}
	v, err := stored(q.w, ctx, id)
	if errors.Is(err, sql.ErrNoRows) {
		return store.NotFound(kind, id)
	}
	if err != nil {
		return q.wrap("write "+kind, err)
	}
	return store.StaleVersion(kind, version, v)
}

// ---- nodes ----

func (q Queries) node(r *NodeRow) (*baremetal.Node, error) {
	n := &baremetal.Node{
		ID:     r.ID,
		Name:   r.Name,
		Driver: baremetal.Driver(r.Driver),
		BMC: baremetal.BMC{Address: r.BMCAddress, Username: r.BMCUsername, Insecure: r.BMCInsecure,
			SystemID: r.BMCSystemID, CipherSuite: int(r.BMCCipherSuite)},
		ResourceClass: r.ResourceClass,
		Properties:    baremetal.Properties{CPUs: int(r.CPUs), MemoryMB: int(r.MemoryMB), LocalGB: int(r.LocalGB), CPUArch: r.CPUArch},
		Overrides: baremetal.PropertyOverrides{CPUs: r.CPUsOverride, MemoryMB: r.MemoryMBOverride,
			LocalGB: r.LocalGBOverride, CPUArch: r.CPUArchOverride},
		Inspected: baremetal.Properties{CPUs: int(r.InspectedCPUs), MemoryMB: int(r.InspectedMemoryMB),
			LocalGB: int(r.InspectedLocalGB), CPUArch: r.InspectedCPUArch},
		CleanErase:        baremetal.CleanErase(r.CleanErase),
		InspectOnEnroll:   r.InspectOnEnroll,
		Maintenance:       r.Maintenance,
		MaintenanceReason: r.MaintenanceReason,
		PowerState:        baremetal.PowerState(r.PowerState),
		ProvisionState:    baremetal.ProvisionState(r.ProvisionState),
		Fault:             baremetal.Fault(r.Fault),
		LastError:         r.LastError,
		FaultSince:        (*time.Time)(r.FaultSince),
		BMCFailures:       int(r.BMCFailures),
		NextCheckAt:       (*time.Time)(r.NextCheckAt),
		LastSeenAt:        (*time.Time)(r.LastSeenAt),
		InstanceID:        r.InstanceID,
		Traits:            splitTraits(r.Traits),
		DerivedTraits:     splitTraits(r.DerivedTraits),
		Owner:             r.Owner,
		CreatedAt:         time.Time(r.CreatedAt),
		UpdatedAt:         time.Time(r.UpdatedAt),
		Version:           r.Version,
	}
	if at := time.Time(r.InspectedAt); !at.IsZero() {
		n.InspectedAt = &at
	}
	if r.HardwareSettings != "" {
		if err := json.Unmarshal([]byte(r.HardwareSettings), &n.Settings); err != nil {
			return nil, fmt.Errorf("node %s: hardware settings: %w", n.ID, err)
		}
	}
	if r.HardwareObserved != "" {
		if err := json.Unmarshal([]byte(r.HardwareObserved), &n.Observed); err != nil {
			return nil, fmt.Errorf("node %s: hardware observed: %w", n.ID, err)
		}
	}
	if r.Health != "" {
		if err := json.Unmarshal([]byte(r.Health), &n.Health); err != nil {
			return nil, fmt.Errorf("node %s: health: %w", n.ID, err)
		}
	}
	if r.Flow != "" {
		n.Flow = new(baremetal.Flow)
		if err := json.Unmarshal([]byte(r.Flow), n.Flow); err != nil {
			return nil, fmt.Errorf("node %s: flow: %w", n.ID, err)
		}
	}
	if r.BMCPasswordSealed != "" {
		var err error
		if n.BMC.Password, err = q.box.Open(r.BMCPasswordSealed); err != nil {
			return nil, fmt.Errorf("node %s: bmc password: %w", n.ID, err)
		}
	}
	return n, nil
}

// nodes returns the nodes of a list query's rows.
func (q Queries) nodes(rs []*NodeRow) ([]*baremetal.Node, error) {
	nodes := make([]*baremetal.Node, len(rs))
	for i, r := range rs {
		var err error
		if nodes[i], err = q.node(r); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// nodeWrite is the parameters of a write of n: its BMC password sealed,
// its bmc_key (store.BMCKeyArg). ID, Now and Version are the caller's.
func (q Queries) nodeWrite(n *baremetal.Node) (NodeWrite, error) {
	sealed := ""
	if n.BMC.Password != "" {
		var err error
		if sealed, err = q.box.Seal(n.BMC.Password); err != nil {
			return NodeWrite{}, err
		}
	}
	var key *string
	if k, ok := store.BMCKeyArg(n).(string); ok {
		key = &k
	}
	flow := ""
	if f := normalFlow(n.Flow); f != nil {
		b, err := json.Marshal(f)
		if err != nil {
			return NodeWrite{}, fmt.Errorf("node %s: flow: %w", n.Name, err)
		}
		flow = string(b)
	}
	settings, observed := "", ""
	if !n.Settings.IsZero() {
		b, err := json.Marshal(n.Settings)
		if err != nil {
			return NodeWrite{}, fmt.Errorf("node %s: hardware settings: %w", n.Name, err)
		}
		settings = string(b)
	}
	if o := n.Observed; o.ReadAt != nil || len(o.BIOS) > 0 || o.SecureBoot != nil || len(o.Lacks) > 0 {
		b, err := json.Marshal(o)
		if err != nil {
			return NodeWrite{}, fmt.Errorf("node %s: hardware observed: %w", n.Name, err)
		}
		observed = string(b)
	}
	health := ""
	if h := n.Health; h.ReadAt != nil || h.State != "" || h.LogAfter != "" {
		b, err := json.Marshal(h)
		if err != nil {
			return NodeWrite{}, fmt.Errorf("node %s: health: %w", n.Name, err)
		}
		health = string(b)
	}
	return NodeWrite{
		Name: n.Name, Driver: string(n.Driver), BMCAddress: n.BMC.Address, BMCUsername: n.BMC.Username,
		BMCPasswordSealed: sealed, BMCInsecure: n.BMC.Insecure, BMCSystemID: n.BMC.SystemID,
		BMCCipherSuite: int64(n.BMC.CipherSuite), ResourceClass: n.ResourceClass,
		CPUs: int64(n.Properties.CPUs), MemoryMB: int64(n.Properties.MemoryMB), LocalGB: int64(n.Properties.LocalGB),
		CPUArch: n.Properties.CPUArch, Maintenance: n.Maintenance, MaintenanceReason: n.MaintenanceReason,
		PowerState: string(n.PowerState), ProvisionState: string(n.ProvisionState), Fault: string(n.Fault),
		LastError: n.LastError, FaultSince: (*Time)(n.FaultSince), BMCFailures: int64(n.BMCFailures),
		NextCheckAt: (*Time)(n.NextCheckAt), LastSeenAt: (*Time)(n.LastSeenAt), InstanceID: n.InstanceID,
		CPUsOverride: n.Overrides.CPUs, MemoryMBOverride: n.Overrides.MemoryMB, LocalGBOverride: n.Overrides.LocalGB,
		CPUArchOverride: n.Overrides.CPUArch, InspectedCPUs: int64(n.Inspected.CPUs),
		InspectedMemoryMB: int64(n.Inspected.MemoryMB), InspectedLocalGB: int64(n.Inspected.LocalGB),
		InspectedCPUArch: n.Inspected.CPUArch, CleanErase: string(n.CleanErase), InspectOnEnroll: n.InspectOnEnroll,
		Flow: flow, Traits: joinTraits(n.Traits), DerivedTraits: joinTraits(n.DerivedTraits), Owner: n.Owner,
		HardwareSettings: settings, HardwareObserved: observed, Health: health, BMCKey: key,
	}, nil
}

// normalizeNodeTimes makes n's optional times what a read would return.
func normalizeNodeTimes(n *baremetal.Node) {
	n.FaultSince = store.TimestampPtr(n.FaultSince)
	n.NextCheckAt = store.TimestampPtr(n.NextCheckAt)
	n.LastSeenAt = store.TimestampPtr(n.LastSeenAt)
	n.Flow = normalFlow(n.Flow)
	n.Traits, n.DerivedTraits = baremetal.SortedTraits(n.Traits), baremetal.SortedTraits(n.DerivedTraits)
}

// normalFlow is f as a read returns it: a copy, its time at the store's
// precision, no empty notes.
func normalFlow(f *baremetal.Flow) *baremetal.Flow {
	if f == nil {
		return nil
	}
	c := *f
	c.StepStartedAt = store.Timestamp(c.StepStartedAt)
	if len(c.Notes) == 0 {
		c.Notes = nil
	}
	return &c
}

func (q Queries) GetNode(ctx context.Context, idOrName string) (*baremetal.Node, error) {
	return q.getNode(ctx, idOrName, q.r.GetNode)
}

// GetNodeWith is GetNode through a dialect's own query of the same
// columns (PostgreSQL's GetNodeForUpdate).
func GetNodeWith(ctx context.Context, q Queries, idOrName string,
	get func(context.Context, string) (*NodeRow, error)) (*baremetal.Node, error) {
	return q.getNode(ctx, idOrName, get)
}

// ClaimNode is store.Tx.ClaimNode through the dialect's ClaimNode (see
// nodes.<dialect>.sql), on the transaction's writes.
func ClaimNode(ctx context.Context, q Queries, c store.NodeClaim) (*baremetal.Node, error) {
	if !c.Storable() {
		return nil, store.NoFreeNode(c)
	}
	r, err := q.w.ClaimNode(ctx, ClaimArgs(c))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.NoFreeNode(c)
	}
	if err != nil {
		return nil, q.wrap("claim node", err)
	}
	n, err := q.node(r)
	if err != nil {
		return nil, q.wrap("claim node", err)
	}
	return n, nil
}

// ClaimArgs is c as the claim queries' parameters.
func ClaimArgs(c store.NodeClaim) NodeClaimArgs {
	r := c.Requirements
	return NodeClaimArgs{ResourceClass: c.ResourceClass, Driver: string(c.Driver), Project: c.Project,
		MinCpus: int64(r.MinCPUs), MinMemoryMB: int64(r.MinMemoryMB), MinDiskGB: int64(r.MinDiskGB),
		CPUArch: r.CPUArch, RequiredTraits: traitsJSON(r.RequiredTraits), ForbiddenTraits: traitsJSON(r.ForbiddenTraits)}
}

// traitsJSON is a list of traits as the queries' JSON array parameter.
func traitsJSON(ts []string) string {
	if len(ts) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ts) // strings always marshal
	return string(b)
}

// joinTraits and splitTraits convert a node's traits to and from their
// column: comma-joined, sorted (” for none), which the claim queries
// search with the commas around a trait (a trait holds no comma).
func joinTraits(ts []string) string { return strings.Join(baremetal.SortedTraits(ts), ",") }

func splitTraits(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

func (q Queries) getNode(ctx context.Context, idOrName string,
	get func(context.Context, string) (*NodeRow, error)) (*baremetal.Node, error) {
	if !store.Storable(idOrName) {
		return nil, store.NotFound("node", idOrName)
	}
	r, err := get(ctx, idOrName)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.NotFound("node", idOrName)
	}
	if err != nil {
		return nil, q.wrap("get node", err)
	}
	n, err := q.node(r)
	if err != nil {
		return nil, q.wrap("get node", err)
	}
	return n, nil
}

func (q Queries) ListNodes(ctx context.Context, f store.NodeFilter) ([]*baremetal.Node, string, error) {
	after, err := store.DecodeIDCursor(f.After)
	if err != nil {
		return nil, "", err
	}
	r := f.Requirements
	for _, t := range append(append([]string{}, r.RequiredTraits...), r.ForbiddenTraits...) {
		if t == "" || strings.Contains(t, ",") {
			return nil, "", nil // no trait is that (see store.NodeClaim.Storable)
		}
	}
	if !store.Storable(append(append([]string{string(f.ProvisionState), f.Fault, f.ResourceClass, f.Owner, f.VisibleTo, r.CPUArch},
		r.RequiredTraits...), r.ForbiddenTraits...)...) {
		return nil, "", nil // no node matches
	}
	limit := store.PageLimit(f.Limit)
	pageLimit := int64(limit) + 1 // one extra row tells whether there is a next page
	// Asking for deleting nodes by state shows them without the flag.
	hideState := ""
	if !f.IncludeDeleting && f.ProvisionState != baremetal.StateDeleting {
		hideState = string(baremetal.StateDeleting)
	}
	var rs []*NodeRow
	if f.ProvisionState == "" && f.Maintenance == nil && f.Fault == "" && f.ResourceClass == "" && f.DueBefore == nil &&
		f.Owner == "" && f.VisibleTo == "" && f.Schedulable == nil && r.IsZero() {
		rs, err = q.r.ListNodes(ctx, after, hideState, pageLimit)
	} else {
		// Fault "any" and "none" filter on whether there is a fault.
		fault, faulted := f.Fault, (*bool)(nil)
		if f.Fault == "any" || f.Fault == "none" {
			some := f.Fault == "any"
			fault, faulted = "", &some
		}
		rs, err = q.r.ListNodesFiltered(ctx, NodeListFilter{After: after, HideState: hideState,
			ProvisionState: string(f.ProvisionState), Maintenance: f.Maintenance, Fault: fault, Faulted: faulted,
			ResourceClass: f.ResourceClass, DueBefore: (*Time)(f.DueBefore), Owner: f.Owner, VisibleTo: f.VisibleTo,
			Schedulable: f.Schedulable, MinCpus: int64(r.MinCPUs), MinMemoryMB: int64(r.MinMemoryMB),
			MinDiskGB: int64(r.MinDiskGB), CPUArch: r.CPUArch, RequiredTraits: traitsJSON(r.RequiredTraits),
			ForbiddenTraits: traitsJSON(r.ForbiddenTraits), PageLimit: pageLimit})
	}
	if err != nil {
		return nil, "", q.wrap("list nodes", err)
	}
	nodes, err := q.nodes(rs)
	if err != nil {
		return nil, "", q.wrap("list nodes", err)
	}
	nodes, next := store.TrimPage(nodes, limit, func(n *baremetal.Node) string { return n.ID })
	return nodes, next, nil
}

// GetNodes passes the ids as one JSON array (see nodes.sql).
func (q Queries) GetNodes(ctx context.Context, ids []string) ([]*baremetal.Node, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > store.MaxPageLimit {
		return nil, q.wrap("get nodes", fmt.Errorf("%d ids, at most %d", len(ids), store.MaxPageLimit))
	}
	// An id no store can hold matches nothing, and PostgreSQL would refuse
	// the whole array for it.
	keep := make([]string, 0, len(ids))
	for _, id := range ids {
		if store.Storable(id) {
			keep = append(keep, id)
		}
	}
	list, err := json.Marshal(keep)
	if err != nil {
		return nil, q.wrap("get nodes", err)
	}
	rs, err := q.r.GetNodes(ctx, string(list))
	if err != nil {
		return nil, q.wrap("get nodes", err)
	}
	nodes, err := q.nodes(rs)
	if err != nil {
		return nil, q.wrap("get nodes", err)
	}
	return nodes, nil
}

func (q Queries) CountNodes(ctx context.Context) ([]store.NodeCount, error) {
	rs, err := q.r.CountNodes(ctx)
	if err != nil {
		return nil, q.wrap("count nodes", err)
	}
	var out []store.NodeCount
	for _, r := range rs {
		out = append(out, store.NodeCount{ProvisionState: baremetal.ProvisionState(r.ProvisionState),
			Fault: baremetal.Fault(r.Fault), Maintenance: r.Maintenance, Count: int(r.Count)})
	}
	return out, nil
}

func (q Queries) InsertNode(ctx context.Context, n *baremetal.Node) error {
	w, err := q.nodeWrite(n)
	if err != nil {
		return q.wrap("insert node", err)
	}
	id, now := newID(n.ID), store.Now()
	w.ID, w.Now = id, Time(now)
	if _, err := q.w.InsertNode(ctx, w); err != nil {
		switch q.unique(err) {
		case NodesNameKey:
			return store.Duplicate("name", fmt.Sprintf("a node named %q already exists", n.Name), err)
		case NodesPkey:
			return store.Duplicate("id", fmt.Sprintf("a node with id %q already exists", id), err)
		case NodesBMCKeyKey:
			return q.duplicateBMC(ctx, w.BMCKey, err)
		}
		return q.wrap("insert node", err)
	}
	n.ID, n.CreatedAt, n.UpdatedAt, n.Version = id, now, now, 1
	normalizeNodeTimes(n)
	return nil
}

func (q Queries) UpdateNode(ctx context.Context, n *baremetal.Node) error {
	w, err := q.nodeWrite(n)
	if err != nil {
		return q.wrap("update node", err)
	}
	now := store.Now()
	w.ID, w.Now, w.Version = n.ID, Time(now), n.Version
	changed, err := q.w.UpdateNode(ctx, w)
	if err != nil {
		switch q.unique(err) {
		case NodesNameKey:
			return store.Duplicate("name", fmt.Sprintf("a node named %q already exists", n.Name), err)
		case NodesBMCKeyKey:
			return q.duplicateBMC(ctx, w.BMCKey, err)
		}
		return q.wrap("update node", err)
	}
	if err := q.checkWritten(ctx, changed, "node", n.ID, n.Version, Querier.NodeVersion); err != nil {
		return err
	}
	n.Version++
	n.UpdatedAt = now
	normalizeNodeTimes(n)
	return nil
}

// duplicateBMC explains a bmc_key violation by naming the node holding
// the key, read on the explain handle (see New): a holder
// committed by another transaction is visible there, since the violation
// waited for its commit.
func (q Queries) duplicateBMC(ctx context.Context, key *string, cause error) error {
	h, err := q.bmcHolder(ctx, q.x, key)
	if err != nil {
		return q.wrap("explain a duplicate bmc key", fmt.Errorf("%w (and reading the node holding it: %v)", cause, err))
	}
	return store.DuplicateBMC(h, cause)
}

// bmcHolder returns the node holding key, nil when none does.
func (q Queries) bmcHolder(ctx context.Context, on Querier, key *string) (*store.BMCHolder, error) {
	r, err := on.NodeByBMCKey(ctx, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &store.BMCHolder{ID: r.ID, Name: r.Name, Address: r.BMCAddress, SystemID: r.BMCSystemID,
		State: baremetal.ProvisionState(r.ProvisionState)}, nil
}

func (q Queries) NodesOnBMC(ctx context.Context, endpoint string) ([]store.BMCHolder, error) {
	if endpoint == "" || !store.Storable(endpoint) {
		return nil, nil
	}
	past := endpoint + "0" // see NodesOnBMCEndpoint
	rs, err := q.r.NodesOnBMCEndpoint(ctx, &endpoint, &past)
	if err != nil {
		return nil, q.wrap("list the nodes on a BMC", err)
	}
	var out []store.BMCHolder
	for _, r := range rs {
		out = append(out, store.BMCHolder{ID: r.ID, Name: r.Name, Address: r.BMCAddress, SystemID: r.BMCSystemID,
			State: baremetal.ProvisionState(r.ProvisionState)})
	}
	return out, nil
}

func (q Queries) NodesWithBMCKeys(ctx context.Context, keys ...string) ([]store.BMCHolder, error) {
	if len(keys) > store.MaxBMCKeys {
		return nil, fmt.Errorf("nodes with BMC keys: %d keys, at most %d", len(keys), store.MaxBMCKeys)
	}
	var arg [store.MaxBMCKeys]*string
	for i, k := range keys {
		if k != "" && store.Storable(k) {
			arg[i] = &k
		}
	}
	if arg == [store.MaxBMCKeys]*string{} {
		return nil, nil
	}
	rs, err := q.r.NodesByBMCKeys(ctx, arg[0], arg[1], arg[2])
	if err != nil {
		return nil, q.wrap("read the nodes holding BMC keys", err)
	}
	out := make([]store.BMCHolder, 0, len(rs))
	for _, r := range rs {
		out = append(out, store.BMCHolder{ID: r.ID, Name: r.Name, Address: r.BMCAddress, SystemID: r.BMCSystemID,
			State: baremetal.ProvisionState(r.ProvisionState)})
	}
	return out, nil
}

func (q Queries) DeleteNode(ctx context.Context, id string, version int64) error {
	if !store.Storable(id) {
		return store.NotFound("node", id)
	}
	changed, err := q.w.DeleteNode(ctx, id, version)
	if err != nil {
		return q.wrap("delete node", err)
	}
	return q.checkWritten(ctx, changed, "node", id, version, Querier.NodeVersion)
}

// Backfill is the store.BMCKeyBackfill of these queries (run in one
// transaction at Open).
func (q Queries) Backfill() store.BMCKeyBackfill { return backfill{q} }

type backfill struct{ q Queries }

func (b backfill) UnkeyedNodes(ctx context.Context) ([]store.UnkeyedNode, error) {
	rs, err := b.q.w.UnkeyedNodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.UnkeyedNode
	for _, r := range rs {
		out = append(out, store.UnkeyedNode{ID: r.ID, Name: r.Name, Address: r.BMCAddress, SystemID: r.BMCSystemID,
			Driver: baremetal.Driver(r.Driver)})
	}
	return out, nil
}

func (b backfill) BMCHolder(ctx context.Context, key string) (*store.BMCHolder, error) {
	return b.q.bmcHolder(ctx, b.q.w, &key)
}

func (b backfill) SetBMCKey(ctx context.Context, id, key string) error {
	return b.q.w.SetNodeBMCKey(ctx, &key, id)
}

func (q Queries) GetBIOSRegistry(ctx context.Context, name string) (baremetal.BIOSRegistry, error) {
	if !store.Storable(name) {
		return nil, store.NotFound("BIOS attribute registry", name)
	}
	data, err := q.r.GetBIOSRegistry(ctx, name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.NotFound("BIOS attribute registry", name)
	}
	if err != nil {
		return nil, q.wrap("get BIOS registry", err)
	}
	var reg baremetal.BIOSRegistry
	if err := json.Unmarshal([]byte(data), &reg); err != nil {
		return nil, fmt.Errorf("BIOS registry %s: %w", name, err)
	}
	return reg, nil
}

func (q Queries) PutBIOSRegistry(ctx context.Context, name string, reg baremetal.BIOSRegistry) error {
	if !store.Storable(name) {
		return baremetal.FieldErrorf("registry", "BIOS registry name %q cannot be stored", name)
	}
	b, err := json.Marshal(reg)
	if err != nil {
		return err
	}
	if err := q.w.PutBIOSRegistry(ctx, name, string(b)); err != nil {
		return q.wrap("put BIOS registry", err)
	}
	return nil
}
