package jobs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// ConfigureArgs applies a node's hardware settings (issue 30) while it is
// in state configuring.
type ConfigureArgs struct {
	NodeID string `json:"node_id" river:"unique"`
}

func (ConfigureArgs) Kind() string { return "configure" }

func (ConfigureArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: foreverAttempts, UniqueOpts: uniquePerNode}
}

// configureWorker runs the configure flow of a node in state configuring:
//
//   - check: read what the BMC has (its BIOS attribute registry, the
//     attributes in effect, Secure Boot), record it as observed, and
//     check the settings against it; a BMC that lacks what a setting
//     needs, or a value its registry refuses, ends the flow before
//     anything is written (nothing partially applied);
//   - write: the BIOS attributes that differ, as pending settings, and
//     Secure Boot;
//   - reset: the machine is powered on (or restarted when on), which is
//     when a BMC applies pending BIOS settings;
//   - verify: read back until every setting shows, or the BMC has nothing
//     pending and still does not show one, or Config.ConfigureTimeout;
//   - power_off: the machine is left off, as an available node is;
//   - done: the node is available again with what was read, and the
//     reason in last_error when the settings were not applied.
//
// A refusal or a setting the BMC did not apply ends the flow with the
// reason in last_error and an event, without a fault and without
// maintenance: the operator changes the setting and applies again. BMC
// trouble is retried with backoff, like a cleanup, recorded as a fault
// that clears at the first success.
type configureWorker struct{ nodeWorker[ConfigureArgs] }

var configuration = &flow{
	name: "configure", state: baremetal.StateConfiguring,
	steps: []flowStep{
		{"check", checkSettings},
		{"write", writeSettings},
		{"reset", resetForSettings},
		{"verify", verifySettings},
		{"power_off", settingsPowerOff},
		{"done", settingsDone},
	},
	fail: configureFailed,
}

func (w *configureWorker) Work(ctx context.Context, job *river.Job[ConfigureArgs]) error {
	return w.finish(ctx, job.JobRow, w.runFlow(ctx, job.JobRow, job.Args.NodeID, true, func(context.Context, *flowRun) (*flow, error) {
		return configuration, nil
	}))
}

// settingsPoll is how often verify reads the settings back while the
// machine applies them.
const settingsPoll = 3 * time.Second

// endConfigure ends the flow at the current step as failed (why): the
// machine is powered off when it was reset, and the node made available
// with why in its last_error.
func endConfigure(r *flowRun, why string) stepResult {
	r.note("failure", why)
	r.note("failed_step", r.stepName())
	if r.notes["reset"] != "" {
		return goTo("power_off")
	}
	return goTo("done")
}

// configureFailed: what retrying cannot help (a refusal, a capability
// the BMC lacks) ends the flow; BMC trouble is retried with backoff.
func configureFailed(ctx context.Context, r *flowRun, err error) (stepResult, error) {
	if f := classify(err); (f == failRefused || f == failUnsupported || f == failPermanent) && r.at < r.flow.index("power_off") {
		return endConfigure(r, err.Error()), nil
	}
	return keepTrying(ctx, r, err)
}

// readSettings reads what the BMC has of the node's settings: the BIOS
// attributes in effect and the registry when the node manages BIOS
// attributes (or always, with all), Secure Boot when it manages it (or
// always). A capability the BMC lacks is listed in Lacks, not an error.
func (r *nodeWork) readSettings(ctx context.Context, n *baremetal.Node, all bool) (baremetal.HardwareObserved, baremetal.BIOSRegistry, error) {
	var obs baremetal.HardwareObserved
	var reg baremetal.BIOSRegistry
	want := n.Settings
	err := r.bmcCall(ctx, n, "read hardware settings", func(ctx context.Context, c bmc.Client) error {
		if all || len(want.BIOS) > 0 {
			bs, err := bmc.Capability[bmc.BIOSSettings](c)
			var vals bmc.BIOSValues
			if err == nil {
				vals, err = bs.BIOSAttributes(ctx)
			}
			switch {
			case bmc.KindOf(err) == bmc.KindUnsupported:
				obs.Lacks = append(obs.Lacks, "BIOS settings")
			case err != nil:
				return err
			default:
				obs.BIOS = map[string]string(vals)
				r, err := bs.BIOSRegistry(ctx)
				if err != nil {
					return err
				}
				reg = registryOf(r)
			}
		}
		if all || want.SecureBoot != nil {
			ss, err := bmc.Capability[bmc.SecureBootSetter](c)
			var sb bmc.SecureBootState
			if err == nil {
				sb, err = ss.SecureBoot(ctx)
			}
			switch {
			case bmc.KindOf(err) == bmc.KindUnsupported:
				obs.Lacks = append(obs.Lacks, "Secure Boot")
			case err != nil:
				return err
			default:
				obs.SecureBoot = &sb.Enabled
			}
		}
		return nil
	})
	now := time.Now().UTC()
	obs.ReadAt = &now
	return obs, reg, err
}

