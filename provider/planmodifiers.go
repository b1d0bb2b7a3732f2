package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// Reviewers read plans: on an update the framework plans every computed
// attribute without a configured value as "(known after apply)", five
// lines of noise on a node for a change of maintenance alone. The
// modifiers here plan the value the refresh just read instead, unless the
// planned change really can alter it. The resources' Update then returns
// those planned values (see keepKnown): terraform refuses a result that
// differs from a known planned value, and what the controller observes
// (power, faults) may move on between plan and apply. The next refresh
// reads it anew, without a diff, as the attributes are computed only.

// observed plans the state's value of an attribute the controller
// observes or fills in unless alters reports that the planned update can
// change it.
type observed struct {
	alters func(ctx context.Context, config tfsdk.Config, plan tfsdk.Plan, state tfsdk.State, stateValue attr.Value) (bool, diag.Diagnostics)
	desc   string
}

var (
	_ planmodifier.String = observed{}
	_ planmodifier.Int64  = observed{}
	_ planmodifier.Set    = observed{}
)

func (m observed) Description(context.Context) string         { return m.desc }
func (m observed) MarkdownDescription(context.Context) string { return m.desc }

// keep reports whether the state's value is the plan's.
func (m observed) keep(ctx context.Context, config tfsdk.Config, plan tfsdk.Plan, state tfsdk.State, planValue, configValue, stateValue attr.Value, diags *diag.Diagnostics) bool {
	// Create and destroy have nothing to keep; a known plan value is
	// already what it will be.
	if state.Raw.IsNull() || plan.Raw.IsNull() || !planValue.IsUnknown() || configValue.IsUnknown() {
		return false
	}
	alters, d := m.alters(ctx, config, plan, state, stateValue)
	diags.Append(d...)
	return !d.HasError() && !alters
}

func (m observed) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if m.keep(ctx, req.Config, req.Plan, req.State, req.PlanValue, req.ConfigValue, req.StateValue, &resp.Diagnostics) {
		resp.PlanValue = req.StateValue
	}
}

func (m observed) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if m.keep(ctx, req.Config, req.Plan, req.State, req.PlanValue, req.ConfigValue, req.StateValue, &resp.Diagnostics) {
		resp.PlanValue = req.StateValue
	}
}

func (m observed) PlanModifySet(ctx context.Context, req planmodifier.SetRequest, resp *planmodifier.SetResponse) {
	if m.keep(ctx, req.Config, req.Plan, req.State, req.PlanValue, req.ConfigValue, req.StateValue, &resp.Diagnostics) {
		resp.PlanValue = req.StateValue
	}
}

// observedUnlessReverified keeps a node's observed attribute unless the
// update re-verifies the BMC.
var observedUnlessReverified = observed{
	alters: func(ctx context.Context, config tfsdk.Config, plan tfsdk.Plan, state tfsdk.State, _ attr.Value) (bool, diag.Diagnostics) {
		return nodeUpdateReverifies(ctx, config, plan, state)
	},
	desc: "Keeps the observed value in the plan unless the update makes the controller re-verify the BMC.",
}

// propertyUnlessFilled keeps a property the operator did not configure
// unless a re-verification may fill it from the BMC's inventory: the
// controller fills only empty ones.
var propertyUnlessFilled = observed{
	alters: func(ctx context.Context, config tfsdk.Config, plan tfsdk.Plan, state tfsdk.State, v attr.Value) (bool, diag.Diagnostics) {
		if !emptyProperty(v) {
			return false, nil
		}
		return nodeUpdateReverifies(ctx, config, plan, state)
	},
	desc: "Keeps the value in the plan unless it is empty and the update makes the controller re-verify the BMC, which fills it from the inventory.",
}

func emptyProperty(v attr.Value) bool {
	switch t := v.(type) {
	case types.Int64:
		return t.IsNull() || t.ValueInt64() == 0
	case types.String:
		return t.IsNull() || t.ValueString() == ""
	}
	return false
}

