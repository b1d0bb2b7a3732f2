package provider

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

var (
	_ datasource.DataSource                     = &NodeDataSource{}
	_ datasource.DataSourceWithConfigure        = &NodeDataSource{}
	_ datasource.DataSourceWithConfigValidators = &NodeDataSource{}
)

// NodeDataSource reads one node by id or name.
type NodeDataSource struct {
	client *apiclient.Client
}

// NewNodeDataSource is the data source's constructor for the provider.
func NewNodeDataSource() datasource.DataSource { return &NodeDataSource{} }

func (d *NodeDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_node"
}

// nodeDataAttributes are the computed attributes shared by baremetal_node
// and the elements of baremetal_nodes.
func nodeDataAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"driver": schema.StringAttribute{
			MarkdownDescription: "BMC driver: " + codeList(api.Drivers()) + ".",
			Computed:            true,
		},
		"resource_class": schema.StringAttribute{
			MarkdownDescription: "Class of hardware the node offers.",
			Computed:            true,
		},
		"traits": schema.SetAttribute{
			MarkdownDescription: "The operator's traits of the node (those placement matches beyond `derived_traits`).",
			ElementType:         types.StringType,
			Computed:            true,
		},
		"derived_traits": schema.SetAttribute{
			MarkdownDescription: derivedTraitsDoc,
			ElementType:         types.StringType,
			Computed:            true,
		},
		"owner": schema.StringAttribute{
			MarkdownDescription: "Project whose instances alone are placed on the node; empty when it serves every project.",
			Computed:            true,
		},
		"properties": schema.SingleNestedAttribute{
			MarkdownDescription: "Hardware properties: the operator's overrides (see `property_overrides`), and what inspection found for the others.",
			Computed:            true,
			Attributes: map[string]schema.Attribute{
				"cpus":      schema.Int64Attribute{MarkdownDescription: "Number of CPU cores.", Computed: true},
				"memory_mb": schema.Int64Attribute{MarkdownDescription: "Memory in MiB.", Computed: true},
				"local_gb":  schema.Int64Attribute{MarkdownDescription: "Local disk in GiB.", Computed: true},
				"cpu_arch":  schema.StringAttribute{MarkdownDescription: "CPU architecture.", Computed: true},
			},
		},
		"property_overrides": schema.SetAttribute{
			MarkdownDescription: "Which `properties` the operator set (" + codeList(api.PropertyNames()) + "); inspection never changes those, and fills the others.",
			ElementType:         types.StringType,
			Computed:            true,
		},
		"maintenance": schema.BoolAttribute{
			MarkdownDescription: "Whether an operator took the node out of service.",
			Computed:            true,
		},
		"maintenance_reason": schema.StringAttribute{
			MarkdownDescription: "Why the node is in maintenance; empty otherwise.",
			Computed:            true,
		},
		"clean_erase": schema.StringAttribute{
			MarkdownDescription: "The node's own erase mode for cleaning (" + codeList(api.CleanErases()) + "), winning over its resource class's " +
				"and the controller's; empty when it follows those.",
			Computed: true,
		},
		"inspect_on_enroll": schema.BoolAttribute{
			MarkdownDescription: "The node's own choice of inspection once its BMC is verified, winning over the controller's " +
				"`--inspect-on-enroll`; null when it follows that.",
			Computed: true,
		},
		"power_state": schema.StringAttribute{
			MarkdownDescription: "Power state last observed on the BMC: " + codeList(api.PowerStates()) + ".",
			Computed:            true,
		},
		"provision_state": schema.StringAttribute{
			MarkdownDescription: "Where the node is in its life cycle: " + codeList(api.ProvisionStates()) + ".",
			Computed:            true,
		},
		"fault": schema.StringAttribute{
			MarkdownDescription: "BMC trouble the controller detected (`bmc_unreachable`, `bmc_auth_failed`, ...), or empty when healthy.",
			Computed:            true,
		},
		"fault_since": schema.StringAttribute{
			MarkdownDescription: "When the current fault started (RFC 3339), or empty.",
			Computed:            true,
		},
		"last_error": schema.StringAttribute{
			MarkdownDescription: "The last error the controller met on this node, or empty.",
			Computed:            true,
		},
		"instance_id": schema.StringAttribute{
			MarkdownDescription: "Id of the instance on the node, or empty.",
			Computed:            true,
		},
		"inventory": inventoryDataSourceAttribute(),
		"ports":     portsDataSourceAttribute(),
		"bios_settings": schema.MapAttribute{
			MarkdownDescription: "The BIOS attributes the node declares, with the values declared (`hardware.unmet` says which the BMC " +
				"does not show). Empty when none, and for a caller who is not an admin.",
			ElementType: types.StringType,
			Computed:    true,
		},
		"secure_boot": schema.BoolAttribute{
			MarkdownDescription: "Whether the node declares UEFI Secure Boot on (`true`) or off (`false`); null when it leaves it as it is.",
			Computed:            true,
		},
		"health": schema.SingleNestedAttribute{
			MarkdownDescription: "The hardware's health as the node's BMC last reported it (read every `--health-interval`, apart " +
				"from the power sync). `critical` is the `hardware_critical` fault, which keeps the node out of scheduling and clears itself.",
			Computed: true,
			Attributes: map[string]schema.Attribute{
				"state": schema.StringAttribute{
					MarkdownDescription: "`ok`, `warning`, `critical`, or `unknown` (never read, or the BMC reports none).",
					Computed:            true,
				},
				"reasons": schema.ListAttribute{
					MarkdownDescription: "What is not ok, worst first (e.g. `power supply PSU2: Critical`).",
					ElementType:         types.StringType,
					Computed:            true,
				},
				"hottest_c":   schema.Float64Attribute{MarkdownDescription: "The highest temperature read, °C (0: none).", Computed: true},
				"fans_failed": schema.Int64Attribute{MarkdownDescription: "Failed fans.", Computed: true},
				"psus_failed": schema.Int64Attribute{MarkdownDescription: "Failed power supplies.", Computed: true},
				"read_at":     schema.StringAttribute{MarkdownDescription: "When it was read (RFC 3339), null if never.", Computed: true},
			},
		},
		"hardware": schema.SingleNestedAttribute{
			MarkdownDescription: "What the controller last read from the BMC of the hardware settings the node declares.",
			Computed:            true,
			Attributes: map[string]schema.Attribute{
				"read_at": schema.StringAttribute{
					MarkdownDescription: "When the settings were last read (RFC 3339), null if never.",
					Computed:            true,
				},
				"unmet": schema.ListAttribute{
					MarkdownDescription: "The declared settings the BMC does not show (e.g. `raid.data: want RAID 5, is missing`): " +
						"drift, or what is still being applied. Empty when every setting is in effect.",
					ElementType: types.StringType,
					Computed:    true,
				},
				"lacks": schema.ListAttribute{
					MarkdownDescription: "What the BMC lacks of what the settings need (`BIOS settings`, `Secure Boot`).",
					ElementType:         types.StringType,
					Computed:            true,
				},
				"waiting": schema.BoolAttribute{
					MarkdownDescription: "The settings were asked for while the node was busy: the controller applies them once it is free.",
					Computed:            true,
				},
			},
		},
	}
}

