package service_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/postgres"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// enrollShaped enrolls an available node of class gpu with the hardware,
// traits and owner given.
func enrollShaped(t testing.TB, st store.Store, svc *service.Service, name string, p baremetal.Properties, owner string, traits ...string) *baremetal.Node {
	t.Helper()
	ctx := context.Background()
	n, err := svc.CreateNode(ctx, admin, service.NodeSpec{Name: name, Driver: baremetal.DriverRedfish, ResourceClass: "gpu",
		BMC:        baremetal.BMC{Address: "https://10.9.0.1", Username: "u", Password: "p", SystemID: "/redfish/v1/Systems/" + name},
		Properties: p, Traits: traits, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	n.ProvisionState = baremetal.StateAvailable
	if err := st.UpdateNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Placement with requirements takes the smallest node that meets them
// (a project's own nodes first), never a node another project owns, and
// when none fits says per requirement how many nodes fail it; the counts
// come in numbers too, and nothing is pending when no node fits.
func TestPlacementRequirementsAndExplanations(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			svc := service.New(st, &countingJobs{}, nil)
			ctx := context.Background()
			big := enrollShaped(t, st, svc, "big", baremetal.Properties{CPUs: 128, MemoryMB: 524288, CPUArch: "x86_64"}, "", "CUSTOM_GPU_A100")
			small := enrollShaped(t, st, svc, "small", baremetal.Properties{CPUs: 32, MemoryMB: 131072, CPUArch: "x86_64"}, "", "CUSTOM_GPU_A100")
			owned := enrollShaped(t, st, svc, "owned", baremetal.Properties{CPUs: 64, MemoryMB: 262144, CPUArch: "x86_64"}, "team-b", "CUSTOM_GPU_A100")
			enrollShaped(t, st, svc, "plain", baremetal.Properties{CPUs: 16, MemoryMB: 65536, CPUArch: "x86_64"}, "")
			enrollShaped(t, st, svc, "arm", baremetal.Properties{CPUs: 16, MemoryMB: 65536, CPUArch: "aarch64"}, "")
			teamA := service.Caller{TokenID: "a", Role: baremetal.RoleMember, Project: "team-a"}
			teamB := service.Caller{TokenID: "b", Role: baremetal.RoleMember, Project: "team-b"}
			gpu := func(name string, r baremetal.Requirements) baremetal.Instance {
				return baremetal.Instance{Name: name, ResourceClass: "gpu", Image: baremetal.Image{URL: "https://i/x.iso"}, Requirements: r}
			}
			want := baremetal.Requirements{RequiredTraits: []string{"CUSTOM_GPU_A100"}, MinMemoryMB: 100000}

			// Best fit: the smallest that meets them, not the first or the biggest.
			i1, err := svc.CreateInstance(ctx, teamA, gpu("a1", want))
			if err != nil || i1.NodeID != small.ID {
				t.Fatalf("first placement: %v on %v, want small", err, i1)
			}
			// team-b's own node first, though a bigger unowned one is free.
			i2, err := svc.CreateInstance(ctx, teamB, gpu("b1", want))
			if err != nil || i2.NodeID != owned.ID {
				t.Fatalf("team-b placement: %v on %v, want its own node", err, i2)
			}
			// team-a never gets team-b's node: it gets the big one, then nothing.
			i3, err := svc.CreateInstance(ctx, teamA, gpu("a2", want))
			if err != nil || i3.NodeID != big.ID {
				t.Fatalf("second team-a placement: %v on %v, want big", err, i3)
			}
			got, err := svc.GetInstance(ctx, teamA, i3.ID)
			if err != nil || got.Requirements.MinMemoryMB != 100000 || got.Requirements.RequiredTraits[0] != "CUSTOM_GPU_A100" {
				t.Fatalf("requirements read back: %+v, %v", got, err)
			}

			_, err = svc.CreateInstance(ctx, teamA, gpu("a3", baremetal.Requirements{RequiredTraits: []string{"CUSTOM_GPU_H100"}, MinMemoryMB: 262144, CPUArch: "aarch64"}))
			msg := baremetal.ErrorMessage(err)
			for _, part := range []string{`no node of class "gpu" fits the instance's requirements: of 5 nodes`,
				"5 lack trait CUSTOM_GPU_H100", "4 are not aarch64", "3 have less than 262144 MB memory (or unknown)",
				"1 is owned by another project"} {
				if !baremetal.IsCode(err, baremetal.CodeNoCapacity) || !strings.Contains(msg, part) {
					t.Fatalf("no fit: %v; want it to say %q", err, part)
				}
			}
			c := baremetal.ErrorCapacity(err)
			if c == nil || c.Nodes != 5 || c.Unsuited != 5 || c.Pending != 0 || c.Available != 0 || len(c.Unmet) != 4 {
				t.Fatalf("no fit: counts %+v", c)
			}
			// Nodes that fit but are busy are told apart from those that do not.
			_, err = svc.CreateInstance(ctx, teamA, gpu("a4", want))
			msg = baremetal.ErrorMessage(err)
			for _, part := range []string{"of 5 nodes", "2 have less than 100000 MB memory (or unknown)", "2 lack trait CUSTOM_GPU_A100",
				"1 is owned by another project", "the 2 that fit cannot take it now: 2 deploying"} {
				if !strings.Contains(msg, part) {
					t.Fatalf("busy fit: %q; want it to say %q", msg, part)
				}
			}
			// Pinned: the node must meet them, and says what it lacks.
			_, err = svc.CreateInstance(ctx, admin, baremetal.Instance{Name: "pin", Project: "team-a", NodeID: "arm",
				Image: baremetal.Image{URL: "https://i/x.iso"}, Requirements: baremetal.Requirements{MinCPUs: 64, CPUArch: "x86_64", RequiredTraits: []string{"X"}}})
			if baremetal.ErrorField(err) != "node_id" || !strings.Contains(baremetal.ErrorMessage(err), "node arm does not meet the instance's requirements: lacks trait X, has 16 CPUs, not 64, is aarch64, not x86_64") {
				t.Fatalf("pinned: %v", err)
			}
			// Without a class, requirements alone place among every node.
			i5, err := svc.CreateInstance(ctx, teamA, baremetal.Instance{Name: "anyclass", Image: baremetal.Image{URL: "https://i/x.iso"},
				Requirements: baremetal.Requirements{CPUArch: "AArch64"}})
			if err != nil || i5.NodeID == "" || i5.ResourceClass != "gpu" {
				t.Fatalf("placement by requirements alone: %+v, %v", i5, err)
			}
		})
	}
}

