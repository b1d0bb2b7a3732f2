package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// One machine, one node. Enroll refuses a second node for a machine when
// the node's settings or its BMC show it at once; when the BMC did not
// answer then, the verify job asks it (resolveSystem) before the node may
// do anything, and a node found to be a second one (FaultDuplicate) never
// acts on the machine: it stays in enroll, admin power actions on it are
// refused, and its retire removes the record without a BMC call, so that
// deleting it cannot power off the other node's server. The retire and the
// power action of any node still unverified ask the BMC the same question
// first (ownMachine), which also covers nodes enrolled before this rule.

// resolveSystem asks n's BMC which system n is; nil without error when
// the driver cannot tell (IPMI: the address is the machine).
func (r *nodeWork) resolveSystem(ctx context.Context, n *baremetal.Node) (*bmc.ResolvedSystem, error) {
	var res *bmc.ResolvedSystem
	err := r.bmcCall(ctx, n, "resolve system", func(ctx context.Context, c bmc.Client) error {
		sr, ok := c.(bmc.SystemResolver)
		if !ok {
			return nil
		}
		got, err := sr.ResolveSystem(ctx)
		if err != nil {
			return err
		}
		res = &got
		return nil
	})
	return res, err
}

// resolved returns n with the system its BMC named (res.ID), as the node
// will be keyed.
func resolved(n *baremetal.Node, res *bmc.ResolvedSystem) *baremetal.Node {
	m := *n
	if res != nil && res.ID != "" {
		m.BMC.SystemID = res.ID
	}
	return &m
}

// sameMachine returns the other nodes on n's machine (store.SameMachine),
// n being keyed as the BMC named its system (res).
func (r *nodeWork) sameMachine(ctx context.Context, n *baremetal.Node, res *bmc.ResolvedSystem) ([]store.BMCHolder, error) {
	if res == nil || n.Driver != baremetal.DriverRedfish {
		return nil, nil
	}
	ep, err := baremetal.BMCEndpointKey(n.Driver, n.BMC.Address)
	if err != nil {
		return nil, nil
	}
	others, err := r.store.NodesOnBMC(ctx, ep)
	if err != nil {
		return nil, fmt.Errorf("nodes on the BMC of node %s: %w", n.Name, err)
	}
	return store.SameMachine(resolved(n, res), n.ID, others, res.Members), nil
}

// otherMachineError: the machine n's BMC settings reach belongs to node
// holder, not to n.
type otherMachineError struct {
	holder store.BMCHolder
	msg    string
}

func (e *otherMachineError) Error() string { return e.msg }

// duplicateMessage says, for n's last_error, whose machine n reaches and
// what that means.
func duplicateMessage(n *baremetal.Node, system string, h store.BMCHolder) string {
	which := "system " + system
	if system == "" {
		which = "the only system"
	}
	return fmt.Sprintf("duplicate of node %q (id %s): this node's BMC settings reach %s of the BMC at %s, which is that node's machine "+
		"(one physical server is one node). This node stays in enroll and acts on nothing; deleting it leaves the machine alone. "+
		"Delete it, or set its bmc.address/bmc.system_id to another machine", h.Name, h.ID, which, n.BMC.Address)
}

// ownMachine checks, before n acts on its machine, that no other node
// has it: it asks the BMC which system n is and returns an
// *otherMachineError when another node on that system claimed it (holds
// its key while n does not) or uses it (is past enroll). A node marked
// duplicate is not asked about: it never acts. BMC errors are returned as
// they are, for the caller's usual handling.
func (r *nodeWork) ownMachine(ctx context.Context, n *baremetal.Node) error {
	if n.Fault == baremetal.FaultDuplicate {
		return &otherMachineError{msg: n.LastError}
	}
	if n.Driver != baremetal.DriverRedfish {
		return nil
	}
	res, err := r.resolveSystem(ctx, n)
	if err != nil {
		return err
	}
	same, err := r.sameMachine(ctx, n, res)
	if err != nil {
		return err
	}
	for _, o := range same {
		claimed := baremetal.SameSystemID(o.SystemID, res.ID) && !baremetal.SameSystemID(n.BMC.SystemID, res.ID)
		inService := o.State != baremetal.StateEnroll && o.State != baremetal.StateDeleting
		if claimed || inService {
			return &otherMachineError{holder: o, msg: duplicateMessage(n, res.ID, o)}
		}
	}
	return nil
}

// markDuplicate records on n (read with BMC settings ep) that its machine
// is h's: fault duplicate with the reason in last_error. The BMC answered,
// so any BMC trouble recorded is cleared. It returns the verify's snooze
// (duplicateRecheck): the answer changes when h goes or n's settings
// change, and both wake n's verify.
func (r *nodeWork) markDuplicate(ctx context.Context, n *baremetal.Node, ep bmc.Endpoint, h store.BMCHolder, msg string) error {
	var moved, left bool
	_, err := r.ledger.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
		moved, left = endpoint(n) != ep, n.ProvisionState != baremetal.StateEnroll
		if moved || left {
			return ledger.ErrSkip
		}
		now := time.Now()
		r.noteSuccess(n, now)
		n.SetActionFault(baremetal.FaultDuplicate, scrub(n, msg), now)
		return nil
	})
	switch {
	case err != nil:
		return ignoreGone(err)
	case left:
		return nil
	case moved:
		return river.JobSnooze(time.Millisecond) // asked about the old settings: ask again
	}
	r.log.WarnContext(ctx, "node is a second node of another node's machine; it stays in enroll", "node", n.Name,
		"same_as_node_id", h.ID, "same_as_name", h.Name, "next_check", r.duplicateRecheck())
	return river.JobSnooze(r.duplicateRecheck())
}

// ReverifyOthersOnBMCTx queues, in tx, the verify of every node in
// enroll on the BMC of driver and address but except (a node being
// removed, or moved to another BMC), and wakes one that waits: a node
// found to be a second node of except's machine becomes the machine's
// node once except is gone.
func (r *nodeWork) ReverifyOthersOnBMCTx(ctx context.Context, tx store.Tx, driver baremetal.Driver, address, except string) error {
	if driver != baremetal.DriverRedfish {
		return nil
	}
	ep, err := baremetal.BMCEndpointKey(driver, address)
	if err != nil {
		return nil
	}
	others, err := tx.NodesOnBMC(ctx, ep)
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.ID == except || o.State != baremetal.StateEnroll {
			continue
		}
		if _, err := r.InsertTx(ctx, tx, VerifyArgs{NodeID: o.ID}); err != nil {
			return err
		}
		if err := r.wakeTx(ctx, tx, o.ID); err != nil {
			return err
		}
	}
	return nil
}

// duplicateRecheck is how long the verify of a node found to be a second
// node of another's machine waits before it asks again: long, since the
// other node's removal (or a change of this node) wakes it at once
// (ReverifyOthersOnBMCTx, the service's PATCH); the wait only catches a
// wake-up that came while the verify was still running. A short one would
// keep the node's job slot from an admin's power action or the retire.
func (r *nodeWork) duplicateRecheck() time.Duration { return 12 * r.cfg.MaxBackoff }

// isKeyConflict: a write claimed a BMC key another node got first (a
// race the explicit check did not see).
func isKeyConflict(err error) bool {
	return baremetal.IsCode(err, baremetal.CodeConflict) && baremetal.ErrorField(err) == "bmc.address"
}
