package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// ---- address pools ----
//
// A pool's allocations are rows keyed by (pool_id, ord), ord being the
// address's offset in the pool's subnet (AddressOrd). The lowest free
// address is found by counting held addresses in halving ranges of ords
// (firstFree), so a pool of 60 000 held addresses is never read into
// memory.
//
// The methods here that change a pool's allocations or ranges take the
// pool's lock first (GetIPPoolForUpdate) and must run in a transaction,
// where the lock lasts until it ends: each dialect's Store runs them in
// one of their own (see store.IPPools).

// AddressOrd is the stored form of an offset in a pool's subnet: its top
// bit flipped, so that the offsets of an IPv6 /64 (up to 2^64-1) compare
// as the signed 64-bit integers both databases store do, in the same
// order, and ord+1 is the next address.
func AddressOrd(off uint64) int64 { return int64(off ^ 1<<63) }

// ordOffset reverses AddressOrd.
func ordOffset(ord int64) uint64 { return uint64(ord) ^ 1<<63 }

func (q Queries) ipPool(r *IPPoolRow) (*baremetal.IPPool, error) {
	p := &baremetal.IPPool{ID: r.ID, Name: r.Name, Description: r.Description,
		CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt), Version: r.Version}
	var err error
	if p.CIDR, err = netip.ParsePrefix(r.CIDR); err != nil {
		return nil, fmt.Errorf("ip pool %s: cidr: %w", r.ID, err)
	}
	if r.Gateway != "" {
		if p.Gateway, err = netip.ParseAddr(r.Gateway); err != nil {
			return nil, fmt.Errorf("ip pool %s: gateway: %w", r.ID, err)
		}
	}
	var ranges []string
	if err := json.Unmarshal([]byte(r.Ranges), &ranges); err != nil {
		return nil, fmt.Errorf("ip pool %s: ranges: %w", r.ID, err)
	}
	for _, s := range ranges {
		rg, err := baremetal.ParseIPRange(s)
		if err != nil {
			return nil, fmt.Errorf("ip pool %s: range %q: %w", r.ID, s, err)
		}
		p.Ranges = append(p.Ranges, rg)
	}
	if err := json.Unmarshal([]byte(r.DNSServers), &p.DNSServers); err != nil {
		return nil, fmt.Errorf("ip pool %s: dns_servers: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(r.SearchDomains), &p.SearchDomains); err != nil {
		return nil, fmt.Errorf("ip pool %s: search_domains: %w", r.ID, err)
	}
	normalizePool(p)
	return p, nil
}

// normalizePool makes p's lists what a read returns: nil when empty.
func normalizePool(p *baremetal.IPPool) {
	if len(p.Ranges) == 0 {
		p.Ranges = nil
	}
	if len(p.DNSServers) == 0 {
		p.DNSServers = nil
	}
	if len(p.SearchDomains) == 0 {
		p.SearchDomains = nil
	}
}

// poolColumns is the text of p's columns: name, cidr, gateway, ranges,
// dns_servers, search_domains (JSON arrays of strings).
func poolColumns(p *baremetal.IPPool) (cidr, gateway, ranges, dns, search string, err error) {
	rs := make([]string, len(p.Ranges))
	for i, r := range p.Ranges {
		rs[i] = r.Start.String() + "-" + r.End.String()
	}
	list := func(v []string) string {
		if v == nil {
			v = []string{}
		}
		b, e := json.Marshal(v)
		if e != nil {
			err = e
		}
		return string(b)
	}
	if p.Gateway.IsValid() {
		gateway = p.Gateway.String()
	}
	return p.CIDR.String(), gateway, list(rs), list(p.DNSServers), list(p.SearchDomains), err
}

func duplicatePool(p *baremetal.IPPool, err error) error {
	return store.Duplicate("name", fmt.Sprintf("an ip pool named %q already exists", p.Name), err)
}

