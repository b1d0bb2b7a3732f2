package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// inspectWorker boots the deploy agent on a node in state inspecting and
// records the hardware the agent reports:
//
//  1. a new agent session (per-boot token) is stored, then the BMC gets
//     the agent ISO's URL as virtual media, a one-time CD boot, and power
//     on (or a reset when already on);
//  2. the job snoozes, polling the session, until the agent's first
//     heartbeat with an inventory has been recorded (service.AgentHeartbeat)
//     or Config.AgentTimeout has passed since the boot;
//  3. the inventory is stored, the properties it shows are recorded as
//     inspected (and shown where the operator set no override), the node is powered off and its media ejected, and
//     it becomes available again. An agent that never reports ends the
//     inspection the same way, with the reason in last_error: the node did
//     nothing wrong that a retry would fix.
//
// BMC trouble is retried with backoff, like a cleanup.
type inspectWorker struct{ nodeWorker[InspectArgs] }

// agentPoll is how often an inspection looks for the agent's report.
const agentPoll = 3 * time.Second

func (w *inspectWorker) Work(ctx context.Context, job *river.Job[InspectArgs]) error {
	return w.finish(ctx, job.JobRow, w.inspect(ctx, job))
}

func (w *inspectWorker) inspect(ctx context.Context, job *river.Job[InspectArgs]) error {
	n, err := w.begin(ctx, job.JobRow, job.Args.NodeID, true)
	if n == nil {
		return err
	}
	if n.ProvisionState != baremetal.StateInspecting {
		return nil
	}
	if !w.cfg.AgentBoot || w.cfg.PublicURL == "" {
		return w.endInspection(ctx, job, n, nil, "the controller serves no deploy agent image (start it with --agent-kernel and --public-url)")
	}
	sess, err := w.store.GetAgentSession(ctx, n.ID)
	switch {
	case baremetal.IsCode(err, baremetal.CodeNotFound):
		return w.bootAgent(ctx, job, n)
	case err != nil:
		return err
	case sess.Purpose != baremetal.AgentInspect:
		// Left by other work on this node; this boot is the inspection's.
		return w.bootAgent(ctx, job, n)
	case sess.LastSeenAt != nil && sess.Inventory != "":
		var inv api.AgentInventory
		if err := json.Unmarshal([]byte(sess.Inventory), &inv); err != nil {
			return w.endInspection(ctx, job, n, nil, fmt.Sprintf("the agent's inventory could not be read: %v", err))
		}
		return w.endInspection(ctx, job, n, &inv, "")
	case time.Since(sess.CreatedAt) > w.cfg.agentTimeout():
		msg := fmt.Sprintf("the deploy agent did not report within %s of booting the node from %s (does the node reach the controller at --public-url?)",
			w.cfg.agentTimeout(), w.cfg.PublicURL)
		if sess.LastSeenAt != nil {
			msg = fmt.Sprintf("the deploy agent reported no inventory within %s", w.cfg.agentTimeout())
		}
		return w.endInspection(ctx, job, n, nil, msg+refusedNote(sess))
	}
	return river.JobSnooze(agentPoll)
}

// bootAgent starts a new agent session and boots the node into the
// agent; the job then waits for the agent's report.
func (w *inspectWorker) bootAgent(ctx context.Context, job *river.Job[InspectArgs], n *baremetal.Node) error {
	how, err := w.startAgent(ctx, n, baremetal.AgentInspect, nil)
	if err != nil {
		if baremetal.IsCode(err, baremetal.CodeNotFound) {
			return nil
		}
		return w.inspectError(ctx, job, n, err)
	}
	msg := fmt.Sprintf("booted the deploy agent %s; waiting up to %s for its report", how, w.cfg.agentTimeout())
	if err := w.agentBooted(ctx, n.ID, baremetal.StateInspecting, "inspect", msg); err != nil {
		return ignoreGone(err)
	}
	return river.JobSnooze(agentPoll)
}

// bootFromCD inserts url as virtual media, sets a one-time CD boot and
// powers the node on (or resets it), waiting until on is observed.
func (w *nodeWork) bootFromCD(ctx context.Context, n *baremetal.Node, url string) error {
	if err := w.mediaCall(ctx, n, "insert agent media", func(ctx context.Context, c bmc.Client) error {
		vm, err := bmc.Capability[bmc.VirtualMedia](c)
		if err != nil {
			return err
		}
		return vm.InsertMedia(ctx, url)
	}); err != nil {
		return err
	}
	return w.bootOnce(ctx, n, bmc.BootCD)
}

// bootOnce sets a one-time boot from dev and powers the node on (or
// resets it), waiting until on is observed.
func (w *nodeWork) bootOnce(ctx context.Context, n *baremetal.Node, dev bmc.BootDevice) error {
	if err := w.bmcCall(ctx, n, "set boot device", func(ctx context.Context, c bmc.Client) error {
		return c.SetBootDevice(ctx, dev, false)
	}); err != nil {
		return err
	}
	ps, err := w.readPower(ctx, n)
	if err != nil {
		return err
	}
	action := bmc.ActionOn
	if ps == bmc.PowerOn {
		action = bmc.ActionReset
	}
	if err := w.setPower(ctx, n, action); err != nil {
		return err
	}
	_, err = w.waitPower(ctx, n, bmc.PowerOn, nil)
	return err
}

