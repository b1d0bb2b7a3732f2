package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// One physical server, one node: the stores refuse a second node on a BMC
// endpoint (baremetal.BMCKey), on insert and on update, and name the node
// that has it.

// wantBMCConflict checks that err is the duplicate-endpoint conflict and
// names holder by name and id.
func wantBMCConflict(t *testing.T, err error, holder *baremetal.Node) {
	t.Helper()
	wantCode(t, err, baremetal.CodeConflict, "bmc.address")
	msg := baremetal.ErrorMessage(err)
	if !strings.Contains(msg, fmt.Sprintf("%q", holder.Name)) || !strings.Contains(msg, holder.ID) {
		t.Errorf("conflict %q does not name node %s (%s)", msg, holder.Name, holder.ID)
	}
}

func testNodeDuplicateBMC(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	a := insertNode(t, s, newNode("bmc-a"))
	// The same endpoint, spelled differently.
	sameAsA := func(name string) *baremetal.Node {
		n := newNode(name)
		n.BMC.Address, n.BMC.SystemID = "HTTPS://10.0.0.1:8443/", a.BMC.SystemID+"/"
		return n
	}
	dup := sameAsA("bmc-dup")
	wantBMCConflict(t, s.InsertNode(ctx, dup), a)
	if dup.ID != "" || dup.Version != 0 {
		t.Errorf("a failed insert changed the node: id %q version %d", dup.ID, dup.Version)
	}
	// Inside a transaction too: PostgreSQL has aborted it by then, so the
	// holder is read from outside.
	wantBMCConflict(t, s.InTx(ctx, func(tx store.Tx) error { return tx.InsertNode(ctx, sameAsA("bmc-dup")) }), a)

	// The same BMC's other system is another server.
	other := insertNode(t, s, newNode("bmc-other"))
	move := getNode(t, s, other.ID)
	move.BMC.SystemID = a.BMC.SystemID
	wantBMCConflict(t, s.UpdateNode(ctx, move), a)
	if move.Version != 1 {
		t.Errorf("a failed update changed the version to %d", move.Version)
	}
	same(t, "node bmc-other", other, getNode(t, s, other.ID))

	// The holder's own writes are no conflict with itself.
	a2 := getNode(t, s, a.ID)
	a2.PowerState = baremetal.PowerOn
	must(t, s.UpdateNode(ctx, a2))

	// Deleting the holder frees the endpoint.
	must(t, s.DeleteNode(ctx, a.ID, a2.Version))
	insertNode(t, s, sameAsA("bmc-dup"))
}

// testNodeDuplicateBMCRace: concurrent enrollments of one endpoint, each in
// its own transaction as the service does them: exactly one wins, and every
// other is told which node did. Then the same for updates.
func testNodeDuplicateBMCRace(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	const racers = 6
	race := func(write func(i int) error) (wins []int, errs []error) {
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			out   = make([]error, racers)
		)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				out[i] = write(i)
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range out {
			if err == nil {
				wins = append(wins, i)
			} else {
				errs = append(errs, err)
			}
		}
		return wins, errs
	}

	wins, errs := race(func(i int) error {
		n := newNode(fmt.Sprintf("racer-%d", i))
		n.BMC.SystemID = "/redfish/v1/Systems/raced"
		return s.InTx(ctx, func(tx store.Tx) error { return tx.InsertNode(ctx, n) })
	})
	if len(wins) != 1 {
		t.Fatalf("%d concurrent inserts of one endpoint succeeded (%v), want exactly 1; errors %v", len(wins), wins, errs)
	}
	winner := getNode(t, s, fmt.Sprintf("racer-%d", wins[0]))
	for _, err := range errs {
		wantBMCConflict(t, err, winner)
	}

	// Existing nodes moved onto one new endpoint at once.
	movers := make([]*baremetal.Node, racers)
	for i := range movers {
		movers[i] = insertNode(t, s, newNode(fmt.Sprintf("mover-%d", i)))
	}
	wins, errs = race(func(i int) error {
		return s.InTx(ctx, func(tx store.Tx) error {
			n, err := tx.GetNodeForUpdate(ctx, movers[i].ID)
			if err != nil {
				return err
			}
			n.BMC.SystemID = "/redfish/v1/Systems/moved-here"
			return tx.UpdateNode(ctx, n)
		})
	})
	if len(wins) != 1 {
		t.Fatalf("%d concurrent moves onto one endpoint succeeded (%v), want exactly 1; errors %v", len(wins), wins, errs)
	}
	for _, err := range errs {
		wantBMCConflict(t, err, movers[wins[0]])
	}
}