// registryOf is the domain's copy of a BMC's registry (nil for none).
func registryOf(r bmc.BIOSRegistry) baremetal.BIOSRegistry {
	if r == nil {
		return nil
	}
	out := make(baremetal.BIOSRegistry, len(r))
	for name, a := range r {
		out[name] = baremetal.BIOSAttributeSpec{Type: string(a.Type), Values: a.Values, ReadOnly: a.ReadOnly,
			LowerBound: a.LowerBound, UpperBound: a.UpperBound, MaxLength: a.MaxLength}
	}
	return out
}

// registryName names a registry by its content when the BMC names none
// we can key by: nodes with the same registry share the row.
func registryName(reg baremetal.BIOSRegistry) string {
	names := slices.Sorted(maps.Keys(reg))
	h := fnv64()
	for _, n := range names {
		a := reg[n]
		h.write(n + "\x00" + a.Type + "\x00" + strings.Join(a.Values, "\x01") + "\x00" + strconv.FormatBool(a.ReadOnly) + "\x00" +
			bound(a.LowerBound) + "\x00" + bound(a.UpperBound) + "\x00" + strconv.Itoa(a.MaxLength) + "\n")
	}
	return fmt.Sprintf("bios-%016x", h.sum())
}

func bound(b *int64) string {
	if b == nil {
		return "-"
	}
	return strconv.FormatInt(*b, 10)
}

// fnv is FNV-1a, 64 bits: a name for a registry's content, not a
// security boundary.
type fnv uint64

func fnv64() *fnv { f := fnv(14695981039346656037); return &f }

func (f *fnv) write(s string) {
	for i := 0; i < len(s); i++ {
		*f ^= fnv(s[i])
		*f *= 1099511628211
	}
}

func (f *fnv) sum() uint64 { return uint64(*f) }

// recordObserved stores what was read of n's settings (and the registry,
// once per content), on the node as the flow has it.
func (r *nodeWork) recordObserved(ctx context.Context, nodeID string, obs baremetal.HardwareObserved, reg baremetal.BIOSRegistry) (*baremetal.Node, error) {
	if reg != nil {
		obs.Registry = registryName(reg)
		if err := r.store.PutBIOSRegistry(ctx, obs.Registry, reg); err != nil {
			return nil, err
		}
	}
	n, err := r.ledger.Update(ctx, nodeID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		n.Observed = obs
		return nil
	})
	return n, err
}

// checkSettings reads what the BMC has and checks the settings against
// it before anything is written.
func checkSettings(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	obs, reg, err := r.readSettings(ctx, n, false)
	if err != nil {
		return nextStep, err
	}
	if n, err = r.recordObserved(ctx, n.ID, obs, reg); err != nil {
		return nextStep, ignoreGone(err)
	}
	r.node = n
	want := n.Settings
	var lacks []string
	if len(want.BIOS) > 0 && slices.Contains(obs.Lacks, "BIOS settings") {
		lacks = append(lacks, "BIOS settings")
	}
	if want.SecureBoot != nil && slices.Contains(obs.Lacks, "Secure Boot") {
		lacks = append(lacks, "Secure Boot")
	}
	if len(lacks) > 0 {
		return endConfigure(r, fmt.Sprintf("the node's BMC (%s) has no %s; nothing was changed", n.Driver, strings.Join(lacks, " and no "))), nil
	}
	if err := want.ValidateAgainst(reg, obs.BIOS); err != nil {
		return endConfigure(r, "the BMC would refuse "+baremetal.ErrorMessage(err)+"; nothing was changed"), nil
	}
	if len(want.Unmet(obs)) == 0 {
		r.note("already", "true")
		return goTo("done"), nil
	}
	return nextStep, nil
}

// writeSettings writes what differs: the BIOS attributes as pending
// settings, then Secure Boot.
func writeSettings(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	want, obs := n.Settings, n.Observed
	diff := bmc.BIOSValues{}
	for k, v := range want.BIOS {
		if obs.BIOS[k] != v {
			diff[k] = v
		}
	}
	reset := false
	err := r.bmcCall(ctx, n, "write hardware settings", func(ctx context.Context, c bmc.Client) error {
		if len(diff) > 0 {
			bs, err := bmc.Capability[bmc.BIOSSettings](c)
			if err != nil {
				return err
			}
			rs, err := bs.SetBIOS(ctx, diff)
			if err != nil {
				return err
			}
			reset = reset || rs
		}
		if want.SecureBoot != nil && (obs.SecureBoot == nil || *obs.SecureBoot != *want.SecureBoot) {
			ss, err := bmc.Capability[bmc.SecureBootSetter](c)
			if err != nil {
				return err
			}
			rs, err := ss.SetSecureBoot(ctx, *want.SecureBoot)
			if err != nil {
				return err
			}
			reset = reset || rs
		}
		return nil
	})
	if err != nil {
		return nextStep, err
	}
	names := slices.Sorted(maps.Keys(diff))
	if want.SecureBoot != nil && (obs.SecureBoot == nil || *obs.SecureBoot != *want.SecureBoot) {
		names = append(names, "secure_boot")
	}
	r.note("written", strings.Join(names, ","))
	if !reset {
		return goTo("verify"), nil
	}
	return nextStep, nil
}

