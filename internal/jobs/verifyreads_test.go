package jobs

import (
	"context"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// The verify of an enrolled Redfish node reads the system resource once:
// its power state comes with the inventory (the system and its processor
// collection, read with its processors inline where the root advertises
// $expand as the sim's standard dialect does: two requests; one more when
// the power had a read of its own, one per processor without $expand).
func TestVerifyReadsPowerWithInventory(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1)
		if err := h.fleet.SetPower(sys[0], true); err != nil {
			t.Fatal(err)
		}
		n := h.addNode("n", sys[0], baremetal.StateEnroll, false)
		h.start()
		before := h.requests(sys[0])
		h.enqueue(VerifyArgs{NodeID: n.ID})
		n = h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool {
			return n.ProvisionState == baremetal.StateAvailable
		})
		if n.PowerState != baremetal.PowerOn || n.Properties.CPUs == 0 || n.Properties.CPUArch == "" {
			t.Errorf("verified node: power=%s properties=%+v, want power on and the inventory", n.PowerState, n.Properties)
		}
		if got := h.requests(sys[0]) - before; got != 2 {
			t.Errorf("the verify made %d requests of the system, want 2 (the system, the processors expanded)", got)
		}
		if n.Properties.CPUs != 32 {
			t.Errorf("cpus %d, want the sim's 32 hardware threads", n.Properties.CPUs)
		}
	})
}

// A driver whose inventory does not show the power state still gets the
// power read of its own.
func TestVerifyReadsPowerWhenInventoryHasNone(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newFakeHarness(t, open(t), 1)
		h.r.cfg.BMC = inventoryOpener{h.fake}
		if err := h.fake.SetPower(sys[0], true); err != nil {
			t.Fatal(err)
		}
		n := h.addNode("n", sys[0], baremetal.StateEnroll, false)
		h.start()
		h.enqueue(VerifyArgs{NodeID: n.ID})
		n = h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool {
			return n.ProvisionState == baremetal.StateAvailable
		})
		if n.PowerState != baremetal.PowerOn || n.Properties.CPUs != 8 {
			t.Errorf("verified node: power=%s properties=%+v, want power on and 8 CPUs", n.PowerState, n.Properties)
		}
		if got := h.requests(sys[0]); got != 2 {
			t.Errorf("the verify made %d calls, want 2 (inventory, power)", got)
		}
	})
}

// inventoryOpener gives the fake BMCs an inventory without power state.
type inventoryOpener struct{ f *fakeBMCs }

func (o inventoryOpener) Open(ctx context.Context, ep bmc.Endpoint) (bmc.Client, error) {
	c, err := o.f.Open(ctx, ep)
	if err != nil {
		return nil, err
	}
	return &fakeInventoryClient{*c.(*fakeClient)}, nil
}

type fakeInventoryClient struct{ fakeClient }

func (c *fakeInventoryClient) Inventory(ctx context.Context) (bmc.Inventory, error) {
	if _, err := c.enter(ctx, "inventory"); err != nil {
		return bmc.Inventory{}, err
	}
	return bmc.Inventory{CPUs: 8, MemoryMB: 16384, CPUArch: "x86_64"}, nil
}
