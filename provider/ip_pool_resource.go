package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

var (
	_ resource.Resource                   = &IPPoolResource{}
	_ resource.ResourceWithConfigure      = &IPPoolResource{}
	_ resource.ResourceWithImportState    = &IPPoolResource{}
	_ resource.ResourceWithValidateConfig = &IPPoolResource{}
)

// IPPoolResource manages a baremetal_ip_pool: a subnet whose addresses
// the controller hands out to instances.
type IPPoolResource struct {
	client *apiclient.Client
}

// NewIPPoolResource is the resource's constructor for the provider.
func NewIPPoolResource() resource.Resource { return &IPPoolResource{} }

// ipPoolModel is baremetal_ip_pool's state, and the data source's.
type ipPoolModel struct {
	ID            types.String `tfsdk:"id"`
	Name          types.String `tfsdk:"name"`
	CIDR          types.String `tfsdk:"cidr"`
	Gateway       types.String `tfsdk:"gateway"`
	Ranges        types.List   `tfsdk:"ranges"`
	DNSServers    types.List   `tfsdk:"dns_servers"`
	SearchDomains types.List   `tfsdk:"search_domains"`
	Description   types.String `tfsdk:"description"`
}

type ipRangeModel struct {
	Start types.String `tfsdk:"start"`
	End   types.String `tfsdk:"end"`
}

