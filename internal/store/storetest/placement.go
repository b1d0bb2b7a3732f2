package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// placementFleet inserts n nodes of varied hardware, traits, owners and
// states (seeded, so a failure repeats) and returns them as stored.
func placementFleet(t *testing.T, s store.Store, n int, seed uint64) []*baremetal.Node {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 29))
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	var out []*baremetal.Node
	for i := range n {
		nd := newNode(fmt.Sprintf("fit-%03d", i))
		nd.ResourceClass = pick("gpu", "cpu")
		nd.ProvisionState = baremetal.StateAvailable
		nd.Properties = baremetal.Properties{
			CPUs:     []int{0, 16, 32, 64}[rng.IntN(4)],
			MemoryMB: []int{0, 65536, 131072, 262144}[rng.IntN(4)],
			LocalGB:  []int{0, 240, 960}[rng.IntN(3)],
			CPUArch:  pick("", "x86_64", "aarch64", "X86_64"),
		}
		for _, t := range []string{"CUSTOM_GPU_A100", "CUSTOM_GPU", "rack:r1", "rack:r12", "CUSTOM_A_B"} {
			if rng.IntN(3) == 0 {
				nd.Traits = append(nd.Traits, t)
			}
		}
		for _, t := range []string{"STORAGE_DISK_SSD", "HW_NIC_SPEED_25G", "CUSTOM_GPU_A"} {
			if rng.IntN(3) == 0 {
				nd.DerivedTraits = append(nd.DerivedTraits, t)
			}
		}
		nd.Owner = pick("", "", "", "team-a", "team-b")
		switch rng.IntN(8) {
		case 0:
			nd.Maintenance, nd.MaintenanceReason = true, "fan"
		case 1:
			nd.Fault = baremetal.FaultBMCUnreachable
		case 2:
			nd.ProvisionState = baremetal.StateCleaning
		case 3:
			nd.InstanceID = "someone"
		}
		out = append(out, insertNode(t, s, nd))
	}
	return out
}

// randomPlacement is a claim with a random mix of requirements, over the
// traits placementFleet uses (and a few no node has), with values that
// test the edges: a trait that is a prefix or a suffix of another
// (CUSTOM_GPU, CUSTOM_GPU_A), an underscore that LIKE would take as a
// wildcard (CUSTOM_A_B vs CUSTOMxAxB), the architecture in another case.
func randomPlacement(rng *rand.Rand) store.NodeClaim {
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	traits := []string{"CUSTOM_GPU_A100", "CUSTOM_GPU", "CUSTOM_GPU_A", "rack:r1", "rack:r12", "STORAGE_DISK_SSD",
		"HW_NIC_SPEED_25G", "CUSTOM_A_B", "CUSTOMxAxB", "NOPE"}
	var r baremetal.Requirements
	for range rng.IntN(3) {
		r.RequiredTraits = append(r.RequiredTraits, traits[rng.IntN(len(traits))])
	}
	for range rng.IntN(2) {
		if t := traits[rng.IntN(len(traits))]; !slices.Contains(r.RequiredTraits, t) {
			r.ForbiddenTraits = append(r.ForbiddenTraits, t)
		}
	}
	r.RequiredTraits, r.ForbiddenTraits = baremetal.SortedTraits(r.RequiredTraits), baremetal.SortedTraits(r.ForbiddenTraits)
	if rng.IntN(2) == 0 {
		r.MinCPUs = []int{1, 16, 33, 64}[rng.IntN(4)]
	}
	if rng.IntN(2) == 0 {
		r.MinMemoryMB = []int{1, 65536, 131073, 262144}[rng.IntN(4)]
	}
	if rng.IntN(3) == 0 {
		r.MinDiskGB = []int{1, 240, 961}[rng.IntN(3)]
	}
	if rng.IntN(3) == 0 {
		r.CPUArch = pick("x86_64", "AARCH64", "ppc64le")
	}
	c := store.NodeClaim{Placement: baremetal.Placement{ResourceClass: pick("", "gpu", "cpu"), Requirements: r,
		Project: pick("team-a", "team-b", "team-c")}}
	if rng.IntN(4) == 0 {
		c.Driver = baremetal.DriverRedfish
	}
	return c
}

