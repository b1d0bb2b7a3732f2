package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

var (
	_ datasource.DataSource                     = &NodesDataSource{}
	_ datasource.DataSourceWithConfigure        = &NodesDataSource{}
	_ datasource.DataSourceWithConfigValidators = &NodesDataSource{}
)

// NodesDataSource lists nodes matching filters.
type NodesDataSource struct {
	client *apiclient.Client
}

// NewNodesDataSource is the data source's constructor for the provider.
func NewNodesDataSource() datasource.DataSource { return &NodesDataSource{} }

type nodesDataModel struct {
	requirementsModel
	Owner           types.String    `tfsdk:"owner"`
	Schedulable     types.Bool      `tfsdk:"schedulable"`
	ResourceClass   types.String    `tfsdk:"resource_class"`
	ProvisionState  types.String    `tfsdk:"provision_state"`
	Maintenance     types.Bool      `tfsdk:"maintenance"`
	Fault           types.String    `tfsdk:"fault"`
	IncludeDeleting types.Bool      `tfsdk:"include_deleting"`
	Nodes           []nodeDataModel `tfsdk:"nodes"`
}

func (d *NodesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_nodes"
}

func (d *NodesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	element := nodeDataAttributes()
	element["id"] = schema.StringAttribute{MarkdownDescription: "The node's id.", Computed: true}
	element["name"] = schema.StringAttribute{MarkdownDescription: "The node's name.", Computed: true}
	attrs := requirementsDataSourceAttributes("Only")
	attrs["owner"] = schema.StringAttribute{
		MarkdownDescription: "Only nodes owned by this project (a member token sees only its own project's owned nodes, and those of no owner).",
		Optional:            true,
		Validators:          []validator.String{stringvalidator.RegexMatches(nameRE, nameRule)},
	}
	attrs["schedulable"] = schema.BoolAttribute{
		MarkdownDescription: "Only nodes that can take an instance now (`true`: available, no instance, not in maintenance, no fault) " +
			"or only those that cannot (`false`). Requirements and owner are separate filters: a node owned by another project " +
			"may be schedulable and still not take this project's instances.",
		Optional: true,
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lists the nodes that match all the given filters (all nodes without filters), " +
			"with their capacity, state, health, traits and inspected hardware; never BMC details. Nodes being retired (`provision_state` " +
			"`deleting`) are listed too, unless `include_deleting` is `false`: a faulted node whose retire waits for its BMC " +
			"is still faulted, and a `check` block on `fault = \"any\"` should see it. The requirement filters (`required_traits`, " +
			"`min_cpus`, ...) select the nodes whose hardware and traits would meet an instance's requirements, whatever their state; " +
			"`baremetal_capacity` says how many instances could be placed now.",
		Attributes: attrs,
	}
	for k, v := range map[string]schema.Attribute{
		"resource_class": schema.StringAttribute{
			MarkdownDescription: "Only nodes of this resource class.",
			Optional:            true,
		},
		"provision_state": schema.StringAttribute{
			MarkdownDescription: "Only nodes in this provision state.",
			Optional:            true,
			Validators:          []validator.String{stringvalidator.OneOf(api.ProvisionStates()...)},
		},
		"maintenance": schema.BoolAttribute{
			MarkdownDescription: "Only nodes in maintenance (`true`) or not in maintenance (`false`).",
			Optional:            true,
		},
		"fault": schema.StringAttribute{
			MarkdownDescription: "Only faulted nodes (`" + api.FaultFilterAny + "`), only healthy nodes (`" + api.FaultFilterNone + "`), " +
				"or only nodes with this fault (" + strings.Join(codeQuoted(api.Faults()), ", ") + ").",
			Optional:   true,
			Validators: []validator.String{stringvalidator.OneOf(api.FaultFilters()...)},
		},
		"include_deleting": schema.BoolAttribute{
			MarkdownDescription: "Whether nodes being retired (`provision_state` `deleting`: destroyed, waiting for their " +
				"retire job to power them off) are listed. Defaults to `true`, as in the API; " +
				"with `false` only nodes in service are.",
			Optional: true,
		},
		"nodes": schema.ListNestedAttribute{
			MarkdownDescription: "The matching nodes, in the controller's order.",
			Computed:            true,
			NestedObject:        schema.NestedAttributeObject{Attributes: element},
		},
	} {
		attrs[k] = v
	}
}

func (d *NodesDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{traitsDisjoint{}}
}

// nodesFilterAttrs lets the API's query parameters find their argument.
var nodesFilterAttrs = map[string]attrKind{
	"resource_class": attrPlain, "provision_state": attrPlain, "maintenance": attrPlain, "fault": attrPlain,
	"include_deleting": attrPlain, "owner": attrPlain, "schedulable": attrPlain, "required_traits": attrPlain,
	"forbidden_traits": attrPlain, "min_cpus": attrPlain, "min_memory_mb": attrPlain, "min_disk_gb": attrPlain, "cpu_arch": attrPlain,
}

func (d *NodesDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *NodesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var cfg nodesDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	f := apiclient.NodeFilter{
		ResourceClass:  cfg.ResourceClass.ValueString(),
		ProvisionState: api.ProvisionState(cfg.ProvisionState.ValueString()),
		Fault:          cfg.Fault.ValueString(),
		// The API leaves deleting nodes out by default; a data source
		// that hid them would hide a faulted node being retired.
		IncludeDeleting: cfg.IncludeDeleting.IsNull() || cfg.IncludeDeleting.ValueBool(),
	}
	if !cfg.Maintenance.IsNull() {
		m := cfg.Maintenance.ValueBool()
		f.Maintenance = &m
	}
	f.Owner = cfg.Owner.ValueString()
	if !cfg.Schedulable.IsNull() {
		s := cfg.Schedulable.ValueBool()
		f.Schedulable = &s
	}
	f.Requirements = cfg.toAPI()
	nodes, err := d.client.ListNodes(ctx, f)
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not list nodes", queryFieldsAsAttrs(err), nodesFilterAttrs)
		return
	}
	cfg.Nodes = make([]nodeDataModel, len(nodes))
	for i := range nodes {
		resp.Diagnostics.Append(cfg.Nodes[i].setFromAPI(&nodes[i])...)
		// One more request per node: the list carries no inventories.
		cfg.Nodes[i].Inventory = readInventory(ctx, d.client, &nodes[i], types.ObjectNull(inventoryAttrTypes), &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}
