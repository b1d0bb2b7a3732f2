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

// observedString plans the state's value of an attribute the controller
// observes unless alters reports that the planned update can change it.
type observedString struct {
	alters func(ctx context.Context, plan tfsdk.Plan, state tfsdk.State) (bool, diag.Diagnostics)
	desc   string
}

var _ planmodifier.String = observedString{}

func (m observedString) Description(context.Context) string         { return m.desc }
func (m observedString) MarkdownDescription(context.Context) string { return m.desc }

func (m observedString) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	// Create and destroy have nothing to keep; a known plan value is
	// already what it will be.
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() || !req.PlanValue.IsUnknown() || req.ConfigValue.IsUnknown() {
		return
	}
	alters, diags := m.alters(ctx, req.Plan, req.State)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() || alters {
		return
	}
	resp.PlanValue = req.StateValue
}

// nodeUpdateReverifies reports whether applying the planned update of a
// node makes the controller verify its BMC within the apply, which is
// when its provision_state, fault, last_error and power_state change:
// a new driver, bmc.address or bmc.system_id (the controller takes the
// node back to enroll), or any update of a node still in enroll that
// Update then waits on (wait_for_available, not in maintenance). Other
// changes (maintenance, name, class, properties, credentials) leave them
// as they are: the controller's answer to the PATCH carries the same.
func nodeUpdateReverifies(ctx context.Context, plan tfsdk.Plan, state tfsdk.State) (bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	get := func(from interface {
		GetAttribute(context.Context, path.Path, any) diag.Diagnostics
	}, p path.Path, target any) {
		diags.Append(from.GetAttribute(ctx, p, target)...)
	}
	bmc := path.Root("bmc")
	var planDriver, stateDriver, planAddr, stateAddr, planSystem, stateSystem, provision types.String
	var wait, maintenance types.Bool
	get(plan, path.Root("driver"), &planDriver)
	get(state, path.Root("driver"), &stateDriver)
	get(plan, bmc.AtName("address"), &planAddr)
	get(state, bmc.AtName("address"), &stateAddr)
	get(plan, bmc.AtName("system_id"), &planSystem)
	get(state, bmc.AtName("system_id"), &stateSystem)
	get(state, path.Root("provision_state"), &provision)
	get(plan, path.Root("wait_for_available"), &wait)
	get(plan, path.Root("maintenance"), &maintenance)
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
