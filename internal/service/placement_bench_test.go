package service_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/jobs"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// The placement benchmark and its cheap twin in go test (issue 29, item
// 6): a mixed fleet enrolled straight into the store, instances with
// requirements created through the service from many clients at once,
// and afterwards proof that no node went to two instances, that every
// node meets its instance's requirements, and that no node left free was
// a better fit than the one an instance got.

// Projects owning part of the fleet (placement prefers their own nodes,
// and keeps everyone else off them).
const (
	ownerML = "team-ml"
	ownerDB = "team-db"
)

// seedFleet enrolls n available nodes directly through the store, 500 to
// a transaction, with hardware, traits and owners drawn from a fixed seed
// so that every run (and both stores) gets the same fleet. It returns the
// nodes as stored.
func seedFleet(tb testing.TB, st store.Store, n int) []*baremetal.Node {
	tb.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(29, 6))
	pick := func(vs ...int) int { return vs[rng.IntN(len(vs))] }
	nodes := make([]*baremetal.Node, 0, n)
	for start := 0; start < n; start += 500 {
		err := st.InTx(ctx, func(tx store.Tx) error {
			for i := start; i < min(start+500, n); i++ {
				node := fleetNode(i, rng, pick)
				if err := tx.InsertNode(ctx, node); err != nil {
					return fmt.Errorf("insert node %s: %w", node.Name, err)
				}
				nodes = append(nodes, node)
			}
			return nil
		})
		if err != nil {
			tb.Fatalf("seed fleet: %v", err)
		}
	}
	return nodes
}

// fleetNode is the i-th node of the fleet: memory 64 GiB to 1 TiB, 16 to
// 128 CPUs, 480 GB to 3.84 TB of SSD or NVMe, four in five x86_64 and the
// rest aarch64, an A100 on about one in ten, 100 racks, one in ten
// managed over IPMI (no virtual media), and about one in twelve owned by
// a project.
func fleetNode(i int, rng *rand.Rand, pick func(...int) int) *baremetal.Node {
	arch := "x86_64"
	if rng.IntN(5) == 0 {
		arch = "aarch64"
	}
	props := baremetal.Properties{
		CPUs:     pick(16, 32, 48, 64, 96, 128),
		MemoryMB: pick(64, 128, 256, 512, 1024) * 1024,
		LocalGB:  pick(480, 960, 1920, 3840),
		CPUArch:  arch,
	}
	traits := []string{fmt.Sprintf("rack:r%02d", rng.IntN(100))}
	if rng.IntN(10) == 0 {
		traits = append(traits, "CUSTOM_GPU_A100")
	}
	if rng.IntN(4) == 0 {
		traits = append(traits, "CUSTOM_MAINT_WINDOW_B")
	}
	derived := []string{baremetal.ArchTrait(arch), baremetal.TraitBootModePrefix + "UEFI",
		baremetal.NICSpeedTrait(pick(25000, 100000))}
	if rng.IntN(2) == 0 {
		derived = append(derived, baremetal.TraitSecureBoot)
	}
	if rng.IntN(3) == 0 {
		derived = append(derived, baremetal.TraitDiskPrefix+"NVME")
	} else {
		derived = append(derived, baremetal.TraitDiskPrefix+"SSD")
	}
	driver := baremetal.DriverRedfish
	if rng.IntN(10) == 0 {
		driver = baremetal.DriverIPMI
	}
	var owner string
	switch rng.IntN(25) {
	case 0, 1:
		owner = ownerML
	case 2:
		owner = ownerDB
	}
	return &baremetal.Node{
		Name:   fmt.Sprintf("fleet-%05d", i),
		Driver: driver,
		// Distinct BMC endpoints: the store refuses two nodes on one.
		BMC: baremetal.BMC{Address: fmt.Sprintf("https://10.%d.%d.%d", i>>16&255, i>>8&255, i&255),
			Username: "admin", Password: "pw", SystemID: "/redfish/v1/Systems/1"},
		ResourceClass:  "baremetal",
		Properties:     props,
		Inspected:      props,
		Traits:         traits,
		DerivedTraits:  derived,
		Owner:          owner,
		PowerState:     baremetal.PowerOff,
		ProvisionState: baremetal.StateAvailable,
	}
}