// testClaimNodeBestFit: ClaimNode's SQL selects exactly the nodes
// baremetal.Placement.Fits selects in Go (traits searched in their
// comma-joined column, owners, minimums, the architecture in any case),
// and of those takes the first in baremetal.BestFitLess order: for
// hundreds of random requirements over a fleet of varied nodes.
func testClaimNodeBestFit(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	fleet := placementFleet(t, s, 120, 7)
	rng := rand.New(rand.NewPCG(11, 29))
	found := 0
	for range 300 {
		c := randomPlacement(rng)
		var fit []*baremetal.Node
		for _, n := range fleet {
			if c.Fits(n) {
				fit = append(fit, n)
			}
		}
		sort.Slice(fit, func(i, j int) bool { return baremetal.BestFitLess(fit[i], fit[j]) })
		var got *baremetal.Node
		err := s.InTx(ctx, func(tx store.Tx) error {
			n, err := tx.ClaimNode(ctx, c)
			if err != nil {
				return err
			}
			got = n
			return errRollback // claim only: the fleet stays as it is
		})
		if len(fit) == 0 {
			if !baremetal.IsCode(err, baremetal.CodeNotFound) {
				t.Fatalf("ClaimNode(%+v) = %v, %v; Go finds no node that fits", c, got, err)
			}
			continue
		}
		if err != errRollback || got == nil {
			t.Fatalf("ClaimNode(%+v): %v; Go finds %d nodes that fit, first %s", c, err, len(fit), fit[0].Name)
		}
		found++
		if got.ID != fit[0].ID {
			t.Fatalf("ClaimNode(%+v) took %s (%+v %v %v owner %q); best fit is %s (%+v %v %v owner %q)", c,
				got.Name, got.Properties, got.Traits, got.DerivedTraits, got.Owner,
				fit[0].Name, fit[0].Properties, fit[0].Traits, fit[0].DerivedTraits, fit[0].Owner)
		}
	}
	if found < 30 {
		t.Fatalf("only %d of 300 random claims found a node: the test proves little", found)
	}
}

// testNodeListPlacementFilters: the node list's owner, visibility,
// schedulability and requirement filters select what Go does.
func testNodeListPlacementFilters(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	fleet := placementFleet(t, s, 80, 3)
	rng := rand.New(rand.NewPCG(5, 29))
	yes, no := true, false
	for i := range 120 {
		c := randomPlacement(rng)
		f := store.NodeFilter{Page: store.Page{Limit: 7}, Requirements: c.Requirements, IncludeDeleting: true}
		switch i % 4 {
		case 0:
			f.Owner = c.Project
		case 1:
			f.VisibleTo = c.Project
		case 2:
			f.Schedulable = &yes
		case 3:
			f.Schedulable = &no
		}
		var want []string
		for _, n := range fleet {
			p := baremetal.Placement{Requirements: c.Requirements, Project: n.Owner} // owner never unmet here
			ok := p.Fits(n) &&
				(f.Owner == "" || n.Owner == f.Owner) &&
				(f.VisibleTo == "" || n.Owner == "" || n.Owner == f.VisibleTo) &&
				(f.Schedulable == nil || n.Schedulable() == *f.Schedulable)
			if ok {
				want = append(want, n.ID)
			}
		}
		slices.Sort(want)
		var got []string
		for {
			page, next, err := s.ListNodes(ctx, f)
			must(t, err)
			for _, n := range page {
				got = append(got, n.ID)
			}
			if next == "" {
				break
			}
			f.After = next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ListNodes(%+v): %d nodes, Go selects %d", f, len(got), len(want))
		}
	}
}