func (q Queries) InsertIPPool(ctx context.Context, p *baremetal.IPPool) error {
	if err := p.Validate(); err != nil {
		return err
	}
	cidr, gw, ranges, dns, search, err := poolColumns(p)
	if err != nil {
		return q.wrap("insert ip pool", err)
	}
	id, now := newID(p.ID), store.Now()
	if !store.Storable(id) {
		return baremetal.FieldErrorf("id", "id must be valid UTF-8 without NUL")
	}
	if err := q.w.InsertIPPool(ctx, p.Name, cidr, gw, ranges, dns, search, p.Description, Time(now), 0, id); err != nil {
		switch q.unique(err) {
		case IPPoolsNameKey:
			return duplicatePool(p, err)
		case IPPoolsPkey:
			return store.Duplicate("id", fmt.Sprintf("an ip pool with id %q already exists", id), err)
		}
		return q.wrap("insert ip pool", err)
	}
	p.ID, p.CreatedAt, p.UpdatedAt, p.Version = id, now, now, 1
	normalizePool(p)
	return nil
}

func (q Queries) GetIPPool(ctx context.Context, idOrName string) (*baremetal.IPPool, error) {
	return q.getIPPool(ctx, idOrName, q.r.GetIPPool)
}

// lockIPPool is GetIPPool that takes the pool's lock until the
// transaction ends (see GetIPPoolForUpdate).
func (q Queries) lockIPPool(ctx context.Context, idOrName string) (*baremetal.IPPool, error) {
	return q.getIPPool(ctx, idOrName, q.w.GetIPPoolForUpdate)
}

func (q Queries) getIPPool(ctx context.Context, idOrName string,
	get func(context.Context, string) (*IPPoolRow, error)) (*baremetal.IPPool, error) {
	if idOrName == "" || !store.Storable(idOrName) {
		return nil, store.NotFound("ip pool", idOrName)
	}
	r, err := get(ctx, idOrName)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.NotFound("ip pool", idOrName)
	}
	if err != nil {
		return nil, q.wrap("get ip pool", err)
	}
	p, err := q.ipPool(r)
	if err != nil {
		return nil, q.wrap("get ip pool", err)
	}
	return p, nil
}

func (q Queries) ListIPPools(ctx context.Context, pg store.Page) ([]*baremetal.IPPool, string, error) {
	after, err := store.DecodeIDCursor(pg.After)
	if err != nil {
		return nil, "", err
	}
	limit := store.PageLimit(pg.Limit)
	rs, err := q.r.ListIPPools(ctx, after, int64(limit)+1)
	if err != nil {
		return nil, "", q.wrap("list ip pools", err)
	}
	var list []*baremetal.IPPool
	for _, r := range rs {
		p, err := q.ipPool(r)
		if err != nil {
			return nil, "", q.wrap("list ip pools", err)
		}
		list = append(list, p)
	}
	list, next := store.TrimPage(list, limit, func(p *baremetal.IPPool) string { return p.ID })
	return list, next, nil
}

// UpdateIPPool runs under the pool's lock (store.IPPools): no address
// is allocated between the check of the held addresses and the write.
func (q Queries) UpdateIPPool(ctx context.Context, p *baremetal.IPPool) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if !store.Storable(p.ID) {
		return store.NotFound("ip pool", p.ID)
	}
	cur, err := q.lockIPPool(ctx, p.ID)
	if err != nil {
		return err
	}
	if cur.ID != p.ID { // p.ID matched another pool's name, not an id
		return store.NotFound("ip pool", p.ID)
	}
	if cur.Version != p.Version {
		return store.StaleVersion("ip pool", p.Version, cur.Version)
	}
	if cur.CIDR != p.CIDR {
		return baremetal.FieldErrorf("cidr", "cidr cannot change (from %s to %s); create another pool", cur.CIDR, p.CIDR)
	}
	if err := q.checkKept(ctx, cur, p); err != nil {
		return err
	}
	cidr, gw, ranges, dns, search, err := poolColumns(p)
	if err != nil {
		return q.wrap("update ip pool", err)
	}
	now := store.Now()
	changed, err := q.w.UpdateIPPool(ctx, p.Name, cidr, gw, ranges, dns, search, p.Description, Time(now), p.Version, p.ID)
	if err != nil {
		if q.unique(err) == IPPoolsNameKey {
			return duplicatePool(p, err)
		}
		return q.wrap("update ip pool", err)
	}
	if err := q.checkWritten(ctx, changed, "ip pool", p.ID, p.Version, Querier.IPPoolVersion); err != nil {
		return err
	}
	p.Version++
	p.UpdatedAt = now
	normalizePool(p)
	return nil
}

