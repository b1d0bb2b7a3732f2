package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// deployProgress logs a deploy's progress while terraform apply waits for
// an instance (TF_LOG=info shows it): the node chosen, its power coming
// on, the wait for the readiness callback, errors the controller is
// retrying through. A line is logged when what it says changes, not at
// every poll.
type deployProgress struct {
	started  time.Time
	nodeName func(ctx context.Context, id string) string
	node     string // the node's id the name was looked up for
	name     string
	last     string
}

// step says where a deploying instance is, as far as the API shows it.
// The image is booted by the BMC (virtual media or PXE), so there is no
// percentage to tell: the controller does not write images to disk yet.
func (p *deployProgress) step(in *api.Instance) string {
	node := p.name
	if node == "" {
		node = in.NodeID
	}
	switch {
	case in.State == api.InstanceActive:
		return "active on node " + node
	case in.State == api.InstanceError:
		return "failed on node " + node + ": " + in.LastError
	case in.LastError != "":
		return "deploying on node " + node + "; the controller is retrying: " + in.LastError
	case in.BootedAt != nil && !in.Ready && in.DeployTimeout != "":
		return fmt.Sprintf("node %s powered on at %s; waiting for the OS to call the readiness callback (deploy_timeout %s)",
			node, in.BootedAt.UTC().Format(time.RFC3339), in.DeployTimeout)
	case in.ObservedPowerState == api.PowerOn:
		return "node " + node + " is powered on; booting the image"
	default:
		return "deploying on node " + node + ": setting the boot device and powering on (power " + orUnknown(in.ObservedPowerState) + ")"
	}
}

func orUnknown(s api.PowerState) string {
	if s == "" {
		return "unknown"
	}
	return string(s)
}

// observe logs the instance's step when it changed.
func (p *deployProgress) observe(ctx context.Context, in *api.Instance) {
	if in.NodeID != "" && in.NodeID != p.node && p.nodeName != nil {
		p.node, p.name = in.NodeID, p.nodeName(ctx, in.NodeID)
		tflog.Info(ctx, "instance "+in.Name+": node chosen: "+p.name, map[string]any{"node_id": in.NodeID})
	}
	line := p.step(in)
	if line == p.last {
		return
	}
	p.last = line
	tflog.Info(ctx, "instance "+in.Name+": "+line, map[string]any{"elapsed": time.Since(p.started).Round(time.Second).String()})
}
