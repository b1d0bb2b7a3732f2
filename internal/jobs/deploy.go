package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// deployWorker runs the deploy of an instance on its node: the live
// flow boots the image itself from virtual media (PXE without it; its
// steps are here), the image flow has the deploy agent write it to disk
// (its steps are in deploydisk.go). Both end as deployend.go says: active,
// or waiting for the booted OS's readiness callback, or failed.
//
// Every step starts by asking whether the deploy was overtaken (the
// instance deleted meanwhile, the node cleaning or deleting: the flow's
// step write finds it so), and a power wait asks between polls: the
// deploy then stops quietly and the cleanup waiting behind it
// (exclusive.go) takes over.
type deployWorker struct{ nodeWorker[DeployArgs] }

// liveDeploy is a deploy with deploy_method live: prepare_boot inserts
// the image and sets the boot override, power_on boots it.
var liveDeploy = &flow{
	name: "deploy", state: baremetal.StateDeploying,
	steps: []flowStep{
		{"prepare_boot", prepareBoot},
		{"power_on", powerOnImage},
		{"wait_ready", waitReady},
	},
	fail: deployFailed,
}

// imageDeploy is a deploy with deploy_method image:
//
//   - boot_agent: boot the deploy agent with the command to write the
//     image (checksum verified while it streams) to the root disk the
//     hints choose, then the config drive after it;
//   - write_image: wait for the agent's report: running (wait), failed
//     on the user's input (the instance fails, the node is cleaned, no
//     fault), failed on the machine (the deploy fails; deleting the
//     instance cleans the node), or succeeded;
//   - boot_disk: eject the agent, boot from disk persistently, power
//     cycle, and go on as a live deploy does (wait_ready).
//
// An agent that stops reporting (for AgentTimeout, or at all on a machine
// the BMC reports off) is a node fault, agent_lost: the deploy retries
// with a fresh boot of the agent until its attempts run out, and the
// fault clears when the new agent reports.
var imageDeploy = &flow{
	name: "deploy", state: baremetal.StateDeploying,
	steps: []flowStep{
		{"boot_agent", bootWriteAgent},
		{"write_image", writeImage},
		{"boot_disk", bootDisk},
		{"wait_ready", waitReady},
	},
	fail: deployFailed,
}

func (w *deployWorker) Work(ctx context.Context, job *river.Job[DeployArgs]) error {
	a := job.Args
	err := w.runFlow(ctx, job.JobRow, a.NodeID, true, func(ctx context.Context, r *flowRun) (*flow, error) {
		if !deploying(r.node, a.InstanceID) {
			return nil, nil
		}
		inst, err := w.store.GetInstance(ctx, a.InstanceID)
		if err != nil {
			return nil, ignoreGone(err)
		}
		r.inst = inst
		f := liveDeploy
		if inst.DeployMethod == baremetal.DeployImage {
			f = imageDeploy
		}
		if inst.Rebuilds > 0 {
			return r.rebuildFlow(f), nil
		}
		return f, nil
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

// prepareBoot ejects leftover media and sets the one-time boot override:
// the image on virtual media when the BMC supports it, PXE otherwise. An
// instance with user data or a deploy_timeout also gets its config drive
// attached (see attachConfigDrive). How the node will boot is noted for
// power_on's event.
func prepareBoot(ctx context.Context, r *flowRun) (stepResult, error) {
	n, inst := r.node, r.inst
	if inst.BootedAt != nil {
		// Booted by an earlier run; what is left is waiting for the OS.
		return goTo("wait_ready"), nil
	}
	ms, err := r.ejectMediaSupported(ctx, n)
	if err != nil {
		return nextStep, err
	}
	if !ms.ok && ms.why != "" {
		// A Redfish BMC without usable virtual media: booting from the
		// network instead would report a deploy of an image nobody booted.
		return nextStep, noLiveMedia(n, inst, ms.why)
	}
	vm := ms.ok
	dev := bmc.BootPXE
	if vm && inst.Image.URL != "" {
		if r.cfg.ImageCheck != nil {
			// Before the BMC gets it: a BMC that cannot fetch an image
			// says so in its own words, if at all (many accept any URL
			// and fail at boot).
			if err := r.cfg.ImageCheck.Check(ctx, inst.Image.URL); err != nil {
				return nextStep, err
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
			return nextStep, noLiveMedia(n, inst, err.Error())
		default:
			return nextStep, err
		}
	}
	boot := string(dev)
	if inst.NeedsConfigDrive() {
		if err := attachConfigDrive(ctx, r, vm); err != nil {
			return nextStep, err
		}
		boot += " with its config drive"
	}
	err = r.bmcCall(ctx, n, "set boot device", func(ctx context.Context, c bmc.Client) error {
		return c.SetBootDevice(ctx, dev, false)
	})
	r.note("boot", boot)
	return nextStep, err
}

// powerOnImage powers the node on (or resets it when already on, so it
// boots from the override just set) and waits until on is observed, then
// records the boot.
func powerOnImage(ctx context.Context, r *flowRun) (stepResult, error) {
	n := r.node
	if r.inst.BootedAt != nil {
		return goTo("wait_ready"), nil
	}
	ps, err := r.readPower(ctx, n)
	if err != nil {
		return nextStep, err
	}
	action := bmc.ActionOn
	if ps == bmc.PowerOn {
		// Already on (an earlier attempt, or an operator): reset so it
		// boots from the override prepare_boot set.
		action = bmc.ActionReset
	}
	if err := r.setPower(ctx, n, action); err != nil {
		return nextStep, err
	}
	took, err := r.waitPower(ctx, n, bmc.PowerOn, r.stopped)
	if err != nil {
		return nextStep, err
	}
	return r.booted(ctx, fmt.Sprintf("booted from %s, power on observed after %s", r.notes["boot"], baremetal.HumanDuration(took)))
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

// attachConfigDrive gives the BMC the URL of the instance's config drive
// (served by the API, see httpapi.configDrive) in a second virtual media
// slot. Without a public URL, virtual media or a free slot the user data
// and the readiness callback cannot reach the OS; saying so beats
// booting a machine that silently lacks its configuration.
func attachConfigDrive(ctx context.Context, r *flowRun, vm bool) error {
	n, inst := r.node, r.inst
	why := "user_data"
	switch {
	case inst.UserData != "":
	case inst.HasNetwork():
		why = "network"
	default:
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
