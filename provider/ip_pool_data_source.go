package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

var (
	_ datasource.DataSource              = &IPPoolDataSource{}
	_ datasource.DataSourceWithConfigure = &IPPoolDataSource{}
)

// IPPoolDataSource reads one address pool by name (or id): a pool the
// operators manage elsewhere, which an instance's network names.
type IPPoolDataSource struct {
	client *apiclient.Client
}

// NewIPPoolDataSource is the data source's constructor for the provider.
func NewIPPoolDataSource() datasource.DataSource { return &IPPoolDataSource{} }

func (d *IPPoolDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_ip_pool"
}

func (d *IPPoolDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *IPPoolDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	strs := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{MarkdownDescription: desc, ElementType: types.StringType, Computed: true}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "An address pool, by name or id. Every token may read pools.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{MarkdownDescription: "Name (or id) of the pool to read.", Required: true},
			"id":   schema.StringAttribute{MarkdownDescription: "The pool's id.", Computed: true},
			"cidr": schema.StringAttribute{MarkdownDescription: "The subnet.", Computed: true},
			"gateway": schema.StringAttribute{MarkdownDescription: "The subnet's router (never allocated); empty for none.",
				Computed: true},
			"ranges": schema.ListNestedAttribute{
				MarkdownDescription: "The ranges of addresses handed out; empty: the whole subnet but its network and broadcast " +
					"(IPv4) or subnet-router anycast (IPv6) address.",
				Computed: true,
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"start": schema.StringAttribute{MarkdownDescription: "First address of the range.", Computed: true},
					"end":   schema.StringAttribute{MarkdownDescription: "Last address of the range.", Computed: true},
				}},
			},
			"dns_servers":    strs("DNS servers, in order of preference."),
			"search_domains": strs("DNS search domains."),
			"description":    schema.StringAttribute{MarkdownDescription: "Free text for operators.", Computed: true},
		},
	}
}

func (d *IPPoolDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m ipPoolModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	p, err := d.client.GetIPPool(ctx, m.Name.ValueString())
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not read ip pool "+m.Name.ValueString(), err, nil)
		return
	}
	asked := m.Name // the configuration's, which may be an id
	resp.Diagnostics.Append(m.setFromAPI(p)...)
	m.Name = asked
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
