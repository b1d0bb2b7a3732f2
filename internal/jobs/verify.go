package jobs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// verifyWorker moves an enrolled node to available once its BMC answered a
// power read (and an inventory read, where the driver has one). While the
// BMC does not answer it keeps the node in enroll, records the failures
// (the node gets a fault after FaultThreshold of them) and retries with
// backoff for as long as it takes: a BMC that comes back makes the node
// available without anyone touching it.
type verifyWorker struct{ nodeWorker[VerifyArgs] }

func (w *verifyWorker) Work(ctx context.Context, job *river.Job[VerifyArgs]) error {
	return w.finish(ctx, job.JobRow, w.verify(ctx, job))
}

func (w *verifyWorker) verify(ctx context.Context, job *river.Job[VerifyArgs]) error {
	n, err := w.begin(ctx, job.JobRow, job.Args.NodeID, true)
	if n == nil {
		return err
	}
	if n.ProvisionState != baremetal.StateEnroll {
		return nil
	}
	ep := endpoint(n)
	// One machine, one node: which system the node is, the BMC says (see
	// identity.go); the node is keyed by that from now on.
	res, err := w.resolveSystem(ctx, n)
	var ps bmc.PowerState
	var inv *bmc.Inventory
	if err == nil && res != nil && n.Driver == baremetal.DriverRedfish {
		var others []store.BMCHolder
		if others, err = w.machineNodes(ctx, n, res); err == nil && duplicateOf(n, res, others) != nil {
			return w.markDuplicate(ctx, job, n, ep, res)
		}
	}
	if err == nil {
		ps, inv, err = w.readPowerAndInventory(ctx, resolved(n, res))
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.recordBMCFailure(ctx, n.ID, "verify", err)
		return w.retryForever(job.JobRow, fmt.Errorf("verify node %s: %w", n.Name, err))
	}
	// A new verify queued while this one ran (the operator changed the BMC
	// address) was merged into this job by uniqueness: what we read came
	// from the old endpoint, so read again instead of trusting it.
	// The write is version-checked against the node read at the start of
	// the job (no second read on the writer); a change made meanwhile
	// makes the ledger read it again and this function run on that.
	moved := false
	_, err = w.ledger.UpdateRead(ctx, n, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		if n.ProvisionState != baremetal.StateEnroll {
			return ledger.ErrSkip
		}
		if endpoint(n) != ep {
			moved = true
			return ledger.ErrSkip
		}
		return w.verified(ctx, tx, n, res, ps, inv, c)
	})
	if (err == nil && moved) || isKeyConflict(err) {
		// Read again (a key conflict: another node claimed the system
		// meanwhile, which the next run finds and says).
		return river.JobSnooze(time.Millisecond)
	}
	return ignoreGone(err)
}

// verified applies a verification to n (in enroll; its BMC named its
// system res, answered the power read ps and the inventory inv) in tx:
// available, or inspecting with the inspect job queued, or configuring
// with the configure job queued. The verify job and an enroll that read
// the BMC itself (VerifyAtEnroll) share it: one rule, one event.
func (r *nodeWork) verified(ctx context.Context, tx store.Tx, n *baremetal.Node, res *bmc.ResolvedSystem,
	ps bmc.PowerState, inv *bmc.Inventory, c *ledger.Change) error {
	now := time.Now()
	// The system as the BMC serves it keys the node (a race with
	// another node claiming it is the key conflict the callers handle).
	n.BMC.SystemID = resolved(n, res).BMC.SystemID
	n.ClearFault(baremetal.FaultDuplicate)
	r.observePower(n, ps, nil, now)
	touchSeen(n, now)
	fillProperties(n, inv)
	c.Reason = fmt.Sprintf("BMC verified: power %s", ps)
	if inv != nil {
		c.Reason += ", " + describeInventory(inv)
	}
	inspect, why := r.cfg.inspectOnEnroll(n)
	if why != "" {
		c.Reason += "; " + why
	}
	if !inspect {
		return r.becomeAvailable(ctx, tx, n, c)
	}
	// Inspected before it is ever scheduled: the inspect job, queued
	// with the state change, makes it available once the agent has
	// reported (or given up, saying why in last_error).
	if err := n.Transition(baremetal.StateInspecting); err != nil {
		return err
	}
	_, err := r.InsertTx(ctx, tx, InspectArgs{NodeID: n.ID})
	return err
}

// inspectOnEnroll says whether a node whose BMC was just verified is
// inspected before it becomes available (the node's own InspectOnEnroll,
// else Config.InspectOnEnroll), and, when that asks for it but the node
// cannot be, why not (for the event): a node that asked is still
// enrolled, available and uninspected.
func (c Config) inspectOnEnroll(n *baremetal.Node) (bool, string) {
	want, asked := c.InspectOnEnroll, "inspect on enroll"
	if n.InspectOnEnroll != nil {
		want, asked = *n.InspectOnEnroll, "inspect on enroll: the node's inspect_on_enroll"
		if !want && c.InspectOnEnroll {
			// The operator opted this node out of the controller's flag:
			// say so, or the event would read as if the flag were off.
			return false, "not inspected on enroll: the node's inspect_on_enroll is false"
		}
	}
	switch {
	case !want:
		return false, ""
	case !c.AgentBoot || c.PublicURL == "":
		return false, "not inspected on enroll (" + asked + "): the controller serves no deploy agent image (--agent-kernel and --public-url)"
	case n.Driver == baremetal.DriverIPMI && !c.AgentNetboot:
		// Not worth a boot that must fail: IPMI has no virtual media.
		return false, "not inspected on enroll (" + asked + "): IPMI has no virtual media to boot the deploy agent from, and the controller does not boot it from the network (--agent-netboot)"
	}
	return true, "inspecting: booting the deploy agent to report the hardware (" + asked + ")"
}

