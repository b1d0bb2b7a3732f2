package provider

import (
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// A node as Terraform holds it, and the conversions between it and the
// API's node: the resource and both data sources read nodes through
// these, and the resource writes them through nodeCreate and nodePatch.

// nodeModel is what the three node schemas share: baremetal_node (the
// resource and the data source) and the elements of baremetal_nodes show
// these attributes alike, filled by setFromAPI (the inventory by
// readInventory).
type nodeModel struct {
	ID                types.String `tfsdk:"id"`
	Name              types.String `tfsdk:"name"`
	Driver            types.String `tfsdk:"driver"`
	ResourceClass     types.String `tfsdk:"resource_class"`
	Traits            types.Set    `tfsdk:"traits"`
	DerivedTraits     types.Set    `tfsdk:"derived_traits"`
	Owner             types.String `tfsdk:"owner"`
	Properties        types.Object `tfsdk:"properties"`
	PropertyOverrides types.Set    `tfsdk:"property_overrides"`
	Maintenance       types.Bool   `tfsdk:"maintenance"`
	InspectOnEnroll   types.Bool   `tfsdk:"inspect_on_enroll"`
	PowerState        types.String `tfsdk:"power_state"`
	ProvisionState    types.String `tfsdk:"provision_state"`
	Fault             types.String `tfsdk:"fault"`
	LastError         types.String `tfsdk:"last_error"`
	InstanceID        types.String `tfsdk:"instance_id"`
	Inventory         types.Object `tfsdk:"inventory"`
	Ports             types.List   `tfsdk:"ports"`
}

// nodeResourceModel is baremetal_node, the resource: the node with its BMC
// and the provider's own settings.
type nodeResourceModel struct {
	nodeModel
	BMC               *nodeBMCModel  `tfsdk:"bmc"`
	MaintenanceReason types.String   `tfsdk:"maintenance_reason"`
	CleanErase        types.String   `tfsdk:"clean_erase"`
	BIOSSettings      types.Map      `tfsdk:"bios_settings"`
	SecureBoot        types.Bool     `tfsdk:"secure_boot"`
	RAID              types.List     `tfsdk:"raid"`
	Firmware          types.List     `tfsdk:"firmware"`
	Hardware          types.Object   `tfsdk:"hardware"`
	WaitForAvailable  types.Bool     `tfsdk:"wait_for_available"`
	ForceDestroy      types.Bool     `tfsdk:"force_destroy"`
	Timeouts          timeouts.Value `tfsdk:"timeouts"`
}

type nodeBMCModel struct {
	Address           types.String `tfsdk:"address"`
	Username          types.String `tfsdk:"username"`
	Password          types.String `tfsdk:"password"`
	PasswordWO        types.String `tfsdk:"password_wo"`
	PasswordWOVersion types.Int64  `tfsdk:"password_wo_version"`
	Insecure          types.Bool   `tfsdk:"insecure"`
	SystemID          types.String `tfsdk:"system_id"`
	CipherSuite       types.Int64  `tfsdk:"cipher_suite"`
}

// nodeDataModel is a node as data sources show it: capacity and health,
// never BMC credentials.
type nodeDataModel struct {
	nodeModel
	MaintenanceReason types.String `tfsdk:"maintenance_reason"`
	CleanErase        types.String `tfsdk:"clean_erase"`
	FaultSince        types.String `tfsdk:"fault_since"`
	BIOSSettings      types.Map    `tfsdk:"bios_settings"`
	SecureBoot        types.Bool   `tfsdk:"secure_boot"`
	Hardware          types.Object `tfsdk:"hardware"`
	Health            types.Object `tfsdk:"health"`
}

// healthAttrTypes are the data sources' health attribute's.
var healthAttrTypes = map[string]attr.Type{
	"state": types.StringType, "reasons": types.ListType{ElemType: types.StringType}, "hottest_c": types.Float64Type,
	"fans_failed": types.Int64Type, "psus_failed": types.Int64Type, "read_at": types.StringType,
}

// healthObject is a node's health as the data sources show it.
func healthObject(h api.NodeHealth) (types.Object, diag.Diagnostics) {
	var diags diag.Diagnostics
	reasons := make([]attr.Value, len(h.Reasons))
	for i, r := range h.Reasons {
		reasons[i] = types.StringValue(r)
	}
	l, d := types.ListValue(types.StringType, reasons)
	diags.Append(d...)
	readAt := types.StringNull()
	if h.ReadAt != nil {
		readAt = types.StringValue(h.ReadAt.UTC().Format(time.RFC3339))
	}
	state := h.State
	if state == "" {
		state = "unknown"
	}
	obj, d := types.ObjectValue(healthAttrTypes, map[string]attr.Value{
		"state": types.StringValue(state), "reasons": l, "hottest_c": types.Float64Value(h.HottestC),
		"fans_failed": types.Int64Value(int64(h.FansFailed)), "psus_failed": types.Int64Value(int64(h.PSUsFailed)), "read_at": readAt,
	})
	diags.Append(d...)
	return obj, diags
}

// nodeAttrs lets API field paths find their attribute.
var nodeAttrs = map[string]attrKind{
	"name": attrPlain, "driver": attrPlain, "bmc": attrObject, "resource_class": attrPlain,
	"properties": attrObject, "maintenance": attrPlain, "maintenance_reason": attrPlain,
	"clean_erase": attrPlain, "inspect_on_enroll": attrPlain, "traits": attrPlain, "owner": attrPlain,
	"bios_settings": attrMap, "secure_boot": attrPlain, "raid": attrList, "firmware": attrList,
}

var propertiesAttrTypes = map[string]attr.Type{
	"cpus":      types.Int64Type,
	"memory_mb": types.Int64Type,
	"local_gb":  types.Int64Type,
	"cpu_arch":  types.StringType,
}

// setFromAPI copies the node's shared attributes into the model; the
// inventory is left as it is, for readInventory, which keeps one it
// already has.
func (m *nodeModel) setFromAPI(n *api.Node) diag.Diagnostics {
	m.ID = types.StringValue(n.ID)
	m.Name = types.StringValue(n.Name)
	m.Driver = types.StringValue(string(n.Driver))
	m.ResourceClass = types.StringValue(n.ResourceClass)
	var diags diag.Diagnostics
	m.Traits = traitsSet(n.Traits, &diags)
	m.DerivedTraits = traitsSet(n.DerivedTraits, &diags)
	m.Owner = types.StringValue(n.Owner)
	var d diag.Diagnostics
	m.Properties, d = propertiesObject(n.Properties)
	diags.Append(d...)
	overrides, d := propertyOverridesSet(n.PropertyOverrides)
	diags.Append(d...)
	m.PropertyOverrides = overrides
	m.Maintenance = types.BoolValue(n.Maintenance)
	m.InspectOnEnroll = types.BoolPointerValue(n.InspectOnEnroll)
	m.PowerState = types.StringValue(string(n.PowerState))
	m.ProvisionState = types.StringValue(string(n.ProvisionState))
	m.Fault = types.StringValue(string(n.Fault))
	m.LastError = types.StringValue(n.LastError)
	m.InstanceID = types.StringValue(n.InstanceID)
	ports, d := portsList(n.Ports)
	diags.Append(d...)
	m.Ports = ports
	return diags
}

// setFromAPI copies the node into the model. The BMC password is not in
// the API's answer: bmc.password and password_wo_version are kept from
// secrets (nil: unknown, as after an import). bmc.password_wo is always
// null here, which is how it stays out of the state.
func (m *nodeResourceModel) setFromAPI(n *api.Node, secrets *nodeBMCModel) diag.Diagnostics {
	prevTraits := m.Traits
	diags := m.nodeModel.setFromAPI(n)
	// Optional arguments: null when unset, as in the configuration
	// (traits = [] stays empty).
	m.Traits = traitsOrNull(n.Traits, prevTraits, &diags)
	m.Owner = stringOrNull(n.Owner)
	if n.BMC != nil {
		password, version, systemID := types.StringNull(), types.Int64Null(), types.StringNull()
		if secrets != nil {
			password, version, systemID = secrets.Password, secrets.PasswordWOVersion, secrets.SystemID
		}
		m.BMC = &nodeBMCModel{
			Address:           types.StringValue(n.BMC.Address),
			Username:          types.StringValue(n.BMC.Username),
			Password:          password,
			PasswordWO:        types.StringNull(),
			PasswordWOVersion: version,
			Insecure:          types.BoolValue(n.BMC.Insecure),
			SystemID:          systemIDFrom(n.BMC.SystemID, systemID),
			CipherSuite:       types.Int64Value(int64(n.BMC.CipherSuite)),
		}
	}
	m.MaintenanceReason = stringOrNull(n.MaintenanceReason)
	m.CleanErase = stringOrNull(string(n.CleanErase))
	hw, d := hardwareObject(n)
	diags.Append(d...)
	m.Hardware = hw
	return diags
}

func (m *nodeDataModel) setFromAPI(n *api.Node) diag.Diagnostics {
	diags := m.nodeModel.setFromAPI(n)
	// Computed only: empty, not null, when unset.
	m.MaintenanceReason = types.StringValue(n.MaintenanceReason)
	m.CleanErase = types.StringValue(string(n.CleanErase))
	m.FaultSince = types.StringValue("")
	if n.FaultSince != nil {
		m.FaultSince = types.StringValue(n.FaultSince.UTC().Format(time.RFC3339))
	}
	// Declared, not observed: hardware.unmet says what the BMC lacks of it.
	bios := make(map[string]attr.Value, len(n.BIOSSettings))
	for k, v := range n.BIOSSettings {
		bios[k] = types.StringValue(v)
	}
	var d diag.Diagnostics
	m.BIOSSettings, d = types.MapValue(types.StringType, bios)
	diags.Append(d...)
	m.SecureBoot = types.BoolPointerValue(n.SecureBoot)
	m.Hardware, d = hardwareObject(n)
	diags.Append(d...)
	m.Health, d = healthObject(n.Health)
	diags.Append(d...)
	return diags
}

func propertiesObject(p api.Properties) (types.Object, diag.Diagnostics) {
	return types.ObjectValue(propertiesAttrTypes, map[string]attr.Value{
		"cpus":      types.Int64Value(int64(p.CPUs)),
		"memory_mb": types.Int64Value(int64(p.MemoryMB)),
		"local_gb":  types.Int64Value(int64(p.LocalGB)),
		"cpu_arch":  types.StringValue(p.CPUArch),
	})
}

func propertyOverridesSet(names []api.PropertyName) (types.Set, diag.Diagnostics) {
	elems := make([]attr.Value, len(names))
	for i, n := range names {
		elems[i] = types.StringValue(string(n))
	}
	return types.SetValue(types.StringType, elems)
}

// keepPlannedObservations puts back what the plan promised for the
// attributes the controller observes (see planmodifiers.go).
func (m *nodeResourceModel) keepPlannedObservations(planned *nodeResourceModel) diag.Diagnostics {
	keepKnown(&m.PowerState, planned.PowerState)
	keepKnown(&m.ProvisionState, planned.ProvisionState)
	keepKnown(&m.Fault, planned.Fault)
	keepKnown(&m.LastError, planned.LastError)
	keepKnown(&m.InstanceID, planned.InstanceID)
	keepKnown(&m.DerivedTraits, planned.DerivedTraits)
	m.keepPlannedMaintenance(planned)
	// An update never changes the inventory: the plan kept the state's.
	keepKnown(&m.Inventory, planned.Inventory)
	keepKnown(&m.Ports, planned.Ports)
	keepKnown(&m.Hardware, planned.Hardware)
	return keepKnownMembers(&m.Properties, planned.Properties)
}

// keepPlannedMaintenance puts back the planned maintenance: not an
// observation, but an operator may set it between plan and apply too
// (while a create or an update waits, say) where the configuration leaves
// it to operators, and the next refresh shows it.
func (m *nodeResourceModel) keepPlannedMaintenance(planned *nodeResourceModel) {
	keepKnown(&m.Maintenance, planned.Maintenance)
	keepKnown(&m.MaintenanceReason, planned.MaintenanceReason)
}

// passwordPath is the attribute of the configured password, where a
// refusal of the credentials is reported.
func (b *nodeBMCModel) passwordPath() path.Path {
	if b == nil || b.Password.IsNull() {
		return path.Root("bmc").AtName("password_wo")
	}
	return path.Root("bmc").AtName("password")
}

// password is the password to send: the write-only one when configured.
func (b *nodeBMCModel) password() string {
	if !b.PasswordWO.IsNull() {
		return b.PasswordWO.ValueString()
	}
	return b.Password.ValueString()
}

// nodeCreate is the plan's create request. The plan must hold the
// write-only password, which Create copies in from the configuration.
func nodeCreate(plan *nodeResourceModel) api.NodeCreate {
	return api.NodeCreate{
		Name:   plan.Name.ValueString(),
		Driver: api.Driver(plan.Driver.ValueString()),
		BMC: api.BMCInput{
			Address:     plan.BMC.Address.ValueString(),
			Username:    plan.BMC.Username.ValueString(),
			Password:    plan.BMC.password(),
			Insecure:    plan.BMC.Insecure.ValueBool(),
			SystemID:    plan.BMC.SystemID.ValueString(),
			CipherSuite: int(plan.BMC.CipherSuite.ValueInt64()),
		},
		ResourceClass:     plan.ResourceClass.ValueString(),
		Properties:        overridesFromPlan(plan.Properties, plan.PropertyOverrides),
		Maintenance:       plan.Maintenance.ValueBool(),
		MaintenanceReason: plan.MaintenanceReason.ValueString(),
		CleanErase:        api.CleanErase(plan.CleanErase.ValueString()),
		InspectOnEnroll:   plan.InspectOnEnroll.ValueBoolPointer(),
		Traits:            setStrings(plan.Traits),
		Owner:             plan.Owner.ValueString(),
		BIOSSettings:      biosMap(plan.BIOSSettings),
		SecureBoot:        plan.SecureBoot.ValueBoolPointer(),
		RAID:              volumesFrom(plan.RAID),
		Firmware:          firmwareFrom(plan.Firmware),
	}
}

// nodePatch builds the merge patch from state to plan. The BMC is sent
// whole when any of it (or the driver, which the address must fit)
// changes, the password only when it changed: the controller keeps the
// stored one otherwise.
func nodePatch(plan, state *nodeResourceModel) (api.NodePatch, bool) {
	var p api.NodePatch
	changed := false
	str := func(s types.String) *string { v := s.ValueString(); return &v }
	if !plan.Name.Equal(state.Name) {
		p.Name, changed = str(plan.Name), true
	}
	if !plan.Driver.Equal(state.Driver) {
		d := api.Driver(plan.Driver.ValueString())
		p.Driver, changed = &d, true
	}
	// The password goes out when it may differ from the controller's: a
	// new bmc.password, a new password_wo_version (the only sign of a new
	// write-only password), a switch between the two, or no state of it.
	newPassword := state.BMC == nil || !plan.BMC.Password.Equal(state.BMC.Password) ||
		!plan.BMC.PasswordWOVersion.Equal(state.BMC.PasswordWOVersion)
	if newPassword || !plan.Driver.Equal(state.Driver) ||
		!plan.BMC.Address.Equal(state.BMC.Address) || !plan.BMC.Username.Equal(state.BMC.Username) ||
		!plan.BMC.Insecure.Equal(state.BMC.Insecure) ||
		!plan.BMC.SystemID.Equal(state.BMC.SystemID) || !plan.BMC.CipherSuite.Equal(state.BMC.CipherSuite) {
		insecure := plan.BMC.Insecure.ValueBool()
		cipher := int(plan.BMC.CipherSuite.ValueInt64())
		p.BMC = &api.BMCPatch{
			Address:     str(plan.BMC.Address),
			Username:    str(plan.BMC.Username),
			Insecure:    &insecure,
			SystemID:    str(plan.BMC.SystemID),
			CipherSuite: &cipher,
		}
		if newPassword {
			pw := plan.BMC.password()
			p.BMC.Password = &pw
		}
		changed = true
	}
	if !plan.ResourceClass.Equal(state.ResourceClass) {
		p.ResourceClass, changed = str(plan.ResourceClass), true
	}
	if !plan.Properties.Equal(state.Properties) || !plan.PropertyOverrides.Equal(state.PropertyOverrides) {
		p.Properties, changed = propertiesPatch(plan.Properties, plan.PropertyOverrides), true
	}
	if !plan.Maintenance.Equal(state.Maintenance) || !plan.MaintenanceReason.Equal(state.MaintenanceReason) {
		m := plan.Maintenance.ValueBool()
		p.Maintenance, p.MaintenanceReason, changed = &m, str(plan.MaintenanceReason), true
	}
	if !plan.CleanErase.Equal(state.CleanErase) {
		mode := api.CleanErase(plan.CleanErase.ValueString()) // null: "", the class's or the controller's
		p.CleanErase, changed = &mode, true
	}
	// Null and [] are both no traits (the plan's values are known at apply).
	if !slices.Equal(setStrings(plan.Traits), setStrings(state.Traits)) {
		traits := setStrings(plan.Traits)
		if traits == nil {
			traits = []string{} // clears them
		}
		p.Traits, changed = &traits, true
	}
	if !plan.Owner.Equal(state.Owner) {
		p.Owner, changed = str(plan.Owner), true // null: "", any project
	}
	if !plan.InspectOnEnroll.Equal(state.InspectOnEnroll) {
		// null unsets it: the node follows --inspect-on-enroll again.
		p.InspectOnEnroll, changed = &api.Nullable[bool]{Value: plan.InspectOnEnroll.ValueBoolPointer()}, true
	}
	if settingsPatch(&p, plan, state) {
		changed = true
	}
	return p, changed
}

// overridesFromPlan returns the planned properties that are overrides
// (named in the planned property_overrides); the others are sent empty,
// which leaves them to inspection.
func overridesFromPlan(props types.Object, overrides types.Set) api.Properties {
	var p api.Properties
	if props.IsNull() || props.IsUnknown() {
		return p
	}
	names := setNames(overrides)
	attrs := props.Attributes()
	if v, ok := attrs["cpus"].(basetypes.Int64Value); ok && names[api.PropertyCPUs] {
		p.CPUs = int(v.ValueInt64())
	}
	if v, ok := attrs["memory_mb"].(basetypes.Int64Value); ok && names[api.PropertyMemoryMB] {
		p.MemoryMB = int(v.ValueInt64())
	}
	if v, ok := attrs["local_gb"].(basetypes.Int64Value); ok && names[api.PropertyLocalGB] {
		p.LocalGB = int(v.ValueInt64())
	}
	if v, ok := attrs["cpu_arch"].(basetypes.StringValue); ok && names[api.PropertyCPUArch] {
		p.CPUArch = v.ValueString()
	}
	return p
}

// propertiesPatch is the merge patch of the node's overrides: each
// planned override with its value, every other property null, which
// clears an override the configuration no longer sets.
func propertiesPatch(props types.Object, overrides types.Set) *api.PropertiesPatch {
	p := overridesFromPlan(props, overrides)
	names := setNames(overrides)
	var out api.PropertiesPatch
	if names[api.PropertyCPUs] {
		out.CPUs = &p.CPUs
	}
	if names[api.PropertyMemoryMB] {
		out.MemoryMB = &p.MemoryMB
	}
	if names[api.PropertyLocalGB] {
		out.LocalGB = &p.LocalGB
	}
	if names[api.PropertyCPUArch] {
		out.CPUArch = &p.CPUArch
	}
	return &out
}

func setNames(s types.Set) map[api.PropertyName]bool {
	names := map[api.PropertyName]bool{}
	if s.IsNull() || s.IsUnknown() {
		return names
	}
	for _, e := range s.Elements() {
		if v, ok := e.(types.String); ok {
			names[api.PropertyName(v.ValueString())] = true
		}
	}
	return names
}