// maxNamed is how many held addresses an error names.
const maxNamed = 10

// checkKept refuses a new version of a pool whose allocatable addresses
// leave out addresses it holds: it looks for held addresses in each gap
// between the new spans.
func (q Queries) checkKept(ctx context.Context, cur, next *baremetal.IPPool) error {
	var out []string
	more := false
	for _, gap := range gaps(next.Allocatable(), next.LastOffset()) {
		rs, err := q.w.IPAllocationsBetween(ctx, cur.ID, AddressOrd(gap.Lo), AddressOrd(gap.Hi), maxNamed+1-int64(len(out)))
		if err != nil {
			return q.wrap("update ip pool", err)
		}
		for _, r := range rs {
			if len(out) == maxNamed {
				more = true
				break
			}
			out = append(out, r.Address)
		}
		if more {
			break
		}
	}
	if len(out) == 0 {
		return nil
	}
	field := "ranges"
	if next.Gateway.IsValid() && len(out) == 1 && out[0] == next.Gateway.String() {
		field = "gateway"
	}
	list := strings.Join(out, ", ")
	if more {
		list += " and more"
	}
	return &baremetal.Error{Code: baremetal.CodeConflict, Field: field,
		Message: fmt.Sprintf("ip pool %q holds addresses the change would leave out of its allocatable addresses: %s; "+
			"keep them in its ranges (and off its gateway) until their instances are deleted and their nodes cleaned", cur.Name, list)}
}

// gaps is the complement of spans (ordered, disjoint) in [0, last].
func gaps(spans []baremetal.OffsetSpan, last uint64) []baremetal.OffsetSpan {
	var out []baremetal.OffsetSpan
	next := uint64(0)
	for _, s := range spans {
		if s.Lo > next {
			out = append(out, baremetal.OffsetSpan{Lo: next, Hi: s.Lo - 1})
		}
		if s.Hi == math.MaxUint64 {
			return out
		}
		next = s.Hi + 1
	}
	if next <= last {
		out = append(out, baremetal.OffsetSpan{Lo: next, Hi: last})
	}
	return out
}

// DeleteIPPool runs under the pool's lock (store.IPPools): no address is
// allocated between the count and the delete.
func (q Queries) DeleteIPPool(ctx context.Context, id string, version int64) error {
	if !store.Storable(id) {
		return store.NotFound("ip pool", id)
	}
	p, err := q.lockIPPool(ctx, id)
	if err != nil {
		return err
	}
	if p.ID != id {
		return store.NotFound("ip pool", id)
	}
	n, err := q.w.CountIPAllocations(ctx, id)
	if err != nil {
		return q.wrap("delete ip pool", err)
	}
	if n > 0 {
		return poolInUse(p, n, nil)
	}
	changed, err := q.w.DeleteIPPool(ctx, id, version)
	if err != nil {
		if q.dialect.ForeignKeyViolation(err) {
			return poolInUse(p, n, err)
		}
		return q.wrap("delete ip pool", err)
	}
	return q.checkWritten(ctx, changed, "ip pool", id, version, Querier.IPPoolVersion)
}

func poolInUse(p *baremetal.IPPool, n int64, cause error) error {
	held := "allocated addresses"
	if n > 0 {
		held = fmt.Sprintf("%d allocated address", n)
		if n > 1 {
			held += "es"
		}
	}
	return &baremetal.Error{Code: baremetal.CodeConflict, Err: cause,
		Message: fmt.Sprintf("ip pool %q holds %s; delete the instances using them (their nodes free them when cleaned) before the pool", p.Name, held)}
}

