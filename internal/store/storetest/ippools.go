package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlstore"
)

// ipPoolTests are the conformance tests of address pools (store.IPPools).
var ipPoolTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"IPPoolCRUD", testIPPoolCRUD},
	{"IPPoolBadLookups", testIPPoolBadLookups},
	{"IPPoolDeleteWithAllocations", testIPPoolDeleteWithAllocations},
	{"IPPoolAllocationOrder", testIPPoolAllocationOrder},
	{"IPPoolSmallSubnets", testIPPoolSmallSubnets},
	{"IPPoolIPv6", testIPPoolIPv6},
	{"IPPoolReleaseHoldFree", testIPPoolReleaseHoldFree},
	{"IPPoolFreeInstanceAddress", testIPPoolFreeInstanceAddress},
	{"IPPoolRangeChange", testIPPoolRangeChange},
	{"IPPoolAllocationInTx", testIPPoolAllocationInTx},
	{"IPPoolConcurrentAllocation", testIPPoolConcurrentAllocation},
	{"IPPoolAllocationPages", testIPPoolAllocationPages},
	{"IPPoolLowestFreeModel", testIPPoolLowestFreeModel},
}

func newPool(name, cidr, gateway string, ranges ...string) *baremetal.IPPool {
	p := &baremetal.IPPool{Name: name, CIDR: netip.MustParsePrefix(cidr)}
	if gateway != "" {
		p.Gateway = netip.MustParseAddr(gateway)
	}
	for _, r := range ranges {
		rg, err := baremetal.ParseIPRange(r)
		if err != nil {
			panic(err)
		}
		p.Ranges = append(p.Ranges, rg)
	}
	return p
}

func insertPool(t *testing.T, q store.Queries, p *baremetal.IPPool) *baremetal.IPPool {
	t.Helper()
	must(t, q.InsertIPPool(ctxOf(t), p))
	return p
}

// allocate takes an address from pool for instance on node, and fails
// the test on error.
func allocate(t *testing.T, q store.Queries, pool, instance, node string) string {
	t.Helper()
	a, err := q.AllocateAddress(ctxOf(t), pool, instance, node)
	must(t, err)
	return a.Address.String()
}

func allocations(t *testing.T, q store.Queries, f store.AllocationFilter) []string {
	t.Helper()
	list, _, err := q.ListAllocations(ctxOf(t), f)
	must(t, err)
	var out []string
	for _, a := range list {
		out = append(out, fmt.Sprintf("%s i=%s n=%s", a.Address, a.InstanceID, a.NodeID))
	}
	return out
}

