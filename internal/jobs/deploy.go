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

// deployWorker boots an instance's image on its node: eject old media, set
// a one-time boot override (virtual media with the image when the BMC has
// it, else PXE), power on (or reset if already on), and wait until on is
// observed. Then node and instance become active.
//
// Between steps it re-reads the node: if the instance was deleted meanwhile
// (node now cleaning or deleting) the deploy stops quietly and the cleanup
// waiting behind it (exclusive.go) takes over.
type deployWorker struct{ nodeWorker[DeployArgs] }

func (w *deployWorker) Work(ctx context.Context, job *river.Job[DeployArgs]) error {
	err := w.deploy(ctx, job)
	var snooze *river.JobSnoozeError
	var cancel *river.JobCancelError
	if err != nil && job.Attempt >= job.MaxAttempts && !errors.As(err, &snooze) && !errors.As(err, &cancel) {
		// The last attempt failed before its failure could be recorded
		// (a database error, say). Discarding the job now would leave the
		// instance deploying forever with no reason given; wait and try
		// again instead (a snooze does not use an attempt), so the next
		// failure is recorded on the instance by deployError.
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

func (w *deployWorker) deploy(ctx context.Context, job *river.Job[DeployArgs]) error {
	a := job.Args
	n, err := w.begin(ctx, job.JobRow, a.NodeID, true)
	if n == nil {
		return err
	}
	if !deploying(n, a.InstanceID) {
		return nil
	}
	inst, err := w.store.GetInstance(ctx, a.InstanceID)
	if err != nil {
		return ignoreGone(err)
	}
	if inst.BootedAt != nil {
		// Booted by an earlier run; what is left is waiting for the OS.
		return w.awaitReady(ctx, n, inst)
	}
	if inst.DeployMethod == baremetal.DeployImage {
		return w.deployToDisk(ctx, job, n, inst)
	}
	// stop is asked between steps and polls: has the deploy been
	// overtaken (instance deleted, node deleted or put elsewhere)?
	stop := func(ctx context.Context) bool {
		cur, err := w.store.GetNode(ctx, a.NodeID)
		if err != nil {
			return baremetal.IsCode(err, baremetal.CodeNotFound)
		}
		if !deploying(cur, a.InstanceID) {
			w.log.InfoContext(ctx, "deploy overtaken; stopping", "node", cur.Name, "instance", a.InstanceID, "state", cur.ProvisionState)
			return true
		}
		return false
	}

	dev, drive, err := w.prepareBoot(ctx, n, inst)
	if err != nil {
		return w.deployError(ctx, job, n, err)
	}
	if stop(ctx) {
		return nil
	}
	ps, err := w.readPower(ctx, n)
	if err != nil {
		return w.deployError(ctx, job, n, err)
	}
	action := bmc.ActionOn
	if ps == bmc.PowerOn {
		// Already on (an earlier attempt, or an operator): reset so it
		// boots from the override we just set.
		action = bmc.ActionReset
	}
	if err := w.setPower(ctx, n, action); err != nil {
		return w.deployError(ctx, job, n, err)
	}
	took, err := w.waitPower(ctx, n, bmc.PowerOn, stop)
	if err != nil {
		return w.deployError(ctx, job, n, err)
	}

	return w.booted(ctx, n.ID, a.InstanceID, fmt.Sprintf("booted from %s%s, power on observed after %s", dev, drive, baremetal.HumanDuration(took)))
}

// booted records that the node booted the instance's OS (booted says
// how): the node becomes active, or waits for the OS's readiness callback
// when the instance has a deploy_timeout.
func (w *deployWorker) booted(ctx context.Context, nodeID, instanceID, booted string) error {
	var wait time.Duration
	_, err := w.ledger.Update(ctx, nodeID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		wait = 0
		inst, err := deployingInstance(ctx, tx, n, instanceID)
		if err != nil {
			return err
		}
		now := time.Now()
		w.observePower(n, bmc.PowerOn, nil, now)
		touchSeen(n, now)
		if inst.DeployTimeout > 0 {
			baremetal.BootedAwaitingReady(n, inst, now)
			if !inst.Ready {
				// The node stays deploying until the OS calls back
				// (service.InstanceReady) or the deadline passes.
				wait = inst.DeployTimeout
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
	if err == nil && wait > 0 {
		return river.JobSnooze(min(wait, readyPoll))
	}
	return ignoreGone(err)
}

// readyPoll bounds how long a deploy waiting for the readiness callback
// sleeps at a time. The callback itself finishes the deploy (the service
// writes instance and node), so this is not about noticing it sooner: it
// keeps the job from sitting in the jobs API as "scheduled in 23h" long
// after its instance became active.
const readyPoll = time.Minute

// awaitReady is a deploy whose node has booted and waits for the OS's
// readiness callback: before the deadline it sleeps (snoozed, readyPoll at a time,
// holding nothing); after it, the deploy fails with deploy_timeout.
func (w *deployWorker) awaitReady(ctx context.Context, n *baremetal.Node, inst *baremetal.Instance) error {
	if inst.Ready || inst.DeployTimeout <= 0 {
		return nil // the callback finished it
	}
	deadline := inst.BootedAt.Add(inst.DeployTimeout)
	if left := time.Until(deadline); left > 0 {
		return river.JobSnooze(min(left, readyPoll))
	}
	_, err := w.ledger.Update(ctx, n.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
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
		return failDeploy(ctx, tx, n, inst, c, msg)
	})
	return ignoreGone(err)
}

// prepareBoot ejects leftover media and sets the one-time boot override:
// the image on virtual media when the BMC supports it, PXE otherwise. An
// instance with user data or a deploy_timeout also gets its config drive
// attached (see attachConfigDrive); drive describes it for the event.
func (w *deployWorker) prepareBoot(ctx context.Context, n *baremetal.Node, inst *baremetal.Instance) (dev bmc.BootDevice, drive string, err error) {
	ms, err := w.ejectMediaSupported(ctx, n)
	if err != nil {
		return "", "", err
	}
	if !ms.ok && ms.why != "" {
		// A Redfish BMC without usable virtual media: booting from the
		// network instead would report a deploy of an image nobody booted.
		return "", "", noLiveMedia(n, inst, ms.why)
	}
	vm := ms.ok
	dev = bmc.BootPXE
	if vm && inst.Image.URL != "" {
		if w.cfg.ImageCheck != nil {
			// Before the BMC gets it: a BMC that cannot fetch an image
			// says so in its own words, if at all (many accept any URL
			// and fail at boot).
			if err := w.cfg.ImageCheck.Check(ctx, inst.Image.URL); err != nil {
				return "", "", err
			}
		}
		err := w.mediaCall(ctx, n, "insert media", func(ctx context.Context, c bmc.Client) error {
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
			return "", "", noLiveMedia(n, inst, err.Error())
		default:
			return "", "", err
		}
	}
	if inst.NeedsConfigDrive() {
		if err := w.attachConfigDrive(ctx, n, inst, vm); err != nil {
			return "", "", err
		}
		drive = " with its config drive"
	}
	err = w.bmcCall(ctx, n, "set boot device", func(ctx context.Context, c bmc.Client) error {
		return c.SetBootDevice(ctx, dev, false)
	})
	return dev, drive, err
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
func (w *deployWorker) attachConfigDrive(ctx context.Context, n *baremetal.Node, inst *baremetal.Instance, vm bool) error {
	why := "user_data"
	if inst.UserData == "" {
		why = "deploy_timeout (the readiness callback)"
	}
	if w.cfg.PublicURL == "" {
		return &permanentError{fmt.Sprintf("the instance's %s needs a config drive, but the controller has no --public-url for the BMC to fetch it from", why)}
	}
	if !vm {
		return &permanentError{fmt.Sprintf("the instance's %s needs a config drive, but the %s BMC of node %s has no virtual media", why, n.Driver, n.Name)}
	}
	url := w.cfg.PublicURL + api.ConfigDrivePath(inst.ID, configdrive.Key(inst.ReadyToken))
	err := w.mediaCall(ctx, n, "insert config drive", func(ctx context.Context, c bmc.Client) error {
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

// deployError decides between retrying and failing the deploy for good.
// Unreachable, auth and 5xx BMC errors are retried with backoff (the fault
// accounting records them); a missing capability, a power change that was
// never observed, or running out of attempts fail it: the instance goes to
// error and the node to deploy_failed, where deleting the instance cleans
// the node up.
func (w *deployWorker) deployError(ctx context.Context, job *river.Job[DeployArgs], n *baremetal.Node, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fault := baremetal.FaultNone
	retry := job.Attempt < job.MaxAttempts
	switch f := classify(err); f {
	case failStopped:
		return nil
	case failImage:
		if imagecheck.IsTransient(err) && job.Attempt < imageCheckAttempts {
			return fmt.Errorf("deploy node %s: %w", n.Name, err)
		}
		return w.failOnImage(ctx, job, n, err)
	case failPermanent:
		retry = false
	case failPowerTimeout:
		fault, retry = baremetal.FaultPowerMismatch, false
	case failRefused:
		// Like a missing capability: the same request will be refused
		// again. The node says so until a deploy or cleanup succeeds.
		fault, retry = baremetal.FaultBMCRefused, false
	case failUnsupported:
		w.recordBMCFailure(ctx, n.ID, "deploy", err)
		retry = false
	case failBMC:
		w.recordBMCFailure(ctx, n.ID, "deploy", err)
	}
	if retry {
		return fmt.Errorf("deploy node %s: %w", n.Name, err)
	}
	msg := baremetal.ClipError(scrub(n, err.Error()))
	if f := classify(err); job.Attempt >= job.MaxAttempts && f != failPermanent && f != failPowerTimeout && f != failRefused {
		msg = fmt.Sprintf("gave up after %d attempts: %s", job.Attempt, msg)
	}
	_, uerr := w.ledger.Update(ctx, n.ID, ledger.Controller, func(tx store.Tx, n *baremetal.Node, c *ledger.Change) error {
		inst, err := deployingInstance(ctx, tx, n, job.Args.InstanceID)
		if err != nil {
			return err
		}
		now := time.Now()
		if fault != baremetal.FaultNone {
			n.SetActionFault(fault, msg, now)
		} else if !n.Fault.BMC() {
			n.LastError = msg
		}
		return failDeploy(ctx, tx, n, inst, c, msg)
	})
	if uerr != nil && !baremetal.IsCode(uerr, baremetal.CodeNotFound) {
		// The failure could not be recorded; let River retry the whole job.
		return fmt.Errorf("record deploy failure of node %s: %w", n.Name, uerr)
	}
	return river.JobCancel(fmt.Errorf("deploy node %s: %w", n.Name, err))
}
