package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/imagecheck"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// deployWorker runs the deploy of an instance on its node: the live
// flow boots the image itself from virtual media (PXE without it), the
// image flow (deploydisk.go) has the deploy agent write it to disk. Both
// end as the booted OS's readiness callback, or its deadline, says.
//
// Every step starts by asking whether the deploy was overtaken (the
// instance deleted meanwhile, the node cleaning or deleting: the flow's
// step write finds it so), and a power wait asks between polls: the
// deploy then stops quietly and the cleanup waiting behind it
// (exclusive.go) takes over.
type deployWorker struct{ nodeWorker[DeployArgs] }

var liveDeploy = &flow{
	name: "deploy", state: baremetal.StateDeploying,
	steps: []step{
		{"prepare_boot", prepareBoot},
		{"power_on", powerOnImage},
		{"wait_ready", waitReady},
	},
	fail: deployFailed,
}

func (w *deployWorker) Work(ctx context.Context, job *river.Job[DeployArgs]) error {
	a := job.Args
	err := w.runFlow(ctx, job.JobRow, a.NodeID, true, func(ctx context.Context, r *run) (*flow, error) {
		if !deploying(r.node, a.InstanceID) {
			return nil, nil
		}
		inst, err := w.store.GetInstance(ctx, a.InstanceID)
		if err != nil {
			return nil, ignoreGone(err)
		}
		r.inst = inst
		if inst.DeployMethod == baremetal.DeployImage {
			return imageDeploy, nil
		}
		return liveDeploy, nil
	})
	var snooze *river.JobSnoozeError
	var cancel *river.JobCancelError
	if err != nil && job.Attempt >= job.MaxAttempts && !errors.As(err, &snooze) && !errors.As(err, &cancel) {
		// The last attempt failed before its failure could be recorded
		// (a database error, say). Discarding the job now would leave the
		// instance deploying forever with no reason given; wait and try
		// again instead (a snooze does not use an attempt), so the next
		// failure is recorded on the instance by deployFailed.
		w.log.WarnContext(ctx, "deploy failed on its last attempt without recording why; retrying", "job", job.ID, "err", err)
		err = river.JobSnooze(w.backoff(job.Attempt))
	}
	return w.finish(ctx, job.JobRow, err)
}

// failDeploy records a deploy that failed for good (baremetal.FailDeploy)
// and writes the instance; the caller has set any fault first.
func failDeploy(ctx context.Context, tx store.Tx, n *baremetal.Node, inst *baremetal.Instance, c *ledger.Change, msg string) error {
	if err := baremetal.FailDeploy(n, inst, msg); err != nil {
		return err
	}
	c.Reason = fmt.Sprintf("deploy of instance %s failed: %s", inst.Name, msg)
	return tx.UpdateInstance(ctx, inst)
}

// deployingInstance reads, inside a node mutation, the instance n is
// still deploying; ledger.ErrSkip when the deploy was overtaken (node moved on,
// instance deleted).
func deployingInstance(ctx context.Context, tx store.Tx, n *baremetal.Node, instanceID string) (*baremetal.Instance, error) {
	if !deploying(n, instanceID) {
		return nil, ledger.ErrSkip
	}
	inst, err := tx.GetInstance(ctx, instanceID)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil, ledger.ErrSkip
	}
	return inst, err
}

// deploying reports whether n is still being deployed with instanceID.
func deploying(n *baremetal.Node, instanceID string) bool {
	return n.ProvisionState == baremetal.StateDeploying && n.InstanceID == instanceID
}

// prepareBoot ejects leftover media and sets the one-time boot override:
// the image on virtual media when the BMC supports it, PXE otherwise. An
// instance with user data or a deploy_timeout also gets its config drive
// attached (see attachConfigDrive). How the node will boot is noted for
// power_on's event.
func prepareBoot(ctx context.Context, r *run) (result, error) {
	n, inst := r.node, r.inst
	if inst.BootedAt != nil {
		// Booted by an earlier run; what is left is waiting for the OS.
		return goTo("wait_ready"), nil
	}
	ms, err := r.ejectMediaSupported(ctx, n)
	if err != nil {
		return next, err
	}
	if !ms.ok && ms.why != "" {
		// A Redfish BMC without usable virtual media: booting from the
		// network instead would report a deploy of an image nobody booted.
		return next, noLiveMedia(n, inst, ms.why)
	}
	vm := ms.ok
	dev := bmc.BootPXE
	if vm && inst.Image.URL != "" {
		if r.cfg.ImageCheck != nil {
			// Before the BMC gets it: a BMC that cannot fetch an image
			// says so in its own words, if at all (many accept any URL
			// and fail at boot).
			if err := r.cfg.ImageCheck.Check(ctx, inst.Image.URL); err != nil {
				return next, err
			}
		}
		err := r.mediaCall(ctx, n, "insert media", func(ctx context.Context, c bmc.Client) error {
			vm, err := bmc.Capability[bmc.VirtualMedia](c)
			if err != nil {
				return err
			}
			return vm.InsertMedia(ctx, inst.Image.URL)
		})
		switch {
		case err == nil:
			dev = bmc.BootCD
		case bmc.KindOf(err) == bmc.KindUnsupported && isBMCErr(err):
			return next, noLiveMedia(n, inst, err.Error())
		default:
			return next, err
		}
	}
	boot := string(dev)
	if inst.NeedsConfigDrive() {
		if err := attachConfigDrive(ctx, r, vm); err != nil {
			return next, err
		}
		boot += " with its config drive"
	}
	err = r.bmcCall(ctx, n, "set boot device", func(ctx context.Context, c bmc.Client) error {
		return c.SetBootDevice(ctx, dev, false)
	})
	r.note("boot", boot)
	return next, err
}