func testIPPoolCRUD(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	before := store.Now()
	p := newPool("tenant-a", "10.20.0.0/24", "10.20.0.1", "10.20.0.10-10.20.0.99", "10.20.0.200-10.20.0.250")
	p.DNSServers = []string{"10.20.0.53", "2001:db8::53"}
	p.SearchDomains = []string{"tenant-a.example", "example"}
	p.Description = "tenant A's rack network"
	insertPool(t, s, p)
	if p.ID == "" || p.Version != 1 || p.CreatedAt.Before(before) || !p.UpdatedAt.Equal(p.CreatedAt) {
		t.Fatalf("after insert: id %q version %d created %v updated %v", p.ID, p.Version, p.CreatedAt, p.UpdatedAt)
	}
	got, err := s.GetIPPool(ctx, p.ID)
	must(t, err)
	same(t, "pool by id", p, got)
	got, err = s.GetIPPool(ctx, "tenant-a")
	must(t, err)
	same(t, "pool by name", p, got)

	wantCode(t, s.InsertIPPool(ctx, newPool("tenant-a", "10.30.0.0/24", "")), baremetal.CodeConflict, "name")
	wantCode(t, s.InsertIPPool(ctx, newPool("tenant-b", "10.30.0.5/24", "")), baremetal.CodeInvalid, "cidr")
	wantCode(t, s.InsertIPPool(ctx, newPool("tenant-b", "10.30.0.0/24", "10.31.0.1")), baremetal.CodeInvalid, "gateway")
	wantCode(t, s.InsertIPPool(ctx, newPool("tenant-b", "10.30.0.0/24", "", "10.30.0.50-10.30.0.60", "10.30.0.55-10.30.0.70")),
		baremetal.CodeInvalid, "ranges[1].start")

	b := insertPool(t, s, newPool("tenant-b", "2001:db8:1::/64", ""))
	list, next, err := s.ListIPPools(ctx, store.Page{Limit: 1})
	must(t, err)
	if len(list) != 1 || next == "" {
		t.Fatalf("first page of 1: %d pools, next %q", len(list), next)
	}
	rest, next2, err := s.ListIPPools(ctx, store.Page{After: next, Limit: 10})
	must(t, err)
	if len(rest) != 1 || next2 != "" || rest[0].ID == list[0].ID {
		t.Fatalf("second page: %d pools, next %q", len(rest), next2)
	}
	ids := []string{list[0].ID, rest[0].ID}
	if want := []string{p.ID, b.ID}; !slices.Equal(slices.Sorted(slices.Values(want)), ids) {
		t.Errorf("pages list %v; want %v in id order", ids, want)
	}

	upd := *got
	upd.Name, upd.Description = "tenant-a2", ""
	upd.DNSServers, upd.SearchDomains = []string{"1.1.1.1"}, nil
	upd.Ranges = append(upd.Ranges, baremetal.IPRange{Start: netip.MustParseAddr("10.20.0.251"), End: netip.MustParseAddr("10.20.0.254")})
	must(t, s.UpdateIPPool(ctx, &upd))
	if upd.Version != 2 || !upd.UpdatedAt.After(got.UpdatedAt) && !upd.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("after update: version %d updated %v", upd.Version, upd.UpdatedAt)
	}
	again, err := s.GetIPPool(ctx, "tenant-a2")
	must(t, err)
	same(t, "updated pool", &upd, again)

	stale := *got // version 1
	stale.Description = "lost write"
	wantCode(t, s.UpdateIPPool(ctx, &stale), baremetal.CodeConflict, "version")
	moved := *again
	moved.CIDR = netip.MustParsePrefix("10.21.0.0/24")
	moved.Gateway, moved.Ranges = netip.Addr{}, nil
	wantCode(t, s.UpdateIPPool(ctx, &moved), baremetal.CodeInvalid, "cidr")
	clash := *again
	clash.Name = "tenant-b"
	wantCode(t, s.UpdateIPPool(ctx, &clash), baremetal.CodeConflict, "name")

	wantCode(t, s.DeleteIPPool(ctx, again.ID, 1), baremetal.CodeConflict, "version")
	must(t, s.DeleteIPPool(ctx, again.ID, again.Version))
	if _, err := s.GetIPPool(ctx, again.ID); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Errorf("deleted pool: %v", err)
	}
	wantCode(t, s.DeleteIPPool(ctx, again.ID, again.Version), baremetal.CodeNotFound, "")
	// The name is free again.
	insertPool(t, s, newPool("tenant-a2", "10.20.0.0/24", ""))
}

// Ids and names no store can hold find nothing; they never reach the
// database (PostgreSQL would refuse the statement).
func testIPPoolBadLookups(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	p := insertPool(t, s, newPool("bad-lookups", "10.0.0.0/29", ""))
	for _, key := range []string{"", "bad\x00id", "\xff\xfe", "no-such-pool"} {
		if _, err := s.GetIPPool(ctx, key); !baremetal.IsCode(err, baremetal.CodeNotFound) {
			t.Errorf("GetIPPool(%q): %v; want not found", key, err)
		}
		if _, err := s.AllocateAddress(ctx, key, "i1", "n1"); !baremetal.IsCode(err, baremetal.CodeNotFound) {
			t.Errorf("AllocateAddress(%q): %v; want not found", key, err)
		}
		if err := s.DeleteIPPool(ctx, key, 1); !baremetal.IsCode(err, baremetal.CodeNotFound) {
			t.Errorf("DeleteIPPool(%q): %v; want not found", key, err)
		}
		if n, err := s.ReleaseInstanceAddresses(ctx, key); n != 0 || err != nil {
			t.Errorf("ReleaseInstanceAddresses(%q): %d, %v", key, n, err)
		}
		if n, err := s.FreeNodeAddresses(ctx, key); n != 0 || err != nil {
			t.Errorf("FreeNodeAddresses(%q): %d, %v", key, n, err)
		}
		if key != "" {
			if list, _, err := s.ListAllocations(ctx, store.AllocationFilter{PoolID: key}); len(list) != 0 || err != nil {
				t.Errorf("ListAllocations(pool %q): %v, %v", key, list, err)
			}
		}
	}
	// A pool's name is not its id: delete and update go by id.
	wantCode(t, s.DeleteIPPool(ctx, p.Name, p.Version), baremetal.CodeNotFound, "")
	byName := *p
	byName.ID = p.Name
	wantCode(t, s.UpdateIPPool(ctx, &byName), baremetal.CodeNotFound, "")
	if _, err := s.AllocateAddress(ctx, p.ID, "bad\x00", ""); !baremetal.IsCode(err, baremetal.CodeInvalid) {
		t.Errorf("instance id with NUL: %v", err)
	}
	// An address for no instance would be freed by nothing.
	if _, err := s.AllocateAddress(ctx, p.ID, "", "node-1"); !baremetal.IsCode(err, baremetal.CodeInvalid) || baremetal.ErrorField(err) != "instance_id" {
		t.Errorf("allocation without an instance: %v", err)
	}
	if _, _, err := s.ListAllocations(ctx, store.AllocationFilter{}); !baremetal.IsCode(err, baremetal.CodeInvalid) {
		t.Errorf("ListAllocations without a filter: %v", err)
	}
	if _, _, err := s.ListAllocations(ctx, store.AllocationFilter{PoolID: p.ID, Page: store.Page{After: "garbage!"}}); !baremetal.IsCode(err, baremetal.CodeInvalid) {
		t.Errorf("ListAllocations with a bad cursor: %v", err)
	}
}

