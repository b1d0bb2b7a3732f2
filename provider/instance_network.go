package provider

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// baremetal_instance's network: its schema, its model, the conversions
// to and from the API's Network, and its check at plan time, which is the
// controller's own (baremetal.Network.Validate), so a configuration the
// controller would refuse is refused by the plan, on the attribute at fault.

type networkModel struct {
	Interfaces    []netInterfaceModel `tfsdk:"interfaces"`
	Addresses     []netAddressModel   `tfsdk:"addresses"`
	DNSServers    []types.String      `tfsdk:"dns_servers"`
	SearchDomains []types.String      `tfsdk:"search_domains"`
}

type netInterfaceModel struct {
	Name types.String `tfsdk:"name"`
	MAC  types.String `tfsdk:"mac"`
	Port types.String `tfsdk:"port"`
	MTU  types.Int64  `tfsdk:"mtu"`
	Bond *bondModel   `tfsdk:"bond"`
	VLAN *vlanModel   `tfsdk:"vlan"`
}

type bondModel struct {
	Interfaces     []types.String `tfsdk:"interfaces"`
	Mode           types.String   `tfsdk:"mode"`
	MIIMon         types.Int64    `tfsdk:"miimon"`
	XmitHashPolicy types.String   `tfsdk:"xmit_hash_policy"`
	LACPRate       types.String   `tfsdk:"lacp_rate"`
}

type vlanModel struct {
	Interface types.String `tfsdk:"interface"`
	ID        types.Int64  `tfsdk:"id"`
}

type netAddressModel struct {
	Interface  types.String   `tfsdk:"interface"`
	Address    types.String   `tfsdk:"address"`
	Pool       types.String   `tfsdk:"pool"`
	DHCP       types.String   `tfsdk:"dhcp"`
	Gateway    types.String   `tfsdk:"gateway"`
	Routes     []routeModel   `tfsdk:"routes"`
	DNSServers []types.String `tfsdk:"dns_servers"`
}

type routeModel struct {
	Destination types.String `tfsdk:"destination"`
	Gateway     types.String `tfsdk:"gateway"`
}

func networkSchema() schema.SingleNestedAttribute {
	str := func(desc string, required bool, v ...validator.String) schema.StringAttribute {
		return schema.StringAttribute{MarkdownDescription: desc, Required: required, Optional: !required, Validators: v}
	}
	strList := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{MarkdownDescription: desc, ElementType: types.StringType, Optional: true,
			Validators: []validator.List{listvalidator.SizeAtLeast(1)}}
	}
	return schema.SingleNestedAttribute{
		MarkdownDescription: api.DocNetwork,
		Optional:            true,
		Validators:          []validator.Object{networkValidator{}},
		Attributes: map[string]schema.Attribute{
			"interfaces": schema.ListNestedAttribute{
				MarkdownDescription: "The interfaces: each exactly one of `mac`, `port`, `bond` and `vlan`.",
				Required:            true,
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": str("This configuration's name for the interface, referenced by bonds, VLANs and addresses (1-15 of `a-z 0-9 _ . -`). Not the name the OS gives it.", true),
					"mac":  str("A NIC, by its MAC address.", false),
					"port": str("A NIC, by the name the node's inspection reported (`ports` or `inventory.nics` of `baremetal_node`), e.g. `eno1`.", false),
					"mtu": schema.Int64Attribute{MarkdownDescription: "MTU; unset leaves the OS's default.", Optional: true,
						Validators: []validator.Int64{int64validator.Between(baremetal.MinMTU, baremetal.MaxMTU)}},
					"bond": schema.SingleNestedAttribute{
						MarkdownDescription: "A bond of NICs (Linux bonding).",
						Optional:            true,
						Attributes: map[string]schema.Attribute{
							"interfaces": schema.ListAttribute{MarkdownDescription: "The member NICs, by `name`.", ElementType: types.StringType, Required: true},
							"mode":       str("Bond mode: "+codeList(api.BondModes())+".", true, stringvalidator.OneOf(api.BondModes()...)),
							"miimon": schema.Int64Attribute{MarkdownDescription: "Link monitoring interval in milliseconds.", Optional: true,
								Validators: []validator.Int64{int64validator.AtLeast(0)}},
							"xmit_hash_policy": str("Transmit hash policy (802.3ad, balance-xor, balance-tlb): "+codeList(api.XmitHashPolicies())+".", false,
								stringvalidator.OneOf(api.XmitHashPolicies()...)),
							"lacp_rate": str("LACP rate (802.3ad): "+codeList(api.LACPRates())+".", false, stringvalidator.OneOf(api.LACPRates()...)),
						},
					},
					"vlan": schema.SingleNestedAttribute{
						MarkdownDescription: "An 802.1Q VLAN on a NIC or a bond.",
						Optional:            true,
						Attributes: map[string]schema.Attribute{
							"interface": str("The NIC or bond it is tagged on, by `name`.", true),
							"id": schema.Int64Attribute{MarkdownDescription: "VLAN id, 1-4094.", Required: true,
								Validators: []validator.Int64{int64validator.Between(1, 4094)}},
						},
					},
				}},
			},
			"addresses": schema.ListNestedAttribute{
				MarkdownDescription: "Addresses on the interfaces: each exactly one of `address`, `pool` and `dhcp`.",
				Optional:            true,
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"interface": str("The interface, by `name`.", true),
					"address":   str("A static host address in CIDR form, e.g. `10.0.0.5/24` or `2001:db8::5/64`.", false),
					"pool":      str("An IP pool (`baremetal_ip_pool`, by name or id) to take the next free address from.", false),
					"dhcp":      str("DHCP: "+codeList(api.DHCPModes())+".", false, stringvalidator.OneOf(api.DHCPModes()...)),
					"gateway":   str("Default gateway, inside the address's subnet.", false),
					"routes": schema.ListNestedAttribute{
						MarkdownDescription: "Static routes through a next hop in the address's subnet.",
						Optional:            true,
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"destination": str("Destination network in CIDR form, e.g. `10.200.0.0/16`.", true),
							"gateway":     str("Next hop.", true),
						}},
					},
					"dns_servers": strList("DNS servers of this network."),
				}},
			},
			"dns_servers":    strList("DNS servers for the instance."),
			"search_domains": strList("DNS search domains."),
		},
	}
}