// testNodeDuplicateBMCLegacy: a database from before migration 0003 that
// already holds three nodes on one endpoint still opens. The oldest node
// gets the key; the later ones keep none, stay writable (the power sync
// must go on), and get the key back once the endpoint is free again.
func testNodeDuplicateBMCLegacy(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	a := insertNode(t, s, newNode("legacy-a"))
	b := insertNode(t, s, newNode("legacy-b"))
	c := insertNode(t, s, newNode("legacy-c"))
	d := insertNode(t, s, newNode("legacy-d")) // on its own endpoint
	// Back to schema version 2, then make b and c duplicates of a, spelled
	// differently, the way an old controller would have let them in.
	rawExec(t, s, `DROP INDEX nodes_bmc_key_key`)
	rawExec(t, s, `ALTER TABLE nodes DROP COLUMN bmc_key`)
	rawExec(t, s, `DELETE FROM schema_migrations WHERE version = 3`)
	rawExec(t, s, fmt.Sprintf(`UPDATE nodes SET bmc_address = 'HTTPS://10.0.0.1:8443/', bmc_system_id = '%s/' WHERE id IN ('%s', '%s')`,
		a.BMC.SystemID, b.ID, c.ID))

	must(t, s.Close()) // the embedded store allows one open store per database
	s2 := reopen(t, s) // migrates and backfills
	unkeyed := func(st store.Store) []string {
		return rawStrings(t, st, `SELECT name FROM nodes WHERE bmc_key IS NULL ORDER BY name`)
	}
	if got := unkeyed(s2); !slices.Equal(got, []string{"legacy-b", "legacy-c"}) {
		t.Fatalf("nodes without a key after migrating: %v, want the later duplicates legacy-b and legacy-c", got)
	}
	if n := rawCount(t, s2, `SELECT count(*) FROM nodes WHERE bmc_key IS NOT NULL`); n != 2 {
		t.Fatalf("%d nodes have a key, want 2 (legacy-a, legacy-d)", n)
	}
	dup := newNode("legacy-e")
	dup.BMC.SystemID = a.BMC.SystemID
	wantBMCConflict(t, s2.InsertNode(ctx, dup), a)

	// A duplicate's unrelated writes still work and claim nothing.
	bb := getNode(t, s2, b.ID)
	bb.PowerState = baremetal.PowerOn
	must(t, s2.UpdateNode(ctx, bb))
	// Moved to an endpoint of its own, a duplicate takes that key; moved
	// back, it is refused like any other.
	cc := getNode(t, s2, c.ID)
	cc.BMC.SystemID = "/redfish/v1/Systems/moved"
	must(t, s2.UpdateNode(ctx, cc))
	if got := unkeyed(s2); !slices.Equal(got, []string{"legacy-b"}) {
		t.Fatalf("nodes without a key after moving legacy-c: %v, want [legacy-b]", got)
	}
	cc.BMC.SystemID = a.BMC.SystemID
	wantBMCConflict(t, s2.UpdateNode(ctx, cc), a)

	// Once the oldest is gone, the next start gives the endpoint to b.
	must(t, s2.DeleteNode(ctx, a.ID, a.Version))
	must(t, s2.Close())
	s3 := reopen(t, s2)
	if got := unkeyed(s3); len(got) != 0 {
		t.Fatalf("nodes without a key after the holder was deleted: %v", got)
	}
	wantBMCConflict(t, s3.InsertNode(ctx, dup), getNode(t, s3, b.ID))
	getNode(t, s3, d.Name)
}

// testNodesOnBMC: the nodes on one BMC endpoint, whatever their system
// (none, or any spelling), oldest first; not those on a port or host whose
// key shares a prefix, nor an IPMI node on the same host.
func testNodesOnBMC(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	on := func(name, address, system string) *baremetal.Node {
		n := newNode(name)
		n.BMC.Address, n.BMC.SystemID = address, system
		return insertNode(t, s, n)
	}
	a := on("on-a", "https://10.0.0.1:8443", "/redfish/v1/Systems/1/")
	b := on("on-b", "HTTPS://10.0.0.1:8443/", "")
	c := on("on-c", "https://10.0.0.1:8443", "System.Embedded.1")
	d := on("on-d", "https://10.0.0.1:844", "")
	on("on-e", "https://10.0.0.10:8443", "")
	on("on-f", "https://bmc-2.example", "")
	g := on("on-g", "https://bmc.example", "1")
	ipmi := newNode("on-ipmi")
	ipmi.Driver, ipmi.BMC.Address, ipmi.BMC.SystemID = baremetal.DriverIPMI, "ipmi://10.0.0.1", ""
	insertNode(t, s, ipmi)

	names := func(q store.Queries, address string) []string {
		t.Helper()
		ep, err := baremetal.BMCEndpointKey(baremetal.DriverRedfish, address)
		must(t, err)
		hs, err := q.NodesOnBMC(ctx, ep)
		must(t, err)
		var out []string
		for _, h := range hs {
			out = append(out, h.Name)
		}
		return out
	}
	for address, want := range map[string][]string{
		"https://10.0.0.1:8443": {a.Name, b.Name, c.Name},
		"https://10.0.0.1:844":  {d.Name},
		"http://bmc.example":    {g.Name},
		"https://10.0.0.2":      nil,
	} {
		if got := names(s, address); !slices.Equal(got, want) {
			t.Errorf("nodes on %s: %v, want %v", address, got, want)
		}
	}
	must(t, s.InTx(ctx, func(tx store.Tx) error {
		if got := names(tx, "https://10.0.0.1:8443"); !slices.Equal(got, []string{a.Name, b.Name, c.Name}) {
			t.Errorf("nodes on the BMC in a transaction: %v", got)
		}
		return nil
	}))
	hs, err := s.NodesOnBMC(ctx, "redfish://10.0.0.1:8443")
	must(t, err)
	if h := hs[0]; h.ID != a.ID || h.Address != a.BMC.Address || h.SystemID != a.BMC.SystemID || h.State != a.ProvisionState {
		t.Errorf("holder %+v does not describe node %s", h, a.Name)
	}
}

