package jobs

import (
	"context"
	"errors"
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
		{"raid", configureRAID},
		{"firmware", updateFirmware},
		{"reset", resetForSettings},
		{"verify", verifySettings},
		{"power_off", settingsPowerOff},
		{"done", settingsDone},
	},
	fail: configureFailed,
	// A synchronous BMC goes round the raid step once per volume change
	// and the firmware step once per component.
	extraRuns: 2*maxVolumes + 2*32,
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
	why = redactImages(r.node, why)
	r.note("failure", why)
	r.note("failed_step", r.stepName())
	if r.notes["reset"] != "" {
		return goTo("power_off")
	}
	return goTo("done")
}

// redactImages replaces the node's firmware image URLs, which may carry
// credentials in their query or user info, by their redacted form in a
// message (a BMC's task messages quote the URL it fetched).
func redactImages(n *baremetal.Node, msg string) string {
	for _, fw := range n.Settings.Firmware {
		if fw.ImageURL != "" {
			msg = strings.ReplaceAll(msg, fw.ImageURL, baremetal.RedactURL(fw.ImageURL))
			if i := strings.IndexAny(fw.ImageURL, "?#"); i > 0 {
				msg = strings.ReplaceAll(msg, fw.ImageURL[i:], "?…")
			}
		}
	}
	return msg
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
		if all || want.RAID != nil {
			rc, err := bmc.Capability[bmc.RAIDController](c)
			var st []bmc.StorageController
			if err == nil {
				st, err = rc.Storage(ctx)
			}
			switch {
			case bmc.KindOf(err) == bmc.KindUnsupported:
				obs.Lacks = append(obs.Lacks, "RAID")
			case err != nil:
				return err
			default:
				obs.Volumes = observedVolumes(st)
			}
		}
		if all || len(want.Firmware) > 0 {
			fu, err := bmc.Capability[bmc.FirmwareUpdater](c)
			var inv []bmc.FirmwareComponent
			if err == nil {
				inv, err = fu.Firmware(ctx)
			}
			switch {
			case bmc.KindOf(err) == bmc.KindUnsupported:
				obs.Lacks = append(obs.Lacks, "firmware updates")
			case err != nil:
				return err
			default:
				obs.Firmware = firmwareVersions(inv)
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
	return r.recordObservedFrom(ctx, nodeID, obs, reg, true)
}

// recordObservedFrom is recordObserved; a read from outside the
// configure flow (inFlow false) is not written over a configure under
// way, whose own reads are newer than one that started before it.
func (r *nodeWork) recordObservedFrom(ctx context.Context, nodeID string, obs baremetal.HardwareObserved, reg baremetal.BIOSRegistry, inFlow bool) (*baremetal.Node, error) {
	if reg != nil {
		obs.Registry = registryName(reg)
		if err := r.store.PutBIOSRegistry(ctx, obs.Registry, reg); err != nil {
			return nil, err
		}
	}
	n, err := r.ledger.Update(ctx, nodeID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, _ *ledger.Change) error {
		if !inFlow && n.ProvisionState == baremetal.StateConfiguring {
			return ledger.ErrSkip
		}
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
	if want.RAID != nil && slices.Contains(obs.Lacks, "RAID") {
		lacks = append(lacks, "RAID (Storage volumes)")
	}
	if len(want.Firmware) > 0 && slices.Contains(obs.Lacks, "firmware updates") {
		lacks = append(lacks, "firmware updates (UpdateService)")
	}
	for _, fw := range want.Firmware {
		if _, ok := obs.Firmware[fw.Component]; !ok && obs.Firmware != nil {
			return endConfigure(r, fmt.Sprintf("the BMC's firmware inventory has no component %q (it has %s); nothing was changed",
				fw.Component, strings.Join(slices.Sorted(maps.Keys(obs.Firmware)), ", "))), nil
		}
	}
	if len(lacks) > 0 {
		return endConfigure(r, fmt.Sprintf("the node's BMC (%s) has no %s; nothing was changed", n.Driver, strings.Join(lacks, " and no "))), nil
	}
	if err := want.ValidateAgainst(reg, obs.BIOS); err != nil {
		return endConfigure(r, "the BMC would refuse "+baremetal.ErrorField(err)+": "+baremetal.ErrorMessage(err)+"; nothing was changed"), nil
	}
	if want.RAID != nil {
		if _, err := r.raidPlan(ctx, n); err != nil {
			var perm *permanentError
			if errors.As(err, &perm) {
				return endConfigure(r, perm.msg+"; nothing was changed"), nil
			}
			return nextStep, err
		}
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
	if len(names) > 0 {
		r.note("written", strings.Join(names, ","))
	}
	if reset {
		r.note("needs_reset", "true")
	}
	return nextStep, nil
}

// resetForSettings resets the machine so that the BMC applies the
// pending settings: power on from off, a restart when on.
func resetForSettings(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	if r.notes["needs_reset"] == "" {
		return nextStep, nil // applied at once: nothing waits for a reset
	}
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
	again := false
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
		if n.Settings.Waiting && !n.Settings.IsZero() {
			// Changed while they were being applied: this job applies
			// them again, from its first step (a configure job queued
			// here would be dropped as a duplicate of this running one).
			n.Settings.Waiting = false
			n.Flow = nil
			c.Reason += "; the settings changed meanwhile: applying them again"
			again = true
			return nil
		}
		return r.becomeAvailable(ctx, tx, n, c)
	})
	if again && err == nil {
		return waitFor(time.Millisecond), nil
	}
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

// observedVolumes are a system's volumes as the domain keeps them.
func observedVolumes(st []bmc.StorageController) []baremetal.ObservedVolume {
	out := []baremetal.ObservedVolume{}
	for _, c := range st {
		for _, v := range c.Volumes {
			out = append(out, baremetal.ObservedVolume{Name: v.Name, RAIDLevel: raidLevel(v.RAIDType),
				SizeGB: int(v.CapacityBytes >> 30), Drives: append([]string{}, v.Drives...)})
		}
	}
	return out
}

// raidLevel is a Redfish RAIDType (RAID1) as a level (1); "" for None.
func raidLevel(t string) string {
	t = strings.TrimPrefix(strings.ToUpper(t), "RAID")
	if t == "NONE" {
		return ""
	}
	return t
}

// firmwareVersions keys an inventory's versions by each entry's Id (the
// last element of its @odata.id) and Name, as a declared component may
// name either.
func firmwareVersions(inv []bmc.FirmwareComponent) map[string]string {
	out := map[string]string{}
	for _, c := range inv {
		id := c.ID[strings.LastIndex(strings.TrimSuffix(c.ID, "/"), "/")+1:]
		id = strings.TrimSuffix(id, "/")
		for _, k := range []string{id, c.Name} {
			if k != "" {
				if _, taken := out[k]; !taken {
					out[k] = c.Version
				}
			}
		}
	}
	return out
}

// raidOp is one change of the volumes: delete a volume, or create one.
type raidOp struct {
	storage string // the controller's @odata.id (create)
	delete  string // the volume's @odata.id (delete)
	create  *bmc.VolumeSpec
	what    string
}

// raidPlan reads the storage and returns the next change that brings it
// to the declared volumes (nil: none left): first the volumes not
// declared or not as declared are deleted, then the missing ones created
// on drives no volume uses, chosen by count and media type (the smallest
// that fit first) or by id. Declared volumes that cannot be made from the
// drives are a permanentError, before anything is changed.
func (r *nodeWork) raidPlan(ctx context.Context, n *baremetal.Node) (*raidOp, error) {
	var st []bmc.StorageController
	err := r.bmcCall(ctx, n, "read storage", func(ctx context.Context, c bmc.Client) error {
		rc, err := bmc.Capability[bmc.RAIDController](c)
		if err == nil {
			st, err = rc.Storage(ctx)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	want := *n.Settings.RAID
	used := map[string]bool{}
	var deletes []raidOp
	kept := map[string]bool{}
	for _, c := range st {
		for _, v := range c.Volumes {
			o := observedVolumes([]bmc.StorageController{{Volumes: []bmc.Volume{v}}})[0]
			i := slices.IndexFunc(want, func(w baremetal.VolumeSettings) bool { return w.Name == v.Name })
			if i >= 0 && want[i].VolumeFits(o) && !kept[v.Name] {
				kept[v.Name] = true
				for _, d := range v.Drives {
					used[d] = true
				}
				continue
			}
			deletes = append(deletes, raidOp{delete: v.ID, what: fmt.Sprintf("delete volume %s (RAID %s, %d GiB)", v.Name, o.RAIDLevel, o.SizeGB)})
		}
	}
	// Every missing volume must be makeable from the drives the kept
	// volumes leave, before anything is deleted.
	var creates []raidOp
	for _, w := range want {
		if kept[w.Name] {
			continue
		}
		op, err := chooseDrives(st, w, used)
		if err != nil {
			return nil, err
		}
		creates = append(creates, op)
	}
	switch {
	case len(deletes) > 0:
		return &deletes[0], nil
	case len(creates) > 0:
		return &creates[0], nil
	}
	return nil, nil
}

// chooseDrives picks the drives of a volume to create among those not in
// used (marking them used), on one controller.
func chooseDrives(st []bmc.StorageController, w baremetal.VolumeSettings, used map[string]bool) (raidOp, error) {
	level := "RAID" + w.RAIDLevel
	var why []string
	for _, c := range st {
		if len(c.RAIDTypes) > 0 && !slices.Contains(c.RAIDTypes, level) {
			why = append(why, fmt.Sprintf("controller %s does not do %s (it does %s)", c.Name, level, strings.Join(c.RAIDTypes, ", ")))
			continue
		}
		var pick []string
		if len(w.DriveIDs) > 0 {
			for _, id := range w.DriveIDs {
				i := slices.IndexFunc(c.Drives, func(d bmc.Drive) bool {
					return d.ID == id || strings.HasSuffix(d.ID, "/"+id) || d.Name == id
				})
				if i < 0 || used[c.Drives[i].ID] {
					break
				}
				pick = append(pick, c.Drives[i].ID)
			}
			if len(pick) != len(w.DriveIDs) {
				why = append(why, fmt.Sprintf("controller %s lacks or already uses some of drives %s", c.Name, strings.Join(w.DriveIDs, ", ")))
				continue
			}
		} else {
			free := slices.Clone(c.Drives)
			free = slices.DeleteFunc(free, func(d bmc.Drive) bool {
				return used[d.ID] || (w.MediaType != "" && !strings.EqualFold(d.MediaType, w.MediaType))
			})
			slices.SortStableFunc(free, func(a, b bmc.Drive) int { return int(min(max(a.CapacityBytes-b.CapacityBytes, -1), 1)) })
			if len(free) < w.DriveCount {
				why = append(why, fmt.Sprintf("controller %s has %d free %sdrives, not %d", c.Name, len(free), mediaWord(w.MediaType), w.DriveCount))
				continue
			}
			for _, d := range free[:w.DriveCount] {
				pick = append(pick, d.ID)
			}
		}
		for _, id := range pick {
			used[id] = true
		}
		spec := &bmc.VolumeSpec{Name: w.Name, RAIDType: level, CapacityBytes: int64(w.SizeGB) << 30, Drives: pick}
		return raidOp{storage: c.ID, create: spec, what: fmt.Sprintf("create volume %s (%s%s on %d drives)", w.Name, level, sizeWord(w.SizeGB), len(pick))}, nil
	}
	if len(st) == 0 {
		why = append(why, "the BMC reports no storage controller")
	}
	return raidOp{}, &permanentError{msg: fmt.Sprintf("volume %s cannot be made: %s", w.Name, strings.Join(why, "; "))}
}

func mediaWord(m string) string {
	if m == "" {
		return ""
	}
	return strings.ToUpper(m) + " "
}

func sizeWord(gb int) string {
	if gb == 0 {
		return ""
	}
	return fmt.Sprintf(" of %d GiB", gb)
}

// waitTask polls the task noted under key: done, it is cleared; failed,
// the flow ends with its message; running, the step waits.
func (r *flowRun) waitTask(ctx context.Context, key, what string) (stepResult, bool, error) {
	mon := r.notes[key]
	if mon == "" {
		return nextStep, true, nil
	}
	var st bmc.TaskStatus
	err := r.bmcCall(ctx, r.node, "read task", func(ctx context.Context, c bmc.Client) error {
		m, err := bmc.Capability[bmc.TaskMonitor](c)
		if err == nil {
			st, err = m.TaskStatus(ctx, bmc.Task{Monitor: mon})
		}
		return err
	})
	if err != nil {
		return nextStep, false, err
	}
	switch {
	case st.Staged && !st.Done:
		// It runs at the reset (a scheduled BIOS update): go on, the
		// reset comes, and verify reads the outcome back.
		delete(r.notes, key)
		r.note("needs_reset", "true")
		r.note(key+"_staged", "true")
		return nextStep, true, nil
	case !st.Done:
		return waitFor(settingsPoll), false, nil
	case st.Failed:
		delete(r.notes, key)
		return endConfigure(r, fmt.Sprintf("the BMC failed to %s: %s", what, st.Message)), false, nil
	}
	delete(r.notes, key)
	return nextStep, true, nil
}

// configureRAID changes the volumes one at a time (each may be a task
// the BMC runs), reading the storage again after each, until they are
// the declared ones.
func configureRAID(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	if n.Settings.RAID == nil {
		return nextStep, nil
	}
	if res, done, err := r.waitTask(ctx, "raid_task", r.notes["raid_doing"]); !done || err != nil {
		return res, err
	}
	if r.notes["raid_task_staged"] != "" {
		// A change the controller makes at the reset: the next ones
		// would be planned on volumes that are not there yet. The reset
		// applies it; verify reads the outcome, and applying again makes
		// the rest.
		return nextStep, nil
	}
	op, err := r.raidPlan(ctx, n)
	if err != nil {
		var perm *permanentError
		if errors.As(err, &perm) {
			return endConfigure(r, perm.msg), nil
		}
		return nextStep, err
	}
	if op == nil {
		return nextStep, nil
	}
	if r.notes["raid_ops"] == "" {
		r.note("raid_ops", "0")
	}
	done, _ := strconv.Atoi(r.notes["raid_ops"])
	if done >= 2*maxVolumes {
		return endConfigure(r, "the volumes never came out as declared after "+strconv.Itoa(done)+" changes (the BMC does not keep what it is asked for)"), nil
	}
	var task bmc.Task
	err = r.bmcCall(ctx, n, op.what, func(ctx context.Context, c bmc.Client) error {
		rc, err := bmc.Capability[bmc.RAIDController](c)
		if err != nil {
			return err
		}
		if op.create != nil {
			task, err = rc.CreateVolume(ctx, op.storage, *op.create)
		} else {
			task, err = rc.DeleteVolume(ctx, op.delete)
		}
		return err
	})
	if err != nil {
		return nextStep, err
	}
	r.note("raid_ops", strconv.Itoa(done+1))
	// Controllers apply volume changes at the next boot as often as at
	// once (iDRAC's jobs): the reset makes either show.
	r.note("needs_reset", "true")
	r.note("raid_doing", op.what)
	r.note("written", strings.Trim(r.notes["written"]+",raid", ","))
	if task.Monitor != "" {
		r.note("raid_task", task.Monitor)
		return waitFor(settingsPoll), nil
	}
	return goTo("raid"), nil
}

// maxVolumes bounds the volume changes of one configure (deletes and
// creates of up to 32 declared volumes).
const maxVolumes = 32

// updateFirmware updates the components whose version differs, one at a
// time, each a task the BMC runs; a component that applies at the reset
// (a BIOS) shows its version after it (verify).
func updateFirmware(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	if len(n.Settings.Firmware) == 0 {
		return nextStep, nil
	}
	if res, done, err := r.waitTask(ctx, "firmware_task", "update firmware "+r.notes["firmware_doing"]); !done || err != nil {
		return res, err
	}
	updated := strings.Split(r.notes["firmware_updated"], ",")
	for _, fw := range n.Settings.Firmware {
		if slices.Contains(updated, fw.Component) || n.Observed.Firmware[fw.Component] == fw.Version {
			continue
		}
		var task bmc.Task
		err := r.bmcCall(ctx, n, "firmware update "+fw.Component, func(ctx context.Context, c bmc.Client) error {
			fu, err := bmc.Capability[bmc.FirmwareUpdater](c)
			if err != nil {
				return err
			}
			inv, err := fu.Firmware(ctx)
			if err != nil {
				return err
			}
			var targets []string
			for _, comp := range inv {
				if versions := firmwareVersions([]bmc.FirmwareComponent{comp}); versions[fw.Component] != "" || comp.Name == fw.Component {
					targets = append(targets, comp.ID)
					break
				}
			}
			task, err = fu.SimpleUpdate(ctx, fw.ImageURL, targets)
			return err
		})
		if err != nil {
			return nextStep, err
		}
		r.note("firmware_updated", strings.Trim(r.notes["firmware_updated"]+","+fw.Component, ","))
		r.note("needs_reset", "true") // a BIOS or option ROM update applies at the reset
		r.note("firmware_doing", fw.Component)
		r.note("written", strings.Trim(r.notes["written"]+",firmware."+fw.Component, ","))
		if task.Monitor != "" {
			r.note("firmware_task", task.Monitor)
			return waitFor(settingsPoll), nil
		}
		return goTo("firmware"), nil
	}
	return nextStep, nil
}
