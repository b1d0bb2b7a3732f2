package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// What creating and updating a node wait for: a name still held by a node
// being retired, and the controller's verification of the BMC.

// retireStuckAfter is how long create waits for a node of the same name
// that is being retired while its BMC has a fault: long enough for a
// fault the BMC has just recovered from to go (the retire's next power-off
// clears it), short enough that a dead BMC is reported, not waited on in
// silence ("Still creating..." is all Terraform shows meanwhile).
var retireStuckAfter = 15 * time.Second

// nameHeldError says that a node being retired holds the name and why its
// retire does not finish; it belongs on the name attribute.
type nameHeldError struct{ msg string }

func (e *nameHeldError) Error() string { return e.msg }

// createNode enrolls a node. A name still held by a node being retired
// (after a destroy, or when Terraform replaces a node) frees up once the
// retire job ends, so a retire that is under way is waited for. One that
// cannot end by itself is refused at once (the old node is in maintenance:
// only an operator lets it go on) or after retireStuckAfter (its BMC has a
// fault), with what holds it.
func createNode(ctx context.Context, c *apiclient.Client, in api.NodeCreate) (*api.Node, error) {
	gone := 0
	for {
		node, err := c.CreateNode(ctx, in)
		if !errors.Is(err, apiclient.ErrConflict) {
			return node, err
		}
		old, gerr := c.GetNode(ctx, in.Name)
		var ae *apiclient.APIError
		if errors.Is(gerr, apiclient.ErrNotFound) && errors.As(err, &ae) && ae.Field() == "name" && gone < 3 {
			// The node that held the name (being retired, say) went
			// between the create's answer and this look: create again.
			gone++
			continue
		}
		if gerr != nil || old.ProvisionState != api.StateDeleting {
			return nil, err
		}
		var faultSeen time.Time
		logged := ""
		last, werr := waitFor(ctx, "retired node "+old.ID, func(ctx context.Context) (*api.Node, error) {
			n, err := c.GetNode(ctx, old.ID)
			if errors.Is(err, apiclient.ErrNotFound) {
				return nil, nil
			}
			return n, err
		}, func(n *api.Node) (bool, error) {
			if n == nil || n.ProvisionState != api.StateDeleting {
				return true, nil
			}
			why := "its retire job is powering it off"
			switch {
			case n.Maintenance:
				return false, &nameHeldError{fmt.Sprintf("A node named %q is still being retired (id %s), and it is in maintenance (%q): "+
					"the controller acts on nothing in maintenance, so its retire waits until an operator clears maintenance on it "+
					"(controller node maintenance %s --off), or deletes it with force=true if the machine is gone for good "+
					"(controller node delete %s --force). Apply again after that.", in.Name, n.ID, n.MaintenanceReason, n.ID, n.ID)}
			case n.Fault != "":
				if faultSeen.IsZero() {
					faultSeen = time.Now()
				}
				if time.Since(faultSeen) >= retireStuckAfter {
					return false, &nameHeldError{fmt.Sprintf("A node named %q is still being retired (id %s), waiting for its BMC: "+
						"fault %s since %s (last error: %s). The controller powers the machine off before the record and its name go, "+
						"and keeps retrying until the BMC answers. Fix the BMC, or delete that node with force=true if the machine "+
						"is gone for good (controller node delete %s --force). Apply again after that.",
						in.Name, n.ID, n.Fault, faultSince(n), orNone(n.LastError), n.ID)}
				}
				why = "its BMC has fault " + string(n.Fault)
			default:
				faultSeen = time.Time{}
			}
			if why != logged {
				logged = why
				tflog.Info(ctx, "a node of the same name is being retired; waiting for it to go", map[string]any{"name": in.Name, "old_id": n.ID, "why": why})
			}
			return false, nil
		})
		var held *nameHeldError
		switch {
		case errors.As(werr, &held):
			return nil, held
		case werr != nil && last != nil:
			return nil, fmt.Errorf("%w\n\nWaited for the node being retired under that name (%s) to go; it is still in provision_state %q"+
				" (fault %q, last error: %s): %v", err, old.ID, last.ProvisionState, last.Fault, orNone(last.LastError), werr)
		case werr != nil:
			return nil, fmt.Errorf("%w\n\nWaited for the node being retired under that name (%s) to go, but: %v", err, old.ID, werr)
		}
	}
}

