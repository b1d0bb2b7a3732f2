package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// Hardware settings as code (issue 30) on baremetal_node: bios_settings
// and secure_boot, what the state shows of them (what the BMC has, so a
// change made at the console is drift in the plan), how an apply sends
// them, waits while the controller applies them and reports a refusal.

// The controller's limits of BIOS settings (baremetal.HardwareSettings),
// repeated so a bad name fails the plan; the BMC's attribute registry is
// the controller's to check, at apply.
const (
	maxBIOSSettings   = 512
	maxBIOSValueBytes = 1024
)

var biosNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,127}$`)

// hardwareErrorPrefix starts a node's last_error when the controller did
// not apply its hardware settings (the configure flow's refusal).
const hardwareErrorPrefix = "hardware settings:"

var hardwareAttrTypes = map[string]attr.Type{
	"read_at": types.StringType,
	"unmet":   types.ListType{ElemType: types.StringType},
	"lacks":   types.ListType{ElemType: types.StringType},
	"waiting": types.BoolType,
}

const biosSettingsDesc = "BIOS attributes to set, by name, with their values as text (integers in decimal, booleans `true` or " +
	"`false`), e.g. `{ ProcVirtualization = \"Disabled\", NumaNodesPerSocket = \"2\" }`. Redfish only: the controller writes " +
	"them to the BMC's pending BIOS settings, resets the machine (the BMC applies them at POST), reads them back and powers it " +
	"off; meanwhile the node is in `configuring` and takes no instance, and the apply waits (unless `wait_for_available` is " +
	"`false`). The plan shows what the BMC has of these attributes as the controller last read them (every " +
	"`--settings-sync-interval`), so a change made at the console or by another tool is drift, and the next apply sets " +
	"them again. A node that holds an instance is not reset under it: its settings wait, and are applied after the " +
	"instance is gone and the node cleaned (`hardware.waiting`); the apply says so in a warning. Names and values are " +
	"checked against the BMC's attribute registry once the controller has read it (an unknown attribute, a read-only one, " +
	"a value of the wrong type or out of range is an error naming the attribute); a value the BMC refuses or does not " +
	"apply fails the apply with the controller's reason, and the node stays `available` with it in `last_error`, " +
	"without a fault. Removing an attribute (or the whole map) stops managing it: nothing on the BMC changes. IPMI " +
	"nodes have no BIOS settings: the controller refuses them."

const secureBootDesc = "Enable (`true`) or disable (`false`) UEFI Secure Boot (the BMC's `SecureBootEnable`), applied like " +
	"`bios_settings` (in `configuring`, with a reset) and read back, so a change made elsewhere shows as drift. Unset, " +
	"Secure Boot is left as it is. Redfish only."

func biosSettingsAttribute() schema.MapAttribute {
	return schema.MapAttribute{
		MarkdownDescription: biosSettingsDesc,
		ElementType:         types.StringType,
		Optional:            true,
		Validators:          []validator.Map{biosSettingsValidator{}},
	}
}

func secureBootAttribute() schema.BoolAttribute {
	return schema.BoolAttribute{MarkdownDescription: secureBootDesc, Optional: true}
}

func hardwareAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		MarkdownDescription: "What the controller last read from the BMC of the hardware settings this node declares.",
		Computed:            true,
		PlanModifiers:       []planmodifier.Object{hardwareUnlessSettingsChange{}},
		Attributes: map[string]schema.Attribute{
			"read_at": schema.StringAttribute{
				MarkdownDescription: "When the settings were last read (RFC 3339), null if never.",
				Computed:            true,
			},
			"unmet": schema.ListAttribute{
				MarkdownDescription: "The declared settings the BMC does not show, e.g. `bios_settings.ProcVirtualization: want " +
					"Disabled, is Enabled`: drift, or what is still being applied. Empty when every setting is in effect.",
				ElementType: types.StringType,
				Computed:    true,
			},
			"lacks": schema.ListAttribute{
				MarkdownDescription: "What the BMC lacks of what the settings need (`BIOS settings`, `Secure Boot`).",
				ElementType:         types.StringType,
				Computed:            true,
			},
			"waiting": schema.BoolAttribute{
				MarkdownDescription: "The settings were asked for while the node was busy (an instance, a cleanup): the controller " +
					"applies them once it is free, before it takes another instance.",
				Computed: true,
			},
		},
	}
}

