package provider

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// Plan time: baremetal_ip_pool's schema and the checks of its addresses
// (each attribute's syntax, and how gateway and ranges sit in cidr). The
// controller checks the same again; here a bad configuration fails at
// plan, naming the attribute. The CRUD is in ip_pool_resource.go.

var (
	ipRangeAttrTypes = map[string]attr.Type{"start": types.StringType, "end": types.StringType}
	ipRangeType      = types.ObjectType{AttrTypes: ipRangeAttrTypes}
)

// Limits the controller enforces (baremetal.MaxPool*).
const (
	maxPoolRanges        = 64
	maxPoolDNSServers    = 8
	maxPoolSearchDomains = 6
)

var searchDomainRE = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.?$`)

func (r *IPPoolResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	emptyStrings := listdefault.StaticValue(types.ListValueMust(types.StringType, []attr.Value{}))
	resp.Schema = schema.Schema{
		MarkdownDescription: "An address pool: a subnet whose addresses the controller hands out to instances, one at a time, " +
			"so that an instance's network asks for \"an address from pool X\" instead of hard-coding one.\n\n" +
			"The controller allocates the lowest free address of the pool's `ranges` (never its `gateway`), atomically: " +
			"two instances never get one address, whichever controller replica creates them. An address is held until its " +
			"instance is deleted **and** its node has been cleaned, so a machine still running the old instance's OS never " +
			"shares it with the next one.\n\n" +
			"A pool that holds addresses cannot be destroyed, and a change of `ranges` or `gateway` that would leave a held " +
			"address out of it is refused, naming the address. Needs an admin token; every token reads pools.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The pool's id (a UUID), assigned by the controller.",
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				MarkdownDescription: "Name of the pool, unique: a DNS label (lowercase letters, digits and hyphens, at most 63 characters). Changes in place. Refer to the pool from an instance's `network` by its `id` (`baremetal_ip_pool.x.id`): by name, a rename would change every such instance's network, which rebuilds it.",
				Required:            true,
				Validators:          []validator.String{stringvalidator.RegexMatches(nameRE, nameRule)},
			},
			"cidr": schema.StringAttribute{
				MarkdownDescription: "The subnet, e.g. `10.0.0.0/24` or `2001:db8::/64`: IPv4, or IPv6 of /64 or smaller. " +
					"It is the subnet itself, without host bits (`10.0.0.5/24` is refused). Changing it replaces the pool.",
				Required:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{cidrValidator{}},
			},
			"gateway": schema.StringAttribute{
				MarkdownDescription: "The subnet's router, inside `cidr`; never allocated. Empty (the default): none.",
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(""),
				Validators:          []validator.String{addrValidator{orEmpty: true}},
			},
			"ranges": schema.ListNestedAttribute{
				MarkdownDescription: "The addresses handed out: inclusive ranges inside `cidr`, in ascending order, not overlapping. " +
					"None (the default): the whole `cidr` but its network and broadcast addresses (IPv4; a /31 or /32 has none) or " +
					"its subnet-router anycast address (IPv6, the all-zero host). The `gateway` is never handed out, even inside a range.",
				Optional: true,
				Computed: true,
				Default:  listdefault.StaticValue(types.ListValueMust(ipRangeType, []attr.Value{})),
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"start": schema.StringAttribute{MarkdownDescription: "First address of the range.", Required: true,
							Validators: []validator.String{addrValidator{}}},
						"end": schema.StringAttribute{MarkdownDescription: "Last address of the range (the same as `start` for one address).", Required: true,
							Validators: []validator.String{addrValidator{}}},
					},
				},
				Validators: []validator.List{listvalidator.SizeAtMost(maxPoolRanges)},
			},
			"dns_servers": schema.ListAttribute{
				MarkdownDescription: "DNS servers for the pool's addresses, in order of preference (IP addresses in canonical form, at most " +
					strconv.Itoa(maxPoolDNSServers) + ").",
				ElementType: types.StringType,
				Optional:    true,
				Computed:    true,
				Default:     emptyStrings,
				Validators: []validator.List{listvalidator.SizeAtMost(maxPoolDNSServers),
					listvalidator.ValueStringsAre(addrValidator{canonical: true})},
			},
			"search_domains": schema.ListAttribute{
				MarkdownDescription: "DNS search domains for the pool's addresses (at most " + strconv.Itoa(maxPoolSearchDomains) + ").",
				ElementType:         types.StringType,
				Optional:            true,
				Computed:            true,
				Default:             emptyStrings,
				Validators: []validator.List{listvalidator.SizeAtMost(maxPoolSearchDomains),
					listvalidator.ValueStringsAre(stringvalidator.RegexMatches(searchDomainRE, "must be a DNS domain name"),
						stringvalidator.LengthAtMost(253))},
			},
			"description": schema.StringAttribute{
				MarkdownDescription: "Free text for operators (one line, at most 1024 bytes).",
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(""),
				Validators:          []validator.String{stringvalidator.LengthAtMost(1024)},
			},
		},
	}
}

// cidrValidator checks a pool's cidr as the controller does.
type cidrValidator struct{}

func (cidrValidator) Description(context.Context) string {
	return "must be a subnet in CIDR notation without host bits: IPv4, or IPv6 of /64 or smaller"
}
func (v cidrValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (cidrValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, msg := parseCIDR(req.ConfigValue.ValueString()); msg != "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid cidr", msg)
	}
}

// parseCIDR parses a pool's cidr; msg says what is wrong ("" when
// nothing is).
func parseCIDR(s string) (netip.Prefix, string) {
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil || p.Addr().Zone() != "":
		return p, fmt.Sprintf("%q is not a CIDR such as 10.0.0.0/24 or 2001:db8::/64.", s)
	case p.Masked() != p:
		return p, fmt.Sprintf("%q has host bits set; the subnet is %s.", s, p.Masked())
	case p.Addr().Is4In6():
		return p, fmt.Sprintf("%q is an IPv4-mapped IPv6 subnet; give the IPv4 subnet.", s)
	case p.Addr().Is6() && p.Bits() < 64:
		return p, fmt.Sprintf("%q is larger than a /64; an IPv6 pool is a /64 or smaller.", s)
	}
	return p, ""
}

// addrValidator checks an IP address; orEmpty lets "" through (no
// gateway), canonical asks for the form the controller stores (DNS
// servers are kept as written, so another spelling would never match).
type addrValidator struct{ orEmpty, canonical bool }

func (addrValidator) Description(context.Context) string { return "must be an IP address" }
func (v addrValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v addrValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	if s == "" && v.orEmpty {
		return
	}
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil || a.Zone() != "":
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid IP address", fmt.Sprintf("%q is not an IP address.", s))
	case v.canonical && a.String() != s:
		resp.Diagnostics.AddAttributeError(req.Path, "IP address not in canonical form", fmt.Sprintf("Write %q as %s.", s, a))
	}
}

// ValidateConfig checks how gateway and ranges sit in cidr, as far as
// the configuration knows them.
func (r *IPPoolResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m ipPoolModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.CIDR.IsUnknown() || m.CIDR.IsNull() {
		return
	}
	pfx, msg := parseCIDR(m.CIDR.ValueString())
	if msg != "" {
		return // the attribute's own validator says so
	}
	lastOff := func() netip.Addr { // the subnet's last address
		a := pfx.Addr()
		b := a.AsSlice()
		host := a.BitLen() - pfx.Bits()
		for i := len(b) - 1; i >= 0 && host > 0; i-- {
			n := min(host, 8)
			b[i] |= byte(1<<n - 1)
			host -= n
		}
		last, _ := netip.AddrFromSlice(b)
		return last
	}()
	reserved := func(a netip.Addr) string {
		switch {
		case pfx.Addr().Is4() && pfx.Bits() >= 31:
			return ""
		case a == pfx.Addr() && pfx.Addr().Is4():
			return "network address"
		case a == pfx.Addr():
			return "subnet-router anycast address"
		case pfx.Addr().Is4() && a == lastOff:
			return "broadcast address"
		}
		return ""
	}
	inside := func(p path.Path, what string, v types.String) (netip.Addr, bool) {
		if v.IsNull() || v.IsUnknown() || v.ValueString() == "" {
			return netip.Addr{}, false
		}
		a, err := netip.ParseAddr(v.ValueString())
		if err != nil || a.Zone() != "" {
			return netip.Addr{}, false // the attribute's own validator says so
		}
		if !pfx.Contains(a) {
			resp.Diagnostics.AddAttributeError(p, "Address outside the pool's cidr",
				fmt.Sprintf("%s %s is not inside cidr %s.", what, a, pfx))
			return netip.Addr{}, false
		}
		return a, true
	}
	if gw, ok := inside(path.Root("gateway"), "gateway", m.Gateway); ok {
		if why := reserved(gw); why != "" {
			resp.Diagnostics.AddAttributeError(path.Root("gateway"), "Invalid gateway",
				fmt.Sprintf("gateway %s is the %s of %s.", gw, why, pfx))
		}
	}
	if m.Ranges.IsNull() || m.Ranges.IsUnknown() {
		return
	}
	var ranges []ipRangeModel
	resp.Diagnostics.Append(m.Ranges.ElementsAs(ctx, &ranges, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var prevEnd netip.Addr
	for i, rg := range ranges {
		at := path.Root("ranges").AtListIndex(i)
		start, okS := inside(at.AtName("start"), "start", rg.Start)
		end, okE := inside(at.AtName("end"), "end", rg.End)
		if !okS || !okE {
			prevEnd = netip.Addr{}
			continue
		}
		if end.Less(start) {
			resp.Diagnostics.AddAttributeError(at.AtName("end"), "Invalid range",
				fmt.Sprintf("end %s is before start %s.", end, start))
			continue
		}
		for _, a := range []netip.Addr{start, end} {
			if why := reserved(a); why != "" {
				resp.Diagnostics.AddAttributeError(at, "Invalid range",
					fmt.Sprintf("The range %s-%s holds %s, the %s of %s, which is never allocated.", start, end, a, why, pfx))
			}
		}
		if prevEnd.IsValid() && !prevEnd.Less(start) {
			resp.Diagnostics.AddAttributeError(at.AtName("start"), "Ranges out of order or overlapping",
				fmt.Sprintf("The range %s-%s must start after the end of the range before it (%s): ranges are ascending and do not overlap.",
					start, end, prevEnd))
		}
		prevEnd = end
	}
}

// poolFieldPath is the attribute of a pool the API's field names
// ("ranges[1].start", "dns_servers[0]", "name").
func poolFieldPath(field string) (path.Path, bool) {
	if field == "" {
		return path.Empty(), false
	}
	var p path.Path
	for i, seg := range strings.Split(field, ".") {
		name, idx, indexed := strings.Cut(seg, "[")
		if i == 0 {
			switch name {
			case "name", "cidr", "gateway", "ranges", "dns_servers", "search_domains", "description":
				p = path.Root(name)
			default:
				return path.Empty(), false
			}
		} else {
			p = p.AtName(name)
		}
		if indexed {
			n, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			if err != nil {
				return path.Empty(), false
			}
			p = p.AtListIndex(n)
		}
	}
	return p, true
}

// addPoolAPIError is addAPIError pointing at the pool attribute the API's
// problem names.
func addPoolAPIError(diags *diag.Diagnostics, summary string, err error) {
	var sub diag.Diagnostics
	addAPIError(&sub, summary, err, nil)
	if ae, ok := apiclient.AsAPIError(err); ok && len(sub) == 1 {
		if p, found := poolFieldPath(ae.Field()); found {
			diags.AddAttributeError(p, sub[0].Summary(), sub[0].Detail())
			return
		}
	}
	diags.Append(sub...)
}
