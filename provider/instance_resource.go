package provider

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

const (
	defaultInstanceCreateTimeout = 30 * time.Minute
	defaultInstanceUpdateTimeout = 10 * time.Minute
)

var (
	_ resource.Resource                     = &InstanceResource{}
	_ resource.ResourceWithConfigure        = &InstanceResource{}
	_ resource.ResourceWithImportState      = &InstanceResource{}
	_ resource.ResourceWithConfigValidators = &InstanceResource{}
	_ resource.ResourceWithModifyPlan       = &InstanceResource{}
)

// InstanceResource manages a baremetal_instance: an image deployed on one
// node, chosen by the scheduler from a resource class or pinned.
type InstanceResource struct {
	client *apiclient.Client
}

// NewInstanceResource is the resource's constructor for the provider.
func NewInstanceResource() resource.Resource { return &InstanceResource{} }

func (r *InstanceResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instance"
}

func (r *InstanceResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (r *InstanceResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan instanceResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Waiting for the OS to call back is part of creating: the default
	// timeout leaves that much more time.
	deployTimeout, _ := time.ParseDuration(plan.DeployTimeout.ValueString()) // validated
	timeout, diags := plan.Timeouts.Create(ctx, defaultInstanceCreateTimeout+deployTimeout)
	resp.Diagnostics.Append(diags...)
	in, diags := instanceCreate(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// setFromAPI replaces power_state with the observed power: keep the wish.
	desired := plan.PowerState
	inst, err := createInstance(ctx, r.client, in)
	if err != nil {
		attrs := instanceAttrs
		if errors.Is(err, apiclient.ErrNoCapacity) && in.ResourceClass == "" && in.NodeID == "" {
			// Placed by requirements alone: the controller names
			// resource_class, which this configuration does not set.
			attrs = nil
		}
		addAPIError(&resp.Diagnostics, "Could not create instance "+in.Name, err, attrs)
		return
	}
	tflog.Info(ctx, "instance created", map[string]any{"id": inst.ID, "name": inst.Name, "node_id": inst.NodeID})
	resp.Diagnostics.Append(plan.setFromAPI(ctx, inst, desired)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}

	inst, err = waitActive(ctx, r.client, inst.ID, timeout)
	if inst != nil {
		resp.Diagnostics.Append(plan.setFromAPI(ctx, inst, desired)...)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
	if err != nil {
		resp.Diagnostics.AddError("Instance "+in.Name+" did not become active", err.Error())
		return
	}
	// Deploying leaves the node powered on; another wish is carried out
	// once the instance is active.
	if power := api.PowerState(desired.ValueString()); power != "" && inst.ObservedPowerState != power {
		convergePower(ctx, r.client, &plan, inst, power, timeout, &resp.Diagnostics)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

func (r *InstanceResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state instanceResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	inst, err := r.client.GetInstance(ctx, state.ID.ValueString())
	if errors.Is(err, apiclient.ErrNotFound) {
		tflog.Info(ctx, "instance is gone; removing it from the state", map[string]any{"id": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not read instance "+state.ID.ValueString(), err, nil)
		return
	}
	resp.Diagnostics.Append(state.setFromAPI(ctx, inst, state.PowerState)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *InstanceResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state instanceResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	rebuild := rebuilds(&plan, &state)
	rb := instanceRebuild(&plan) // before setFromAPI overwrites the plan's image
	defaultTimeout := defaultInstanceUpdateTimeout
	if rebuild {
		// A rebuild is a deploy: as long as a create.
		deployTimeout, _ := time.ParseDuration(plan.DeployTimeout.ValueString()) // validated
		defaultTimeout = defaultInstanceCreateTimeout + deployTimeout
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	desired := plan.PowerState // setFromAPI replaces it with the observed power
	planned := plan
	u, diags := instanceUpdate(ctx, &plan, &state)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	var inst *api.Instance
	var err error
	if u.PowerState != nil || u.Metadata != nil {
		inst, err = r.client.PatchInstance(ctx, id, u)
	} else {
		inst, err = r.client.GetInstance(ctx, id) // only timeouts changed
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not update instance "+state.Name.ValueString(), err, instanceAttrs)
		return
	}
	resp.Diagnostics.Append(plan.setFromAPI(ctx, inst, desired)...)
	plan.keepPlannedObservations(&planned)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if rebuild {
		// The read above put the instance's old image, user data and
		// network in the model; the rebuild's answer is compared with
		// what was planned, so the configuration's spelling (a MAC with
		// dashes, say) is kept.
		plan.Image, plan.UserData, plan.Network = planned.Image, planned.UserData, planned.Network
		if inst = r.rebuild(ctx, &plan, rb, state.Name.ValueString(), id, desired, timeout, &resp.Diagnostics); inst == nil {
			// What the rebuild left is in the state: the instance in
			// error, which the next plan rebuilds again.
			resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
			return
		}
		plan.keepPlannedObservations(&planned)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
	if inst.State == api.InstanceActive && desired.ValueString() != "" && (u.PowerState != nil || rebuild) && inst.ObservedPowerState != api.PowerState(desired.ValueString()) {
		convergePower(ctx, r.client, &plan, inst, api.PowerState(desired.ValueString()), timeout, &resp.Diagnostics)
		plan.keepPlannedObservations(&planned)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

// rebuild rebuilds the instance in place with rb and waits until it
// is active again, updating plan with what it reads. It returns the active
// instance, or nil after adding the error (the rebuild failed, or did not
// finish in time).
func (r *InstanceResource) rebuild(ctx context.Context, plan *instanceResourceModel, rb api.InstanceRebuild, name, id string, desired types.String, timeout time.Duration, diags *diag.Diagnostics) *api.Instance {
	inst, err := r.client.RebuildInstance(ctx, id, rb)
	if err != nil {
		addAPIError(diags, "Could not rebuild instance "+name, err, instanceAttrs)
		return nil
	}
	tflog.Info(ctx, "instance rebuild started", map[string]any{"id": inst.ID, "node_id": inst.NodeID, "rebuilds": inst.Rebuilds})
	diags.Append(plan.setFromAPI(ctx, inst, desired)...)
	inst, err = waitActive(ctx, r.client, id, timeout)
	if inst != nil {
		diags.Append(plan.setFromAPI(ctx, inst, desired)...)
	}
	if err != nil {
		diags.AddError("Instance "+name+" was not rebuilt", err.Error()+
			"\n\nThe instance keeps its node; the next apply rebuilds it again (fix the image or user_data first if they are at fault).")
		return nil
	}
	return inst
}

// ModifyPlan plans a rebuild in place (a new image, user data or network,
// or a failed rebuild to retry): the instance will be active again, with
// readiness, last_error and the rebuild count known after apply.
func (r *InstanceResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || req.State.Raw.IsNull() {
		return // create or destroy
	}
	var plan, state instanceResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	// The plan may hold unknowns (an image URL from another resource):
	// read the attributes that decide, not the whole model.
	var image, network types.Object
	var userData types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("image"), &image)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("user_data"), &userData)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("network"), &network)...)
	if resp.Diagnostics.HasError() {
		return
	}
	unknown := image.IsUnknown() || hasUnknown(network)
	if !network.IsNull() && !unknown {
		plan.Network = &networkModel{}
		resp.Diagnostics.Append(network.As(ctx, plan.Network, basetypes.ObjectAsOptions{})...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	plan.UserData = userData
	if !image.IsUnknown() && !image.IsNull() {
		plan.Image = &instanceImageModel{}
		resp.Diagnostics.Append(image.As(ctx, plan.Image, basetypes.ObjectAsOptions{})...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	if !unknown && !rebuilds(&plan, &state) {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("state"), types.StringValue(string(api.InstanceActive)))...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("ready"), types.BoolUnknown())...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("last_error"), types.StringUnknown())...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("rebuilds"), types.Int64Unknown())...)
	if unknown || !sameNetwork(plan.Network.networkAPI(), state.Network.networkAPI()) {
		// A new network may take other pool addresses.
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("addresses"), types.ListUnknown(types.ObjectType{AttrTypes: addressAttrTypes}))...)
	}
}

func (r *InstanceResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state instanceResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	accepted, err := r.client.DeleteInstance(ctx, state.ID.ValueString())
	if errors.Is(err, apiclient.ErrNotFound) {
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not delete instance "+state.Name.ValueString(), err, nil)
		return
	}
	tflog.Info(ctx, "instance deleted; node cleanup queued", map[string]any{"id": state.ID.ValueString(), "job_id": accepted.JobID})
}

func (r *InstanceResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	// The API takes an id or a name; Read replaces a name with the id.
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
