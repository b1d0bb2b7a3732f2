package provider

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// A node's read-only inventory is the same attribute on baremetal_node
// (resource), baremetal_node and baremetal_nodes (data sources). The two
// kinds of schema are different Go types, so the attribute is described
// once here, as data, and built into either.

// inventoryField is one attribute of the inventory: a leaf of type typ,
// or (typ nil) a list of objects with the fields nested, or (single) one
// such object.
type inventoryField struct {
	name, desc string
	typ        attr.Type
	nested     []inventoryField
	single     bool
}

const inventoryDesc = "The hardware the deploy agent reported when the node was last inspected " +
	"(`controller node inspect`, or `POST /v1/nodes/{id}/inspect`). Null when the node was never inspected, " +
	"and for a provider whose token is a member's: inventories are for admins."

var inventoryFields = []inventoryField{
	{name: "inspected_at", desc: "When the deploy agent reported it (RFC 3339).", typ: types.StringType},
	{name: "cpus", desc: "Logical CPUs.", typ: types.Int64Type},
	{name: "memory_bytes", desc: "Memory the deploy agent's kernel could use (MemTotal), in bytes: less than installed, by what the firmware and the kernel keep.", typ: types.Int64Type},
	{name: "installed_memory_bytes", desc: "Memory installed, in bytes: the memory devices (DIMMs) the firmware's SMBIOS tables list, as the BMC counts it and as inspection records `memory_mb`; 0 when the tables list none.", typ: types.Int64Type},
	{name: "disks", desc: "Block devices backed by hardware (removable ones included), as the kernel names them.", nested: []inventoryField{
		{name: "name", desc: "Kernel name, e.g. `sda`, `nvme0n1` (the `name` root device hint).", typ: types.StringType},
		{name: "size_bytes", desc: "Size in bytes.", typ: types.Int64Type},
		{name: "model", desc: "Model, or empty.", typ: types.StringType},
		{name: "serial", desc: "Serial number, or empty.", typ: types.StringType},
		{name: "wwn", desc: "World Wide Name, or empty.", typ: types.StringType},
		{name: "rotational", desc: "Whether it is a spinning disk.", typ: types.BoolType},
	}},
	{name: "system", desc: "The machine, from its firmware (DMI), and how it booted the deploy agent.", single: true, nested: []inventoryField{
		{name: "vendor", desc: "System manufacturer, or empty.", typ: types.StringType},
		{name: "product", desc: "Product name, or empty.", typ: types.StringType},
		{name: "serial", desc: "System serial number, or empty.", typ: types.StringType},
		{name: "uuid", desc: "System UUID, or empty.", typ: types.StringType},
		{name: "boot_mode", desc: "How the firmware booted the deploy agent: `uefi` or `bios` (empty from agents that did not report it).", typ: types.StringType},
		{name: "secure_boot", desc: "Whether UEFI Secure Boot was on (`false` on BIOS); null when the deploy agent could not read the UEFI variables.", typ: types.BoolType},
	}},
	{name: "nics", desc: "Ethernet interfaces backed by hardware.", nested: []inventoryField{
		{name: "name", desc: "Interface name in the deploy agent, e.g. `eth0`.", typ: types.StringType},
		{name: "mac", desc: "MAC address.", typ: types.StringType},
		{name: "speed_mbps", desc: "Negotiated link speed in Mbit/s at inspection; 0 when the link was down or the driver did not report it.", typ: types.Int64Type},
	}},
}

func attrTypesOf(fields []inventoryField) map[string]attr.Type {
	out := make(map[string]attr.Type, len(fields))
	for _, f := range fields {
		switch {
		case f.single:
			out[f.name] = types.ObjectType{AttrTypes: attrTypesOf(f.nested)}
		case f.typ == nil:
			out[f.name] = types.ListType{ElemType: types.ObjectType{AttrTypes: attrTypesOf(f.nested)}}
		default:
			out[f.name] = f.typ
		}
	}
	return out
}

