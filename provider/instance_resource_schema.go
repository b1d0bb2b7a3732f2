package provider

import (
	"context"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// Plan time: baremetal_instance's schema and the check of a configuration
// that spans attributes. Nothing here calls the controller; the CRUD is
// in instance_resource.go, the conversions in instance_model.go.

func (r *InstanceResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	keepOrReplace := []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "An instance: an image deployed on one node, either chosen by the controller's scheduler " +
			"from `resource_class` and the requirements (`required_traits`, `forbidden_traits`, `min_cpus`, `min_memory_mb`, " +
			"`min_disk_gb`, `cpu_arch`), or pinned with `node_id`. The scheduler picks the smallest node that meets them " +
			"(best fit), the nodes the project owns first.\n\n" +
			"Creation waits until the instance is `active` (and, when `power_state` is set, until the node's power matches). " +
			"If no node can take it, creation fails with the controller's explanation: per requirement, how many nodes fail it " +
			"(\"of 40 nodes, 31 lack trait CUSTOM_GPU_A100, 2 are owned by another project\"), and why the others cannot take it now. " +
			"It waits instead, within the create timeout, while the controller counts nodes that fit and will free up by themselves " +
			"(being cleaned, verified or inspected).\n\n" +
			"Destroying an instance always succeeds at once: the controller removes it from the project (and its quota) " +
			"immediately and cleans its node in the background, however long the node's BMC is unreachable.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The instance's id (a UUID), assigned by the controller.",
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				MarkdownDescription: "Name of the instance, unique in its project: a DNS label (lowercase letters, digits and hyphens, at most 63 characters). Changing it replaces the instance.",
				Required:            true,
				PlanModifiers:       replace,
				Validators:          []validator.String{stringvalidator.RegexMatches(nameRE, nameRule)},
			},
			"project": schema.StringAttribute{
				MarkdownDescription: "Project that owns the instance. Defaults to the token's project for a member token; required with an admin token. Changing it replaces the instance.",
				Optional:            true,
				Computed:            true,
				PlanModifiers:       keepOrReplace,
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 63)},
			},
			"resource_class": schema.StringAttribute{
				MarkdownDescription: "Class of node to schedule the instance on. Not with `node_id`; one of `resource_class`, `node_id` and a " +
					"requirement must be set. Without it (pinned, or placed by requirements alone among all nodes) this is the chosen node's " +
					"class. Changing it replaces the instance.",
				Optional:      true,
				Computed:      true,
				PlanModifiers: keepOrReplace,
				Validators:    []validator.String{stringvalidator.RegexMatches(resourceClassRE, "must be 1-63 letters, digits, '.', '_' or '-'")},
			},
			"node_id": schema.StringAttribute{
				MarkdownDescription: "Id of the node to deploy on (pinning), instead of letting the scheduler choose from `resource_class`. " +
					"Not with `resource_class`; the requirements, if any, must be met by this node. Unset, this is the node the scheduler chose. " +
					"Changing it replaces the instance.",
				Optional:      true,
				Computed:      true,
				PlanModifiers: keepOrReplace,
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"required_traits": schema.SetAttribute{
				MarkdownDescription: "Traits the node must have, each one (e.g. `[\"CUSTOM_GPU_A100\"]`). " + requirementsDoc + placementNote,
				ElementType:         types.StringType,
				Optional:            true,
				PlanModifiers:       []planmodifier.Set{setplanmodifier.RequiresReplace()},
				Validators:          []validator.Set{traitsValidator{}},
			},
			"forbidden_traits": schema.SetAttribute{
				MarkdownDescription: "Traits the node must not have (operator's or derived). A trait may not be both required and forbidden." + placementNote,
				ElementType:         types.StringType,
				Optional:            true,
				PlanModifiers:       []planmodifier.Set{setplanmodifier.RequiresReplace()},
				Validators:          []validator.Set{traitsValidator{}},
			},
			"min_cpus": schema.Int64Attribute{
				MarkdownDescription: "Least number of CPU cores of the node (a node whose count is unknown, never inspected nor set, does not qualify)." + placementNote,
				Optional:            true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.RequiresReplace()},
				Validators:          []validator.Int64{int64validator.Between(0, baremetal.MaxCPUs)},
			},
			"min_memory_mb": schema.Int64Attribute{
				MarkdownDescription: "Least memory of the node, in MiB (unknown does not qualify)." + placementNote,
				Optional:            true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.RequiresReplace()},
				Validators:          []validator.Int64{int64validator.Between(0, baremetal.MaxMemoryMB)},
			},
			"min_disk_gb": schema.Int64Attribute{
				MarkdownDescription: "Least local disk of the node, in GiB (unknown does not qualify)." + placementNote,
				Optional:            true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.RequiresReplace()},
				Validators:          []validator.Int64{int64validator.Between(0, baremetal.MaxLocalGB)},
			},
			"cpu_arch": schema.StringAttribute{
				MarkdownDescription: "CPU architecture the node must have (`x86_64`, `aarch64`, ...)." + placementNote,
				Optional:            true,
				PlanModifiers:       replace,
				Validators:          []validator.String{cpuArchValidator()},
			},
			"image": schema.SingleNestedAttribute{
				MarkdownDescription: "The image to deploy. Changing it rebuilds the instance in place: " + rebuildDoc,
				Required:            true,
				Attributes: map[string]schema.Attribute{
					"url": schema.StringAttribute{
						MarkdownDescription: "`http://` or `https://` URL of the image.",
						Required:            true,
						Validators:          []validator.String{urlValidator{}},
					},
					"checksum": schema.StringAttribute{
						MarkdownDescription: "Checksum of the image: hex, optionally prefixed by `sha256:`, `sha512:` or `md5:`.",
						Optional:            true,
						Validators: []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^((sha256|sha512|md5):)?[0-9a-fA-F]{32,128}$`),
							"must be 32 to 128 hex digits (a whole md5, sha256 or sha512 digest), optionally prefixed by md5:, sha256: or sha512:")},
					},
				},
			},
			"user_data": schema.StringAttribute{
				MarkdownDescription: api.DocUserData + " Sensitive: plans show it as `(sensitive value)`. Changing it rebuilds the instance in place (see `image`).",
				Optional:            true,
				// Often holds secrets (keys, join tokens): never shown in plans.
				Sensitive:  true,
				Validators: []validator.String{stringvalidator.LengthBetween(1, 64<<10)},
			},
			"network":   networkSchema(),
			"addresses": addressesSchema(),
			"metadata": schema.MapAttribute{
				MarkdownDescription: "Free-form key/value metadata (at most 64 keys). Can be changed in place.",
				ElementType:         types.StringType,
				Optional:            true,
				Validators:          []validator.Map{mapvalidator.SizeAtMost(64), mapvalidator.KeysAre(stringvalidator.LengthBetween(1, 255))},
			},
			"power_state": schema.StringAttribute{
				MarkdownDescription: "Desired power state of the instance's node: " + codeList(api.DesiredPowerStates()) + ". When set, the provider reports the power state " +
					"actually observed on the node, so a node powered differently outside Terraform shows up as a change in the plan, " +
					"and apply converges it. While the node's BMC does not answer (see the node's `fault`), the last observed value is kept. " +
					"Leave unset to not manage power.",
				Optional:   true,
				Validators: []validator.String{stringvalidator.OneOf(api.DesiredPowerStates()...)},
			},
			"deploy_timeout": schema.StringAttribute{
				MarkdownDescription: "Wait for the booted OS to say it is up before the instance counts as `active`: a duration " +
					"between `1m` and `24h` (e.g. `\"30m\"`), counted from power-on. The config drive carries a vendor-data script " +
					"that calls the controller's readiness callback (`POST /v1/instances/{id}/ready` with the instance's ready token, " +
					"also in `baremetal/ready.json` on the drive for images without cloud-init). Without the call in time the deploy " +
					"fails with the node fault `deploy_timeout` (a late call still makes the instance active). `terraform apply` waits " +
					"for it; the default create timeout grows by this much. Needs a config drive (see `user_data`). Changing it replaces the instance.",
				Optional:      true,
				PlanModifiers: replace,
				Validators:    []validator.String{durationBetween{min: time.Minute, max: 24 * time.Hour}},
			},
			"deploy_method": schema.StringAttribute{
				MarkdownDescription: api.DocDeployMethod + " Changing it replaces the instance.",
				Optional:            true,
				Computed:            true,
				PlanModifiers:       keepOrReplace,
				Validators:          []validator.String{stringvalidator.OneOf(api.DeployMethods()...)},
			},
			"root_device": schema.MapAttribute{
				MarkdownDescription: api.DocRootDevice + " Changing it replaces the instance.",
				ElementType:         types.StringType,
				Optional:            true,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
				Validators:          []validator.Map{mapvalidator.KeysAre(stringvalidator.OneOf(api.RootDeviceHints()...))},
			},
			// An update in place (metadata, power) changes neither state
			// nor last_error, and ready only ever turns true by itself:
			// the plan keeps what the refresh read (see planmodifiers.go).
			// Everything else replaces the instance, planned as a create.
			"state": schema.StringAttribute{
				MarkdownDescription: "State of the instance: " + codeList(api.InstanceStates()) + ".",
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"ready": schema.BoolAttribute{
				MarkdownDescription: "Whether the booted OS has called the readiness callback.",
				Computed:            true,
				PlanModifiers:       []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()},
			},
			"rebuilds": schema.Int64Attribute{
				MarkdownDescription: "How many times the instance was rebuilt in place (0 until the first).",
				Computed:            true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"last_error": schema.StringAttribute{
				MarkdownDescription: "Why the instance is in `error`, or the last deploy error; empty otherwise.",
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true}),
		},
	}
}