// endInspection powers the node off, clears its boot media and makes it
// available again, with the inventory (inv) or the reason it has none
// (failure).
func (w *inspectWorker) endInspection(ctx context.Context, job *river.Job[InspectArgs], n *baremetal.Node, inv *api.AgentInventory, failure string) error {
	if err := w.powerOff(ctx, n, nil); err != nil {
		return w.inspectError(ctx, job, n, err)
	}
	if err := w.clearBoot(ctx, n); err != nil {
		return w.inspectError(ctx, job, n, err)
	}
	var data []byte
	if inv != nil {
		var err error
		if data, err = json.Marshal(inv); err != nil {
			return err
		}
	}
	_, err := w.ledger.Update(ctx, n.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		if n.ProvisionState != baremetal.StateInspecting {
			return ledger.ErrSkip
		}
		now := time.Now()
		w.observePower(n, bmc.PowerOff, nil, now)
		touchSeen(n, now)
		if err := tx.DeleteAgentSession(ctx, n.ID); err != nil {
			return err
		}
		if inv == nil {
			n.LastError = baremetal.ClipError(scrub(n, "inspection: "+failure))
			c.Reason = "inspection failed: " + failure
			return n.Transition(baremetal.StateAvailable)
		}
		if err := tx.SetInventory(ctx, &baremetal.Inventory{NodeID: n.ID, Data: string(data), InspectedAt: now}); err != nil {
			return err
		}
		fillFromAgent(n, inv)
		if n.Fault == baremetal.FaultNone {
			n.LastError = ""
		}
		c.Reason = "inspected: " + InventorySummary(inv)
		return n.Transition(baremetal.StateAvailable)
	})
	return ignoreGone(err)
}

// inspectError records BMC trouble and retries; what retrying cannot fix
// ends the inspection.
func (w *inspectWorker) inspectError(ctx context.Context, job *river.Job[InspectArgs], n *baremetal.Node, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch f := classify(err); {
	case f == failPermanent:
		var perm *permanentError
		errors.As(err, &perm)
		return w.endInspection(ctx, job, n, nil, perm.msg)
	case f == failPowerTimeout:
		w.recordActionFault(ctx, n.ID, baremetal.FaultPowerMismatch, "inspect: "+err.Error())
	case f == failRefused:
		w.recordRefused(ctx, n.ID, "inspect", err)
		return w.refusedRetry(ctx, job.Kind, fmt.Errorf("inspect node %s: %w", n.Name, err))
	case f == failUnsupported:
		return w.endInspection(ctx, job, n, nil, err.Error())
	case f.bmcTrouble():
		w.recordBMCFailure(ctx, n.ID, "inspect", err)
	}
	return w.retryForever(job.JobRow, fmt.Errorf("inspect node %s: %w", n.Name, err))
}

// fillFromAgent records the properties the agent's inventory shows
// (CPUs, memory in MiB, and the largest fixed disk in GiB) as inspected:
// they replace what an earlier inspection found, and show wherever the
// operator set no override (what the operator set always wins).
//
// Memory is the memory installed, as the machine's SMBIOS tables list it
// and as BMCs, operators and schedulers count it, not what the agent's
// kernel can use (MemTotal: 960 MiB of 1 GiB). Where the tables list none,
// what the BMC or an earlier inspection found stays; MemTotal is taken
// only when nothing is known at all. The controller decides this, not
// the agent: only it knows what the BMC said.
func fillFromAgent(n *baremetal.Node, inv *api.AgentInventory) {
	var largest int64
	for _, d := range inv.Disks {
		if !d.Removable {
			largest = max(largest, d.SizeBytes)
		}
	}
	mem := int(inv.InstalledMemoryBytes >> 20)
	if mem == 0 && n.Inspected.MemoryMB == 0 {
		mem = int(inv.MemoryBytes >> 20)
	}
	n.RecordInspection(validOnly(baremetal.Properties{CPUs: inv.CPUs, MemoryMB: mem, LocalGB: int(largest >> 30)}), false)
}

// validOnly keeps the members of p the domain accepts. Inventories are
// not input we can refuse, and a quirky BMC or machine may report -1 CPUs,
// petabytes of memory or an architecture string with control characters:
// a value the domain refuses would make every later write of the node
// fail validation (and PostgreSQL refuse the row).
func validOnly(p baremetal.Properties) baremetal.Properties {
	var out baremetal.Properties
	ok := func(q baremetal.Properties) bool { return q.Validate() == nil }
	if ok(baremetal.Properties{CPUs: p.CPUs}) {
		out.CPUs = p.CPUs
	}
	if ok(baremetal.Properties{MemoryMB: p.MemoryMB}) {
		out.MemoryMB = p.MemoryMB
	}
	if ok(baremetal.Properties{LocalGB: p.LocalGB}) {
		out.LocalGB = p.LocalGB
	}
	if ok(baremetal.Properties{CPUArch: p.CPUArch}) {
		out.CPUArch = p.CPUArch
	}
	return out
}

// InventorySummary says what an inventory holds, in one line for events:
// "4 CPUs, 8.0 GiB memory, 2 disks (largest 64.0 GiB), 1 NICs".
func InventorySummary(inv *api.AgentInventory) string {
	if inv == nil {
		return "no inventory yet"
	}
	var largest int64
	for _, d := range inv.Disks {
		largest = max(largest, d.SizeBytes)
	}
	mem := inv.InstalledMemoryBytes
	if mem == 0 {
		mem = inv.MemoryBytes
	}
	return fmt.Sprintf("%d CPUs, %s memory, %d disks (largest %s), %d NICs",
		inv.CPUs, gib(mem), len(inv.Disks), gib(largest), len(inv.NICs))
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