func (d *NodeDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	attrs := nodeDataAttributes()
	attrs["id"] = schema.StringAttribute{
		MarkdownDescription: "Id of the node to read. Exactly one of `id` and `name` must be set.",
		Optional:            true,
		Computed:            true,
	}
	attrs["name"] = schema.StringAttribute{
		MarkdownDescription: "Name of the node to read. Exactly one of `id` and `name` must be set.",
		Optional:            true,
		Computed:            true,
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads one node by id or name: its capacity, state, health and inspected hardware. BMC details are never exposed.",
		Attributes:          attrs,
	}
}

func (d *NodeDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{
		datasourcevalidator.ExactlyOneOf(path.MatchRoot("id"), path.MatchRoot("name")),
	}
}

func (d *NodeDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *NodeDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var cfg nodeDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	key, attr := cfg.ID.ValueString(), "id"
	if key == "" {
		key, attr = cfg.Name.ValueString(), "name"
	}
	node, err := d.client.GetNode(ctx, key)
	if errors.Is(err, apiclient.ErrNotFound) {
		resp.Diagnostics.AddAttributeError(path.Root(attr), "Node not found", "No node has the "+attr+" "+key+".")
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not read node "+key, err, nil)
		return
	}
	var out nodeDataModel
	resp.Diagnostics.Append(out.setFromAPI(node)...)
	out.Inventory = readInventory(ctx, d.client, node, types.ObjectNull(inventoryAttrTypes), &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &out)...)
}
