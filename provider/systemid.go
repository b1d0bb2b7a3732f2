package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// bmc.system_id: the controller keys a Redfish node by its system's
// @odata.id as the BMC serves it, which it may write back in its own
// spelling (iLO: /redfish/v1/Systems/1/ for a configured "1"), and fills
// in when the configuration leaves it out. The state keeps the
// configuration's spelling while it names the same system
// (api.SameRedfishSystem), so neither is a diff.

// systemIDValidator accepts what the controller accepts as a system
// (api.RedfishSystemPath).
type systemIDValidator struct{}

var _ validator.String = systemIDValidator{}

func (systemIDValidator) Description(context.Context) string {
	return "value must be a Redfish system: a path such as /redfish/v1/Systems/1, a bare id such as 1, or its URL"
}

func (v systemIDValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (systemIDValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := api.RedfishSystemPath(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid system_id", err.Error())
	}
}

// systemIDUnlessMoved plans, for a system_id left out of the
// configuration, the one the controller found, unless the node moves to
// another BMC (driver or address): the controller then asks the new BMC,
// and the plan says "known after apply".
type systemIDUnlessMoved struct{}

var _ planmodifier.String = systemIDUnlessMoved{}

func (systemIDUnlessMoved) Description(context.Context) string {
	return "The system the controller found stays unless the node moves to another BMC."
}

func (m systemIDUnlessMoved) MarkdownDescription(ctx context.Context) string {
	return m.Description(ctx)
}

func (systemIDUnlessMoved) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() || !req.ConfigValue.IsNull() || !req.PlanValue.IsUnknown() {
		return
	}
	var planDriver, stateDriver, planAddr, stateAddr types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("driver"), &planDriver)...)
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("driver"), &stateDriver)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("bmc").AtName("address"), &planAddr)...)
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("bmc").AtName("address"), &stateAddr)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if planDriver.Equal(stateDriver) && planAddr.Equal(stateAddr) {
		resp.PlanValue = req.StateValue
	}
}

// systemIDFrom is the controller's system_id in the spelling of prior (the
// plan's or the state's) when that names the same system.
func systemIDFrom(got string, prior types.String) types.String {
	if !prior.IsNull() && !prior.IsUnknown() && api.SameRedfishSystem(prior.ValueString(), got) {
		return prior
	}
	return stringOrNull(got)
}