// A member sees the nodes no project owns and its own project's, never
// another's (listed, read or pinned); an admin sees every node and may
// pin an owned node for any project.
func TestOwnedNodesVisibility(t *testing.T) {
	st := storetest.OpenSQLite(t)
	svc := service.New(st, &countingJobs{}, nil)
	ctx := context.Background()
	enrollShaped(t, st, svc, "shared", baremetal.Properties{}, "")
	enrollShaped(t, st, svc, "mine", baremetal.Properties{}, "team-a")
	theirs := enrollShaped(t, st, svc, "theirs", baremetal.Properties{}, "team-b")
	teamA := service.Caller{TokenID: "a", Role: baremetal.RoleMember, Project: "team-a"}
	names := func(c service.Caller, f store.NodeFilter) string {
		nodes, _, err := svc.ListNodes(ctx, c, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range nodes {
			out = append(out, n.Name)
		}
		return fmt.Sprint(out)
	}
	if got := names(teamA, store.NodeFilter{}); !strings.Contains(got, "mine") || !strings.Contains(got, "shared") || strings.Contains(got, "theirs") {
		t.Fatalf("member lists %s", got)
	}
	if got := names(teamA, store.NodeFilter{Owner: "team-b"}); got != "[]" {
		t.Fatalf("member asking for team-b's nodes gets %s", got)
	}
	if got := names(admin, store.NodeFilter{Owner: "team-b"}); got != "[theirs]" {
		t.Fatalf("admin asking for team-b's nodes gets %s", got)
	}
	if _, err := svc.GetNode(ctx, teamA, "theirs"); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Fatalf("member reads team-b's node: %v", err)
	}
	_, err := svc.CreateInstance(ctx, teamA, baremetal.Instance{Name: "pin", NodeID: theirs.ID, Image: baremetal.Image{URL: "https://i/x.iso"}})
	if baremetal.ErrorField(err) != "node_id" || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("member pins team-b's node: %v", err)
	}
	inst, err := svc.CreateInstance(ctx, admin, baremetal.Instance{Name: "pin", Project: "team-a", NodeID: theirs.ID, Image: baremetal.Image{URL: "https://i/x.iso"}})
	if err != nil || inst.NodeID != theirs.ID {
		t.Fatalf("admin pins team-b's node for team-a: %v", err)
	}
	// The member whose instance an admin placed there sees that node.
	if _, err := svc.GetNode(ctx, teamA, "theirs"); err != nil {
		t.Fatalf("member reads the node hosting its instance: %v", err)
	}
}