// readPowerAndInventory reads the power state and the hardware inventory
// (nil where the driver or the BMC has none). A driver whose inventory
// read shows the power state (Redfish: both are in the system resource)
// answers both with it, so the verify of an enrolled node costs one
// request fewer; the others get a power read of its own.
func (w *nodeWork) readPowerAndInventory(ctx context.Context, n *baremetal.Node) (bmc.PowerState, *bmc.Inventory, error) {
	inv, err := w.readInventory(ctx, n)
	if err != nil {
		return bmc.PowerUnknown, nil, err
	}
	if inv != nil && inv.PowerState != "" && inv.PowerState != bmc.PowerUnknown {
		return inv.PowerState, inv, nil
	}
	ps, err := w.readPower(ctx, n)
	return ps, inv, err
}

// readInventory reads the hardware inventory; nil without error when the
// driver or the BMC has none.
func (w *nodeWork) readInventory(ctx context.Context, n *baremetal.Node) (*bmc.Inventory, error) {
	var inv *bmc.Inventory
	err := w.bmcCall(ctx, n, "inventory", func(ctx context.Context, c bmc.Client) error {
		ig, err := bmc.Capability[bmc.InventoryGetter](c)
		if err != nil {
			return nil // the driver has none
		}
		got, err := ig.Inventory(ctx)
		if err != nil {
			return err
		}
		inv = &got
		return nil
	})
	if err != nil && bmc.KindOf(err) == bmc.KindUnsupported {
		return nil, nil
	}
	return inv, err
}

// fillProperties records the properties the BMC's inventory shows as
// inspected where no inspection found them before (the deploy agent's,
// measured on the machine itself, stays), and shows them where the
// operator set no override: what the operator set always wins.
// describeInventory says what the BMC reported, as the API names it;
// what it did not report is said to be unknown, not 0.
func describeInventory(inv *bmc.Inventory) string {
	var parts []string
	if inv.CPUs > 0 {
		p := fmt.Sprintf("cpus=%d", inv.CPUs)
		if inv.CPUSockets > 0 && inv.CPUCores > 0 {
			p += fmt.Sprintf(" (%d sockets, %d cores)", inv.CPUSockets, inv.CPUCores)
		}
		parts = append(parts, p)
	}
	if inv.MemoryMB > 0 {
		parts = append(parts, fmt.Sprintf("memory_mb=%d", inv.MemoryMB))
	}
	if inv.CPUArch != "" {
		parts = append(parts, "cpu_arch="+inv.CPUArch)
	}
	if inv.BootMode != "" {
		parts = append(parts, "boot mode "+inv.BootMode)
	}
	if len(parts) == 0 {
		return "no inventory reported (the BMC gives none while the machine is off, or at all)"
	}
	return strings.Join(parts, ", ")
}

func fillProperties(n *baremetal.Node, inv *bmc.Inventory) {
	if inv == nil {
		return
	}
	n.RecordInspection(validOnly(baremetal.Properties{CPUs: inv.CPUs, MemoryMB: inv.MemoryMB, CPUArch: inv.CPUArch}), true)
	// The BMC's word on the boot mode, where it gives one; the agent's,
	// from the machine itself, replaces it at the next inspection.
	if mode := bootModeTrait(inv.BootMode); mode != "" {
		n.ReplaceDerivedTraits([]string{baremetal.TraitBootModePrefix}, []string{mode})
	}
}

// bootModeTrait is the derived trait of a boot mode ("uefi", "bios"),
// "" for none or one not known.
func bootModeTrait(mode string) string {
	switch strings.ToLower(mode) {
	case "uefi":
		return baremetal.TraitBootModePrefix + "UEFI"
	case "bios", "legacy":
		return baremetal.TraitBootModePrefix + "BIOS"
	}
	return ""
}

// syncNodeWorker reads one node's power state: a targeted power sync, for
// instance right after an admin fixed the BMC credentials. It observes
// only, so it runs in maintenance too and does not take the node's
// mutating-job slot. BMC failures are recorded on the node, not retried
// here: the periodic sync keeps trying.
type syncNodeWorker struct {
	river.WorkerDefaults[SyncNodeArgs]
	*nodeWork
}

func (w *syncNodeWorker) Work(ctx context.Context, job *river.Job[SyncNodeArgs]) error {
	return w.finish(ctx, job.JobRow, w.syncNode(ctx, job.Args.NodeID))
}

func (w *syncNodeWorker) syncNode(ctx context.Context, nodeID string) error {
	// A sync_node request that arrives while one runs is dropped as a
	// duplicate (uniqueness includes running jobs), and it may carry new
	// credentials: so read again if the endpoint changed under us.
	for range 3 {
		n, err := w.store.GetNode(ctx, nodeID)
		if err != nil {
			return ignoreGone(err)
		}
		if err := w.syncOne(ctx, n); err != nil && !isBMCErr(err) {
			return ignoreGone(err)
		}
		again, err := w.store.GetNode(ctx, nodeID)
		if err != nil {
			return ignoreGone(err)
		}
		if endpoint(again) == endpoint(n) {
			return nil
		}
	}
	return nil
}