// biosSettingsValidator checks the form of bios_settings as the controller
// does, naming the attribute at fault (bios_settings["Name"]).
type biosSettingsValidator struct{}

var _ validator.Map = biosSettingsValidator{}

func (biosSettingsValidator) Description(context.Context) string {
	return fmt.Sprintf("at most %d attributes; names start with a letter, then letters, digits, _ . or - (at most 128); "+
		"values are single lines of at most %d bytes", maxBIOSSettings, maxBIOSValueBytes)
}

func (v biosSettingsValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (biosSettingsValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	elems := req.ConfigValue.Elements()
	if len(elems) > maxBIOSSettings {
		resp.Diagnostics.AddAttributeError(req.Path, "Too many BIOS settings",
			fmt.Sprintf("bios_settings holds %d attributes; at most %d are allowed.", len(elems), maxBIOSSettings))
	}
	for _, k := range slices.Sorted(maps.Keys(elems)) {
		at := req.Path.AtMapKey(k)
		if !biosNameRE.MatchString(k) {
			resp.Diagnostics.AddAttributeError(at, "Invalid BIOS attribute name",
				fmt.Sprintf("%q is not a BIOS attribute name: a letter, then letters, digits, _ . or -, at most 128 characters "+
					"(as the BMC's attribute registry names it, e.g. ProcVirtualization).", k))
		}
		s, ok := elems[k].(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			if ok && s.IsNull() {
				resp.Diagnostics.AddAttributeError(at, "Missing BIOS value",
					fmt.Sprintf("bios_settings[%q] is null; give it a value, or remove it to stop managing the attribute.", k))
			}
			continue
		}
		if why := badBIOSValue(s.ValueString()); why != "" {
			resp.Diagnostics.AddAttributeError(at, "Invalid BIOS value", fmt.Sprintf("The value of bios_settings[%q] %s.", k, why))
		}
	}
}

// badBIOSValue says why the controller would refuse v, or "".
func badBIOSValue(v string) string {
	if len(v) > maxBIOSValueBytes {
		return fmt.Sprintf("holds %d bytes; at most %d are allowed", len(v), maxBIOSValueBytes)
	}
	if !utf8.ValidString(v) {
		return "is not valid UTF-8"
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return fmt.Sprintf("must be a single line without control characters (found %U)", r)
		}
	}
	return ""
}

// hardwareUnlessSettingsChange plans hardware as the refresh read it
// unless the update changes bios_settings, secure_boot, raid or
// firmware, which makes the controller apply and read them again.
type hardwareUnlessSettingsChange struct{}

var _ planmodifier.Object = hardwareUnlessSettingsChange{}

const hardwareUnlessSettingsChangeDesc = "Keeps the value the refresh read unless the update changes bios_settings, secure_boot, raid or firmware."

func (hardwareUnlessSettingsChange) Description(context.Context) string {
	return hardwareUnlessSettingsChangeDesc
}

func (hardwareUnlessSettingsChange) MarkdownDescription(context.Context) string {
	return hardwareUnlessSettingsChangeDesc
}

func (hardwareUnlessSettingsChange) PlanModifyObject(ctx context.Context, req planmodifier.ObjectRequest, resp *planmodifier.ObjectResponse) {
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() || !req.PlanValue.IsUnknown() || req.StateValue.IsNull() {
		return
	}
	var planBIOS, stateBIOS types.Map
	var planSB, stateSB types.Bool
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("bios_settings"), &planBIOS)...)
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("bios_settings"), &stateBIOS)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("secure_boot"), &planSB)...)
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("secure_boot"), &stateSB)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var planRAID, stateRAID, planFW, stateFW types.List
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("raid"), &planRAID)...)
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("raid"), &stateRAID)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("firmware"), &planFW)...)
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("firmware"), &stateFW)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, changed := biosPatch(planBIOS, stateBIOS); !changed && planSB.Equal(stateSB) &&
		!raidChanged(planRAID, stateRAID) && !firmwareChanged(planFW, stateFW) {
		resp.PlanValue = req.StateValue
	}
}

