package jobs

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// two unverified nodes of one machine (one without system_id, one
// with it; both got in through concurrent POSTs on PostgreSQL, or from
// before the rule while the BMC was down). Each verify finds the other:
// both end "duplicate" and neither ever heals by itself. The older node
// should keep the machine.
func TestMutualDuplicates(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, _ := newSimHarnessWith(t, open(t), sim.Options{IDs: []string{"1"}})
		a := h.addNode("a", "", baremetal.StateEnroll, false)
		b := h.addNode("b", "/redfish/v1/Systems/1", baremetal.StateEnroll, false)
		h.start()
		h.enqueue(VerifyArgs{NodeID: a.ID})
		h.enqueue(VerifyArgs{NodeID: b.ID})
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			na, nb := h.node(a.ID), h.node(b.ID)
			if na.ProvisionState == baremetal.StateAvailable || nb.ProvisionState == baremetal.StateAvailable {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		na, nb := h.node(a.ID), h.node(b.ID)
		t.Fatalf("neither node of the machine became available:\n a: %s fault=%s %q\n b: %s fault=%s %q",
			na.ProvisionState, na.Fault, na.LastError, nb.ProvisionState, nb.Fault, nb.LastError)
	})
}

// pauseStore pauses the first transaction whose NodesOnBMC finds the node
// `holder` (markDuplicate's re-read), until released.
type pauseStore struct {
	store.Store
	holder  string
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (s *pauseStore) InTx(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.Store.InTx(ctx, func(tx store.Tx) error { return fn(pauseTx{tx, s}) })
}

type pauseTx struct {
	store.Tx
	s *pauseStore
}

func (t pauseTx) NodesOnBMC(ctx context.Context, ep string) ([]store.BMCHolder, error) {
	out, err := t.Tx.NodesOnBMC(ctx, ep)
	for _, o := range out {
		if o.ID == t.s.holder {
			t.s.once.Do(func() {
				close(t.s.reached)
				<-t.s.release
			})
		}
	}
	return out, err
}

// on PostgreSQL, the holder's removal commits between the
// duplicate verify's re-read of the nodes on the BMC and its
// JobCompleteTx. The removal's InsertTx of a new verify is deduplicated
// against the still-running verify (River's ON CONFLICT ... DO UPDATE), so
// no new verify is queued, and the verify then completes marking the node
// a duplicate of a node that is gone: it stays so for ever.
func TestDuplicateLostWakeup(t *testing.T) {
	base := storetest.OpenPostgres(t)
	ps := &pauseStore{Store: base, reached: make(chan struct{}), release: make(chan struct{})}
	h, _ := newSimHarnessWith(t, ps, sim.Options{IDs: []string{"1"}})
	first := h.addNode("first", "/redfish/v1/Systems/1", baremetal.StateAvailable, false)
	second := h.addNode("second", "", baremetal.StateEnroll, false)
	ps.holder = first.ID
	h.start()
	h.enqueue(VerifyArgs{NodeID: second.ID})
	select {
	case <-ps.reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the verify never re-read the nodes on the BMC")
	}
	// The operator force-deletes the first node, as service.DeleteNode
	// does with force=true (Remove, then ReverifyOthersOnBMCTx).
	cur, err := base.GetNode(h.ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := base.InTx(h.ctx, func(tx store.Tx) error {
		if err := tx.DeleteNode(h.ctx, cur.ID, cur.Version); err != nil {
			return err
		}
		return h.r.ReverifyOthersOnBMCTx(h.ctx, tx, cur.Driver, cur.BMC.Address, cur.ID)
	}); err != nil {
		t.Fatalf("force delete: %v", err)
	}
	close(ps.release)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if n := h.node(second.ID); n.ProvisionState == baremetal.StateAvailable {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	n := h.node(second.ID)
	t.Fatalf("second node after the first is gone: %s fault=%s %q\njobs: %s", n.ProvisionState, n.Fault, n.LastError, h.jobsOf(second.ID))
}
