package service_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// barrierStore holds each transaction's NodesOnBMC (or NodesWithBMCKeys)
// until two have read (or 3 s passed): two concurrent enrolls that both
// look before either inserts.
type barrierStore struct {
	store.Store
	mu      sync.Mutex
	arrived int
	both    chan struct{}
}

func (s *barrierStore) InTx(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.Store.InTx(ctx, func(tx store.Tx) error { return fn(barrierTx{tx, s}) })
}

type barrierTx struct {
	store.Tx
	s *barrierStore
}

func (t barrierTx) NodesOnBMC(ctx context.Context, ep string) ([]store.BMCHolder, error) {
	out, err := t.Tx.NodesOnBMC(ctx, ep)
	t.wait()
	return out, err
}

// NodesWithBMCKeys is how an enroll that names its system looks
// (store.MachineKeys).
func (t barrierTx) NodesWithBMCKeys(ctx context.Context, keys ...string) ([]store.BMCHolder, error) {
	out, err := t.Tx.NodesWithBMCKeys(ctx, keys...)
	t.wait()
	return out, err
}

func (t barrierTx) wait() {
	t.s.mu.Lock()
	t.s.arrived++
	if t.s.arrived == 2 {
		close(t.s.both)
	}
	t.s.mu.Unlock()
	select {
	case <-t.s.both:
	case <-time.After(3 * time.Second):
	}
}

// two concurrent POST /v1/nodes for one machine (one without
// system_id, one with it; the BMC not asked or not answering in time) on
// PostgreSQL: machineFree is a plain read and the two keys differ, so
// both are enrolled where one must be a 409 naming the other.
func TestConcurrentEnrollOfOneMachine(t *testing.T) {
	st := &barrierStore{Store: storetest.OpenPostgres(t), both: make(chan struct{})}
	svc := service.New(st, &countingJobs{}, nil)
	specs := []service.NodeSpec{
		{Name: "a", Driver: baremetal.DriverRedfish, ResourceClass: "gpu",
			BMC: baremetal.BMC{Address: "https://10.9.9.9", Username: "u", Password: "p"}},
		{Name: "b", Driver: baremetal.DriverRedfish, ResourceClass: "gpu",
			BMC: baremetal.BMC{Address: "https://10.9.9.9", Username: "u", Password: "p", SystemID: "/redfish/v1/Systems/1"}},
	}
	var wg sync.WaitGroup
	errs := make([]error, len(specs))
	for i, sp := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = svc.CreateNode(context.Background(), admin, sp)
		}()
	}
	wg.Wait()
	if errs[0] == nil && errs[1] == nil {
		t.Fatalf("both nodes of one machine were enrolled (a without system_id, b with /redfish/v1/Systems/1)")
	}
	t.Logf("errs: %v", errs)
}