// biosMap is a map of strings' members (nil for null, unknown or empty).
func biosMap(m types.Map) map[string]string {
	if m.IsNull() || m.IsUnknown() || len(m.Elements()) == 0 {
		return nil
	}
	out := make(map[string]string, len(m.Elements()))
	for k, v := range m.Elements() {
		if s, ok := v.(types.String); ok {
			out[k] = s.ValueString()
		}
	}
	return out
}

// biosPatch is the merge patch of bios_settings from state to plan: the
// whole planned map when it differs from the state (which holds what the
// BMC has, so drift differs too), every attribute the state has and the
// plan no longer sets as null (no longer managed). Null and {} are the
// same: no settings. An unknown plan is a change.
func biosPatch(plan, state types.Map) (map[string]*string, bool) {
	if !plan.IsUnknown() && maps.Equal(biosMap(plan), biosMap(state)) {
		return nil, false
	}
	p := map[string]*string{}
	for k, v := range biosMap(plan) {
		p[k] = &v
	}
	for k := range biosMap(state) {
		if _, ok := p[k]; !ok {
			p[k] = nil
		}
	}
	return p, true
}

// settingsPatch adds the node's hardware settings to p where the plan
// differs from the state; it reports whether it did.
func settingsPatch(p *api.NodePatch, plan, state *nodeResourceModel) bool {
	changed := false
	if bios, ok := biosPatch(plan.BIOSSettings, state.BIOSSettings); ok {
		p.BIOSSettings, changed = bios, true
	}
	if !plan.SecureBoot.Equal(state.SecureBoot) {
		p.SecureBoot, changed = &api.Nullable[bool]{Value: plan.SecureBoot.ValueBoolPointer()}, true
	}
	if raidChanged(plan.RAID, state.RAID) {
		p.RAID, changed = &api.Nullable[[]api.Volume]{Value: volumesFrom(plan.RAID)}, true
	}
	if firmwareChanged(plan.Firmware, state.Firmware) {
		// The whole list, or null: none managed any more.
		var fw *[]api.Firmware
		if l := firmwareFrom(plan.Firmware); len(l) > 0 {
			fw = &l
		}
		p.Firmware, changed = &api.Nullable[[]api.Firmware]{Value: fw}, true
	}
	return changed
}

// setSettingsFromAPI sets bios_settings and secure_boot from what the
// BMC has of the settings the controller holds for the node, as the
// controller last read them: a change made on the BMC shows as drift.
// An attribute never read (or that the BMC does not report) shows the
// declared value, and so do all of them while the controller applies
// them or waits to (configuring, hardware.waiting): the apply that asked
// for them is done, what remains is the controller's.
func (m *nodeResourceModel) setSettingsFromAPI(n *api.Node) diag.Diagnostics {
	var diags diag.Diagnostics
	hw := n.Hardware
	if hw == nil || n.ProvisionState == api.StateConfiguring || hw.Waiting {
		hw = &api.NodeHardware{}
	}
	if len(n.BIOSSettings) == 0 && (m.BIOSSettings.IsNull() || m.BIOSSettings.IsUnknown()) {
		m.BIOSSettings = types.MapNull(types.StringType)
	} else {
		vals := make(map[string]attr.Value, len(n.BIOSSettings))
		for k, v := range n.BIOSSettings {
			if is, ok := hw.BIOS[k]; ok {
				v = is
			}
			vals[k] = types.StringValue(v)
		}
		var d diag.Diagnostics
		m.BIOSSettings, d = types.MapValue(types.StringType, vals)
		diags.Append(d...)
	}
	m.SecureBoot = types.BoolPointerValue(n.SecureBoot)
	if n.SecureBoot != nil && hw.SecureBoot != nil {
		m.SecureBoot = types.BoolValue(*hw.SecureBoot)
	}
	diags.Append(m.setRAIDFirmwareFromAPI(n, hw)...)
	return diags
}