// powerOnImage powers the node on (or resets it when already on, so it
// boots from the override just set) and waits until on is observed, then
// records the boot.
func powerOnImage(ctx context.Context, r *run) (result, error) {
	n := r.node
	if r.inst.BootedAt != nil {
		return goTo("wait_ready"), nil
	}
	ps, err := r.readPower(ctx, n)
	if err != nil {
		return next, err
	}
	action := bmc.ActionOn
	if ps == bmc.PowerOn {
		// Already on (an earlier attempt, or an operator): reset so it
		// boots from the override prepare_boot set.
		action = bmc.ActionReset
	}
	if err := r.setPower(ctx, n, action); err != nil {
		return next, err
	}
	took, err := r.waitPower(ctx, n, bmc.PowerOn, r.stopped)
	if err != nil {
		return next, err
	}
	return r.booted(ctx, fmt.Sprintf("booted from %s, power on observed after %s", r.notes["boot"], baremetal.HumanDuration(took)))
}

// booted records that the node booted the instance's OS (booted says
// how): the node becomes active and the flow is done, or the flow goes on
// to wait for the OS's readiness callback when the instance has a
// deploy_timeout.
func (r *run) booted(ctx context.Context, booted string) (result, error) {
	waiting := false
	_, err := r.ledger.Update(ctx, r.node.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		waiting = false
		inst, err := deployingInstance(ctx, tx, n, r.inst.ID)
		if err != nil {
			return err
		}
		now := time.Now()
		r.observePower(n, bmc.PowerOn, nil, now)
		touchSeen(n, now)
		if inst.DeployTimeout > 0 {
			baremetal.BootedAwaitingReady(n, inst, now)
			if !inst.Ready {
				// The node stays deploying until the OS calls back
				// (service.InstanceReady) or the deadline passes.
				waiting = true
				c.Events = append(c.Events, &baremetal.Event{Type: "deploy", Time: now,
					Message: fmt.Sprintf("instance %s %s; waiting up to %s for the OS to call back", inst.Name, booted, inst.DeployTimeout)})
				return tx.UpdateInstance(ctx, inst)
			}
			booted += "; the OS had already called back"
		}
		if err := baremetal.FinishDeploy(n, inst); err != nil {
			return err
		}
		c.Reason = fmt.Sprintf("instance %s deployed: %s", inst.Name, booted)
		return tx.UpdateInstance(ctx, inst)
	})
	if err == nil && waiting {
		return next, nil
	}
	return done, ignoreGone(err)
}

// readyPoll bounds how long a deploy waiting for the readiness callback
// sleeps at a time. The callback itself finishes the deploy (the service
// writes instance and node), so this is not about noticing it sooner: it
// keeps the job from sitting in the jobs API as "scheduled in 23h" long
// after its instance became active.
const readyPoll = time.Minute

// waitReady waits for the booted OS's readiness callback: before the
// deadline it sleeps (snoozed, readyPoll at a time, holding nothing);
// after it, the deploy fails with deploy_timeout.
func waitReady(ctx context.Context, r *run) (result, error) {
	inst, err := r.store.GetInstance(ctx, r.inst.ID)
	if err != nil {
		return done, ignoreGone(err)
	}
	if inst.Ready || inst.DeployTimeout <= 0 {
		return done, nil // the callback finished it
	}
	if inst.BootedAt == nil {
		// Not booted after all (a node recorded at this step by hand):
		// boot it.
		return goTo(r.flow.steps[0].name), nil
	}
	deadline := inst.BootedAt.Add(inst.DeployTimeout)
	if left := time.Until(deadline); left > 0 {
		return waitFor(min(left, readyPoll)), nil
	}
	_, err = r.ledger.Update(ctx, r.node.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		inst, err := deployingInstance(ctx, tx, n, inst.ID)
		if err != nil {
			return err
		}
		if inst.Ready || inst.BootedAt == nil {
			return ledger.ErrSkip
		}
		now := time.Now()
		msg := fmt.Sprintf("the booted OS did not call POST %s within deploy_timeout %s of power-on (at %s)",
			api.ReadyPath(inst.ID), inst.DeployTimeout, inst.BootedAt.UTC().Format(time.RFC3339))
		n.SetActionFault(baremetal.FaultDeployTimeout, scrub(n, msg), now)
		c.Events = append(c.Events, r.failedEvent(r.stepName(), msg))
		return failDeploy(ctx, tx, n, inst, c, msg)
	})
	return done, ignoreGone(err)
}