func testIPPoolDeleteWithAllocations(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	p := insertPool(t, s, newPool("busy", "192.168.7.0/24", "192.168.7.1"))
	allocate(t, s, p.Name, "inst-1", "node-1")
	allocate(t, s, p.ID, "inst-2", "node-2")
	err := s.DeleteIPPool(ctx, p.ID, p.Version)
	wantCode(t, err, baremetal.CodeConflict, "")
	if !strings.Contains(err.Error(), "2 allocated addresses") {
		t.Errorf("refusal does not say how many addresses are held: %v", err)
	}
	if _, err := s.GetIPPool(ctx, p.ID); err != nil {
		t.Fatalf("refused delete removed the pool: %v", err)
	}
	// Released, the addresses are still held by the nodes...
	for _, inst := range []string{"inst-1", "inst-2"} {
		if n, err := s.ReleaseInstanceAddresses(ctx, inst); n != 1 || err != nil {
			t.Fatalf("release %s: %d, %v", inst, n, err)
		}
	}
	wantCode(t, s.DeleteIPPool(ctx, p.ID, p.Version), baremetal.CodeConflict, "")
	// ... until they are cleaned.
	for _, node := range []string{"node-1", "node-2"} {
		if n, err := s.FreeNodeAddresses(ctx, node); n != 1 || err != nil {
			t.Fatalf("free %s: %d, %v", node, n, err)
		}
	}
	must(t, s.DeleteIPPool(ctx, p.ID, p.Version))
}

func testIPPoolAllocationOrder(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	// Ranges around the gateway (.1), the network (.0) and broadcast
	// (.255) addresses outside them.
	p := insertPool(t, s, newPool("order", "10.9.8.0/24", "10.9.8.3", "10.9.8.1-10.9.8.4", "10.9.8.250-10.9.8.254"))
	var got []string
	for i := range 8 {
		got = append(got, allocate(t, s, p.ID, fmt.Sprintf("i%d", i), "n1"))
	}
	want := []string{"10.9.8.1", "10.9.8.2", "10.9.8.4", "10.9.8.250", "10.9.8.251", "10.9.8.252", "10.9.8.253", "10.9.8.254"}
	if !slices.Equal(got, want) {
		t.Fatalf("allocated %v; want %v (lowest first, the gateway skipped)", got, want)
	}
	_, err := s.AllocateAddress(ctx, p.ID, "i9", "n1")
	wantCode(t, err, baremetal.CodeConflict, "pool")
	if !strings.Contains(err.Error(), `ip pool "order" has no free address in its ranges`) {
		t.Errorf("exhaustion: %v", err)
	}
	// A freed address in the middle is the next one handed out.
	if n, err := s.ReleaseInstanceAddresses(ctx, "i3"); n != 1 || err != nil {
		t.Fatalf("release: %d, %v", n, err)
	}
	if _, err := s.AllocateAddress(ctx, p.ID, "i9", "n1"); !baremetal.IsCode(err, baremetal.CodeConflict) {
		t.Fatalf("an address its node still holds was handed out: %v", err)
	}
	if n, err := s.FreeNodeAddresses(ctx, "n1"); n != 1 || err != nil {
		t.Fatalf("free: %d, %v", n, err)
	}
	if a := allocate(t, s, p.ID, "i9", "n2"); a != "10.9.8.250" {
		t.Errorf("after freeing 10.9.8.250: got %s", a)
	}

	// Without ranges: the whole subnet but its network, broadcast and
	// gateway addresses.
	whole := insertPool(t, s, newPool("whole", "10.1.1.0/29", "10.1.1.1"))
	got = nil
	for i := range 5 {
		got = append(got, allocate(t, s, whole.Name, fmt.Sprintf("w%d", i), ""))
	}
	if want := []string{"10.1.1.2", "10.1.1.3", "10.1.1.4", "10.1.1.5", "10.1.1.6"}; !slices.Equal(got, want) {
		t.Fatalf("whole /29: %v; want %v", got, want)
	}
	if _, err := s.AllocateAddress(ctx, whole.ID, "w6", ""); !baremetal.IsCode(err, baremetal.CodeConflict) {
		t.Fatalf("a full /29 allocated again: %v", err)
	}
	a, err := s.AllocateAddress(ctx, p.Name, "x", "")
	if err == nil && (a.Address == p.Gateway || a.Address.String() == "10.9.8.0" || a.Address.String() == "10.9.8.255") {
		t.Fatalf("allocated %s", a.Address)
	}
}