// setFromAPI copies the pool as the controller has it into m.
func (m *ipPoolModel) setFromAPI(p *api.IPPool) diag.Diagnostics {
	var diags diag.Diagnostics
	m.ID, m.Name, m.CIDR = types.StringValue(p.ID), types.StringValue(p.Name), types.StringValue(p.CIDR)
	m.Gateway, m.Description = types.StringValue(p.Gateway), types.StringValue(p.Description)
	ranges := make([]attr.Value, 0, len(p.Ranges))
	for _, r := range p.Ranges {
		v, d := types.ObjectValue(ipRangeAttrTypes, map[string]attr.Value{"start": types.StringValue(r.Start), "end": types.StringValue(r.End)})
		diags.Append(d...)
		ranges = append(ranges, v)
	}
	var d diag.Diagnostics
	m.Ranges, d = types.ListValue(ipRangeType, ranges)
	diags.Append(d...)
	m.DNSServers, d = types.ListValueFrom(context.Background(), types.StringType, orEmpty(p.DNSServers))
	diags.Append(d...)
	m.SearchDomains, d = types.ListValueFrom(context.Background(), types.StringType, orEmpty(p.SearchDomains))
	diags.Append(d...)
	return diags
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// settable reads the attributes a client writes from m.
func (m *ipPoolModel) settable(ctx context.Context) (ranges []api.IPRange, dns, search []string, diags diag.Diagnostics) {
	var rs []ipRangeModel
	diags.Append(m.Ranges.ElementsAs(ctx, &rs, false)...)
	ranges = []api.IPRange{}
	for _, r := range rs {
		ranges = append(ranges, api.IPRange{Start: r.Start.ValueString(), End: r.End.ValueString()})
	}
	dns, search = []string{}, []string{}
	diags.Append(m.DNSServers.ElementsAs(ctx, &dns, false)...)
	diags.Append(m.SearchDomains.ElementsAs(ctx, &search, false)...)
	return ranges, dns, search, diags
}

func (r *IPPoolResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_ip_pool"
}

func (r *IPPoolResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (r *IPPoolResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan ipPoolModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ranges, dns, search, diags := plan.settable(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := api.IPPoolCreate{Name: plan.Name.ValueString(), CIDR: plan.CIDR.ValueString(), Gateway: plan.Gateway.ValueString(),
		Ranges: ranges, DNSServers: dns, SearchDomains: search, Description: plan.Description.ValueString()}
	p, err := r.client.CreateIPPool(ctx, in)
	if err != nil {
		addPoolAPIError(&resp.Diagnostics, "Could not create ip pool "+in.Name, err)
		return
	}
	tflog.Info(ctx, "ip pool created", map[string]any{"id": p.ID, "name": p.Name})
	resp.Diagnostics.Append(plan.setFromAPI(p)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *IPPoolResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state ipPoolModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	p, err := r.client.GetIPPool(ctx, state.ID.ValueString())
	if errors.Is(err, apiclient.ErrNotFound) {
		tflog.Info(ctx, "ip pool is gone; removing it from the state", map[string]any{"id": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not read ip pool "+state.ID.ValueString(), err, nil)
		return
	}
	resp.Diagnostics.Append(state.setFromAPI(p)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *IPPoolResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state ipPoolModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ranges, dns, search, diags := plan.settable(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	name, gw, desc := plan.Name.ValueString(), plan.Gateway.ValueString(), plan.Description.ValueString()
	// Every settable member: the controller checks the whole result (a
	// held address left out of new ranges is refused, naming it).
	u := api.IPPoolUpdate{Name: &name, Gateway: &gw, Ranges: &ranges, DNSServers: &dns, SearchDomains: &search, Description: &desc}
	p, err := r.client.PatchIPPool(ctx, state.ID.ValueString(), u, "")
	if err != nil {
		addPoolAPIError(&resp.Diagnostics, "Could not update ip pool "+state.Name.ValueString(), err)
		return
	}
	resp.Diagnostics.Append(plan.setFromAPI(p)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *IPPoolResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state ipPoolModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// A pool holding addresses is refused. Addresses of instances that
	// still exist are the configuration's to remove first; addresses
	// their deleted instances' nodes hold while they are cleaned (so a
	// machine perhaps still running the old OS never meets its address on
	// another) are freed by the cleanups, which a destroy of both the
	// instances and the pool has just queued: wait for those.
	deadline := time.Now().Add(poolDrainTimeout)
	for {
		err := r.client.DeleteIPPool(ctx, state.ID.ValueString())
		if err == nil || errors.Is(err, apiclient.ErrNotFound) {
			return
		}
		if !errors.Is(err, apiclient.ErrConflict) {
			addAPIError(&resp.Diagnostics, "Could not delete ip pool "+state.Name.ValueString(), err, nil)
			return
		}
		nodes, used, lerr := r.poolHolds(ctx, state.ID.ValueString())
		switch {
		case lerr != nil:
			addAPIError(&resp.Diagnostics, "Could not delete ip pool "+state.Name.ValueString()+" (listing the addresses it holds)", lerr, nil)
			return
		case used > 0 || len(nodes) == 0:
			addAPIError(&resp.Diagnostics, "Could not delete ip pool "+state.Name.ValueString(), err, nil)
			return
		case time.Now().After(deadline):
			resp.Diagnostics.AddError("Could not delete ip pool "+state.Name.ValueString(), fmt.Sprintf(
				"The pool still holds addresses for nodes whose cleanup has not finished after %s: %s. "+
					"Their cleanups go on (look at the nodes' fault and events); apply or destroy again once they are available.",
				poolDrainTimeout, strings.Join(nodes, ", ")))
			return
		}
		tflog.Info(ctx, "ip pool holds addresses for nodes being cleaned; waiting", map[string]any{"pool": state.Name.ValueString(), "nodes": nodes})
		select {
		case <-ctx.Done():
			resp.Diagnostics.AddError("Could not delete ip pool "+state.Name.ValueString(), ctx.Err().Error())
			return
		case <-time.After(poolDrainPoll):
		}
	}
}

// How long and how often a pool's delete waits for the cleanups of the
// nodes holding its addresses.
const (
	poolDrainTimeout = 15 * time.Minute
	poolDrainPoll    = time.Second
)

// poolHolds returns the nodes holding the pool's addresses for deleted
// instances, and how many addresses instances still use.
func (r *IPPoolResource) poolHolds(ctx context.Context, id string) (nodes []string, used int, err error) {
	seen := map[string]bool{}
	for a, err := range r.client.IPAllocations(ctx, id, 200) {
		if err != nil {
			return nil, 0, err
		}
		switch {
		case a.InstanceID != "":
			used++
		case a.NodeID != "" && !seen[a.NodeID]:
			seen[a.NodeID] = true
			nodes = append(nodes, a.NodeID)
		}
	}
	return nodes, used, nil
}

func (r *IPPoolResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	// The API takes an id or a name; Read replaces a name with the id.
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