// nullable is s as a nullable column: NULL for "".
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// AllocateAddress runs under the pool's lock (store.IPPools).
func (q Queries) AllocateAddress(ctx context.Context, poolIDOrName, instanceID, nodeID string) (baremetal.IPAllocation, error) {
	// An address held by neither an instance nor a node would be freed
	// by nothing.
	if instanceID == "" {
		return baremetal.IPAllocation{}, baremetal.FieldErrorf("instance_id", "an address is allocated for an instance: its id is required")
	}
	if !store.Storable(instanceID, nodeID) {
		return baremetal.IPAllocation{}, baremetal.FieldErrorf("instance_id", "instance and node ids must be valid UTF-8 without NUL")
	}
	p, err := q.lockIPPool(ctx, poolIDOrName)
	if err != nil {
		return baremetal.IPAllocation{}, err
	}
	ord, ok, err := q.firstFree(ctx, p)
	if err != nil {
		return baremetal.IPAllocation{}, err
	}
	if !ok {
		return baremetal.IPAllocation{}, &baremetal.Error{Code: baremetal.CodeConflict, Field: "pool",
			Message: fmt.Sprintf("ip pool %q has no free address in its ranges (all %d are held)", p.Name, p.Size())}
	}
	a := baremetal.IPAllocation{PoolID: p.ID, Address: p.AddrAt(ordOffset(ord)), InstanceID: instanceID, NodeID: nodeID,
		CreatedAt: store.Now()}
	err = q.w.InsertIPAllocation(ctx, p.ID, a.Address.String(), ord, nullable(instanceID), nullable(nodeID), Time(a.CreatedAt))
	if err != nil {
		if q.unique(err) != "" {
			// The pool's lock makes this unreachable for callers that
			// take it; say what happened rather than a bare 500.
			return baremetal.IPAllocation{}, &baremetal.Error{Code: baremetal.CodeConflict, Err: err,
				Message: fmt.Sprintf("address %s of ip pool %q was taken by a concurrent allocation; retry", a.Address, p.Name)}
		}
		return baremetal.IPAllocation{}, q.wrap("allocate address", err)
	}
	return a, nil
}

// firstFree returns the lowest free ord of p's allocatable addresses.
//
// In each span, when its first address is held, it halves the rest of
// the span until it finds the first free one: [lo, mid] is full when it
// holds mid-lo+1 addresses (ords are unique), and then the free one is
// past mid. Each count is an index-only range count of the (pool_id,
// ord) index, and the ranges counted halve, so a /16 of 60 000 held
// addresses costs about 60 000 index entries read in order and 18 round
// trips, never a read of the rows into memory; a span whose first
// address is free costs one.
func (q Queries) firstFree(ctx context.Context, p *baremetal.IPPool) (int64, bool, error) {
	count := func(lo, hi uint64) (uint64, error) {
		n, err := q.w.CountIPAllocationsBetween(ctx, p.ID, AddressOrd(lo), AddressOrd(hi))
		if err != nil {
			return 0, q.wrap("allocate address", err)
		}
		return uint64(n), nil
	}
	for _, s := range p.Allocatable() {
		n, err := count(s.Lo, s.Lo)
		if err != nil {
			return 0, false, err
		}
		if n == 0 {
			return AddressOrd(s.Lo), true, nil
		}
		if s.Lo == s.Hi {
			continue
		}
		// Every address before lo is held; once a count finds a free
		// one in [lo, mid], one is in [lo, hi] for sure.
		lo, hi, found := s.Lo+1, s.Hi, false
		for lo < hi {
			mid := lo + (hi-lo)/2
			n, err := count(lo, mid)
			if err != nil {
				return 0, false, err
			}
			switch n {
			case 0:
				return AddressOrd(lo), true, nil
			case mid - lo + 1:
				lo = mid + 1
			default:
				hi, found = mid, true
			}
		}
		if !found { // lo is the span's last address: free, or the span is full
			if n, err = count(lo, lo); err != nil {
				return 0, false, err
			}
			found = n == 0
		}
		if found {
			return AddressOrd(lo), true, nil
		}
	}
	return 0, false, nil
}

func (q Queries) ReleaseInstanceAddresses(ctx context.Context, instanceID string) (int, error) {
	if instanceID == "" || !store.Storable(instanceID) {
		return 0, nil
	}
	freed, err := q.w.DeleteUnheldInstanceAddresses(ctx, instanceID)
	if err != nil {
		return 0, q.wrap("release instance addresses", err)
	}
	held, err := q.w.ReleaseInstanceAddresses(ctx, instanceID)
	if err != nil {
		return 0, q.wrap("release instance addresses", err)
	}
	return int(freed + held), nil
}