func testIPPoolSmallSubnets(t *testing.T, s store.Store) {
	// A /31 (RFC 3021) has no network or broadcast address: both are
	// hosts'. A /32 is one host.
	p31 := insertPool(t, s, newPool("p31", "10.0.0.0/31", ""))
	p32 := insertPool(t, s, newPool("p32", "10.0.0.9/32", ""))
	if got := []string{allocate(t, s, p31.ID, "a", ""), allocate(t, s, p31.ID, "b", ""), allocate(t, s, p32.ID, "c", "")}; !slices.Equal(got, []string{"10.0.0.0", "10.0.0.1", "10.0.0.9"}) {
		t.Errorf("small subnets: %v", got)
	}
	// Offset 0 is listed too (the first page starts below it).
	if got := allocations(t, s, store.AllocationFilter{PoolID: p31.ID}); len(got) != 2 {
		t.Errorf("allocations of the /31: %v", got)
	}
}

func testIPPoolIPv6(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	p := insertPool(t, s, newPool("v6", "2001:db8:0:1::/64", "2001:db8:0:1::1"))
	got := []string{allocate(t, s, p.ID, "a", "n"), allocate(t, s, p.ID, "b", "n")}
	if want := []string{"2001:db8:0:1::2", "2001:db8:0:1::3"}; !slices.Equal(got, want) {
		t.Errorf("IPv6 /64: %v; want %v", got, want)
	}
	// The top of a /64: offsets past 2^63 order as the ones below.
	top := insertPool(t, s, newPool("v6top", "2001:db8:0:2::/64", "", "2001:db8:0:2:ffff:ffff:ffff:fffd-2001:db8:0:2:ffff:ffff:ffff:ffff"))
	got = nil
	for i := range 3 {
		got = append(got, allocate(t, s, top.ID, fmt.Sprintf("t%d", i), ""))
	}
	if want := []string{"2001:db8:0:2:ffff:ffff:ffff:fffd", "2001:db8:0:2:ffff:ffff:ffff:fffe", "2001:db8:0:2:ffff:ffff:ffff:ffff"}; !slices.Equal(got, want) {
		t.Errorf("top of a /64: %v; want %v", got, want)
	}
	if _, err := s.AllocateAddress(ctx, top.ID, "t4", ""); !baremetal.IsCode(err, baremetal.CodeConflict) {
		t.Errorf("full range at the top of a /64: %v", err)
	}
	list, _, err := s.ListAllocations(ctx, store.AllocationFilter{PoolID: top.ID})
	must(t, err)
	if len(list) != 3 || list[0].Address.String() != want3(got) {
		t.Errorf("listed %v", list)
	}
}

func want3(got []string) string {
	if len(got) == 0 {
		return ""
	}
	return got[0]
}