// placementShape is the project and requirements of the i-th instance: a
// mix of general compute that stays off GPUs and one maintenance window, GPU jobs, aarch64, NVMe
// databases kept out of one rack, and the two owning projects (whose
// instances go to their own nodes first). One in ten carries user data,
// so only a Redfish node (virtual media) can take it.
func placementShape(i int) (string, baremetal.Requirements, string) {
	var userData string
	if i%10 == 3 {
		userData = "#cloud-config\n"
	}
	switch k := i % 20; {
	case k < 8:
		return "web", baremetal.Requirements{MinMemoryMB: 128 * 1024, CPUArch: "x86_64",
			ForbiddenTraits: []string{"CUSTOM_GPU_A100", "CUSTOM_MAINT_WINDOW_B"}}, userData
	case k < 11:
		return "research", baremetal.Requirements{RequiredTraits: []string{"CUSTOM_GPU_A100", "HW_ARCH_X86_64"}}, userData
	case k < 14:
		return "arm", baremetal.Requirements{CPUArch: "aarch64", MinCPUs: 32}, userData
	case k < 16:
		return "db", baremetal.Requirements{RequiredTraits: []string{"STORAGE_DISK_NVME"}, MinDiskGB: 1920,
			ForbiddenTraits: []string{"rack:r07"}}, userData
	case k < 18:
		return ownerML, baremetal.Requirements{RequiredTraits: []string{"CUSTOM_GPU_A100"}}, userData
	default:
		return ownerDB, baremetal.Requirements{MinMemoryMB: 256 * 1024}, userData
	}
}

// createShaped creates the i-th instance as a member of its project.
func createShaped(ctx context.Context, svc *service.Service, i int) (*baremetal.Instance, error) {
	project, req, userData := placementShape(i)
	member := service.Caller{TokenID: "t-" + project, Role: baremetal.RoleMember, Project: project}
	return svc.CreateInstance(ctx, member, baremetal.Instance{Name: fmt.Sprintf("vm-%05d", i), Requirements: req,
		UserData: userData, Image: baremetal.Image{URL: "https://images.example/x.iso"}})
}