// noLiveMedia is the permanent error of a live deploy whose BMC cannot
// boot the image from virtual media (why: what it answered).
func noLiveMedia(n *baremetal.Node, inst *baremetal.Instance, why string) error {
	return &permanentError{fmt.Sprintf("a live deploy boots the image from virtual media, which node %s's %s BMC cannot do (%s); "+
		"deploy_method \"image\" writes it to disk from the deploy agent instead (booted from the network with --agent-netboot)", n.Name, n.Driver, why)}
}

// Only instances that have something to deliver get a config drive
// (Instance.NeedsConfigDrive), so a plain deploy makes no extra BMC call
// and works on BMCs with one virtual media slot or none.

// permanentError fails a deploy at once: retrying cannot help.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

// attachConfigDrive gives the BMC the URL of the instance's config drive
// (served by the API, see httpapi.configDrive) in a second virtual media
// slot. Without a public URL, virtual media or a free slot the user data
// and the readiness callback cannot reach the OS; saying so beats
// booting a machine that silently lacks its configuration.
func attachConfigDrive(ctx context.Context, r *run, vm bool) error {
	n, inst := r.node, r.inst
	why := "user_data"
	if inst.UserData == "" {
		why = "deploy_timeout (the readiness callback)"
	}
	if r.cfg.PublicURL == "" {
		return &permanentError{fmt.Sprintf("the instance's %s needs a config drive, but the controller has no --public-url for the BMC to fetch it from", why)}
	}
	if !vm {
		return &permanentError{fmt.Sprintf("the instance's %s needs a config drive, but the %s BMC of node %s has no virtual media", why, n.Driver, n.Name)}
	}
	url := r.cfg.PublicURL + api.ConfigDrivePath(inst.ID, configdrive.Key(inst.ReadyToken))
	err := r.mediaCall(ctx, n, "insert config drive", func(ctx context.Context, c bmc.Client) error {
		cd, err := bmc.Capability[bmc.ConfigDriveMedia](c)
		if err != nil {
			return err
		}
		return cd.InsertConfigDrive(ctx, url)
	})
	if bmc.KindOf(err) == bmc.KindUnsupported && isBMCErr(err) {
		return &permanentError{fmt.Sprintf("the instance's %s needs a config drive, which node %s's BMC cannot take: %v", why, n.Name, err)}
	}
	return err
}

// deployFailed is the deploy's fail: it decides between retrying and
// failing the deploy for good. Unreachable, auth and 5xx BMC errors are
// retried with backoff (the fault accounting records them); a missing
// capability, a power change that was never observed, or running out of
// attempts fail it: the instance goes to error and the node to
// deploy_failed, where deleting the instance cleans the node up. An
// image that is unusable fails the instance alone (failOnImage).
func deployFailed(ctx context.Context, r *run, err error) (result, error) {
	n, job := r.node, r.job
	fault := baremetal.FaultNone
	retry := job.Attempt < job.MaxAttempts
	switch f := classify(err); f {
	case failStopped:
		return done, nil
	case failImage:
		if imagecheck.IsTransient(err) && job.Attempt < imageCheckAttempts {
			return next, fmt.Errorf("deploy node %s: %w", n.Name, err)
		}
		return done, r.failOnImage(ctx, err)
	case failPermanent:
		retry = false
	case failPowerTimeout:
		fault, retry = baremetal.FaultPowerMismatch, false
	case failRefused:
		// Like a missing capability: the same request will be refused
		// again. The node says so until a deploy or cleanup succeeds.
		fault, retry = baremetal.FaultBMCRefused, false
	case failUnsupported:
		r.recordBMCFailure(ctx, n.ID, "deploy", err)
		retry = false
	case failBMC:
		r.recordBMCFailure(ctx, n.ID, "deploy", err)
	}
	if retry {
		return next, fmt.Errorf("deploy node %s: %w", n.Name, err)
	}
	msg := baremetal.ClipError(scrub(n, err.Error()))
	if f := classify(err); job.Attempt >= job.MaxAttempts && f != failPermanent && f != failPowerTimeout && f != failRefused {
		msg = fmt.Sprintf("gave up after %d attempts: %s", job.Attempt, msg)
	}
	_, uerr := r.ledger.Update(ctx, n.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		inst, err := deployingInstance(ctx, tx, n, r.inst.ID)
		if err != nil {
			return err
		}
		now := time.Now()
		if fault != baremetal.FaultNone {
			n.SetActionFault(fault, msg, now)
		} else if !n.Fault.BMC() {
			n.LastError = msg
		}
		c.Events = append(c.Events, r.failedEvent(r.stepName(), msg))
		return failDeploy(ctx, tx, n, inst, c, msg)
	})
	if uerr != nil && !baremetal.IsCode(uerr, baremetal.CodeNotFound) {
		// The failure could not be recorded; let River retry the whole job.
		return next, fmt.Errorf("record deploy failure of node %s: %w", n.Name, uerr)
	}
	return done, river.JobCancel(fmt.Errorf("deploy node %s: %w", n.Name, err))
}