// The life of an address: allocated to an instance on a node, held by
// the node when the instance is deleted, free when the node is clean.
func testIPPoolReleaseHoldFree(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	p := insertPool(t, s, newPool("life", "172.16.0.0/28", "172.16.0.1"))
	q := insertPool(t, s, newPool("life-b", "172.16.1.0/28", ""))
	a1 := allocate(t, s, p.ID, "inst-a", "node-a") // .2
	b1 := allocate(t, s, q.ID, "inst-a", "node-a") // second pool, same instance
	allocate(t, s, p.ID, "inst-b", "node-b")       // .3
	allocate(t, s, p.ID, "inst-c", "")             // .4: no node yet

	if got := allocations(t, s, store.AllocationFilter{InstanceID: "inst-a"}); len(got) != 2 {
		t.Fatalf("inst-a holds %v", got)
	}
	if got := allocations(t, s, store.AllocationFilter{InstanceID: "inst-a", PoolID: q.ID}); !slices.Equal(got, []string{b1 + " i=inst-a n=node-a"}) {
		t.Fatalf("inst-a in pool b: %v", got)
	}
	if n, err := s.ReleaseInstanceAddresses(ctx, "inst-a"); n != 2 || err != nil {
		t.Fatalf("release inst-a: %d, %v", n, err)
	}
	if got := allocations(t, s, store.AllocationFilter{NodeID: "node-a"}); len(got) != 2 || !strings.HasSuffix(got[0], " i= n=node-a") {
		t.Fatalf("node-a after the release: %v; want both held without instance", got)
	}
	if n, err := s.ReleaseInstanceAddresses(ctx, "inst-a"); n != 0 || err != nil {
		t.Errorf("second release: %d, %v", n, err)
	}
	// Not handed out again while node-a holds it.
	if a := allocate(t, s, p.ID, "inst-d", "node-d"); a == a1 {
		t.Fatalf("%s handed out while node-a still holds it", a1)
	}
	// node-b's cleanup frees nothing: its instance is alive.
	if n, err := s.FreeNodeAddresses(ctx, "node-b"); n != 0 || err != nil {
		t.Errorf("free node-b with a live instance: %d, %v", n, err)
	}
	if n, err := s.FreeNodeAddresses(ctx, "node-a"); n != 2 || err != nil {
		t.Fatalf("free node-a: %d, %v", n, err)
	}
	if a := allocate(t, s, p.ID, "inst-e", "node-e"); a != a1 {
		t.Errorf("after node-a's cleanup: got %s, want %s again", a, a1)
	}
	// An address no node holds is free as soon as its instance is gone.
	if n, err := s.ReleaseInstanceAddresses(ctx, "inst-c"); n != 1 || err != nil {
		t.Fatalf("release inst-c: %d, %v", n, err)
	}
	if got := allocations(t, s, store.AllocationFilter{PoolID: p.ID}); len(got) != 3 || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "172.16.0.4 ") }) {
		t.Errorf("pool after inst-c's release: %v", got)
	}
}

func testIPPoolRangeChange(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	p := insertPool(t, s, newPool("ranges", "10.5.0.0/24", "10.5.0.1", "10.5.0.10-10.5.0.20"))
	for i := range 3 {
		allocate(t, s, p.ID, fmt.Sprintf("r%d", i), "n") // .10 .11 .12
	}
	cur, err := s.GetIPPool(ctx, p.ID)
	must(t, err)
	shrink := *cur
	shrink.Ranges = []baremetal.IPRange{{Start: netip.MustParseAddr("10.5.0.12"), End: netip.MustParseAddr("10.5.0.30")}}
	err = s.UpdateIPPool(ctx, &shrink)
	wantCode(t, err, baremetal.CodeConflict, "ranges")
	if !strings.Contains(err.Error(), "10.5.0.10, 10.5.0.11") || strings.Contains(err.Error(), "10.5.0.12") {
		t.Errorf("refusal does not name exactly the addresses left out: %v", err)
	}
	gw := *cur
	gw.Gateway = netip.MustParseAddr("10.5.0.11")
	wantCode(t, s.UpdateIPPool(ctx, &gw), baremetal.CodeConflict, "gateway")
	after, err := s.GetIPPool(ctx, p.ID)
	must(t, err)
	same(t, "pool after refused changes", cur, after)

	grow := *cur
	grow.Ranges = []baremetal.IPRange{{Start: netip.MustParseAddr("10.5.0.10"), End: netip.MustParseAddr("10.5.0.12")},
		{Start: netip.MustParseAddr("10.5.0.100"), End: netip.MustParseAddr("10.5.0.110")}}
	must(t, s.UpdateIPPool(ctx, &grow))
	if a := allocate(t, s, p.ID, "r3", "n"); a != "10.5.0.100" {
		t.Errorf("after the change: got %s, want 10.5.0.100", a)
	}
	// Dropping the ranges means the whole subnet, which keeps them all.
	whole := grow
	whole.Ranges = nil
	must(t, s.UpdateIPPool(ctx, &whole))
}

