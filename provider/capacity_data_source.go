package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

var (
	_ datasource.DataSource                     = &CapacityDataSource{}
	_ datasource.DataSourceWithConfigure        = &CapacityDataSource{}
	_ datasource.DataSourceWithConfigValidators = &CapacityDataSource{}
)

// CapacityDataSource answers "how many instances of this shape could be
// placed now" (GET /v1/capacity), so that a plan can fail before an apply
// would.
type CapacityDataSource struct {
	client *apiclient.Client
}

// NewCapacityDataSource is the data source's constructor for the provider.
func NewCapacityDataSource() datasource.DataSource { return &CapacityDataSource{} }

type capacityDataModel struct {
	requirementsModel
	Project        types.String       `tfsdk:"project"`
	ResourceClass  types.String       `tfsdk:"resource_class"`
	DeployMethod   types.String       `tfsdk:"deploy_method"`
	Placeable      types.Int64        `tfsdk:"placeable"`
	Available      types.Int64        `tfsdk:"available"`
	Pending        types.Int64        `tfsdk:"pending"`
	QuotaRemaining types.Int64        `tfsdk:"quota_remaining"`
	Nodes          types.Int64        `tfsdk:"nodes"`
	Unsuited       types.Int64        `tfsdk:"unsuited"`
	Message        types.String       `tfsdk:"message"`
	Unmet          []unmetRequirement `tfsdk:"unmet"`
}

type unmetRequirement struct {
	Requirement types.String `tfsdk:"requirement"`
	Value       types.String `tfsdk:"value"`
	Nodes       types.Int64  `tfsdk:"nodes"`
	Message     types.String `tfsdk:"message"`
}

func (d *CapacityDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_capacity"
}

func (d *CapacityDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	attrs := requirementsDataSourceAttributes("Count only")
	for k, v := range map[string]schema.Attribute{
		"project": schema.StringAttribute{
			MarkdownDescription: "Project the instances would belong to: its quota and the nodes it owns count, those other projects own do not. " +
				"Required with an admin token; a member token answers for its own project (and may name only that one).",
			Optional:   true,
			Computed:   true,
			Validators: []validator.String{stringvalidator.RegexMatches(nameRE, nameRule)},
		},
		"resource_class": schema.StringAttribute{
			MarkdownDescription: "Class of node the instances would ask for; unset, every node counts (placement by requirements alone).",
			Optional:            true,
			Validators:          []validator.String{stringvalidator.RegexMatches(resourceClassRE, "must be 1-63 letters, digits, '.', '_' or '-'")},
		},
		"deploy_method": schema.StringAttribute{
			MarkdownDescription: "How the instances would be deployed (" + codeList(api.DeployMethods()) + "; `image` when unset), " +
				"as some nodes cannot take every method.",
			Optional:   true,
			Validators: []validator.String{stringvalidator.OneOf(api.DeployMethods()...)},
		},
		"placeable": schema.Int64Attribute{
			MarkdownDescription: "How many such instances the project could create now: the nodes that could take one (`available`, " +
				"each takes one instance), within what its quota leaves (`quota_remaining`).",
			Computed: true,
		},
		"available": schema.Int64Attribute{
			MarkdownDescription: "Nodes that meet the shape and could take an instance now.",
			Computed:            true,
		},
		"pending": schema.Int64Attribute{
			MarkdownDescription: "Nodes that meet the shape and will be able to take an instance without anyone acting (being cleaned, " +
				"verified or inspected); not counted in `available`. `baremetal_instance` waits for these.",
			Computed: true,
		},
		"quota_remaining": schema.Int64Attribute{
			MarkdownDescription: "Instances the project's quota still allows; null when its quota is unlimited.",
			Computed:            true,
		},
		"nodes": schema.Int64Attribute{
			MarkdownDescription: "Nodes considered: those of `resource_class`, or all.",
			Computed:            true,
		},
		"unsuited": schema.Int64Attribute{
			MarkdownDescription: "Nodes whose hardware, traits or owner fail the requirements, whatever their state: no wait helps.",
			Computed:            true,
		},
		"message": schema.StringAttribute{
			MarkdownDescription: "The controller's explanation in words, as a `no_capacity` error says it (e.g. `no node of class " +
				"\"gpu\" fits the instance's requirements: of 40 nodes, 31 lack trait CUSTOM_GPU_A100, 2 are owned by another project`). " +
				"Made for `error_message` of a postcondition or a check.",
			Computed: true,
		},
		"unmet": schema.ListNestedAttribute{
			MarkdownDescription: "Per requirement, how many nodes fail it (a node failing several counts under each), the " +
				"requirement most nodes fail first.",
			Computed: true,
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"requirement": schema.StringAttribute{
					MarkdownDescription: "The requirement: `resource_class`, `owner`, `required_trait`, `forbidden_trait`, `min_cpus`, " +
						"`min_memory_mb`, `min_disk_gb` or `cpu_arch`.",
					Computed: true,
				},
				"value": schema.StringAttribute{
					MarkdownDescription: "What was asked: the trait, minimum or architecture (for `owner`, the owning project).",
					Computed:            true,
				},
				"nodes": schema.Int64Attribute{
					MarkdownDescription: "How many nodes fail it.",
					Computed:            true,
				},
				"message": schema.StringAttribute{
					MarkdownDescription: "The same in words, e.g. `31 nodes lack trait CUSTOM_GPU_A100`.",
					Computed:            true,
				},
			}},
		},
	} {
		attrs[k] = v
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "How many instances of a shape (a resource class and requirements) a project could place now, " +
			"and why not more: the controller's scheduler answers, with the same rules and explanations as a `no_capacity` error, " +
			"so a CI plan can fail early with a `lifecycle { postcondition }` on this data source (or warn with a `check` block) " +
			"instead of an apply failing half-way. Nothing is reserved: another apply may take the nodes between plan and apply.",
		Attributes: attrs,
	}
}