// hardwareObject is the node's hardware attribute.
func hardwareObject(n *api.Node) (types.Object, diag.Diagnostics) {
	hw := n.Hardware
	if hw == nil {
		hw = &api.NodeHardware{}
	}
	var diags diag.Diagnostics
	list := func(s []string) types.List {
		elems := make([]attr.Value, len(s))
		for i, e := range s {
			elems[i] = types.StringValue(e)
		}
		l, d := types.ListValue(types.StringType, elems)
		diags.Append(d...)
		return l
	}
	readAt := types.StringNull()
	if hw.ReadAt != nil {
		readAt = types.StringValue(hw.ReadAt.UTC().Format(time.RFC3339))
	}
	obj, d := types.ObjectValue(hardwareAttrTypes, map[string]attr.Value{
		"read_at": readAt,
		"unmet":   list(hw.Unmet),
		"lacks":   list(hw.Lacks),
		"waiting": types.BoolValue(hw.Waiting),
	})
	diags.Append(d...)
	return obj, diags
}

// declaresSettings reports whether the plan manages hardware settings.
func (m *nodeResourceModel) declaresSettings() bool {
	return len(biosMap(m.BIOSSettings)) > 0 || !m.SecureBoot.IsNull() || !m.RAID.IsNull() || len(firmwareFrom(m.Firmware)) > 0
}

// settingsPending reports whether the controller is applying n's
// hardware settings, or will by itself once the work under way ends
// (inspection, cleanup): what an apply waits for. Settings that wait for
// an instance to go, or for an operator to end maintenance, are not.
func settingsPending(n *api.Node) bool {
	if n.ProvisionState == api.StateConfiguring {
		return true
	}
	if n.Hardware == nil || !n.Hardware.Waiting || n.InstanceID != "" || n.Maintenance {
		return false
	}
	return n.ProvisionState == api.StateInspecting || n.ProvisionState == api.StateCleaning
}

// waitConfigured waits while the controller applies the node's hardware
// settings (settingsPending), logging each step of the configure flow
// (TF_LOG=info shows them).
func waitConfigured(ctx context.Context, c *apiclient.Client, id string, timeout time.Duration) (*api.Node, error) {
	started, logged := time.Now(), ""
	node, err := waitFor(ctx, "node "+id+" to be configured", func(ctx context.Context) (*api.Node, error) {
		return c.GetNode(ctx, id)
	}, func(n *api.Node) (bool, error) {
		if n.ProvisionState == api.StateDeleting {
			return false, fmt.Errorf("node %s is being deleted (by someone else?) while its hardware settings were being applied", n.Name)
		}
		if !settingsPending(n) {
			return true, nil
		}
		line := "waiting for the " + string(n.ProvisionState) + " to end"
		if n.ProvisionState == api.StateConfiguring {
			line = "applying hardware settings"
			if f := n.Flow; f != nil && f.Name == "configure" {
				line += fmt.Sprintf(": step %s (%d of %d)", f.Step, f.StepIndex+1, len(f.Steps))
			}
		}
		if n.Fault != "" {
			line += fmt.Sprintf("; the controller is retrying through fault %s: %s", n.Fault, n.LastError)
		}
		if line != logged {
			logged = line
			tflog.Info(ctx, "node "+n.Name+": "+line, map[string]any{"elapsed": time.Since(started).Round(time.Second).String()})
		}
		return false, nil
	})
	switch {
	case err == nil:
		return node, nil
	case errors.Is(err, errWaitTimeout) && node != nil:
		msg := fmt.Sprintf("The controller did not finish applying the hardware settings of node %s within %s: it is still in "+
			"provision_state %q", node.Name, timeout, node.ProvisionState)
		if f := node.Flow; f != nil {
			msg += fmt.Sprintf(" at step %s of its %s", f.Step, f.Name)
		}
		if node.Fault != "" {
			msg += fmt.Sprintf(" with fault %q (last error: %s)", node.Fault, orNone(node.LastError))
		}
		msg += ".\n\nThe controller goes on by itself; the next refresh shows what the BMC has. Raise the timeout, or set " +
			"wait_for_available = false not to wait."
		return node, errors.New(msg)
	case errors.Is(err, apiclient.ErrNotFound):
		return nil, fmt.Errorf("node %s was deleted while its hardware settings were being applied", id)
	default:
		return node, err
	}
}