// networkAPI converts the model to the API's network.
func (m *networkModel) networkAPI() *api.Network {
	if m == nil {
		return nil
	}
	n := &api.Network{DNSServers: stringsOf(m.DNSServers), SearchDomains: stringsOf(m.SearchDomains)}
	for _, i := range m.Interfaces {
		ni := api.NetInterface{Name: i.Name.ValueString(), MAC: i.MAC.ValueString(), Port: i.Port.ValueString(), MTU: int(i.MTU.ValueInt64())}
		if i.Bond != nil {
			ni.Bond = &api.Bond{Interfaces: stringsOf(i.Bond.Interfaces), Mode: i.Bond.Mode.ValueString(), MIIMon: int(i.Bond.MIIMon.ValueInt64()),
				XmitHashPolicy: i.Bond.XmitHashPolicy.ValueString(), LACPRate: i.Bond.LACPRate.ValueString()}
		}
		if i.VLAN != nil {
			ni.VLAN = &api.VLAN{Interface: i.VLAN.Interface.ValueString(), ID: int(i.VLAN.ID.ValueInt64())}
		}
		n.Interfaces = append(n.Interfaces, ni)
	}
	for _, a := range m.Addresses {
		na := api.NetAddress{Interface: a.Interface.ValueString(), Address: a.Address.ValueString(), Pool: a.Pool.ValueString(),
			DHCP: a.DHCP.ValueString(), Gateway: a.Gateway.ValueString(), DNSServers: stringsOf(a.DNSServers)}
		for _, r := range a.Routes {
			na.Routes = append(na.Routes, api.Route{Destination: r.Destination.ValueString(), Gateway: r.Gateway.ValueString()})
		}
		n.Addresses = append(n.Addresses, na)
	}
	return n
}

// networkModelOf is the model of the API's network (nil for none).
func networkModelOf(n *api.Network) *networkModel {
	if n == nil {
		return nil
	}
	m := &networkModel{DNSServers: stringValues(n.DNSServers), SearchDomains: stringValues(n.SearchDomains)}
	for _, i := range n.Interfaces {
		im := netInterfaceModel{Name: types.StringValue(i.Name), MAC: stringOrNull(i.MAC), Port: stringOrNull(i.Port), MTU: int64OrNull(i.MTU)}
		if i.Bond != nil {
			im.Bond = &bondModel{Interfaces: stringValues(i.Bond.Interfaces), Mode: types.StringValue(i.Bond.Mode), MIIMon: int64OrNull(i.Bond.MIIMon),
				XmitHashPolicy: stringOrNull(i.Bond.XmitHashPolicy), LACPRate: stringOrNull(i.Bond.LACPRate)}
		}
		if i.VLAN != nil {
			im.VLAN = &vlanModel{Interface: types.StringValue(i.VLAN.Interface), ID: types.Int64Value(int64(i.VLAN.ID))}
		}
		m.Interfaces = append(m.Interfaces, im)
	}
	for _, a := range n.Addresses {
		am := netAddressModel{Interface: types.StringValue(a.Interface), Address: stringOrNull(a.Address), Pool: stringOrNull(a.Pool),
			DHCP: stringOrNull(a.DHCP), Gateway: stringOrNull(a.Gateway), DNSServers: stringValues(a.DNSServers)}
		for _, r := range a.Routes {
			am.Routes = append(am.Routes, routeModel{Destination: types.StringValue(r.Destination), Gateway: types.StringValue(r.Gateway)})
		}
		m.Addresses = append(m.Addresses, am)
	}
	return m
}

