package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// inspectWorker runs the inspect flow of a node in state inspecting: it
// boots the deploy agent and records the hardware the agent reports.
//
//   - boot_agent: a new agent session (per-boot token) is stored, then the
//     BMC gets the agent ISO's URL as virtual media, a one-time CD boot,
//     and power on (or a reset when already on);
//   - wait_inventory: the job snoozes, polling the session, until the
//     agent's first heartbeat with an inventory has been recorded
//     (service.AgentHeartbeat) or Config.AgentTimeout has passed since
//     the boot;
//   - power_off, clear_boot: the node is powered off and its media
//     ejected, then the inventory is stored, the properties it shows are
//     recorded as inspected (and shown where the operator set no
//     override), and the node becomes available again.
//
// An agent that never reports, or one that cannot be booted, ends the
// inspection the same way, with the reason in last_error (noted as
// "failure"): the node did nothing wrong that a retry would fix. BMC
// trouble is retried with backoff, like a cleanup.
type inspectWorker struct{ nodeWorker[InspectArgs] }

var inspection = &flow{
	name: "inspect", state: baremetal.StateInspecting,
	steps: []flowStep{
		{"boot_agent", bootInspectAgent},
		{"wait_inventory", waitInventory},
		{"power_off", powerOffStep},
		{"clear_boot", clearBootInspected},
	},
	fail: inspectFailed,
}

func (w *inspectWorker) Work(ctx context.Context, job *river.Job[InspectArgs]) error {
	return w.finish(ctx, job.JobRow, w.runFlow(ctx, job.JobRow, job.Args.NodeID, true, func(context.Context, *flowRun) (*flow, error) {
		return inspection, nil
	}))
}

// bootInspectAgent boots the agent, unless an inspection's session says
// it is booted already.
func bootInspectAgent(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	if !r.cfg.AgentBoot || r.cfg.PublicURL == "" {
		return endInspection(r, "the controller serves no deploy agent image (start it with --agent-kernel and --public-url)"), nil
	}
	if sess, err := r.commandSession(ctx, n.ID, baremetal.AgentInspect, ""); sess != nil || err != nil {
		return nextStep, err
	}
	how, err := r.startAgent(ctx, n, baremetal.AgentInspect, nil)
	if err != nil {
		if baremetal.IsCode(err, baremetal.CodeNotFound) {
			return flowOver, nil
		}
		return nextStep, err
	}
	msg := fmt.Sprintf("booted the deploy agent %s; waiting up to %s for its report", how, r.cfg.agentTimeout())
	if err := r.agentBooted(ctx, n.ID, baremetal.StateInspecting, "inspect", msg); err != nil {
		return flowOver, ignoreGone(err)
	}
	return nextStep, nil
}

// waitInventory waits for the agent's first report with an inventory,
// for AgentTimeout at most.
func waitInventory(ctx context.Context, r *flowRun) (stepResult, error) {
	sess, err := r.commandSession(ctx, r.node.ID, baremetal.AgentInspect, "")
	switch {
	case err != nil:
		return nextStep, err
	case sess == nil:
		return goTo("boot_agent"), nil
	case sess.LastSeenAt != nil && sess.Inventory != "":
		return nextStep, nil
	case time.Since(sess.CreatedAt) > r.cfg.agentTimeout():
		msg := fmt.Sprintf("the deploy agent did not report within %s of booting the node from %s (does the node reach the controller at --public-url?)",
			r.cfg.agentTimeout(), r.cfg.PublicURL)
		if sess.LastSeenAt != nil {
			msg = fmt.Sprintf("the deploy agent reported no inventory within %s", r.cfg.agentTimeout())
		}
		return endInspection(r, msg+refusedNote(sess)), nil
	}
	return waitFor(agentPoll), nil
}

// endInspection ends the inspection at the current step as failed (why):
// the flow goes on to power the node off and make it available, with why
// in its last_error.
func endInspection(r *flowRun, why string) stepResult {
	r.note("failure", why)
	r.note("failed_step", r.stepName())
	return goTo("power_off")
}

// inspectFailed ends an inspection that retrying cannot help (the agent
// cannot be booted on the node: no virtual media, no identity to boot it
// from the network by, a boot mode it does not boot in) as a failed one;
// the rest is retried, like a cleanup.
func inspectFailed(ctx context.Context, r *flowRun, err error) (stepResult, error) {
	if f := classify(err); (f == failPermanent || f == failUnsupported) && r.at < r.flow.index("power_off") {
		msg := err.Error()
		var perm *permanentError
		if errors.As(err, &perm) {
			msg = perm.msg
		}
		return endInspection(r, msg), nil
	}
	return keepTrying(ctx, r, err)
}

