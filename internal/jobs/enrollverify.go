package jobs

import (
	"context"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Verified is what a new node's BMC answered while its enroll request
// ran (VerifyAtEnroll): the enroll writes the node verified in its own
// transaction, and queues no verify job.
type Verified struct {
	w   *nodeWork
	res *bmc.ResolvedSystem
	ps  bmc.PowerState
	inv *bmc.Inventory
}

// VerifyAtEnroll does a verify job's BMC reads (power and inventory) for
// a node being enrolled, whose BMC has just named its system (res), so
// that the enroll can make it available at once: a Terraform apply or an
// operator's script does not wait for a job, and the controller does not
// spend a job's insert, fetch and second write of the node on it. It
// gives up, returning nil, when the node must go through the verify job
// anyway (in maintenance, where the job waits; inspected on enroll, a
// boot of its own) or when the BMC fails or does not answer within d:
// then the verify job, queued by the enroll, retries with backoff and
// records the failures, as for any enroll. Nothing is written here.
func (r *nodeWork) VerifyAtEnroll(ctx context.Context, n *baremetal.Node, res *bmc.ResolvedSystem, d time.Duration) *Verified {
	if res == nil || n.Maintenance || d <= 0 {
		return nil
	}
	if inspect, _ := r.cfg.inspectOnEnroll(n); inspect {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	ps, inv, err := r.readPowerAndInventory(ctx, resolved(n, res))
	if err != nil {
		r.log.InfoContext(ctx, "enroll: the BMC's power and inventory are left to the verify job", "name", n.Name, "err", err)
		return nil
	}
	return &Verified{w: r, res: res, ps: ps, inv: inv}
}

// Apply writes the verification to n, just enrolled in tx (a
// ledger.Func, for the controller's change after the operator's enroll).
func (v *Verified) Apply(ctx context.Context) ledger.Func {
	return func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		return v.w.verified(ctx, tx, n, v.res, v.ps, v.inv, c)
	}
}