var (
	inventoryAttrTypes = attrTypesOf(inventoryFields)
	diskAttrTypes      = inventoryAttrTypes["disks"].(types.ListType).ElemType.(types.ObjectType).AttrTypes
	nicAttrTypes       = inventoryAttrTypes["nics"].(types.ListType).ElemType.(types.ObjectType).AttrTypes
	systemAttrTypes    = inventoryAttrTypes["system"].(types.ObjectType).AttrTypes
)

func dataSourceAttrs(fields []inventoryField) map[string]dschema.Attribute {
	out := make(map[string]dschema.Attribute, len(fields))
	for _, f := range fields {
		switch f.typ {
		case types.StringType:
			out[f.name] = dschema.StringAttribute{MarkdownDescription: f.desc, Computed: true}
		case types.Int64Type:
			out[f.name] = dschema.Int64Attribute{MarkdownDescription: f.desc, Computed: true}
		case types.BoolType:
			out[f.name] = dschema.BoolAttribute{MarkdownDescription: f.desc, Computed: true}
		case nil:
			if f.single {
				out[f.name] = dschema.SingleNestedAttribute{MarkdownDescription: f.desc, Computed: true, Attributes: dataSourceAttrs(f.nested)}
				continue
			}
			out[f.name] = dschema.ListNestedAttribute{MarkdownDescription: f.desc, Computed: true,
				NestedObject: dschema.NestedAttributeObject{Attributes: dataSourceAttrs(f.nested)}}
		}
	}
	return out
}

func resourceAttrs(fields []inventoryField) map[string]rschema.Attribute {
	out := make(map[string]rschema.Attribute, len(fields))
	for _, f := range fields {
		switch f.typ {
		case types.StringType:
			out[f.name] = rschema.StringAttribute{MarkdownDescription: f.desc, Computed: true}
		case types.Int64Type:
			out[f.name] = rschema.Int64Attribute{MarkdownDescription: f.desc, Computed: true}
		case types.BoolType:
			out[f.name] = rschema.BoolAttribute{MarkdownDescription: f.desc, Computed: true}
		case nil:
			if f.single {
				out[f.name] = rschema.SingleNestedAttribute{MarkdownDescription: f.desc, Computed: true, Attributes: resourceAttrs(f.nested)}
				continue
			}
			out[f.name] = rschema.ListNestedAttribute{MarkdownDescription: f.desc, Computed: true,
				NestedObject: rschema.NestedAttributeObject{Attributes: resourceAttrs(f.nested)}}
		}
	}
	return out
}

// inventoryDataSourceAttribute is the data sources' inventory.
func inventoryDataSourceAttribute() dschema.SingleNestedAttribute {
	return dschema.SingleNestedAttribute{MarkdownDescription: inventoryDesc, Computed: true, Attributes: dataSourceAttrs(inventoryFields)}
}

// inventoryResourceAttribute is baremetal_node's inventory. Only an
// inspection changes it, never an update of the node: plans keep the
// state's value (a quiet plan), and the refresh after an inspection
// reads the new one.
func inventoryResourceAttribute() rschema.SingleNestedAttribute {
	return rschema.SingleNestedAttribute{
		MarkdownDescription: inventoryDesc + " Read on refresh: an inspection shows after the next refresh, without a diff.",
		Computed:            true,
		Attributes:          resourceAttrs(inventoryFields),
		PlanModifiers:       []planmodifier.Object{keepStateObject{}},
	}
}