// addSettingsOutcome reports what became of the settings an apply asked
// for (n is the node after the wait, waited whether the apply waited for
// the controller to apply them): the controller's refusal as an error on
// the attribute it names, settings left waiting as a warning.
func addSettingsOutcome(diags *diag.Diagnostics, n *api.Node, plan *nodeResourceModel, waited bool, next string) {
	name := n.Name
	switch {
	case waited && n.ProvisionState == api.StateAvailable && strings.HasPrefix(n.LastError, hardwareErrorPrefix):
		diags.AddAttributeError(settingsErrorPath(n.LastError, plan), "The hardware settings of node "+name+" were not applied",
			fmt.Sprintf("The controller answered: %s\n\nThe node is available without them (no fault, no maintenance). %s",
				n.LastError, next))
	case n.Hardware != nil && n.Hardware.Waiting && n.InstanceID != "":
		diags.AddWarning("The hardware settings of node "+name+" wait for the node to be free",
			fmt.Sprintf("Node %s holds instance %s, and the controller does not reset a machine under a running instance: it applies "+
				"the settings once the instance is gone and the node is cleaned, before it takes another (hardware.waiting). "+
				"Plans show the declared values meanwhile.", name, n.InstanceID))
	case n.Hardware != nil && n.Hardware.Waiting && n.Maintenance:
		diags.AddWarning("The hardware settings of node "+name+" wait for maintenance to end",
			fmt.Sprintf("Node %s is in maintenance (%s), and the controller acts on nothing in maintenance: it applies the settings "+
				"once maintenance ends (hardware.waiting).", name, orNone(n.MaintenanceReason)))
	case n.ProvisionState == api.StateConfiguring && n.Maintenance:
		diags.AddWarning("The hardware settings of node "+name+" wait for maintenance to end",
			fmt.Sprintf("Node %s is configuring but in maintenance (%s), and the controller acts on nothing in maintenance: "+
				"the settings are applied once maintenance ends.", name, orNone(n.MaintenanceReason)))
	}
}

// settingsErrorPath is the attribute a refusal names: the declared BIOS
// attribute its text names first (as bios_settings.Name or by its name
// alone), else the volume or firmware component it names (or raid or
// firmware as a whole), else secure_boot when it names that, else the
// whole of bios_settings.
func settingsErrorPath(msg string, plan *nodeResourceModel) path.Path {
	best, at := -1, path.Root("bios_settings")
	for k := range biosMap(plan.BIOSSettings) {
		if i := nameIndex(msg, k); i >= 0 && (best < 0 || i < best) {
			best, at = i, path.Root("bios_settings").AtMapKey(k)
		}
	}
	if best < 0 {
		if at, ok := raidFirmwareErrorPath(msg, plan); ok {
			return at
		}
	}
	if best < 0 && !plan.SecureBoot.IsNull() && (strings.Contains(msg, "secure_boot") || strings.Contains(msg, "Secure Boot") ||
		len(biosMap(plan.BIOSSettings)) == 0) {
		return path.Root("secure_boot")
	}
	if best < 0 && len(biosMap(plan.BIOSSettings)) == 0 {
		switch {
		case !plan.RAID.IsNull():
			return path.Root("raid")
		case len(firmwareFrom(plan.Firmware)) > 0:
			return path.Root("firmware")
		}
	}
	return at
}

// nameIndex is where msg first names the BIOS attribute name as a whole
// (not as part of a longer name; a full stop after it ends a sentence),
// or -1.
func nameIndex(msg, name string) int {
	for from := 0; ; {
		j := strings.Index(msg[from:], name)
		if j < 0 {
			return -1
		}
		i, end := from+j, from+j+len(name)
		before := i == 0 || !isBIOSNameChar(msg[i-1]) || strings.HasSuffix(msg[:i], "bios_settings.")
		after := end == len(msg) || !isBIOSNameChar(msg[end]) ||
			msg[end] == '.' && (end+1 == len(msg) || !isBIOSNameChar(msg[end+1]))
		if before && after {
			return i
		}
		from = i + 1
	}
}

func isBIOSNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}