// Capacity counts the nodes that could take an instance of a shape now,
// within the project's quota, and says why the others cannot.
func TestCapacityReport(t *testing.T) {
	st := storetest.OpenSQLite(t)
	svc := service.New(st, &countingJobs{}, nil)
	ctx := context.Background()
	for i := range 3 {
		enrollShaped(t, st, svc, fmt.Sprint("gpu-", i), baremetal.Properties{MemoryMB: 262144}, "", "CUSTOM_GPU_A100")
	}
	enrollShaped(t, st, svc, "cpu-0", baremetal.Properties{MemoryMB: 65536}, "")
	teamA := service.Caller{TokenID: "a", Role: baremetal.RoleMember, Project: "team-a"}
	p := baremetal.Placement{ResourceClass: "gpu", Requirements: baremetal.Requirements{RequiredTraits: []string{"CUSTOM_GPU_A100"}}}
	capa, msg, placeable, left, err := svc.Capacity(ctx, teamA, p, "")
	if err != nil || placeable != 3 || left != nil || capa.Available != 3 || capa.Unsuited != 1 || !strings.Contains(msg, "3 of 4 nodes fit the instance's requirements and 3 can take it now; the others: 1 lacks trait CUSTOM_GPU_A100") {
		t.Fatalf("capacity: %d placeable (left %v), %+v, %q, %v", placeable, left, capa, msg, err)
	}
	if err := st.SetQuota(ctx, &baremetal.Quota{Project: "team-a", Instances: 2}); err != nil {
		t.Fatal(err)
	}
	if _, _, placeable, left, err = svc.Capacity(ctx, teamA, p, ""); err != nil || placeable != 2 || left == nil || *left != 2 {
		t.Fatalf("within quota 2: %d placeable, left %v, %v", placeable, left, err)
	}
	if _, _, _, _, err := svc.Capacity(ctx, admin, p, ""); baremetal.ErrorField(err) != "project" {
		t.Fatalf("admin without a project: %v", err)
	}
	if _, _, _, _, err := svc.Capacity(ctx, teamA, baremetal.Placement{Project: "team-b"}, ""); !baremetal.IsCode(err, baremetal.CodeForbidden) {
		t.Fatalf("member asking for another project: %v", err)
	}
	bad := baremetal.Placement{Requirements: baremetal.Requirements{RequiredTraits: []string{"a b"}}}
	if _, _, _, _, err := svc.Capacity(ctx, teamA, bad, ""); baremetal.ErrorField(err) != "required_traits[0]" {
		t.Fatalf("bad trait: %v", err)
	}
}

// Two replicas (two services, each with its own connection pool on one
// PostgreSQL database) and 32 clients race to place instances with
// requirements that 40 of 60 nodes meet: exactly 40 are placed, each on
// a node of its own that meets them, and the others are told no node
// fits, none pending.
func TestPlacementRaceAcrossReplicas(t *testing.T) {
	url := storetest.PostgresURL(t)
	ctx := context.Background()
	var svcs []*service.Service
	var first store.Store
	for range 2 {
		st, err := postgres.Open(ctx, url, storetest.Box())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if first == nil {
			first = st
		}
		svcs = append(svcs, service.New(st, &countingJobs{}, nil))
	}
	for i := range 60 {
		traits := []string{"CUSTOM_FAST"}
		if i%3 == 0 {
			traits = nil // 20 lack it
		}
		enrollShaped(t, first, svcs[0], fmt.Sprintf("r%02d", i), baremetal.Properties{MemoryMB: 65536 * (1 + i%4)}, "", traits...)
	}
	req := baremetal.Requirements{RequiredTraits: []string{"CUSTOM_FAST"}}
	var mu sync.Mutex
	placed := map[string]string{} // node id -> instance
	var refused int
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range 32 {
		wg.Go(func() {
			<-start
			svc := svcs[c%2]
			for k := range 2 {
				inst, err := svc.CreateInstance(ctx, admin, baremetal.Instance{Name: fmt.Sprintf("race-%02d-%d", c, k), Project: "p1",
					ResourceClass: "gpu", Image: baremetal.Image{URL: "https://i/x.iso"}, Requirements: req})
				mu.Lock()
				switch {
				case err == nil:
					if other, dup := placed[inst.NodeID]; dup {
						t.Errorf("node %s given to %s and %s", inst.NodeID, other, inst.Name)
					}
					placed[inst.NodeID] = inst.Name
				case baremetal.IsCode(err, baremetal.CodeNoCapacity):
					refused++
					if c := baremetal.ErrorCapacity(err); c == nil || c.Pending != 0 || c.Unsuited != 20 {
						t.Errorf("refused with counts %+v", c)
					}
				default:
					t.Errorf("create: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(placed) != 40 || refused != 24 {
		t.Fatalf("%d placed, %d refused; want 40 and 24", len(placed), refused)
	}
	for id := range placed {
		n, err := first.GetNode(ctx, id)
		if err != nil || !n.HasTrait("CUSTOM_FAST") || n.InstanceID == "" {
			t.Errorf("node %s: %+v, %v", id, n, err)
		}
	}
}
