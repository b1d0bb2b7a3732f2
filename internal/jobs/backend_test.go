package jobs

import (
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

func openSQLite(t *testing.T) store.Store { return storetest.OpenSQLite(t) }

// newSimHarness: n BMCs, returns their system ids.
func newSimHarness(t testing.TB, st store.Store, n int, opts ...harnessOpt) (*harness, []string) {
	ids := names("sys", n)
	fake := newFakeBMCs(ids...)
	h := newHarness(t, st, fake, fake, "http://fake.invalid", opts...)
	h.fake = fake
	return h, ids
}

func (h *harness) requests(sys string) int64 {
	h.fake.mu.Lock()
	defer h.fake.mu.Unlock()
	return int64(h.fake.systems[sys].calls)
}

func (h *harness) checkBoot(t *testing.T, sys, _ string) {
	t.Helper()
	h.fake.mu.Lock()
	b := h.fake.systems[sys].boot
	h.fake.mu.Unlock()
	if b != bmc.BootPXE {
		t.Errorf("boot override %q, want pxe", b)
	}
}
