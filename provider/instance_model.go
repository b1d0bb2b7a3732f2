package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// An instance as Terraform holds it, and the conversions between it and
// the API's instance: setFromAPI, instanceCreate and instanceUpdate.

type instanceResourceModel struct {
	requirementsModel
	ID            types.String        `tfsdk:"id"`
	Name          types.String        `tfsdk:"name"`
	Project       types.String        `tfsdk:"project"`
	ResourceClass types.String        `tfsdk:"resource_class"`
	NodeID        types.String        `tfsdk:"node_id"`
	Image         *instanceImageModel `tfsdk:"image"`
	UserData      types.String        `tfsdk:"user_data"`
	Metadata      types.Map           `tfsdk:"metadata"`
	PowerState    types.String        `tfsdk:"power_state"`
	DeployTimeout types.String        `tfsdk:"deploy_timeout"`
	DeployMethod  types.String        `tfsdk:"deploy_method"`
	RootDevice    types.Map           `tfsdk:"root_device"`
	Network       *networkModel       `tfsdk:"network"`
	Addresses     types.List          `tfsdk:"addresses"`
	State         types.String        `tfsdk:"state"`
	Ready         types.Bool          `tfsdk:"ready"`
	Rebuilds      types.Int64         `tfsdk:"rebuilds"`
	LastError     types.String        `tfsdk:"last_error"`
	Timeouts      timeouts.Value      `tfsdk:"timeouts"`
}

type instanceImageModel struct {
	URL      types.String `tfsdk:"url"`
	Checksum types.String `tfsdk:"checksum"`
}

var instanceAttrs = map[string]attrKind{
	"name": attrPlain, "project": attrPlain, "resource_class": attrPlain, "node_id": attrPlain,
	"image": attrObject, "user_data": attrPlain, "metadata": attrMap, "power_state": attrPlain,
	"deploy_timeout": attrPlain, "deploy_method": attrPlain, "root_device": attrMap, "network": attrObject,
	"required_traits": attrPlain, "forbidden_traits": attrPlain, "min_cpus": attrPlain, "min_memory_mb": attrPlain,
	"min_disk_gb": attrPlain, "cpu_arch": attrPlain,
}

// setFromAPI copies the instance into the model. prevPower is the
// power_state the model had: when the user manages power (or the
// controller holds a wish), power_state shows the node's observed power so
// that drift appears in the plan. While the power is not observable
// (unknown), the previous value stays.
func (m *instanceResourceModel) setFromAPI(ctx context.Context, in *api.Instance, prevPower types.String) diag.Diagnostics {
	var diags diag.Diagnostics
	m.ID = types.StringValue(in.ID)
	m.Name = types.StringValue(in.Name)
	m.Project = types.StringValue(in.Project)
	m.ResourceClass = types.StringValue(in.ResourceClass)
	m.NodeID = types.StringValue(in.NodeID)
	diags.Append(m.requirementsModel.setFromAPI(in.Requirements)...)
	m.Image = &instanceImageModel{URL: types.StringValue(in.Image.URL), Checksum: stringOrNull(in.Image.Checksum)}
	m.UserData = stringOrNull(in.UserData)
	if len(in.Metadata) == 0 && (m.Metadata.IsNull() || m.Metadata.IsUnknown()) {
		m.Metadata = types.MapNull(types.StringType)
	} else {
		var d diag.Diagnostics
		m.Metadata, d = types.MapValueFrom(ctx, types.StringType, in.Metadata)
		diags.Append(d...)
	}
	switch observed := in.ObservedPowerState; {
	case prevPower.IsNull() && in.PowerState == "":
		m.PowerState = types.StringNull() // power not managed
	case observed == api.PowerOn || observed == api.PowerOff:
		m.PowerState = types.StringValue(string(observed))
	case !prevPower.IsNull() && !prevPower.IsUnknown():
		// No observation (the BMC does not answer: the node's fault says
		// so). Not knowing is not drift: keep the last value.
		m.PowerState = prevPower
	default:
		m.PowerState = types.StringValue(string(in.PowerState))
	}
	m.DeployMethod = types.StringValue(string(in.DeployMethod))
	if len(in.RootDevice) == 0 {
		m.RootDevice = types.MapNull(types.StringType)
	} else {
		var d diag.Diagnostics
		m.RootDevice, d = types.MapValueFrom(ctx, types.StringType, in.RootDevice)
		diags.Append(d...)
	}
	// The configuration's spelling of a network the controller holds
	// (a MAC in upper case, say) is kept; another network is drift.
	if !sameNetwork(m.Network.networkAPI(), in.Network) {
		m.Network = networkModelOf(in.Network)
	}
	var d diag.Diagnostics
	m.Addresses, d = addressesValue(in.Addresses)
	diags.Append(d...)
	m.State = types.StringValue(string(in.State))
	m.Ready = types.BoolValue(in.Ready)
	m.Rebuilds = types.Int64Value(int64(in.Rebuilds))
	m.LastError = types.StringValue(in.LastError)
	// The controller writes durations its own way ("30m" may come back
	// as "30m0s" from older versions): the configured spelling is kept
	// unless the value itself differs (import, or a change outside).
	if prev, err := time.ParseDuration(m.DeployTimeout.ValueString()); in.DeployTimeout == "" {
		m.DeployTimeout = types.StringNull()
	} else if got, gerr := time.ParseDuration(in.DeployTimeout); err != nil || gerr != nil || prev != got {
		m.DeployTimeout = types.StringValue(in.DeployTimeout)
	}
	return diags
}

