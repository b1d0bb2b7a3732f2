package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// A node's ports are one attribute of baremetal_node (resource),
// baremetal_node and baremetal_nodes (data sources), described once as
// the inventory is (inventoryField) and built into either kind of schema.

const portsDesc = "The node's NICs as its last inspection found them, in name order, each with the switch port it is " +
	"cabled to where the deploy agent heard LLDP (the controller's `--inspect-lldp-wait`), so configurations can refer to " +
	"NICs by `mac` or by switch port. Empty before the first inspection. Unlike `inventory`, every token that can read the node sees them."

var portsField = inventoryField{name: "ports", desc: portsDesc, nested: []inventoryField{
	{name: "name", desc: "The NIC's name in the deploy agent's kernel, e.g. `eno1`. The installed OS usually names it alike, but only `mac` is sure.", typ: types.StringType},
	{name: "mac", desc: "MAC address, lower case with colons.", typ: types.StringType},
	{name: "link_up", desc: "Whether the link was up at inspection.", typ: types.BoolType},
	{name: "speed_mbps", desc: "Negotiated link speed in Mbit/s at inspection; 0 when the link was down or the driver did not report it.", typ: types.Int64Type},
	{name: "lldp", desc: "The switch port the NIC is cabled to, as the switch announced it by LLDP during inspection; " +
		"null when none was heard (link down, LLDP off on the switch, or the controller does not listen).", single: true, nested: []inventoryField{
		{name: "switch_chassis_id", desc: "The switch's chassis ID, often its MAC address (`aa:bb:cc:dd:ee:ff`); a network address shows as an IP address, other kinds as sent.", typ: types.StringType},
		{name: "switch_system_name", desc: "The switch's host name, or empty when it sent none.", typ: types.StringType},
		{name: "switch_port_id", desc: "The switch port's ID, often its name (`Ethernet1/7`, `ge-0/0/12`).", typ: types.StringType},
		{name: "switch_port_description", desc: "The port's description as configured on the switch, or empty.", typ: types.StringType},
		{name: "vlan_id", desc: "The port's untagged VLAN (IEEE 802.1 port VLAN ID); 0 when the switch did not say.", typ: types.Int64Type},
	}},
}}

var (
	portsAttrTypes = attrTypesOf([]inventoryField{portsField})
	portAttrTypes  = portsAttrTypes["ports"].(types.ListType).ElemType.(types.ObjectType).AttrTypes
	portLLDPTypes  = portAttrTypes["lldp"].(types.ObjectType).AttrTypes
)

// portsDataSourceAttribute is the data sources' ports.
func portsDataSourceAttribute() dschema.Attribute {
	return dataSourceAttrs([]inventoryField{portsField})["ports"]
}

// portsResourceAttribute is baremetal_node's ports. Only an inspection
// changes them, never an update of the node: plans keep the state's
// value (a quiet plan), and the refresh after an inspection reads the new
// ones.
func portsResourceAttribute() rschema.Attribute {
	a := resourceAttrs([]inventoryField{portsField})["ports"].(rschema.ListNestedAttribute)
	a.MarkdownDescription += " Read on refresh: a new inspection shows after the next refresh, without a diff."
	a.PlanModifiers = []planmodifier.List{keepStateList{}}
	return a
}

// portsList is the ports attribute's value of a node's ports.
func portsList(ports []api.NodePort) (types.List, diag.Diagnostics) {
	var diags diag.Diagnostics
	elems := make([]attr.Value, 0, len(ports))
	for _, p := range ports {
		lldp := types.ObjectNull(portLLDPTypes)
		if l := p.LLDP; l != nil {
			var ds diag.Diagnostics
			lldp, ds = types.ObjectValue(portLLDPTypes, map[string]attr.Value{
				"switch_chassis_id": types.StringValue(l.SwitchChassisID), "switch_system_name": types.StringValue(l.SwitchSystemName),
				"switch_port_id": types.StringValue(l.SwitchPortID), "switch_port_description": types.StringValue(l.SwitchPortDescription),
				"vlan_id": types.Int64Value(int64(l.VLANID)),
			})
			diags.Append(ds...)
		}
		o, ds := types.ObjectValue(portAttrTypes, map[string]attr.Value{
			"name": types.StringValue(p.Name), "mac": types.StringValue(p.MAC), "link_up": types.BoolValue(p.LinkUp),
			"speed_mbps": types.Int64Value(int64(p.SpeedMbps)), "lldp": lldp,
		})
		diags.Append(ds...)
		elems = append(elems, o)
	}
	l, ds := types.ListValue(types.ObjectType{AttrTypes: portAttrTypes}, elems)
	diags.Append(ds...)
	return l, diags
}

// keepStateList plans the state's list on an update, as keepStateObject
// does the inventory: the ports are the last inspection's, which no
// update of the node changes.
type keepStateList struct{}

var _ planmodifier.List = keepStateList{}

func (keepStateList) Description(context.Context) string {
	return "Keeps the state's value on an update."
}

func (m keepStateList) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (keepStateList) PlanModifyList(_ context.Context, req planmodifier.ListRequest, resp *planmodifier.ListResponse) {
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() || !req.PlanValue.IsUnknown() {
		return
	}
	resp.PlanValue = req.StateValue
}