// readInventory returns the node's inventory: null when the node was
// never inspected or the token is a member's (a member sees the node's
// capacity, not its inventory; failing the read would break every
// member's configuration that reads a node). prior is the inventory
// already known (the state's, or null): it is kept while the node says
// it was inspected at that same time, so that a refresh costs one request
// per node, not two.
func readInventory(ctx context.Context, c *apiclient.Client, node *api.Node, prior types.Object, diags *diag.Diagnostics) types.Object {
	if node.InspectedAt == nil {
		return types.ObjectNull(inventoryAttrTypes)
	}
	if !prior.IsNull() && !prior.IsUnknown() {
		if at, ok := prior.Attributes()["inspected_at"].(types.String); ok && at.ValueString() == node.InspectedAt.UTC().Format(time.RFC3339) {
			return prior
		}
	}
	inv, err := c.GetNodeInventory(ctx, node.ID)
	switch {
	case err == nil:
		o, ds := inventoryObject(inv)
		diags.Append(ds...)
		return o
	case errors.Is(err, apiclient.ErrNotFound):
		// Gone since the node was read (the node with it).
	case errors.Is(err, apiclient.ErrForbidden):
		tflog.Debug(ctx, "node inventory is for admins; the provider's token is not one", map[string]any{"node": node.Name})
	default:
		addAPIError(diags, "Could not read the inventory of node "+node.Name, err, nil)
	}
	return types.ObjectNull(inventoryAttrTypes)
}

// inventoryObject is the inventory attribute's value of a node's inventory.
func inventoryObject(inv *api.NodeInventory) (types.Object, diag.Diagnostics) {
	var diags diag.Diagnostics
	disks := make([]attr.Value, 0, len(inv.Inventory.Disks))
	for _, d := range inv.Inventory.Disks {
		o, ds := types.ObjectValue(diskAttrTypes, map[string]attr.Value{
			"name": types.StringValue(d.Name), "size_bytes": types.Int64Value(d.SizeBytes), "model": types.StringValue(d.Model),
			"serial": types.StringValue(d.Serial), "wwn": types.StringValue(d.WWN), "rotational": types.BoolValue(d.Rotational),
		})
		diags.Append(ds...)
		disks = append(disks, o)
	}
	nics := make([]attr.Value, 0, len(inv.Inventory.NICs))
	for _, n := range inv.Inventory.NICs {
		o, ds := types.ObjectValue(nicAttrTypes, map[string]attr.Value{"name": types.StringValue(n.Name), "mac": types.StringValue(n.MAC),
			"speed_mbps": types.Int64Value(int64(n.SpeedMbps))})
		diags.Append(ds...)
		nics = append(nics, o)
	}
	diskList, ds := types.ListValue(types.ObjectType{AttrTypes: diskAttrTypes}, disks)
	diags.Append(ds...)
	nicList, ds := types.ListValue(types.ObjectType{AttrTypes: nicAttrTypes}, nics)
	diags.Append(ds...)
	sys := inv.Inventory.System
	system, ds := types.ObjectValue(systemAttrTypes, map[string]attr.Value{
		"vendor": types.StringValue(sys.Vendor), "product": types.StringValue(sys.Product),
		"serial": types.StringValue(sys.Serial), "uuid": types.StringValue(sys.UUID),
		"boot_mode": types.StringValue(sys.BootMode), "secure_boot": types.BoolPointerValue(sys.SecureBoot),
	})
	diags.Append(ds...)
	o, ds := types.ObjectValue(inventoryAttrTypes, map[string]attr.Value{
		"inspected_at":           types.StringValue(inv.InspectedAt),
		"cpus":                   types.Int64Value(int64(inv.Inventory.CPUs)),
		"memory_bytes":           types.Int64Value(inv.Inventory.MemoryBytes),
		"installed_memory_bytes": types.Int64Value(inv.Inventory.InstalledMemoryBytes),
		"disks":                  diskList,
		"nics":                   nicList,
		"system":                 system,
	})
	diags.Append(ds...)
	return o, diags
}

// keepStateObject plans the state's value on an update, null included
// (objectplanmodifier.UseStateForUnknown keeps only a non-null one, so a
// node never inspected would show "(known after apply)" in every plan).
type keepStateObject struct{}

var _ planmodifier.Object = keepStateObject{}

func (keepStateObject) Description(context.Context) string {
	return "Keeps the state's value (null included) on an update."
}

func (m keepStateObject) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (keepStateObject) PlanModifyObject(_ context.Context, req planmodifier.ObjectRequest, resp *planmodifier.ObjectResponse) {
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() || !req.PlanValue.IsUnknown() {
		return
	}
	resp.PlanValue = req.StateValue
}