// propertiesUnlessFilled is properties' own modifier, for a configuration
// without properties (the whole object is then planned unknown, and the
// members' modifiers do not run): the state's object, with the members a
// re-verification may fill unknown.
type propertiesUnlessFilled struct{}

var _ planmodifier.Object = propertiesUnlessFilled{}

func (propertiesUnlessFilled) Description(ctx context.Context) string {
	return propertyUnlessFilled.desc
}

func (propertiesUnlessFilled) MarkdownDescription(ctx context.Context) string {
	return propertyUnlessFilled.desc
}

func (propertiesUnlessFilled) PlanModifyObject(ctx context.Context, req planmodifier.ObjectRequest, resp *planmodifier.ObjectResponse) {
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() || !req.PlanValue.IsUnknown() || req.ConfigValue.IsUnknown() || req.StateValue.IsNull() {
		return
	}
	reverifies, diags := nodeUpdateReverifies(ctx, req.Config, req.Plan, req.State)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	members := req.StateValue.Attributes()
	planned := make(map[string]attr.Value, len(members))
	for k, v := range members {
		planned[k] = v
		if reverifies && emptyProperty(v) {
			planned[k] = unknownOf(v)
		}
	}
	obj, diags := types.ObjectValue(req.StateValue.AttributeTypes(ctx), planned)
	resp.Diagnostics.Append(diags...)
	if !diags.HasError() {
		resp.PlanValue = obj
	}
}

func unknownOf(v attr.Value) attr.Value {
	switch v.(type) {
	case types.Int64:
		return types.Int64Unknown()
	case types.String:
		return types.StringUnknown()
	}
	return v
}

// Maintenance is an operator's decision, and a configuration decides
// whether it is the one to make it. One that sets maintenance manages it:
// an operator's change shows as drift and the apply puts the configured
// value back. One that leaves it out does not: the plan keeps what the
// refresh read, so no apply ends the maintenance an operator set with the
// CLI, the dashboard or the API (a machine under repair would go back into
// scheduling), and removing maintenance from a configuration stops
// managing it rather than clearing it. A new node starts out of
// maintenance. Update answers with the planned values (keepKnown), as an
// operator may change maintenance between plan and apply.

// maintenanceUnlessConfigured plans maintenance when the configuration
// leaves it out.
type maintenanceUnlessConfigured struct{}

var _ planmodifier.Bool = maintenanceUnlessConfigured{}

const maintenanceUnlessConfiguredDesc = "Unset: keeps the value the refresh read (false for a new node)."

func (maintenanceUnlessConfigured) Description(context.Context) string {
	return maintenanceUnlessConfiguredDesc
}

func (maintenanceUnlessConfigured) MarkdownDescription(context.Context) string {
	return maintenanceUnlessConfiguredDesc
}

func (maintenanceUnlessConfigured) PlanModifyBool(_ context.Context, req planmodifier.BoolRequest, resp *planmodifier.BoolResponse) {
	switch {
	case !req.ConfigValue.IsNull() || req.Plan.Raw.IsNull():
		// Configured (managed here), or a destroy.
	case req.State.Raw.IsNull():
		resp.PlanValue = types.BoolValue(false)
	case !req.StateValue.IsNull():
		resp.PlanValue = req.StateValue
	}
}

// maintenanceReasonUnlessConfigured plans maintenance_reason when the
// configuration leaves it out: what the refresh read while maintenance is
// not managed here either, none when the configuration ends maintenance
// (the controller clears the reason with it).
type maintenanceReasonUnlessConfigured struct{}

var _ planmodifier.String = maintenanceReasonUnlessConfigured{}

const maintenanceReasonUnlessConfiguredDesc = "Unset: keeps the reason the refresh read while maintenance is unset too; none when maintenance is false."

func (maintenanceReasonUnlessConfigured) Description(context.Context) string {
	return maintenanceReasonUnlessConfiguredDesc
}

func (maintenanceReasonUnlessConfigured) MarkdownDescription(context.Context) string {
	return maintenanceReasonUnlessConfiguredDesc
}

