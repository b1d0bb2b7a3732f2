package jobs

import (
	"context"
	"errors"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// retireWorker runs the retire flow of a node in state deleting: the
// machine observed off, its boot override and media cleared, then the
// record removed. Removing it earlier would leave a server running
// someone's OS that nothing manages any more, so a dead BMC keeps the
// node in deleting (with its fault current) for as long as it is dead;
// force=true (retireForce) is the operator's way out: the record goes
// whatever the hardware does, maintenance or not.
type retireWorker struct{ nodeWorker[RetireArgs] }

var retire = &flow{
	name: "retire", state: baremetal.StateDeleting,
	steps: []flowStep{
		{"check_machine", checkMachine},
		{"power_off", powerOffStep},
		{"clear_boot", clearBootStep},
		{"remove", removeNode},
	},
	fail: keepTrying,
}

var retireForce = &flow{
	name: "retire", state: baremetal.StateDeleting,
	steps: []flowStep{{"remove", removeNode}},
	fail:  keepTrying,
}

func (w *retireWorker) Work(ctx context.Context, job *river.Job[RetireArgs]) error {
	a := job.Args
	err := w.runFlow(ctx, job.JobRow, a.NodeID, !a.Force, func(context.Context, *flowRun) (*flow, error) {
		if a.Force {
			return retireForce, nil
		}
		return retire, nil
	})
	var snooze *river.JobSnoozeError
	if err != nil && !errors.As(err, &snooze) {
		err = w.retryForever(job.JobRow, err)
	}
	return w.finish(ctx, job.JobRow, err)
}

// checkMachine makes sure the machine is the node's to touch: a node
// whose machine is another node's (a second node for it, see identity.go)
// never touches it, since powering it off would stop the other node's
// server. Its record is removed at once, without a BMC call; the log says
// so (the node's events go with its record).
func checkMachine(ctx context.Context, r *flowRun) (stepResult, error) {
	err := r.ownMachine(ctx, r.node)
	var other *otherMachineError
	if !errors.As(err, &other) {
		return nextStep, err
	}
	n := r.node
	if err := r.deleteNode(ctx, n.ID); err != nil {
		return nextStep, err
	}
	r.log.InfoContext(ctx, "node removed without touching its BMC: its machine is another node's", "node", n.Name, "id", n.ID,
		"same_as_node_id", other.holder.ID, "same_as_name", other.holder.Name, "reason", other.msg)
	return flowOver, nil
}

// removeNode removes the record of a node still in state deleting.
func removeNode(ctx context.Context, r *flowRun) (stepResult, error) {
	if err := r.deleteNode(ctx, r.node.ID); err != nil {
		return nextStep, err
	}
	r.log.InfoContext(ctx, "node removed", "node", r.node.Name, "id", r.node.ID)
	return flowOver, nil
}
