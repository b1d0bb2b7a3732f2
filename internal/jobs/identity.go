package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

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
		sr, err := bmc.Capability[bmc.SystemResolver](c)
		if err != nil {
			return nil // the driver cannot tell
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
	others, err := r.machineNodes(ctx, n, res)
	if err != nil {
		return nil, err
	}
	return store.SameMachine(resolved(n, res), n.ID, others, res.Members), nil
}

// machineNodes lists the nodes on n's BMC that may be n's machine (n
// keyed as the BMC named its system, res), n among them, in NodesOnBMC's
// order: read by their keys (store.MachineKeys) with n's own, or all the
// nodes on the BMC where n names no system. What store.SameMachine and
// duplicateOf find among them is what they find among all the nodes on
// the BMC.
func (r *nodeWork) machineNodes(ctx context.Context, n *baremetal.Node, res *bmc.ResolvedSystem) ([]store.BMCHolder, error) {
	keys, ok := store.MachineKeys(resolved(n, res), res.Members)
	if !ok {
		return r.nodesOnBMC(ctx, n)
	}
	// n itself: duplicateOf tells the older nodes by n's place.
	if own, err := baremetal.BMCKey(n.Driver, n.BMC); err == nil && !slices.Contains(keys, own) {
		keys = append(keys, own)
	}
	others, err := r.store.NodesWithBMCKeys(ctx, keys...)
	if err != nil {
		return nil, fmt.Errorf("nodes of the machine of node %s: %w", n.Name, err)
	}
	return others, nil
}

// nodesOnBMC lists the nodes on n's BMC (store.NodesOnBMC), n among them.
func (r *nodeWork) nodesOnBMC(ctx context.Context, n *baremetal.Node) ([]store.BMCHolder, error) {
	ep, err := baremetal.BMCEndpointKey(n.Driver, n.BMC.Address)
	if err != nil {
		return nil, nil
	}
	others, err := r.store.NodesOnBMC(ctx, ep)
	if err != nil {
		return nil, fmt.Errorf("nodes on the BMC of node %s: %w", n.Name, err)
	}
	return others, nil
}

// duplicateOf returns the node of others (machineNodes of n, oldest
// first, n among them) whose machine n is, n being keyed as the BMC named
// its system (res); nil when n is the machine's node. Of two nodes of one
// machine the node is the one in service, else the one holding the
// system's key as the BMC serves it, else the older: so two nodes that
// each find the other (one without system_id, one with it, both enrolled
// while the BMC was down) never both end duplicate.
func duplicateOf(n *baremetal.Node, res *bmc.ResolvedSystem, others []store.BMCHolder) *store.BMCHolder {
	if res == nil || n.Driver != baremetal.DriverRedfish {
		return nil
	}
	same := store.SameMachine(resolved(n, res), n.ID, others, res.Members)
	if len(same) == 0 {
		return nil
	}
	older := map[string]bool{}
	for _, o := range others {
		if o.ID == n.ID {
			break
		}
		older[o.ID] = true
	}
	nHolds := baremetal.SameSystemID(n.BMC.SystemID, res.ID)
	for i := range same {
		o := &same[i]
		inService := o.State != baremetal.StateEnroll && o.State != baremetal.StateDeleting
		oHolds := baremetal.SameSystemID(o.SystemID, res.ID)
		if inService || (oHolds && !nHolds) || (oHolds == nHolds && older[o.ID] && o.State != baremetal.StateDeleting) {
			return o
		}
	}
	return nil
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

// markDuplicate records on n (read with BMC settings ep, whose system the
// BMC named in res) that its machine is another node's: fault duplicate with the reason in last_error, the BMC
// trouble recorded cleared (the BMC answered). The nodes on the BMC are
// read again in the same transaction, and the job completes in it: the
// other node's removal either commits first (then n is no duplicate, and
// the job runs again at once) or finds this verify ended and queues a new
// one (ReverifyOthersOnBMCTx), so n never stays a duplicate of a node that
// is gone. Nothing else changes the answer but a change of n's settings,
// which queues its verify too: no retry is needed meanwhile.
func (r *nodeWork) markDuplicate(ctx context.Context, job *river.Job[VerifyArgs], n *baremetal.Node, ep bmc.Endpoint, res *bmc.ResolvedSystem) error {
	var moved, left bool
	var holder *store.BMCHolder
	_, err := r.ledger.Update(ctx, n.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		moved, left, holder = endpoint(n) != ep, n.ProvisionState != baremetal.StateEnroll, nil
		if moved || left {
			return ledger.ErrSkip
		}
		key, err := baremetal.BMCEndpointKey(n.Driver, n.BMC.Address)
		if err != nil {
			return ledger.ErrSkip
		}
		others, err := tx.NodesOnBMC(ctx, key)
		if err != nil {
			return err
		}
		// Lock the nodes of the machine: a concurrent removal (or move)
		// either commits first (the row is gone or changed here) or waits
		// for this transaction, whose JobCompleteTx then lets its InsertTx
		// queue a new verify; read without the lock, a removal in between
		// would find this verify still running, queue nothing, and leave n
		// a duplicate of a node that is gone.
		var locked []store.BMCHolder
		for _, o := range others {
			if o.ID == n.ID {
				locked = append(locked, o)
				continue
			}
			if len(store.SameMachine(resolved(n, res), n.ID, []store.BMCHolder{o}, res.Members)) == 0 {
				locked = append(locked, o)
				continue
			}
			m, err := tx.GetNodeForUpdate(ctx, o.ID)
			if baremetal.IsCode(err, baremetal.CodeNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if k, err := baremetal.BMCEndpointKey(m.Driver, m.BMC.Address); err != nil || k != key {
				continue
			}
			o.SystemID, o.State = m.BMC.SystemID, m.ProvisionState
			locked = append(locked, o)
		}
		holder = duplicateOf(n, res, locked)
		if holder == nil {
			return ledger.ErrSkip
		}
		now := time.Now()
		r.noteSuccess(n, now)
		n.SetActionFault(baremetal.FaultDuplicate, scrub(n, duplicateMessage(n, resolved(n, res).BMC.SystemID, *holder)), now)
		return completeTx(ctx, tx, job)
	})
	switch {
	case err != nil:
		return ignoreGone(err)
	case left:
		return nil
	case moved || holder == nil:
		// Asked about old settings, or the other node went meanwhile (or
		// n is the machine's node after all): ask again.
		return river.JobSnooze(time.Millisecond)
	}
	r.log.WarnContext(ctx, "node is a second node of another node's machine; it stays in enroll", "node", n.Name,
		"same_as_node_id", holder.ID, "same_as_name", holder.Name)
	return nil
}

// completeTx marks job completed in tx (river.JobCompleteTx): the job's
// end commits with what it wrote.
func completeTx[T river.JobArgs](ctx context.Context, tx store.Tx, job *river.Job[T]) error {
	var err error
	switch native := tx.Native().(type) {
	case *sql.Tx:
		_, err = river.JobCompleteTx[*riversqlite.Driver](ctx, native, job)
	case pgx.Tx:
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, native, job)
	default:
		err = fmt.Errorf("store transaction is %T: River cannot complete a job in it", native)
	}
	if err != nil {
		return fmt.Errorf("complete job %d: %w", job.ID, err)
	}
	return nil
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

// isKeyConflict: a write claimed a BMC key another node got first (a
// race the explicit check did not see).
func isKeyConflict(err error) bool {
	return baremetal.IsCode(err, baremetal.CodeConflict) && baremetal.ErrorField(err) == "bmc.address"
}
