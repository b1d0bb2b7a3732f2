package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

const (
	defaultNodeCreateTimeout = 10 * time.Minute
	defaultNodeUpdateTimeout = 10 * time.Minute
)

var (
	_ resource.Resource                   = &NodeResource{}
	_ resource.ResourceWithConfigure      = &NodeResource{}
	_ resource.ResourceWithImportState    = &NodeResource{}
	_ resource.ResourceWithValidateConfig = &NodeResource{}
	_ resource.ResourceWithModifyPlan     = &NodeResource{}
)

// NodeResource manages a baremetal_node: a physical server enrolled
// through its BMC.
type NodeResource struct {
	client *apiclient.Client
}

// NewNodeResource is the resource's constructor for the provider.
func NewNodeResource() resource.Resource { return &NodeResource{} }

func (r *NodeResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_node"
}

func (r *NodeResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (r *NodeResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan nodeResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultNodeCreateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	// A write-only password is only in the configuration, never in the plan.
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("bmc").AtName("password_wo"), &plan.BMC.PasswordWO)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	in := nodeCreate(&plan)
	node, err := createNode(ctx, r.client, in)
	var held *nameHeldError
	if errors.As(err, &held) {
		resp.Diagnostics.AddAttributeError(path.Root("name"), "Could not create node "+in.Name, held.msg)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not create node "+in.Name, err, nodeAttrs)
		return
	}
	tflog.Info(ctx, "node enrolled", map[string]any{"id": node.ID, "name": node.Name})

	secrets, planned := plan.BMC, plan
	save := func(node *api.Node, inventory types.Object) {
		resp.Diagnostics.Append(plan.setFromAPI(node, secrets)...)
		plan.keepPlannedMaintenance(&planned)
		plan.Inventory = inventory
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
	// Saved at once: if the wait below fails, the node exists and Terraform
	// must know it (it will be marked tainted).
	save(node, types.ObjectNull(inventoryAttrTypes)) // a new node is not inspected yet
	if resp.Diagnostics.HasError() {
		return
	}
	if !plan.WaitForAvailable.ValueBool() || plan.Maintenance.ValueBool() {
		return
	}
	node, err = waitVerified(ctx, r.client, node.ID, timeout)
	// Declared hardware settings are applied before the node is ever
	// available (after its inspection, when it is inspected on enroll).
	// A new node's hardware settings are this create's: whatever the
	// node says of them once verified is their outcome, even when the
	// controller applied (or refused) them before the wait looked.
	waited := err == nil && plan.declaresSettings()
	if err == nil && plan.declaresSettings() && settingsPending(node) {
		var last *api.Node
		last, err = waitConfigured(ctx, r.client, node.ID, timeout)
		if last != nil {
			node = last
		}
		waited = true
	}
	if node != nil {
		// Not inspected yet, as a rule: an inspection on enroll
		// (--inspect-on-enroll) begins as the wait ends, and shows at the
		// next refresh.
		save(node, readInventory(ctx, r.client, node, types.ObjectNull(inventoryAttrTypes), &resp.Diagnostics))
	}
	var refused *credentialsRefusedError
	switch {
	case errors.As(err, &refused):
		// Terraform taints a node whose create failed and replaces it at
		// the next apply; Delete removes this one at once then (see
		// retireNotNeeded).
		resp.Diagnostics.AddAttributeError(plan.BMC.passwordPath(), "The BMC refused the credentials of node "+in.Name,
			refused.detail("Correct them and apply again: Terraform replaces this node, which never logged in to its BMC, so its "+
				"record is removed at once without touching the machine. (Fixing the account on the BMC instead makes this node "+
				"available by itself; run terraform untaint on it then, or the next apply replaces it.)"))
	case err != nil:
		resp.Diagnostics.AddError("Node "+in.Name+" did not become available", err.Error())
	case node != nil && plan.declaresSettings():
		addSettingsOutcome(&resp.Diagnostics, node, &plan, waited,
			"Terraform marks the node tainted, as its create failed: correct the setting and apply again, and Terraform replaces "+
				"the node; or run terraform untaint on it first, and the apply sets the corrected value in place.")
	}
}

func (r *NodeResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state nodeResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	node, err := r.client.GetNode(ctx, state.ID.ValueString())
	if errors.Is(err, apiclient.ErrNotFound) || err == nil && node.ProvisionState == api.StateDeleting {
		tflog.Info(ctx, "node is gone or being deleted; removing it from the state", map[string]any{"id": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not read node "+state.ID.ValueString(), err, nil)
		return
	}
	if state.WaitForAvailable.IsNull() {
		state.WaitForAvailable = types.BoolValue(true)
	}
	if state.ForceDestroy.IsNull() {
		state.ForceDestroy = types.BoolValue(false)
	}
	resp.Diagnostics.Append(state.setFromAPI(node, state.BMC)...) // nil after an import: no password known
	resp.Diagnostics.Append(state.setSettingsFromAPI(node)...)
	state.Inventory = readInventory(ctx, r.client, node, state.Inventory, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *NodeResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state nodeResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultNodeUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("bmc").AtName("password_wo"), &plan.BMC.PasswordWO)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	planned, secrets := plan, plan.BMC // setFromAPI overwrites plan with what the controller says
	patch, changed := nodePatch(&plan, &state)
	node := (*api.Node)(nil)
	if changed {
		var err error
		node, err = r.client.PatchNode(ctx, state.ID.ValueString(), patch, "")
		if err != nil {
			addAPIError(&resp.Diagnostics, "Could not update node "+state.Name.ValueString(), err, nodeAttrs)
			return
		}
	} else {
		// Only provider-side settings (wait_for_available, force_destroy,
		// timeouts) changed.
		var err error
		if node, err = r.client.GetNode(ctx, state.ID.ValueString()); err != nil {
			addAPIError(&resp.Diagnostics, "Could not read node "+state.Name.ValueString(), err, nil)
			return
		}
	}
	save := func(node *api.Node) {
		resp.Diagnostics.Append(plan.setFromAPI(node, secrets)...)
		resp.Diagnostics.Append(plan.keepPlannedObservations(&planned)...)
		if plan.Inventory.IsUnknown() {
			plan.Inventory = readInventory(ctx, r.client, node, state.Inventory, &resp.Diagnostics)
		}
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
	save(node)
	if resp.Diagnostics.HasError() {
		return
	}
	wait := plan.WaitForAvailable.ValueBool() && !plan.Maintenance.ValueBool()
	if node.ProvisionState == api.StateEnroll && wait {
		verified, err := waitVerified(ctx, r.client, node.ID, timeout)
		if verified != nil {
			node = verified
			save(node)
		}
		var refused *credentialsRefusedError
		switch {
		case errors.As(err, &refused):
			resp.Diagnostics.AddAttributeError(plan.BMC.passwordPath(), "The BMC refused the credentials of node "+plan.Name.ValueString(),
				refused.detail("The update was saved. Correct the credentials and apply again: the node is updated in place."))
			return
		case err != nil:
			resp.Diagnostics.AddError("Node "+plan.Name.ValueString()+" was updated but not re-verified", err.Error())
			return
		}
	}
	// A patch that names the hardware settings makes the controller
	// apply them: waited for like a verification.
	if patch.BIOSSettings == nil && patch.SecureBoot == nil && patch.RAID == nil && patch.Firmware == nil {
		return
	}
	waited := false
	if wait && settingsPending(node) {
		configured, err := waitConfigured(ctx, r.client, node.ID, timeout)
		if configured != nil {
			node = configured
			save(node)
		}
		if err != nil {
			resp.Diagnostics.AddError("Node "+plan.Name.ValueString()+" was updated but its hardware settings were not applied", err.Error())
			return
		}
		waited = true
	}
	addSettingsOutcome(&resp.Diagnostics, node, &plan, waited,
		"Correct the setting and apply again (the plan shows what the BMC has meanwhile).")
}

func (r *NodeResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state nodeResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	force := state.ForceDestroy.ValueBool()
	var accepted *api.Accepted
	var err error
	if !force && r.retireNotNeeded(ctx, state.ID.ValueString()) {
		// Removed only if it is still unverified when the controller
		// looks (in the delete's own transaction): a node whose BMC took
		// the corrected credentials meanwhile is retired as any other.
		accepted, err = r.client.DeleteUnverifiedNode(ctx, state.ID.ValueString())
		if err == nil {
			force = true
		} else if errors.Is(err, apiclient.ErrConflict) {
			accepted, err = r.client.DeleteNode(ctx, state.ID.ValueString(), false)
		}
	} else {
		accepted, err = r.client.DeleteNode(ctx, state.ID.ValueString(), force)
	}
	if errors.Is(err, apiclient.ErrNotFound) {
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not delete node "+state.Name.ValueString(), err, nil)
		return
	}
	tflog.Info(ctx, "node deletion queued", map[string]any{"id": state.ID.ValueString(), "job_id": accepted.JobID, "message": accepted.Message})
	if !force {
		r.warnIfRetireWaits(ctx, state.ID.ValueString(), state.Name.ValueString(), accepted.Message, &resp.Diagnostics)
	}
}

// retireNotNeeded reports whether a node goes without a retire: one whose
// BMC has refused every login since it was enrolled (it is in enroll with
// fault bmc_auth_failed, and never left enroll), as after a create that
// failed on a wrong password, which Terraform replaces once the password
// is corrected. The controller never got into its BMC, so it never did
// anything to the machine; and a retire, which powers the machine off
// first, would wait for a login the BMC refuses for ever (a node being
// deleted takes no new credentials), holding the node's name against its
// replacement. A failed look keeps the retire.
func (r *NodeResource) retireNotNeeded(ctx context.Context, id string) bool {
	n, err := r.client.GetNode(ctx, id)
	if err != nil || n.ProvisionState != api.StateEnroll || n.Fault != api.FaultBMCAuthFailed {
		return false
	}
	events, err := r.client.ListNodeEvents(ctx, id)
	if err != nil {
		return false
	}
	for _, e := range events {
		if e.Field == "provision_state" && e.Old == string(api.StateEnroll) {
			return false // verified once: it may have run an instance since
		}
	}
	tflog.Info(ctx, "the node's BMC has refused every login since it was enrolled: removing its record without a retire",
		map[string]any{"id": id, "last_error": n.LastError})
	return true
}

// warnIfRetireWaits tells, as a warning, when the retire just queued
// cannot finish by itself: Terraform says "Destruction complete" either
// way, but the node then stays in deleting, holding its name, until an
// operator clears maintenance or its BMC answers. A failed look is only
// logged: the delete itself succeeded.
func (r *NodeResource) warnIfRetireWaits(ctx context.Context, id, name, apiMessage string, diags *diag.Diagnostics) {
	n, err := r.client.GetNode(ctx, id)
	if errors.Is(err, apiclient.ErrNotFound) {
		return
	}
	if err != nil {
		tflog.Warn(ctx, "could not read the node after queuing its retire", map[string]any{"id": id, "error": err.Error()})
		return
	}
	if n.ProvisionState != api.StateDeleting {
		return
	}
	const after = "\n\nTerraform no longer manages the node; the controller keeps it in provision_state deleting " +
		"(its name stays taken, and node lists show it) until the retire has powered the machine off."
	switch {
	case n.Maintenance:
		diags.AddWarning("Node "+name+" is in maintenance: its retire waits",
			fmt.Sprintf("The controller answered: %s.%s\n\nMaintenance reason: %s", apiMessage, after, n.MaintenanceReason))
	case n.Fault != "":
		diags.AddWarning("Node "+name+" has a BMC fault: its retire waits for the BMC",
			fmt.Sprintf("The node has fault %s (last error: %s); the retire job keeps retrying until the BMC answers.%s "+
				"For a machine that is gone for good, set force_destroy = true before destroying, or delete the node with force=true "+
				"(controller node delete %s --force).", n.Fault, orNone(n.LastError), after, n.ID))
	}
}

func (r *NodeResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	// The API takes an id or a name; Read replaces a name with the id.
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