// placeConcurrently creates instances first..first+count-1 from clients
// goroutines, each taking the next index, and returns every create's
// latency. Any failed create fails tb: the fleet has room for them all.
func placeConcurrently(tb testing.TB, svc *service.Service, first, count, clients int) []time.Duration {
	tb.Helper()
	ctx := context.Background()
	lat := make([]time.Duration, count)
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= count || failed.Load() > 0 {
					return
				}
				t0 := time.Now()
				_, err := createShaped(ctx, svc, first+k)
				lat[k] = time.Since(t0)
				if err != nil {
					failed.Add(1)
					tb.Errorf("create instance %d: %v", first+k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		tb.FailNow()
	}
	return lat
}

// placeSequentially creates instances first..first+count-1 one at a time
// and checks that each goes to the node baremetal.BestFitLess puts first
// among the free nodes that fit it, as the fleet model free says
// (updated with each placement): placement is deterministic.
func placeSequentially(tb testing.TB, svc *service.Service, free map[string]*baremetal.Node, first, count int) {
	tb.Helper()
	ctx := context.Background()
	for i := first; i < first+count; i++ {
		inst, err := createShaped(ctx, svc, i)
		if err != nil {
			tb.Fatalf("create instance %d: %v", i, err)
		}
		var want *baremetal.Node
		for _, n := range free {
			if fitsInstance(n, inst) && (want == nil || baremetal.BestFitLess(n, want)) {
				want = n
			}
		}
		if want == nil {
			tb.Fatalf("instance %d (%s, %+v) placed on %s, but no free node fits it", i, inst.Project, inst.Requirements, inst.NodeID)
		}
		if inst.NodeID != want.ID {
			got := free[inst.NodeID]
			if got == nil {
				tb.Fatalf("instance %d (%s, %+v) placed on %s, which was not free; best fit is %s", i, inst.Project, inst.Requirements, inst.NodeID, want.Name)
			}
			tb.Fatalf("instance %d (%s, %+v) placed on %s (%+v, owner %q); best fit is %s (%+v, owner %q)", i, inst.Project, inst.Requirements,
				got.Name, got.Properties, got.Owner, want.Name, want.Properties, want.Owner)
		}
		delete(free, inst.NodeID)
	}
}

// fitsInstance reports whether the free node n could have taken inst:
// its requirements and owner, and virtual media where inst needs them.
func fitsInstance(n *baremetal.Node, inst *baremetal.Instance) bool {
	return baremetal.Placement{Requirements: inst.Requirements, Project: inst.Project}.Fits(n) && n.CanCarryConfigDrive(inst)
}

// checkPlacements reads every instance and node back and fails tb unless
// there are want instances, each on its own node, that node naming it,
// deploying it and meeting its requirements, and no other node taken;
// and unless no node left free fits an instance better (BestFitLess)
// than the node it got. Nodes are only ever taken here, never freed, so
// a node free now was free, and fitting, when each instance was placed:
// best fit must have preferred it. It returns the number of double
// bookings found (0 when it returns at all).
func checkPlacements(tb testing.TB, st store.Store, want int) int {
	tb.Helper()
	ctx := context.Background()
	var insts []*baremetal.Instance
	for after := ""; ; {
		page, next, err := st.ListInstances(ctx, store.InstanceFilter{Page: store.Page{After: after, Limit: store.MaxPageLimit}})
		if err != nil {
			tb.Fatalf("list instances: %v", err)
		}
		insts = append(insts, page...)
		if next == "" {
			break
		}
		after = next
	}
	nodes := map[string]*baremetal.Node{}
	var free []*baremetal.Node
	taken := 0
	for after := ""; ; {
		page, next, err := st.ListNodes(ctx, store.NodeFilter{Page: store.Page{After: after, Limit: store.MaxPageLimit}, IncludeDeleting: true})
		if err != nil {
			tb.Fatalf("list nodes: %v", err)
		}
		for _, n := range page {
			nodes[n.ID] = n
			if n.InstanceID != "" {
				taken++
			}
			if n.Schedulable() {
				free = append(free, n)
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	if len(insts) != want {
		tb.Fatalf("%d instances stored; want %d", len(insts), want)
	}
	doubles := 0
	byNode := map[string]string{}
	for _, inst := range insts {
		if other, ok := byNode[inst.NodeID]; ok {
			doubles++
			tb.Errorf("double booking: node %s holds instances %s and %s", inst.NodeID, other, inst.ID)
			continue
		}
		byNode[inst.NodeID] = inst.ID
		n := nodes[inst.NodeID]
		switch {
		case n == nil:
			tb.Errorf("instance %s is on node %q, which does not exist", inst.ID, inst.NodeID)
		case n.InstanceID != inst.ID:
			doubles++
			tb.Errorf("double booking: instance %s is on node %s, which names instance %q", inst.ID, n.ID, n.InstanceID)
		case n.ProvisionState != baremetal.StateDeploying:
			tb.Errorf("node %s of instance %s is %s; want deploying", n.Name, inst.ID, n.ProvisionState)
		case !fitsInstance(n, inst):
			tb.Errorf("instance %s (project %s, %+v, user data %t) placed on node %s, which fails %v (driver %s)",
				inst.ID, inst.Project, inst.Requirements, inst.UserData != "", n.Name,
				baremetal.Placement{Requirements: inst.Requirements, Project: inst.Project}.Unmet(n), n.Driver)
		}
	}
	if taken != want {
		tb.Errorf("%d nodes hold an instance; want %d", taken, want)
	}
	// The free nodes in best-fit order: the first that fits an instance
	// must not come before its node.
	sort.Slice(free, func(i, j int) bool { return baremetal.BestFitLess(free[i], free[j]) })
	worse := 0
	for _, inst := range insts {
		n := nodes[inst.NodeID]
		if n == nil {
			continue
		}
		for _, f := range free {
			if !baremetal.BestFitLess(f, n) {
				break
			}
			if fitsInstance(f, inst) {
				worse++
				if worse <= 5 {
					tb.Errorf("instance %s (project %s, %+v) got node %s (%+v, owner %q) while %s (%+v, owner %q) fits better and stayed free",
						inst.ID, inst.Project, inst.Requirements, n.Name, n.Properties, n.Owner, f.Name, f.Properties, f.Owner)
				}
				break
			}
		}
	}
	if worse > 0 {
		tb.Errorf("%d of %d instances did not get the best fit among the nodes still free", worse, len(insts))
	}
	if tb.Failed() {
		tb.FailNow()
	}
	return doubles
}

// newPlacementService is a service on st whose jobs are inserted into
// River's table but never run (no worker starts, no BMC is called), so
// that a create costs what it does in production, deploy job included.
func newPlacementService(tb testing.TB, st store.Store) *service.Service {
	tb.Helper()
	runner, err := jobs.New(jobs.Config{Store: st, BMC: noBMC{}})
	if err != nil {
		tb.Fatal(err)
	}
	return service.New(st, runner, slog.New(slog.DiscardHandler))
}

var placementStores = []struct {
	name string
	open func(testing.TB) store.Store
}{{"sqlite", storetest.OpenSQLite}, {"postgres", storetest.OpenPostgres}}

// TestPlacementUnderConcurrency is BenchmarkPlacement small enough for
// every go test run: 200 nodes, 20 instances placed one at a time (each
// on the node best fit picks), then 40 more from 8 clients at once; no
// node goes to two instances, and each meets its instance's requirements.
// It measures nothing.
func TestPlacementUnderConcurrency(t *testing.T) {
	for _, s := range placementStores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			st := s.open(t)
			svc := newPlacementService(t, st)
			free := map[string]*baremetal.Node{}
			for _, n := range seedFleet(t, st, 200) {
				free[n.ID] = n
			}
			placeSequentially(t, svc, free, 0, 20)
			placeConcurrently(t, svc, 20, 40, 8)
			checkPlacements(t, st, 60)
		})
	}
}

// BenchmarkPlacement places 1,000 instances with requirements (see
// placementShape) on a fleet of 10,000 nodes (seedFleet) from 32
// concurrent clients, each create through the service as the API makes
// it, deploy job inserted, on each store. One iteration is the whole
// run, on a fleet enrolled afresh before the timer; it reports
// placements/s and the creates' p50 and p99 latency, then proves that
// there was no double booking (checkPlacements). Run it once:
//
//	go test ./internal/service/ -run '^$' -bench BenchmarkPlacement -benchtime 1x -timeout 30m
func BenchmarkPlacement(b *testing.B) {
	const nodes, placements, clients = 10000, 1000, 32
	for _, s := range placementStores {
		b.Run(s.name, func(b *testing.B) {
			var lat []time.Duration
			var elapsed time.Duration
			doubles := 0
			b.StopTimer()
			for range b.N {
				st := s.open(b)
				svc := newPlacementService(b, st)
				seedFleet(b, st, nodes)
				t0 := time.Now()
				b.StartTimer()
				lat = append(lat, placeConcurrently(b, svc, 0, placements, clients)...)
				b.StopTimer()
				elapsed += time.Since(t0)
				doubles += checkPlacements(b, st, placements)
			}
			slices.Sort(lat)
			q := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			rate := float64(len(lat)) / elapsed.Seconds()
			b.ReportMetric(rate, "placements/s")
			b.ReportMetric(q(0.50), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.Logf("placement %s: %d placements on %d nodes, %d clients: %.0f/s, p50 %.1f ms, p99 %.1f ms, %d double bookings",
				s.name, placements, nodes, clients, rate, q(0.50), q(0.99), doubles)
		})
	}
}