func (q Queries) FreeInstanceAddress(ctx context.Context, instanceID, poolID string, addr netip.Addr) (bool, error) {
	if instanceID == "" || !store.Storable(instanceID) || !store.Storable(poolID) {
		return false, nil
	}
	n, err := q.w.FreeInstanceAddress(ctx, instanceID, poolID, addr.String())
	if err != nil {
		return false, q.wrap("free instance address", err)
	}
	return n > 0, nil
}

func (q Queries) ReleaseInstanceAddress(ctx context.Context, instanceID, poolID string, addr netip.Addr) (bool, error) {
	if instanceID == "" || !store.Storable(instanceID) || !store.Storable(poolID) {
		return false, nil
	}
	n, err := q.w.ReleaseInstanceAddress(ctx, instanceID, poolID, addr.String())
	if err != nil {
		return false, q.wrap("release instance address", err)
	}
	return n > 0, nil
}

func (q Queries) FreeNodeAddresses(ctx context.Context, nodeID string) (int, error) {
	if nodeID == "" || !store.Storable(nodeID) {
		return 0, nil
	}
	n, err := q.w.FreeNodeAddresses(ctx, nodeID)
	if err != nil {
		return 0, q.wrap("free node addresses", err)
	}
	return int(n), nil
}

func ipAllocation(r *IPAllocationRow) (*baremetal.IPAllocation, error) {
	a, err := netip.ParseAddr(r.Address)
	if err != nil {
		return nil, fmt.Errorf("ip allocation %q of pool %s: %w", r.Address, r.PoolID, err)
	}
	out := &baremetal.IPAllocation{PoolID: r.PoolID, Address: a, CreatedAt: time.Time(r.CreatedAt)}
	if r.InstanceID != nil {
		out.InstanceID = *r.InstanceID
	}
	if r.NodeID != nil {
		out.NodeID = *r.NodeID
	}
	return out, nil
}

func (q Queries) ListAllocations(ctx context.Context, f store.AllocationFilter) ([]*baremetal.IPAllocation, string, error) {
	if f.PoolID == "" && f.InstanceID == "" && f.NodeID == "" {
		return nil, "", baremetal.FieldErrorf("pool_id", "listing allocations needs a pool, an instance or a node")
	}
	if !store.Storable(f.PoolID, f.InstanceID, f.NodeID) {
		return nil, "", nil
	}
	var rs []*IPAllocationRow
	var err error
	limit := store.PageLimit(f.Limit)
	paged := false
	switch {
	case f.InstanceID != "":
		rs, err = q.r.ListIPAllocationsByInstance(ctx, f.InstanceID)
	case f.NodeID != "":
		rs, err = q.r.ListIPAllocationsByNode(ctx, f.NodeID)
	default:
		from, cerr := allocationCursor(f.After)
		if cerr != nil {
			return nil, "", cerr
		}
		paged = true
		rs, err = q.r.ListIPAllocationsByPool(ctx, f.PoolID, from, int64(limit)+1)
	}
	if err != nil {
		return nil, "", q.wrap("list ip allocations", err)
	}
	var list []*baremetal.IPAllocation
	ords := map[*baremetal.IPAllocation]int64{}
	for _, r := range rs {
		if (f.PoolID != "" && r.PoolID != f.PoolID) || (f.NodeID != "" && (r.NodeID == nil || *r.NodeID != f.NodeID)) {
			continue
		}
		a, err := ipAllocation(r)
		if err != nil {
			return nil, "", q.wrap("list ip allocations", err)
		}
		ords[a] = r.Ord
		list = append(list, a)
	}
	if !paged {
		return list, "", nil
	}
	list, next := store.TrimPage(list, limit, func(a *baremetal.IPAllocation) string { return strconv.FormatInt(ords[a], 10) })
	return list, next, nil
}

// allocationCursor is the first ord of the page after cursor c, which
// holds the ord of the last address of the page before.
func allocationCursor(c string) (int64, error) {
	key, err := store.DecodeCursor(c)
	if err != nil || key == "" {
		return math.MinInt64, err
	}
	last, err := strconv.ParseInt(key, 10, 64)
	if err != nil || last == math.MaxInt64 {
		return 0, &baremetal.Error{Code: baremetal.CodeInvalid, Field: "cursor", Message: "malformed cursor"}
	}
	return last + 1, nil
}