// testNodeTraitsRoundTrip: traits, derived traits and the owner read
// back as written, sorted, [] for none.
func testNodeTraitsRoundTrip(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	n := newNode("traits")
	n.Traits, n.DerivedTraits, n.Owner = []string{"rack:r1", "CUSTOM_GPU_A100"}, []string{"HW_ARCH_X86_64"}, "team-a"
	insertNode(t, s, n)
	got := getNode(t, s, n.ID)
	if !slices.Equal(got.Traits, []string{"CUSTOM_GPU_A100", "rack:r1"}) || !slices.Equal(got.DerivedTraits, []string{"HW_ARCH_X86_64"}) || got.Owner != "team-a" {
		t.Fatalf("read back traits %q derived %q owner %q", got.Traits, got.DerivedTraits, got.Owner)
	}
	got.Traits, got.DerivedTraits, got.Owner = nil, nil, ""
	must(t, s.UpdateNode(ctx, got))
	again := getNode(t, s, n.ID)
	if again.Traits == nil || len(again.Traits) != 0 || len(again.DerivedTraits) != 0 || again.Owner != "" {
		t.Fatalf("cleared: traits %#v derived %#v owner %q", again.Traits, again.DerivedTraits, again.Owner)
	}
	inst := newInstance("p1", "req")
	inst.Requirements = baremetal.Requirements{RequiredTraits: []string{"CUSTOM_GPU_A100"}, ForbiddenTraits: []string{"rack:r1"},
		MinCPUs: 8, MinMemoryMB: 1024, MinDiskGB: 10, CPUArch: "aarch64"}
	must(t, s.InsertInstance(ctx, inst))
	back, err := s.GetInstance(ctx, inst.ID)
	must(t, err)
	same(t, "instance requirements", inst.Requirements, back.Requirements)
}

// testHardwareSettingsRoundTrip: a node's hardware settings and what was
// observed of them read back as written; BIOS registries are stored once
// per name.
func testHardwareSettingsRoundTrip(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	on := true
	at := time.Now().UTC().Truncate(time.Microsecond)
	n := newNode("hw")
	n.Settings = baremetal.HardwareSettings{BIOS: map[string]string{"ProcVirtualization": "Enabled", "NumaNodesPerSocket": "2"}, SecureBoot: &on}
	n.Observed = baremetal.HardwareObserved{BIOS: map[string]string{"ProcVirtualization": "Disabled"}, Registry: "BiosAttributeRegistry.v1_0_0",
		Lacks: []string{"Secure Boot"}, ReadAt: &at}
	n.Health = baremetal.Health{State: baremetal.HealthWarning, Reasons: []string{"fan Fan3: Warning (900 RPM)"}, HottestC: 71.5,
		FansFailed: 1, LogAfter: "0000000042", ReadAt: &at}
	insertNode(t, s, n)
	got := getNode(t, s, n.ID)
	same(t, "health", n.Health, got.Health)
	same(t, "hardware settings", n.Settings, got.Settings)
	same(t, "hardware observed", n.Observed, got.Observed)
	got.Settings, got.Observed = baremetal.HardwareSettings{}, baremetal.HardwareObserved{}
	must(t, s.UpdateNode(ctx, got))
	if again := getNode(t, s, n.ID); !again.Settings.IsZero() || again.Observed.ReadAt != nil {
		t.Fatalf("cleared: %+v %+v", again.Settings, again.Observed)
	}
	if _, err := s.GetBIOSRegistry(ctx, "none"); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Fatalf("missing registry: %v", err)
	}
	lo, hi := int64(1), int64(4)
	reg := baremetal.BIOSRegistry{"ProcVirtualization": {Type: "Enumeration", Values: []string{"Enabled", "Disabled"}},
		"NumaNodesPerSocket": {Type: "Integer", LowerBound: &lo, UpperBound: &hi}}
	must(t, s.PutBIOSRegistry(ctx, "r1", reg))
	must(t, s.PutBIOSRegistry(ctx, "r1", reg))
	back, err := s.GetBIOSRegistry(ctx, "r1")
	must(t, err)
	same(t, "BIOS registry", reg, back)
}