// rebuildDoc says what a rebuild in place is, for the attributes that
// make one.
const rebuildDoc = "same `id`, same node (`node_id`), same addresses. The controller boots the deploy agent, erases the disks as the node's " +
	"erase policy says, writes the new image and config drive and boots them; apply waits until the instance is `active` again " +
	"(the update timeout, by default 30 minutes plus `deploy_timeout`). A rebuild that fails leaves the instance `error` on its node " +
	"with the reason in `last_error`, and the next apply plans `state` back to `active` and rebuilds again. Destroying the instance " +
	"during a rebuild succeeds at once, as always."

// placementNote ends the description of each requirement.
const placementNote = " The controller places the instance on the smallest node that meets all the requirements (best fit), " +
	"among the nodes of `resource_class` if set, else among all; with `node_id` the pinned node must meet them. " +
	"Changing it replaces the instance."

func (r *InstanceResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	placement := []path.Expression{path.MatchRoot("resource_class"), path.MatchRoot("node_id")}
	for _, a := range requirementAttrs {
		placement = append(placement, path.MatchRoot(a))
	}
	return []resource.ConfigValidator{
		resourcevalidator.Conflicting(path.MatchRoot("resource_class"), path.MatchRoot("node_id")),
		resourcevalidator.AtLeastOneOf(placement...),
		traitsDisjoint{},
	}
}