// The instance-create pattern: the address is allocated in the
// transaction that creates the instance, and a rollback gives it back.
func testIPPoolAllocationInTx(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	p := insertPool(t, s, newPool("intx", "10.7.0.0/29", ""))
	var got baremetal.IPAllocation
	err := s.InTx(ctx, func(tx store.Tx) error {
		inst := newInstance("proj", "web-1")
		if err := tx.InsertInstance(ctx, inst); err != nil {
			return err
		}
		var err error
		got, err = tx.AllocateAddress(ctx, p.Name, inst.ID, "")
		if err != nil {
			return err
		}
		// The transaction sees its own allocation.
		if list, _, err := tx.ListAllocations(ctx, store.AllocationFilter{InstanceID: inst.ID}); err != nil || len(list) != 1 {
			return fmt.Errorf("in the transaction: %v, %v", list, err)
		}
		return errRollback
	})
	if err != errRollback {
		t.Fatalf("InTx: %v", err)
	}
	if got.Address.String() != "10.7.0.1" || got.PoolID != p.ID {
		t.Fatalf("allocated %+v", got)
	}
	if list := allocations(t, s, store.AllocationFilter{PoolID: p.ID}); len(list) != 0 {
		t.Fatalf("a rolled-back allocation stayed: %v", list)
	}
	if a := allocate(t, s, p.ID, "again", ""); a != "10.7.0.1" {
		t.Errorf("after the rollback: got %s", a)
	}
}

// Concurrent creates: many transactions allocating from one pool at
// once never get one address twice, and exactly the pool's addresses are
// handed out. On PostgreSQL half the creates go through a second store
// on the same database: another replica, with connections of its own.
func testIPPoolConcurrentAllocation(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	const workers = 32
	p := insertPool(t, s, newPool("race", "10.66.0.0/27", "10.66.0.1")) // 29 addresses for 32 creates
	size := int(p.Size())
	stores := []store.Store{s}
	if s.Dialect() == "postgres" {
		stores = append(stores, reopen(t, s))
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		got     = map[string]string{}
		full    int
		start   = make(chan struct{})
		failure = make(chan error, workers)
	)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := stores[i%len(stores)]
			inst := newInstance("race", fmt.Sprintf("vm-%02d", i))
			<-start
			var a baremetal.IPAllocation
			err := st.InTx(ctx, func(tx store.Tx) error {
				if err := tx.InsertInstance(ctx, inst); err != nil {
					return err
				}
				var err error
				a, err = tx.AllocateAddress(ctx, p.ID, inst.ID, fmt.Sprintf("node-%02d", i))
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case baremetal.IsCode(err, baremetal.CodeConflict) && baremetal.ErrorField(err) == "pool":
				full++
			case err != nil:
				failure <- fmt.Errorf("create %d: %w", i, err)
			default:
				if other, dup := got[a.Address.String()]; dup {
					failure <- fmt.Errorf("%s allocated to both %s and %s", a.Address, other, inst.ID)
				}
				got[a.Address.String()] = inst.ID
			}
		}()
	}
	close(start)
	wg.Wait()
	close(failure)
	for err := range failure {
		t.Error(err)
	}
	if len(got) != size || full != workers-size {
		t.Fatalf("%d addresses allocated and %d creates refused; want %d and %d", len(got), full, size, workers-size)
	}
	list := allocations(t, s, store.AllocationFilter{PoolID: p.ID})
	if len(list) != size {
		t.Fatalf("the pool lists %d allocations; want %d", len(list), size)
	}
	for _, a := range list {
		addr, inst, _ := strings.Cut(a, " i=")
		inst, _, _ = strings.Cut(inst, " ")
		if got[addr] != inst {
			t.Errorf("stored %s; the create was told %s", a, got[addr])
		}
	}
	if _, ok := got["10.66.0.1"]; ok {
		t.Error("the gateway was allocated")
	}
}