// testNodesWithBMCKeys: the nodes holding any of a few BMC keys, oldest
// first as NodesOnBMC orders them; "" and keys nobody holds find nothing;
// more keys than store.MaxBMCKeys is an error. Combined with
// store.SameMachine they find what the nodes on the BMC do.
func testNodesWithBMCKeys(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	on := func(name, address, system string) *baremetal.Node {
		n := newNode(name)
		n.BMC.Address, n.BMC.SystemID = address, system
		return insertNode(t, s, n)
	}
	a := on("keys-a", "https://10.0.0.1:8443", "/redfish/v1/Systems/1/")
	b := on("keys-b", "HTTPS://10.0.0.1:8443/", "")
	c := on("keys-c", "https://10.0.0.1:8443", "System.Embedded.1")
	on("keys-d", "https://10.0.0.1:844", "")
	key := func(address, system string) string {
		t.Helper()
		k, err := baremetal.BMCKey(baremetal.DriverRedfish, baremetal.BMC{Address: address, SystemID: system})
		must(t, err)
		return k
	}
	names := func(q store.Queries, keys ...string) []string {
		t.Helper()
		hs, err := q.NodesWithBMCKeys(ctx, keys...)
		must(t, err)
		var out []string
		for _, h := range hs {
			out = append(out, h.Name)
		}
		return out
	}
	ep := "redfish://10.0.0.1:8443"
	for _, tc := range []struct {
		keys []string
		want []string
	}{
		{[]string{key("https://10.0.0.1:8443", "1")}, []string{a.Name}},
		{[]string{ep, key("https://10.0.0.1:8443", "/redfish/v1/Systems/System.Embedded.1"), key("https://10.0.0.1:8443", "Systems/1")},
			[]string{a.Name, b.Name, c.Name}},
		{[]string{"", ep, ""}, []string{b.Name}},
		{[]string{key("https://10.0.0.1:8443", "2")}, nil},
		{nil, nil},
	} {
		if got := names(s, tc.keys...); !slices.Equal(got, tc.want) {
			t.Errorf("nodes with keys %q: %v, want %v", tc.keys, got, tc.want)
		}
	}
	must(t, s.InTx(ctx, func(tx store.Tx) error {
		if got := names(tx, ep); !slices.Equal(got, []string{b.Name}) {
			t.Errorf("nodes with the BMC's own key in a transaction: %v", got)
		}
		return nil
	}))
	hs, err := s.NodesWithBMCKeys(ctx, key("https://10.0.0.1:8443", "1"))
	must(t, err)
	if len(hs) != 1 || hs[0].ID != a.ID || hs[0].Address != a.BMC.Address || hs[0].SystemID != a.BMC.SystemID || hs[0].State != a.ProvisionState {
		t.Errorf("holders %+v do not describe node %s", hs, a.Name)
	}
	if _, err := s.NodesWithBMCKeys(ctx, make([]string, store.MaxBMCKeys+1)...); err == nil {
		t.Errorf("%d keys: no error", store.MaxBMCKeys+1)
	}
	// What SameMachine finds among them is what it finds among the nodes
	// on the BMC, for a node with a system and without.
	all, err := s.NodesOnBMC(ctx, ep)
	must(t, err)
	for _, tc := range []struct {
		system  string
		members []string
	}{
		{"1", nil}, {"/redfish/v1/Systems/1", []string{"/redfish/v1/Systems/1/", "/redfish/v1/Systems/2"}},
		{"System.Embedded.1", []string{"/redfish/v1/Systems/System.Embedded.1"}}, {"7", nil}, {"7", []string{"a", "b"}},
	} {
		n := newNode("keys-new")
		n.BMC.Address, n.BMC.SystemID = "https://10.0.0.1:8443", tc.system
		keys, ok := store.MachineKeys(n, tc.members)
		if !ok {
			t.Fatalf("MachineKeys(%q): none", tc.system)
		}
		byKey, err := s.NodesWithBMCKeys(ctx, keys...)
		must(t, err)
		if got, want := store.SameMachine(n, "", byKey, tc.members), store.SameMachine(n, "", all, tc.members); !slices.Equal(got, want) {
			t.Errorf("system %q, members %q: by key %v, on the BMC %v", tc.system, tc.members, got, want)
		}
	}
}
