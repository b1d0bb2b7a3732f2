package jobs

import (
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/redfish"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

func openSQLite(t *testing.T) store.Store { return storetest.OpenSQLite(t) }

// simPowerDelay makes power changes land a little after the BMC accepted
// them, as on real hardware, so every job really polls.
const simPowerDelay = 30 * time.Millisecond

// newSimHarness starts a simulated Redfish fleet of n systems, reached
// through the real redfish driver, and returns the systems' ids.
func newSimHarness(t testing.TB, st store.Store, n int, opts ...harnessOpt) (*harness, []string) {
	t.Helper()
	return newSimHarnessWith(t, st, sim.Options{Systems: n}, opts...)
}

// newSimHarnessWith is newSimHarness with the fleet's options given
// (PowerDelay defaults to simPowerDelay).
func newSimHarnessWith(t testing.TB, st store.Store, so sim.Options, opts ...harnessOpt) (*harness, []string) {
	t.Helper()
	if so.PowerDelay == 0 {
		so.PowerDelay = simPowerDelay
	}
	fleet, err := sim.Start(so)
	if err != nil {
		t.Fatalf("start sim: %v", err)
	}
	t.Cleanup(func() { _ = fleet.Close() })
	// The fleet is one endpoint for all its systems (a BMC takes 2).
	op := redfish.NewOpener(redfish.Options{Timeout: 5 * time.Second, MaxConcurrentRequests: 64})
	t.Cleanup(op.Close)
	h := newHarness(t, st, bmc.Drivers{"redfish": op}, fleet, fleet.URL(), opts...)
	h.fleet = fleet
	h.inventory = true
	return h, fleet.SystemIDs()
}

// newFakeHarness uses the in-memory fake BMCs (no virtual media),
// reached as the controller reaches its drivers (bmc.Drivers).
func newFakeHarness(t testing.TB, st store.Store, n int, opts ...harnessOpt) (*harness, []string) {
	ids := names("sys", n)
	fake := newFakeBMCs(ids...)
	h := newHarness(t, st, bmc.Drivers{"redfish": fake}, fake, "http://fake.invalid", opts...)
	h.fake = fake
	return h, ids
}

func (h *harness) requests(sys string) int64 {
	if h.fleet != nil {
		return h.fleet.Requests(sys)
	}
	h.fake.mu.Lock()
	defer h.fake.mu.Unlock()
	return int64(h.fake.systems[sys].calls)
}

// checkBoot asserts the deploy's boot override: the image on virtual media
// and a one-time boot from CD on the sim, PXE on the fake.
func (h *harness) checkBoot(t *testing.T, sys, image string) {
	t.Helper()
	if h.fleet == nil {
		h.fake.mu.Lock()
		b := h.fake.systems[sys].boot
		h.fake.mu.Unlock()
		if b != bmc.BootPXE {
			t.Errorf("boot override %q, want pxe", b)
		}
		return
	}
	target, enabled, err := h.fleet.BootOverride(sys)
	if err != nil || target != "Cd" || enabled != "Once" {
		t.Errorf("boot override %s/%s (%v), want Cd/Once", target, enabled, err)
	}
	img, inserted, err := h.fleet.Media(sys)
	if err != nil || !inserted || img != image {
		t.Errorf("virtual media %q inserted=%v (%v), want %q", img, inserted, err, image)
	}
}

// Without virtual media the deploy boots from the network.
func TestDeployPXEWithoutVirtualMedia(t *testing.T) {
	h, sys := newFakeHarness(t, openSQLite(t), 1)
	n := h.addNode("n-pxe", sys[0], baremetal.StateDeploying, false)
	inst := h.addInstance(n, "pxe-1")
	h.start()
	h.enqueue(DeployArgs{NodeID: n.ID, InstanceID: inst.ID})
	h.waitNode(n.ID, wait, "active", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateActive })
	h.checkBoot(t, sys[0], "")
}
