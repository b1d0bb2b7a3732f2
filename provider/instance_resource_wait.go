package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// What creating and updating an instance wait for: a node to take it,
// the deploy, and the node's power.

// createInstance creates the instance. When no node can take it but the
// controller counts nodes that will free up by themselves (being cleaned,
// verified or inspected; typically right after Terraform destroyed the
// instance this one replaces), it tries again until one takes it, within the create
// timeout. Any other lack of capacity (maintenance, faults, a driver
// without virtual media for the config drive, no such class) is reported
// at once: the controller's counts (api.Capacity) decide, the provider
// does not restate its scheduling rules.
func createInstance(ctx context.Context, c *apiclient.Client, in api.InstanceCreate) (*api.Instance, error) {
	inst, err := c.CreateInstance(ctx, in)
	if !shouldWaitForCapacity(err) {
		return inst, err
	}
	tflog.Info(ctx, "no node free yet, but some are being cleaned, verified or inspected; waiting", map[string]any{"name": in.Name})
	first := err
	last, werr := waitFor(ctx, "a node to become available", func(ctx context.Context) (*createAttempt, error) {
		inst, err := c.CreateInstance(ctx, in)
		if ae, ok := apiclient.AsAPIError(err); (ok && ae.Problem.Code == api.CodeUnavailable) || (err != nil && ctx.Err() != nil) {
			// The controller's own 503 (its database is out of reach)
			// created nothing: waitFor tolerates a few, as in any wait.
			// An expired context is the wait's timeout.
			return nil, err
		}
		return &createAttempt{inst: inst, err: err}, nil
	}, func(a *createAttempt) (bool, error) {
		switch {
		case a.err == nil:
			return true, nil
		case shouldWaitForCapacity(a.err):
			return false, nil
		default:
			return false, a.err
		}
	})
	switch {
	case werr == nil:
		return last.inst, nil
	case errors.Is(werr, errWaitTimeout):
		if last != nil && last.err != nil {
			first = last.err // the latest counts
		}
		return nil, fmt.Errorf("%w\n\nWaited for nodes being cleaned, verified or inspected to become available, but: %v", first, werr)
	default:
		// Among them a no_capacity whose counts say nothing will free up
		// any more (say a node went into maintenance while cleaning).
		return nil, werr
	}
}

// createAttempt is one try at creating the instance while waiting for
// capacity. Answers are values, not errors, so that waitFor does not
// re-send the POST after an error it judges transient (a lost answer to a
// create that worked would come back as a name conflict).
type createAttempt struct {
	inst *api.Instance
	err  error
}

// shouldWaitForCapacity reports whether err is a no_capacity answer whose
// counts say some node will free up without anyone acting. Without counts
// (a controller older than them) it reports false: the error is shown.
func shouldWaitForCapacity(err error) bool {
	c, ok := apiclient.NoCapacity(err)
	return ok && c.Pending > 0
}

// waitActive waits until the instance is active. An instance in error
// fails the wait with the controller's reason.
func waitActive(ctx context.Context, c *apiclient.Client, id string, timeout time.Duration) (*api.Instance, error) {
	progress := &deployProgress{started: time.Now(), nodeName: func(ctx context.Context, id string) string {
		if n, err := c.GetNode(ctx, id); err == nil {
			return n.Name
		}
		return id // the name is a nicety; the wait goes on
	}}
	inst, err := waitFor(ctx, "instance "+id+" to become active", func(ctx context.Context) (*api.Instance, error) {
		return c.GetInstance(ctx, id)
	}, func(in *api.Instance) (bool, error) {
		progress.observe(ctx, in)
		switch in.State {
		case api.InstanceError:
			msg := in.LastError
			if msg == "" {
				msg = "the controller gave no reason"
			}
			return false, fmt.Errorf("instance %s failed to deploy: %s", in.Name, msg)
		case api.InstanceActive:
			return true, nil
		}
		return false, nil
	})
	switch {
	case err == nil:
		return inst, nil
	case errors.Is(err, errWaitTimeout) && inst != nil:
		msg := fmt.Sprintf("Instance %s is still %q after %s", inst.Name, inst.State, timeout)
		if inst.BootedAt != nil && !inst.Ready {
			msg += fmt.Sprintf(": its node powered on at %s and the OS has not called the readiness callback yet (deploy_timeout %s)",
				inst.BootedAt.UTC().Format(time.RFC3339), inst.DeployTimeout)
		}
		if inst.LastError != "" {
			msg += ".\n\nLast error: " + inst.LastError
		}
		return inst, errors.New(msg + ".\n\nRaise the create timeout, or look at the node's events for what the controller is doing.")
	case errors.Is(err, apiclient.ErrNotFound):
		return nil, fmt.Errorf("instance %s was deleted while waiting for it to become active", id)
	default:
		return inst, err
	}
}

// convergePower asks for the wanted power state when the node's observed
// one differs, then waits until it is observed. The model is updated with
// the last instance read.
func convergePower(ctx context.Context, c *apiclient.Client, m *instanceResourceModel, inst *api.Instance, power api.PowerState, timeout time.Duration, diags *diag.Diagnostics) {
	if inst.ObservedPowerState != power || inst.PowerState != power {
		patched, err := c.PatchInstance(ctx, inst.ID, api.InstanceUpdate{PowerState: &power})
		if err != nil {
			addAPIError(diags, "Could not set the power of instance "+inst.Name, err, instanceAttrs)
			return
		}
		inst = patched
	}
	last, err := waitFor(ctx, "instance "+inst.ID+" power "+string(power), func(ctx context.Context) (*api.Instance, error) {
		return c.GetInstance(ctx, inst.ID)
	}, func(in *api.Instance) (bool, error) {
		return in.ObservedPowerState == power, nil
	})
	if last != nil {
		diags.Append(m.setFromAPI(ctx, last, types.StringValue(string(power)))...)
	}
	switch {
	case err == nil:
	case errors.Is(err, errWaitTimeout) && last != nil:
		msg := fmt.Sprintf("The power of instance %s's node is still %q, not %q, after %s.", last.Name, last.ObservedPowerState, power, timeout)
		if last.LastError != "" {
			msg += "\n\nLast error: " + last.LastError
		}
		diags.AddError("Instance "+last.Name+" did not reach power "+string(power),
			msg+"\n\nThe controller keeps the wish; check the node's fault and events, or raise the timeout.")
	default:
		addAPIError(diags, "Could not read instance "+inst.Name+" while waiting for its power", err, nil)
	}
}