// clearBootInspected clears the boot media and makes the node available
// again, with the inventory its agent reported or the reason it has none
// (the note "failure").
func clearBootInspected(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	if err := r.clearBoot(ctx, n); err != nil {
		return nextStep, err
	}
	failure, failedStep := r.notes["failure"], cmp.Or(r.notes["failed_step"], r.stepName())
	var inv *api.AgentInventory
	if failure == "" {
		sess, err := r.store.GetAgentSession(ctx, n.ID)
		switch {
		case baremetal.IsCode(err, baremetal.CodeNotFound):
			failure = "the deploy agent's session is gone, and its report with it"
		case err != nil:
			return nextStep, err
		default:
			inv = new(api.AgentInventory)
			if err := json.Unmarshal([]byte(sess.Inventory), inv); err != nil {
				inv, failure = nil, fmt.Sprintf("the agent's inventory could not be read: %v", err)
			}
		}
	}
	var data []byte
	if inv != nil {
		var err error
		if data, err = json.Marshal(inv); err != nil {
			return nextStep, err
		}
	}
	_, err := r.ledger.Update(ctx, n.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		if n.ProvisionState != baremetal.StateInspecting {
			return ledger.ErrSkip
		}
		now := time.Now()
		r.observePower(n, bmc.PowerOff, nil, now)
		touchSeen(n, now)
		if err := tx.DeleteAgentSession(ctx, n.ID); err != nil {
			return err
		}
		if inv == nil {
			n.LastError = baremetal.ClipError(scrub(n, "inspection: "+failure))
			c.Reason = "inspection failed: " + failure
			c.Events = append(c.Events, r.failedEvent(failedStep, failure))
			return r.becomeAvailable(ctx, tx, n, c)
		}
		if err := tx.SetInventory(ctx, &baremetal.Inventory{NodeID: n.ID, Data: string(data), InspectedAt: now}); err != nil {
			return err
		}
		fillFromAgent(n, inv)
		if n.Fault == baremetal.FaultNone {
			n.LastError = ""
		}
		c.Reason = "inspected: " + InventorySummary(inv)
		return r.becomeAvailable(ctx, tx, n, c)
	})
	return flowOver, ignoreGone(err)
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
	deriveFromAgent(n, inv)
}

// deriveFromAgent replaces the traits inspection derives from what the
// agent saw on the machine: the disk kinds (NVMe, else SSD or HDD by the
// kernel's rotational flag; removable media are not the machine's disks)
// and the link speeds of the NICs that were up, always (an inspection
// lists every disk and NIC); the boot mode and whether the firmware can
// do Secure Boot where the agent could tell (a UEFI machine whose
// SecureBoot variable was readable has the feature, on or off).
func deriveFromAgent(n *baremetal.Node, inv *api.AgentInventory) {
	var disks, nics []string
	for _, d := range inv.Disks {
		switch {
		case d.Removable:
		case strings.HasPrefix(d.Name, "nvme"):
			disks = append(disks, baremetal.TraitDiskPrefix+"NVME", baremetal.TraitDiskPrefix+"SSD")
		case d.Rotational:
			disks = append(disks, baremetal.TraitDiskPrefix+"HDD")
		default:
			disks = append(disks, baremetal.TraitDiskPrefix+"SSD")
		}
	}
	for _, nic := range inv.NICs {
		if nic.LinkUp {
			nics = append(nics, baremetal.NICSpeedTrait(nic.SpeedMbps))
		}
	}
	n.ReplaceDerivedTraits([]string{baremetal.TraitDiskPrefix}, disks)
	n.ReplaceDerivedTraits([]string{baremetal.TraitNICSpeedPrefix}, nics)
	if mode := bootModeTrait(inv.System.BootMode); mode != "" {
		n.ReplaceDerivedTraits([]string{baremetal.TraitBootModePrefix}, []string{mode})
		var sb []string
		if mode == baremetal.TraitBootModePrefix+"UEFI" && inv.System.SecureBoot != nil {
			sb = []string{baremetal.TraitSecureBoot}
		}
		if mode == baremetal.TraitBootModePrefix+"BIOS" || sb != nil {
			n.ReplaceDerivedTraits([]string{baremetal.TraitSecureBoot}, sb)
		}
	}
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