// keepPlannedObservations puts back what the plan promised for the
// attributes the controller reports on its own (see planmodifiers.go).
func (m *instanceResourceModel) keepPlannedObservations(planned *instanceResourceModel) {
	keepKnown(&m.State, planned.State)
	keepKnown(&m.Ready, planned.Ready)
	keepKnown(&m.LastError, planned.LastError)
	keepKnown(&m.Rebuilds, planned.Rebuilds)
	keepKnown(&m.Addresses, planned.Addresses)
}

// rebuilds reports whether the update from state to plan rebuilds the
// instance in place: a new image or user data, or a failed rebuild (state
// error, rebuilt before) to retry.
func rebuilds(plan, state *instanceResourceModel) bool {
	return !imageEqual(plan.Image, state.Image) || !plan.UserData.Equal(state.UserData) ||
		!sameNetwork(plan.Network.networkAPI(), state.Network.networkAPI()) || retriesRebuild(state)
}

// retriesRebuild reports whether the instance is in error after a failed
// rebuild, which the next apply retries.
func retriesRebuild(state *instanceResourceModel) bool {
	return state.State.ValueString() == string(api.InstanceError) && state.Rebuilds.ValueInt64() > 0
}

func imageEqual(a, b *instanceImageModel) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.URL.Equal(b.URL) && a.Checksum.Equal(b.Checksum)
}

// instanceRebuild is the plan's rebuild request: its image, user data and
// network ("" and {} when unset, which remove the instance's).
func instanceRebuild(plan *instanceResourceModel) api.InstanceRebuild {
	ud := plan.UserData.ValueString()
	network := plan.Network.networkAPI()
	if network == nil {
		network = &api.Network{} // removes it
	}
	return api.InstanceRebuild{
		Image:    &api.Image{URL: plan.Image.URL.ValueString(), Checksum: plan.Image.Checksum.ValueString()},
		UserData: &ud,
		Network:  network,
	}
}

// instanceCreate is the plan's create request.
func instanceCreate(ctx context.Context, plan *instanceResourceModel) (api.InstanceCreate, diag.Diagnostics) {
	metadata, diags := metadataFromMap(ctx, plan.Metadata)
	if diags.HasError() {
		return api.InstanceCreate{}, diags
	}
	in := api.InstanceCreate{
		Name:          plan.Name.ValueString(),
		Project:       plan.Project.ValueString(),
		ResourceClass: plan.ResourceClass.ValueString(),
		NodeID:        plan.NodeID.ValueString(),
		Image:         api.Image{URL: plan.Image.URL.ValueString(), Checksum: plan.Image.Checksum.ValueString()},
		UserData:      plan.UserData.ValueString(),
		Metadata:      metadata,
		PowerState:    api.PowerState(plan.PowerState.ValueString()),
		DeployTimeout: plan.DeployTimeout.ValueString(),
		DeployMethod:  api.DeployMethod(plan.DeployMethod.ValueString()),
		Network:       plan.Network.networkAPI(),
	}
	if r := plan.toAPI(); !requirementsZero(r) {
		in.Requirements = &r
	}
	if !plan.RootDevice.IsNull() && !plan.RootDevice.IsUnknown() {
		diags.Append(plan.RootDevice.ElementsAs(ctx, &in.RootDevice, false)...)
	}
	return in, diags
}

// instanceUpdate is the patch from state to plan: the power wish and the
// metadata, the two arguments that change in place.
func instanceUpdate(ctx context.Context, plan, state *instanceResourceModel) (api.InstanceUpdate, diag.Diagnostics) {
	var u api.InstanceUpdate
	var diags diag.Diagnostics
	if !plan.PowerState.Equal(state.PowerState) {
		p := api.PowerState(plan.PowerState.ValueString()) // "" clears the wish
		u.PowerState = &p
	}
	if !plan.Metadata.Equal(state.Metadata) {
		md, d := metadataFromMap(ctx, plan.Metadata)
		diags.Append(d...)
		if md == nil {
			md = map[string]string{}
		}
		u.Metadata = &md
	}
	return u, diags
}

func metadataFromMap(ctx context.Context, m types.Map) (map[string]string, diag.Diagnostics) {
	if m.IsNull() || m.IsUnknown() {
		return nil, nil
	}
	out := map[string]string{}
	diags := m.ElementsAs(ctx, &out, false)
	return out, diags
}