func faultSince(n *api.Node) string {
	if n.FaultSince == nil {
		return "unknown"
	}
	return n.FaultSince.UTC().Format(time.RFC3339)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// refusalsToFail is how many times in a row the BMC refuses a node's
// credentials before a wait for the node to be verified gives up: a BMC
// may refuse a login once while it restarts its account service, but
// credentials refused twice are almost always a mistake in the
// configuration, and no wait fixes that.
const refusalsToFail = 2

// credentialsRefusedError ends a wait for verification: the node's BMC
// refused its credentials refusalsToFail times or more in a row.
type credentialsRefusedError struct{ node *api.Node }

func (e *credentialsRefusedError) Error() string {
	return fmt.Sprintf("the BMC of node %s refused its credentials (%d failed logins in a row): %s", e.node.Name, e.node.BMCFailures, e.node.LastError)
}

// detail explains the refusal with the BMC's answer; next says what to do.
func (e *credentialsRefusedError) detail(next string) string {
	n := e.node
	addr := "The BMC"
	if n.BMC != nil {
		addr = "The BMC at " + n.BMC.Address
	}
	return fmt.Sprintf("%s refused the credentials of node %s: %d failed logins in a row (fault %s since %s). Its answer: %s\n\n"+
		"A wrong bmc.password (or bmc.username) is the usual cause, which no wait fixes, so the apply stops here. The node "+
		"stays enrolled, and the controller keeps retrying its BMC with backoff. %s With bmc.password_wo, change "+
		"bmc.password_wo_version too, or the new password is not sent.",
		addr, n.Name, n.BMCFailures, n.Fault, faultSince(n), orNone(n.LastError), next)
}

// waitVerified waits until the controller has verified the node's BMC
// (provision_state leaves enroll). A node that stays in enroll with a
// fault is tolerated until the timeout: the controller keeps retrying and
// faults clear themselves. Credentials the BMC refuses refusalsToFail
// times in a row are not: they end the wait with a
// *credentialsRefusedError.
func waitVerified(ctx context.Context, c *apiclient.Client, id string, timeout time.Duration) (*api.Node, error) {
	node, err := waitFor(ctx, "node "+id+" to be verified", func(ctx context.Context) (*api.Node, error) {
		return c.GetNode(ctx, id)
	}, func(n *api.Node) (bool, error) {
		switch n.ProvisionState {
		case api.StateEnroll:
			if n.Fault == api.FaultDuplicate {
				// The verify found another node's machine behind these
				// settings: no wait ends that.
				return false, fmt.Errorf("node %s is a second node of another node's machine, and the controller will not use it: %s", n.Name, n.LastError)
			}
			if n.Fault == api.FaultBMCAuthFailed && n.BMCFailures >= refusalsToFail {
				return false, &credentialsRefusedError{n}
			}
			return false, nil
		case api.StateDeleting:
			return false, fmt.Errorf("node %s is being deleted (by someone else?) while waiting for it to become available", n.Name)
		default:
			return true, nil
		}
	})
	switch {
	case err == nil:
		return node, nil
	case errors.Is(err, errWaitTimeout) && node != nil:
		msg := fmt.Sprintf("The controller did not verify node %s within %s: it is still in provision_state %q", node.Name, timeout, node.ProvisionState)
		if node.Fault != "" {
			msg += fmt.Sprintf(" with fault %q", node.Fault)
		}
		if node.LastError != "" {
			msg += fmt.Sprintf(".\n\nLast error: %s", node.LastError)
		}
		msg += ".\n\nThe node was enrolled and the controller keeps retrying its BMC. Check the bmc settings and the BMC's network, " +
			"raise the create timeout, or set wait_for_available = false."
		return node, errors.New(msg)
	case errors.Is(err, apiclient.ErrNotFound):
		return nil, fmt.Errorf("node %s was deleted while waiting for it to become available", id)
	default:
		return node, err
	}
}