func testIPPoolAllocationPages(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	p := insertPool(t, s, newPool("pages", "10.44.0.0/24", ""))
	must(t, s.InTx(ctx, func(tx store.Tx) error {
		for i := range 25 {
			if _, err := tx.AllocateAddress(ctx, p.ID, fmt.Sprintf("p%d", i), "n"); err != nil {
				return err
			}
		}
		return nil
	}))
	var all []string
	cursor := ""
	for range 10 {
		list, next, err := s.ListAllocations(ctx, store.AllocationFilter{PoolID: p.ID, Page: store.Page{After: cursor, Limit: 10}})
		must(t, err)
		for _, a := range list {
			all = append(all, a.Address.String())
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if len(all) != 25 || all[0] != "10.44.0.1" || all[24] != "10.44.0.25" || !slices.IsSortedFunc(all, func(a, b string) int {
		return netip.MustParseAddr(a).Compare(netip.MustParseAddr(b))
	}) {
		t.Errorf("paged through %v", all)
	}
}

// Random allocations and frees against a model: every allocation is the
// lowest free address of the pool's ranges but the gateway, wherever the
// gaps are (at a span's start, in its middle, at its end), and a full
// pool is refused.
func testIPPoolLowestFreeModel(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	p := insertPool(t, s, newPool("model", "10.0.0.0/26", "10.0.0.33", "10.0.0.1-10.0.0.20", "10.0.0.30-10.0.0.40", "10.0.0.50-10.0.0.62"))
	var allocatable []string
	for _, sp := range p.Allocatable() {
		for o := sp.Lo; o <= sp.Hi; o++ {
			allocatable = append(allocatable, p.AddrAt(o).String())
		}
	}
	held := map[string]string{} // address → instance
	rnd := rand.New(rand.NewPCG(28, 3))
	for step := range 300 {
		if len(held) > 0 && rnd.IntN(3) == 0 {
			// Free a random held address: its instance goes, its node is cleaned.
			addrs := slices.Sorted(maps.Keys(held))
			a := addrs[rnd.IntN(len(addrs))]
			inst := held[a]
			if n, err := s.ReleaseInstanceAddresses(ctx, inst); n != 1 || err != nil {
				t.Fatalf("step %d: release %s: %d, %v", step, inst, n, err)
			}
			if n, err := s.FreeNodeAddresses(ctx, "node-"+inst); n != 1 || err != nil {
				t.Fatalf("step %d: free node-%s: %d, %v", step, inst, n, err)
			}
			delete(held, a)
			continue
		}
		want := ""
		for _, a := range allocatable {
			if _, ok := held[a]; !ok {
				want = a
				break
			}
		}
		inst := fmt.Sprintf("m%d", step)
		a, err := s.AllocateAddress(ctx, p.ID, inst, "node-"+inst)
		if want == "" {
			if !baremetal.IsCode(err, baremetal.CodeConflict) {
				t.Fatalf("step %d: full pool allocated %v, %v", step, a.Address, err)
			}
			continue
		}
		if err != nil || a.Address.String() != want {
			t.Fatalf("step %d: allocated %v, %v; want %s (held %d)", step, a.Address, err, want, len(held))
		}
		held[want] = inst
	}
}

// BenchAllocateLargePool measures AllocateAddress from a /16 of which
// the first `held` addresses are allocated (filled from its start, the
// worst case: the lowest free address is past every held one), each
// allocation in a transaction rolled back so the pool stays as seeded.
func BenchAllocateLargePool(b *testing.B, s store.Store, held int) {
	ctx := context.Background()
	p := newPool("big", "10.128.0.0/16", "10.128.0.1")
	if err := s.InsertIPPool(ctx, p); err != nil {
		b.Fatal(err)
	}
	seedAllocations(b, s, p, held)
	want := p.AddrAt(uint64(held) + 2) // past the network address, the gateway and the held ones
	report := startTimer(b)
	for i := 0; b.Loop(); i++ {
		err := s.InTx(ctx, func(tx store.Tx) error {
			a, err := tx.AllocateAddress(ctx, p.ID, fmt.Sprintf("bench-%d", i), "n")
			if err != nil {
				return err
			}
			if a.Address != want {
				return fmt.Errorf("allocated %s; want %s", a.Address, want)
			}
			return errRollback
		})
		if err != errRollback {
			b.Fatal(err)
		}
	}
	report()
}

// seedAllocations inserts n allocations of p's first allocatable
// addresses straight into the table, many rows a statement: allocating
// them one by one would walk the held ones n times.
func seedAllocations(tb testing.TB, s store.Store, p *baremetal.IPPool, n int) {
	tb.Helper()
	ctx := context.Background()
	var db *sql.DB
	switch h := s.Native().(type) {
	case *sql.DB:
		db = h
	case *pgxpool.Pool:
		db = stdlib.OpenDBFromPool(h)
		defer db.Close()
	default:
		tb.Fatalf("unknown native handle %T", h)
	}
	var offs []uint64
	for _, sp := range p.Allocatable() {
		for o := sp.Lo; o <= sp.Hi && len(offs) < n; o++ {
			offs = append(offs, o)
		}
	}
	if len(offs) < n {
		tb.Fatalf("pool %s has %d addresses, fewer than %d", p.CIDR, len(offs), n)
	}
	now := sqlstore.Time(store.Now())
	const batch = 500
	for len(offs) > 0 {
		k := min(batch, len(offs))
		var q strings.Builder
		q.WriteString("INSERT INTO ip_allocations (pool_id, address, ord, instance_id, node_id, created_at) VALUES ")
		args := make([]any, 0, 6*k)
		for i, o := range offs[:k] {
			if i > 0 {
				q.WriteString(", ")
			}
			j := len(args)
			fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d, $%d)", j+1, j+2, j+3, j+4, j+5, j+6)
			args = append(args, p.ID, p.AddrAt(o).String(), sqlstore.AddressOrd(o), fmt.Sprintf("seed-%d", o), "seed-node", now)
		}
		if _, err := db.ExecContext(ctx, q.String(), args...); err != nil {
			tb.Fatalf("seed allocations: %v", err)
		}
		offs = offs[k:]
	}
	if s.Dialect() == "postgres" {
		// What autovacuum does soon after a bulk load: the visibility map
		// lets the allocation's range counts read the index alone.
		if _, err := db.ExecContext(ctx, "VACUUM ANALYZE ip_allocations"); err != nil {
			tb.Fatalf("vacuum: %v", err)
		}
	}
}

// testIPPoolFreeInstanceAddress: one address of a live instance is freed
// (its rebuilt network no longer asks for it), and only its own.
func testIPPoolFreeInstanceAddress(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	p := insertPool(t, s, newPool("rebuilt", "172.17.0.0/28", "172.17.0.1"))
	a := allocate(t, s, p.ID, "inst-a", "node-a") // .2
	allocate(t, s, p.ID, "inst-a", "node-a")      // .3
	allocate(t, s, p.ID, "inst-b", "node-b")      // .4
	addr := netip.MustParseAddr(a)
	if ok, err := s.FreeInstanceAddress(ctx, "inst-b", p.ID, addr); ok || err != nil {
		t.Fatalf("inst-b freeing inst-a's %s: %v, %v", a, ok, err)
	}
	if ok, err := s.FreeInstanceAddress(ctx, "inst-a", p.ID, addr); !ok || err != nil {
		t.Fatalf("inst-a freeing its %s: %v, %v", a, ok, err)
	}
	if got := allocations(t, s, store.AllocationFilter{InstanceID: "inst-a"}); len(got) != 1 || strings.HasPrefix(got[0], a+" ") {
		t.Fatalf("inst-a after freeing %s: %v", a, got)
	}
	if got := allocate(t, s, p.ID, "inst-c", "node-c"); got != a {
		t.Errorf("the next allocation got %s, want the freed %s", got, a)
	}
	// Released (a rebuild dropped it): held by the node, not handed out,
	// until the node's held addresses are freed.
	rel := allocations(t, s, store.AllocationFilter{InstanceID: "inst-a"})
	relAddr := netip.MustParseAddr(strings.Fields(rel[0])[0])
	if ok, err := s.ReleaseInstanceAddress(ctx, "inst-a", p.ID, relAddr); !ok || err != nil {
		t.Fatalf("release %s: %v, %v", relAddr, ok, err)
	}
	if got := allocations(t, s, store.AllocationFilter{NodeID: "node-a"}); len(got) != 1 || !strings.HasSuffix(got[0], " i= n=node-a") {
		t.Fatalf("node-a after the release: %v; want the address held without instance", got)
	}
	if got := allocate(t, s, p.ID, "inst-d", "node-d"); got == relAddr.String() {
		t.Fatalf("%s handed out while node-a holds it", relAddr)
	}
	if n, err := s.FreeNodeAddresses(ctx, "node-a"); n != 1 || err != nil {
		t.Fatalf("free node-a: %d, %v", n, err)
	}
}