// resetForSettings resets the machine so that the BMC applies the
// pending settings: power on from off, a restart when on.
func resetForSettings(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	if r.notes["reset"] == "" {
		ps, err := r.readPower(ctx, n)
		if err != nil {
			return nextStep, err
		}
		action := bmc.ActionOn
		if ps == bmc.PowerOn {
			action = bmc.ActionReset
		}
		if err := r.setPower(ctx, n, action); err != nil {
			return nextStep, err
		}
		r.note("reset", time.Now().UTC().Format(time.RFC3339))
	}
	if _, err := r.waitPower(ctx, n, bmc.PowerOn, r.stopped); err != nil {
		return nextStep, err
	}
	return nextStep, nil
}

// verifySettings reads the settings back until they all show; the BMC
// applies pending BIOS settings while the machine starts (POST), which
// takes minutes on real servers.
func verifySettings(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	obs, reg, err := r.readSettings(ctx, n, false)
	if err != nil {
		return nextStep, err
	}
	unmet := n.Settings.Unmet(obs)
	if len(unmet) == 0 {
		if _, err := r.recordObserved(ctx, n.ID, obs, reg); err != nil {
			return nextStep, ignoreGone(err)
		}
		return nextStep, nil
	}
	started, _ := time.Parse(time.RFC3339, r.notes["reset"])
	if started.IsZero() {
		started = n.Flow.StepStartedAt
	}
	pending := 0
	if len(n.Settings.BIOS) > 0 {
		err := r.bmcCall(ctx, n, "read pending BIOS settings", func(ctx context.Context, c bmc.Client) error {
			bs, err := bmc.Capability[bmc.BIOSSettings](c)
			if err != nil {
				return err
			}
			p, err := bs.PendingBIOS(ctx)
			pending = len(p)
			return err
		})
		if err != nil {
			return nextStep, err
		}
	}
	if time.Since(started) < r.cfg.configureTimeout() {
		return waitFor(settingsPoll), nil
	}
	if _, err := r.recordObserved(ctx, n.ID, obs, reg); err != nil {
		return nextStep, ignoreGone(err)
	}
	why := fmt.Sprintf("the BMC did not apply the settings within %s of the reset: %s", r.cfg.configureTimeout(), strings.Join(unmet, "; "))
	if pending > 0 {
		why += fmt.Sprintf(" (%d BIOS settings still pending on the BMC)", pending)
	}
	return endConfigure(r, why), nil
}

// settingsPowerOff leaves the machine off, as an available node is, and
// notes it for done, which records that power: the node must not show
// the power the reset left until the next power sync.
func settingsPowerOff(ctx context.Context, r *flowRun) (stepResult, error) {
	if err := r.powerOff(ctx, r.node, nil); err != nil {
		return nextStep, err
	}
	r.note("powered_off", "true")
	return nextStep, nil
}

// settingsDone makes the node available again, with the reason in
// last_error when the settings were not applied.
func settingsDone(ctx context.Context, r *flowRun) (stepResult, error) {
	failure, failedStep := r.notes["failure"], r.notes["failed_step"]
	_, err := r.ledger.Update(ctx, r.node.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		if n.ProvisionState != baremetal.StateConfiguring {
			return ledger.ErrSkip
		}
		if r.notes["powered_off"] != "" {
			now := time.Now()
			r.observePower(n, bmc.PowerOff, nil, now)
			touchSeen(n, now)
		}
		switch {
		case failure != "":
			n.LastError = baremetal.ClipError(scrub(n, "hardware settings: "+failure))
			c.Reason = "hardware settings not applied: " + failure
			c.Events = append(c.Events, r.failedEvent(failedStep, failure))
		case r.notes["already"] != "":
			c.Reason = "hardware settings already in effect; nothing to apply"
			if n.Fault == baremetal.FaultNone {
				n.LastError = ""
			}
		default:
			c.Reason = "hardware settings applied and read back: " + r.notes["written"]
			if n.Fault == baremetal.FaultNone {
				n.LastError = ""
			}
		}
		return r.nodeWork.becomeAvailable(ctx, tx, n, c)
	})
	return flowOver, ignoreGone(err)
}

// becomeAvailable ends the work that held n (verify, inspection,
// cleanup, configuring): available, or configuring when hardware settings
// wait to be applied (asked for while the node was busy), with the
// configure job queued in the same transaction.
func (w *nodeWork) becomeAvailable(ctx context.Context, tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
	if n.ProvisionState != baremetal.StateAvailable {
		// From configuring too: settings changed while they were being
		// applied start the flow over (Transition ends the one that ran).
		if err := n.Transition(baremetal.StateAvailable); err != nil {
			return err
		}
	}
	if !n.Settings.Waiting || n.Settings.IsZero() {
		n.Settings.Waiting = false
		return nil
	}
	if err := n.StartConfiguring(); err != nil {
		return err
	}
	c.Reason += "; applying the hardware settings that waited for the node to be free"
	_, err := w.InsertTx(ctx, tx, ConfigureArgs{NodeID: n.ID})
	return err
}