// sameNetwork reports whether two networks are the same configuration
// once the controller's normalization (MACs in lower case) is applied: the
// state keeps the configuration's spelling of an equal network.
func sameNetwork(a, b *api.Network) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	na, errA := domainNetwork(a)
	nb, errB := domainNetwork(b)
	if errA != nil || errB != nil {
		return reflect.DeepEqual(a, b)
	}
	_ = na.Validate() // normalizes MACs; validity is checked elsewhere
	_ = nb.Validate()
	return reflect.DeepEqual(na, nb)
}

func domainNetwork(n *api.Network) (*baremetal.Network, error) {
	b, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	var out baremetal.Network
	return &out, json.Unmarshal(b, &out)
}

func stringsOf(vs []types.String) []string {
	if len(vs) == 0 {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.ValueString()
	}
	return out
}

func stringValues(vs []string) []types.String {
	if len(vs) == 0 {
		return nil
	}
	out := make([]types.String, len(vs))
	for i, v := range vs {
		out[i] = types.StringValue(v)
	}
	return out
}

func int64OrNull(v int) types.Int64 {
	if v == 0 {
		return types.Int64Null()
	}
	return types.Int64Value(int64(v))
}

// networkValidator runs the controller's own check of a network at plan
// time, on a configuration whose values are all known; the error names
// the attribute at fault.
type networkValidator struct{}

func (networkValidator) Description(context.Context) string {
	return "the network is one the controller accepts"
}
func (v networkValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (networkValidator) ValidateObject(ctx context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || hasUnknown(req.ConfigValue) {
		return
	}
	var m networkModel
	if d := req.ConfigValue.As(ctx, &m, basetypes.ObjectAsOptions{}); d.HasError() {
		return // the framework reports a type mismatch itself
	}
	n, err := domainNetwork(m.networkAPI())
	if err != nil {
		return
	}
	err = n.Validate()
	var be *baremetal.Error
	if !errors.As(err, &be) {
		return
	}
	if p, ok := fieldPath(be.Field, instanceAttrs); ok {
		resp.Diagnostics.AddAttributeError(p, "Invalid network", be.Message)
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Invalid network", be.Message)
}

// hasUnknown reports whether v holds an unknown value anywhere.
func hasUnknown(v attr.Value) bool {
	if v.IsUnknown() {
		return true
	}
	switch x := v.(type) {
	case basetypes.ObjectValue:
		for _, e := range x.Attributes() {
			if hasUnknown(e) {
				return true
			}
		}
	case basetypes.ListValue:
		for _, e := range x.Elements() {
			if hasUnknown(e) {
				return true
			}
		}
	}
	return false
}

var addressAttrTypes = map[string]attr.Type{
	"index": types.Int64Type, "interface": types.StringType, "address": types.StringType, "gateway": types.StringType,
	"pool": types.StringType, "pool_name": types.StringType, "dns_servers": types.ListType{ElemType: types.StringType},
}

func addressesSchema() schema.ListNestedAttribute {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{MarkdownDescription: desc, Computed: true}
	}
	return schema.ListNestedAttribute{
		MarkdownDescription: "The addresses `network` gives the OS, as the controller assigned them: its static addresses and those " +
			"allocated from IP pools (held until the instance is destroyed and its node cleaned; a rebuild keeps them).",
		Computed:      true,
		PlanModifiers: []planmodifier.List{listplanmodifier.UseStateForUnknown()},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"index":       schema.Int64Attribute{MarkdownDescription: "Which entry of `network.addresses` it is for (from 0).", Computed: true},
			"interface":   str("The interface, by `name`."),
			"address":     str("The host address with its prefix length, e.g. `10.0.0.5/24`."),
			"gateway":     str("The gateway, or empty."),
			"pool":        str("Id of the pool it was allocated from; empty for a static address."),
			"pool_name":   str("Name of that pool."),
			"dns_servers": schema.ListAttribute{MarkdownDescription: "DNS servers of the network (a pool's).", ElementType: types.StringType, Computed: true},
		}},
	}
}

// addressesValue is the API's addresses as the attribute's value.
func addressesValue(as []api.InstanceAddress) (types.List, diag.Diagnostics) {
	var diags diag.Diagnostics
	elems := make([]attr.Value, 0, len(as))
	for _, a := range as {
		dns, d := types.ListValueFrom(context.Background(), types.StringType, a.DNSServers)
		diags.Append(d...)
		o, d := types.ObjectValue(addressAttrTypes, map[string]attr.Value{
			"index": types.Int64Value(int64(a.Index)), "interface": types.StringValue(a.Interface), "address": types.StringValue(a.Address),
			"gateway": types.StringValue(a.Gateway), "pool": types.StringValue(a.Pool), "pool_name": types.StringValue(a.PoolName), "dns_servers": dns,
		})
		diags.Append(d...)
		elems = append(elems, o)
	}
	l, d := types.ListValue(types.ObjectType{AttrTypes: addressAttrTypes}, elems)
	diags.Append(d...)
	return l, diags
}