func (d *CapacityDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{traitsDisjoint{}}
}

func (d *CapacityDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

// capacityAttrs lets the API's query parameters find their argument.
var capacityAttrs = map[string]attrKind{
	"project": attrPlain, "resource_class": attrPlain, "deploy_method": attrPlain, "required_traits": attrPlain,
	"forbidden_traits": attrPlain, "min_cpus": attrPlain, "min_memory_mb": attrPlain, "min_disk_gb": attrPlain, "cpu_arch": attrPlain,
}

func (d *CapacityDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var cfg capacityDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	report, err := d.client.GetCapacity(ctx, apiclient.CapacityQuery{
		Project:       cfg.Project.ValueString(),
		ResourceClass: cfg.ResourceClass.ValueString(),
		Requirements:  cfg.toAPI(),
		DeployMethod:  api.DeployMethod(cfg.DeployMethod.ValueString()),
	})
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not read the capacity", queryFieldsAsAttrs(err), capacityAttrs)
		return
	}
	cfg.Project = types.StringValue(report.Project)
	cfg.Placeable = types.Int64Value(int64(report.Placeable))
	cfg.Available = types.Int64Value(int64(report.Capacity.Available))
	cfg.Pending = types.Int64Value(int64(report.Capacity.Pending))
	cfg.QuotaRemaining = types.Int64Null()
	if report.QuotaRemaining != nil {
		cfg.QuotaRemaining = types.Int64Value(int64(*report.QuotaRemaining))
	}
	cfg.Nodes = types.Int64Value(int64(report.Capacity.Nodes))
	cfg.Unsuited = types.Int64Value(int64(report.Capacity.Unsuited))
	cfg.Message = types.StringValue(report.Message)
	cfg.Unmet = make([]unmetRequirement, len(report.Capacity.Unmet))
	for i, u := range report.Capacity.Unmet {
		cfg.Unmet[i] = unmetRequirement{Requirement: types.StringValue(u.Requirement), Value: types.StringValue(u.Value),
			Nodes: types.Int64Value(int64(u.Nodes)), Message: types.StringValue(u.Message)}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}