func (maintenanceReasonUnlessConfigured) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if !req.ConfigValue.IsNull() || req.Plan.Raw.IsNull() {
		return
	}
	var maintenance types.Bool
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("maintenance"), &maintenance)...)
	switch {
	case resp.Diagnostics.HasError() || maintenance.IsUnknown():
		// Known at apply: the planned value stays unknown.
	case maintenance.IsNull() && !req.State.Raw.IsNull():
		resp.PlanValue = req.StateValue
	case !maintenance.ValueBool():
		// A new node, or maintenance ended here. (maintenance = true
		// without a reason does not pass ValidateConfig.)
		resp.PlanValue = types.StringNull()
	}
}

// nodeUpdateReverifies reports whether applying the planned update of a
// node makes the controller verify its BMC within the apply, which is
// when its provision_state, fault, last_error and power_state change:
// a new driver, bmc.address or bmc.system_id (the controller takes the
// node back to enroll), or any update of a node still in enroll that
// Update then waits on (wait_for_available, not in maintenance). Other
// changes (maintenance, name, class, properties, credentials) leave them
// as they are: the controller's answer to the PATCH carries the same.
func nodeUpdateReverifies(ctx context.Context, config tfsdk.Config, plan tfsdk.Plan, state tfsdk.State) (bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	get := func(from interface {
		GetAttribute(context.Context, path.Path, any) diag.Diagnostics
	}, p path.Path, target any) {
		diags.Append(from.GetAttribute(ctx, p, target)...)
	}
	bmc := path.Root("bmc")
	var planDriver, stateDriver, planAddr, stateAddr, planSystem, stateSystem, provision types.String
	var wait, maintenance, configMaintenance types.Bool
	get(plan, path.Root("driver"), &planDriver)
	get(state, path.Root("driver"), &stateDriver)
	get(plan, bmc.AtName("address"), &planAddr)
	get(state, bmc.AtName("address"), &stateAddr)
	get(plan, bmc.AtName("system_id"), &planSystem)
	get(state, bmc.AtName("system_id"), &stateSystem)
	get(state, path.Root("provision_state"), &provision)
	get(plan, path.Root("wait_for_available"), &wait)
	get(config, path.Root("maintenance"), &configMaintenance)
	if configMaintenance.IsNull() {
		// Not managed here: it stays what the refresh read (the plan may
		// not say so yet: modifiers do not see each other's plans).
		get(state, path.Root("maintenance"), &maintenance)
	} else {
		get(plan, path.Root("maintenance"), &maintenance)
	}
	if diags.HasError() {
		return false, diags
	}
	// An unknown planned value (interpolated) differs from any state.
	changed := func(a, b attr.Value) bool { return !a.Equal(b) }
	if changed(planDriver, stateDriver) || changed(planAddr, stateAddr) || changed(planSystem, stateSystem) {
		return true, nil
	}
	waits := !wait.IsNull() && !wait.IsUnknown() && wait.ValueBool() && !maintenance.ValueBool()
	return provision.ValueString() == string(api.StateEnroll) && (waits || wait.IsUnknown() || maintenance.IsUnknown()), nil
}

// keepKnown sets *dst to planned when the plan promised a value: Update
// answers with what the plan said for attributes the controller may have
// changed since (see the top of this file).
func keepKnown[T interface{ IsUnknown() bool }](dst *T, planned T) {
	if !planned.IsUnknown() {
		*dst = planned
	}
}

// keepKnownMembers is keepKnown for each member of an object.
func keepKnownMembers(dst *types.Object, planned types.Object) diag.Diagnostics {
	if planned.IsUnknown() || planned.IsNull() || dst.IsNull() || dst.IsUnknown() {
		keepKnown(dst, planned)
		return nil
	}
	members := dst.Attributes()
	merged := make(map[string]attr.Value, len(members))
	for k, v := range members {
		merged[k] = v
		if p, ok := planned.Attributes()[k]; ok && !p.IsUnknown() {
			merged[k] = p
		}
	}
	obj, diags := types.ObjectValue(planned.AttributeTypes(context.Background()), merged)
	if !diags.HasError() {
		*dst = obj
	}
	return diags
}
