package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

const (
	defaultInstanceCreateTimeout = 30 * time.Minute
	defaultInstanceUpdateTimeout = 10 * time.Minute
)

var (
	_ resource.Resource                     = &InstanceResource{}
	_ resource.ResourceWithConfigure        = &InstanceResource{}
	_ resource.ResourceWithImportState      = &InstanceResource{}
	_ resource.ResourceWithConfigValidators = &InstanceResource{}
)

// InstanceResource manages a baremetal_instance: an image deployed on one
// node, chosen by the scheduler from a resource class or pinned.
type InstanceResource struct {
	client *apiclient.Client
}

// NewInstanceResource is the resource's constructor for the provider.
func NewInstanceResource() resource.Resource { return &InstanceResource{} }

type instanceResourceModel struct {
	ID            types.String        `tfsdk:"id"`
	Name          types.String        `tfsdk:"name"`
	Project       types.String        `tfsdk:"project"`
	ResourceClass types.String        `tfsdk:"resource_class"`
	NodeID        types.String        `tfsdk:"node_id"`
	Image         *instanceImageModel `tfsdk:"image"`
	UserData      types.String        `tfsdk:"user_data"`
	Metadata      types.Map           `tfsdk:"metadata"`
	PowerState    types.String        `tfsdk:"power_state"`
	DeployTimeout types.String        `tfsdk:"deploy_timeout"`
	DeployMethod  types.String        `tfsdk:"deploy_method"`
	RootDevice    types.Map           `tfsdk:"root_device"`
	State         types.String        `tfsdk:"state"`
	Ready         types.Bool          `tfsdk:"ready"`
	LastError     types.String        `tfsdk:"last_error"`
	Timeouts      timeouts.Value      `tfsdk:"timeouts"`
}

type instanceImageModel struct {
	URL      types.String `tfsdk:"url"`
	Checksum types.String `tfsdk:"checksum"`
}

var instanceAttrs = map[string]attrKind{
	"name": attrPlain, "project": attrPlain, "resource_class": attrPlain, "node_id": attrPlain,
	"image": attrObject, "user_data": attrPlain, "metadata": attrMap, "power_state": attrPlain,
	"deploy_timeout": attrPlain, "deploy_method": attrPlain, "root_device": attrMap,
}

func (r *InstanceResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instance"
}

func (r *InstanceResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	keepOrReplace := []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "An instance: an image deployed on one node, either chosen by the controller's scheduler " +
			"from `resource_class` or pinned with `node_id`.\n\n" +
			"Creation waits until the instance is `active` (and, when `power_state` is set, until the node's power matches). " +
			"If no node can take it, creation fails with the controller's explanation.\n\n" +
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
				MarkdownDescription: "Class of node to schedule the instance on. Exactly one of `resource_class` and `node_id` must be set; " +
					"with `node_id` this is the pinned node's class. Changing it replaces the instance.",
				Optional:      true,
				Computed:      true,
				PlanModifiers: keepOrReplace,
				Validators:    []validator.String{stringvalidator.RegexMatches(resourceClassRE, "must be 1-63 letters, digits, '.', '_' or '-'")},
			},
			"node_id": schema.StringAttribute{
				MarkdownDescription: "Id of the node to deploy on (pinning), instead of letting the scheduler choose from `resource_class`. " +
					"Exactly one of `resource_class` and `node_id` must be set; with `resource_class` this is the node the scheduler chose. " +
					"Changing it replaces the instance.",
				Optional:      true,
				Computed:      true,
				PlanModifiers: keepOrReplace,
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"image": schema.SingleNestedAttribute{
				MarkdownDescription: "The image to deploy. Changing it replaces the instance.",
				Required:            true,
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
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
				MarkdownDescription: api.DocUserData + " Sensitive: plans show it as `(sensitive value)`. Changing it replaces the instance.",
				Optional:            true,
				// Often holds secrets (keys, join tokens): never shown in plans.
				Sensitive:     true,
				PlanModifiers: replace,
				Validators:    []validator.String{stringvalidator.LengthBetween(1, 64<<10)},
			},
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

func (r *InstanceResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		resourcevalidator.ExactlyOneOf(path.MatchRoot("resource_class"), path.MatchRoot("node_id")),
	}
}

func (r *InstanceResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (r *InstanceResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan instanceResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Waiting for the OS to call back is part of creating: the default
	// timeout leaves that much more time.
	deployTimeout, _ := time.ParseDuration(plan.DeployTimeout.ValueString()) // validated
	timeout, diags := plan.Timeouts.Create(ctx, defaultInstanceCreateTimeout+deployTimeout)
	resp.Diagnostics.Append(diags...)
	metadata, diags := metadataFromMap(ctx, plan.Metadata)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	in := api.InstanceCreate{
		Name:          plan.Name.ValueString(),
		Project:       plan.Project.ValueString(),
		ResourceClass: plan.ResourceClass.ValueString(),
		NodeID:        plan.NodeID.ValueString(),
		Image:         api.Image{URL: plan.Image.URL.ValueString(), Checksum: plan.Image.Checksum.ValueString()},
		UserData:      plan.UserData.ValueString(),
		Metadata:      metadata,
		PowerState:    api.PowerState(plan.PowerState.ValueString()),
		DeployTimeout: plan.DeployTimeout.ValueString(),
		DeployMethod:  api.DeployMethod(plan.DeployMethod.ValueString()),
	}
	if !plan.RootDevice.IsNull() && !plan.RootDevice.IsUnknown() {
		resp.Diagnostics.Append(plan.RootDevice.ElementsAs(ctx, &in.RootDevice, false)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	// setFromAPI replaces power_state with the observed power: keep the wish.
	desired := plan.PowerState
	inst, err := r.createInstance(ctx, in)
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not create instance "+in.Name, err, instanceAttrs)
		return
	}
	tflog.Info(ctx, "instance created", map[string]any{"id": inst.ID, "name": inst.Name, "node_id": inst.NodeID})
	resp.Diagnostics.Append(plan.setFromAPI(ctx, inst, desired)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}

	inst, err = r.waitActive(ctx, inst.ID, timeout)
	if inst != nil {
		resp.Diagnostics.Append(plan.setFromAPI(ctx, inst, desired)...)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
	if err != nil {
		resp.Diagnostics.AddError("Instance "+in.Name+" did not become active", err.Error())
		return
	}
	// Deploying leaves the node powered on; another wish is carried out
	// once the instance is active.
	if power := api.PowerState(desired.ValueString()); power != "" && inst.ObservedPowerState != power {
		r.convergePower(ctx, &plan, inst, power, timeout, &resp.Diagnostics)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

// createInstance creates the instance. When no node can take it but the
// controller counts nodes that will free up by themselves (being cleaned,
// verified or inspected; typically right after Terraform destroyed the
// instance this one replaces), it tries again until one takes it, within the create
// timeout. Any other lack of capacity (maintenance, faults, a driver
// without virtual media for the config drive, no such class) is reported
// at once: the controller's counts (api.Capacity) decide, the provider
// does not restate its scheduling rules.
func (r *InstanceResource) createInstance(ctx context.Context, in api.InstanceCreate) (*api.Instance, error) {
	inst, err := r.client.CreateInstance(ctx, in)
	if !shouldWaitForCapacity(err) {
		return inst, err
	}
	tflog.Info(ctx, "no node free yet, but some are being cleaned, verified or inspected; waiting", map[string]any{"name": in.Name})
	first := err
	last, werr := waitFor(ctx, "a node to become available", func(ctx context.Context) (*createAttempt, error) {
		inst, err := r.client.CreateInstance(ctx, in)
		if ae, ok := apiclient.AsAPIError(err); (ok && ae.Problem.Code == api.CodeUnavailable) || (err != nil && ctx.Err() != nil) {
			// The controller's own 503 (its database is out of reach)
			// created nothing: waitFor tolerates a few, as in any wait.
			// An expired context is the wait's timeout.
			return nil, err
		}
		return &createAttempt{inst: inst, err: err}, nil
	}, func(a *createAttempt) (bool, error) {
		switch {
		case a.err == nil:
			return true, nil
		case shouldWaitForCapacity(a.err):
			return false, nil
		default:
			return false, a.err
		}
	})
	switch {
	case werr == nil:
		return last.inst, nil
	case errors.Is(werr, errWaitTimeout):
		if last != nil && last.err != nil {
			first = last.err // the latest counts
		}
		return nil, fmt.Errorf("%w\n\nWaited for nodes being cleaned, verified or inspected to become available, but: %v", first, werr)
	default:
		// Among them a no_capacity whose counts say nothing will free up
		// any more (say a node went into maintenance while cleaning).
		return nil, werr
	}
}

// createAttempt is one try at creating the instance while waiting for
// capacity. Answers are values, not errors, so that waitFor does not
// re-send the POST after an error it judges transient (a lost answer to a
// create that worked would come back as a name conflict).
type createAttempt struct {
	inst *api.Instance
	err  error
}

// shouldWaitForCapacity reports whether err is a no_capacity answer whose
// counts say some node will free up without anyone acting. Without counts
// (a controller older than them) it reports false: the error is shown.
func shouldWaitForCapacity(err error) bool {
	c, ok := apiclient.NoCapacity(err)
	return ok && c.Pending > 0
}

// waitActive waits until the instance is active. An instance in error
// fails the wait with the controller's reason.
func (r *InstanceResource) waitActive(ctx context.Context, id string, timeout time.Duration) (*api.Instance, error) {
	progress := &deployProgress{started: time.Now(), nodeName: func(ctx context.Context, id string) string {
		if n, err := r.client.GetNode(ctx, id); err == nil {
			return n.Name
		}
		return id // the name is a nicety; the wait goes on
	}}
	inst, err := waitFor(ctx, "instance "+id+" to become active", func(ctx context.Context) (*api.Instance, error) {
		return r.client.GetInstance(ctx, id)
	}, func(in *api.Instance) (bool, error) {
		progress.observe(ctx, in)
		switch in.State {
		case api.InstanceError:
			msg := in.LastError
			if msg == "" {
				msg = "the controller gave no reason"
			}
			return false, fmt.Errorf("instance %s failed to deploy: %s", in.Name, msg)
		case api.InstanceActive:
			return true, nil
		}
		return false, nil
	})
	switch {
	case err == nil:
		return inst, nil
	case errors.Is(err, errWaitTimeout) && inst != nil:
		msg := fmt.Sprintf("Instance %s is still %q after %s", inst.Name, inst.State, timeout)
		if inst.BootedAt != nil && !inst.Ready {
			msg += fmt.Sprintf(": its node powered on at %s and the OS has not called the readiness callback yet (deploy_timeout %s)",
				inst.BootedAt.UTC().Format(time.RFC3339), inst.DeployTimeout)
		}
		if inst.LastError != "" {
			msg += ".\n\nLast error: " + inst.LastError
		}
		return inst, errors.New(msg + ".\n\nRaise the create timeout, or look at the node's events for what the controller is doing.")
	case errors.Is(err, apiclient.ErrNotFound):
		return nil, fmt.Errorf("instance %s was deleted while waiting for it to become active", id)
	default:
		return inst, err
	}
}

// convergePower asks for the wanted power state when the node's observed
// one differs, then waits until it is observed. The model is updated with
// the last instance read.
func (r *InstanceResource) convergePower(ctx context.Context, m *instanceResourceModel, inst *api.Instance, power api.PowerState, timeout time.Duration, diags *diag.Diagnostics) {
	if inst.ObservedPowerState != power || inst.PowerState != power {
		patched, err := r.client.PatchInstance(ctx, inst.ID, api.InstanceUpdate{PowerState: &power})
		if err != nil {
			addAPIError(diags, "Could not set the power of instance "+inst.Name, err, instanceAttrs)
			return
		}
		inst = patched
	}
	last, err := waitFor(ctx, "instance "+inst.ID+" power "+string(power), func(ctx context.Context) (*api.Instance, error) {
		return r.client.GetInstance(ctx, inst.ID)
	}, func(in *api.Instance) (bool, error) {
		return in.ObservedPowerState == power, nil
	})
	if last != nil {
		diags.Append(m.setFromAPI(ctx, last, types.StringValue(string(power)))...)
	}
	switch {
	case err == nil:
	case errors.Is(err, errWaitTimeout) && last != nil:
		msg := fmt.Sprintf("The power of instance %s's node is still %q, not %q, after %s.", last.Name, last.ObservedPowerState, power, timeout)
		if last.LastError != "" {
			msg += "\n\nLast error: " + last.LastError
		}
		diags.AddError("Instance "+last.Name+" did not reach power "+string(power),
			msg+"\n\nThe controller keeps the wish; check the node's fault and events, or raise the timeout.")
	default:
		addAPIError(diags, "Could not read instance "+inst.Name+" while waiting for its power", err, nil)
	}
}

func (r *InstanceResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state instanceResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	inst, err := r.client.GetInstance(ctx, state.ID.ValueString())
	if errors.Is(err, apiclient.ErrNotFound) {
		tflog.Info(ctx, "instance is gone; removing it from the state", map[string]any{"id": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not read instance "+state.ID.ValueString(), err, nil)
		return
	}
	resp.Diagnostics.Append(state.setFromAPI(ctx, inst, state.PowerState)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *InstanceResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state instanceResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultInstanceUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	desired := plan.PowerState // setFromAPI replaces it with the observed power
	planned := plan
	var u api.InstanceUpdate
	if !plan.PowerState.Equal(state.PowerState) {
		p := api.PowerState(plan.PowerState.ValueString()) // "" clears the wish
		u.PowerState = &p
	}
	if !plan.Metadata.Equal(state.Metadata) {
		md, diags := metadataFromMap(ctx, plan.Metadata)
		resp.Diagnostics.Append(diags...)
		if md == nil {
			md = map[string]string{}
		}
		u.Metadata = &md
	}
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	var inst *api.Instance
	var err error
	if u.PowerState != nil || u.Metadata != nil {
		inst, err = r.client.PatchInstance(ctx, id, u)
	} else {
		inst, err = r.client.GetInstance(ctx, id) // only timeouts changed
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not update instance "+state.Name.ValueString(), err, instanceAttrs)
		return
	}
	resp.Diagnostics.Append(plan.setFromAPI(ctx, inst, desired)...)
	plan.keepPlannedObservations(&planned)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if inst.State == api.InstanceActive && desired.ValueString() != "" && u.PowerState != nil {
		r.convergePower(ctx, &plan, inst, api.PowerState(desired.ValueString()), timeout, &resp.Diagnostics)
		plan.keepPlannedObservations(&planned)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

func (r *InstanceResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state instanceResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	accepted, err := r.client.DeleteInstance(ctx, state.ID.ValueString())
	if errors.Is(err, apiclient.ErrNotFound) {
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not delete instance "+state.Name.ValueString(), err, nil)
		return
	}
	tflog.Info(ctx, "instance deleted; node cleanup queued", map[string]any{"id": state.ID.ValueString(), "job_id": accepted.JobID})
}

func (r *InstanceResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	// The API takes an id or a name; Read replaces a name with the id.
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

// setFromAPI copies the instance into the model. prevPower is the
// power_state the model had: when the user manages power (or the
// controller holds a wish), power_state shows the node's observed power so
// that drift appears in the plan. While the power is not observable
// (unknown), the previous value stays.
func (m *instanceResourceModel) setFromAPI(ctx context.Context, in *api.Instance, prevPower types.String) diag.Diagnostics {
	var diags diag.Diagnostics
	m.ID = types.StringValue(in.ID)
	m.Name = types.StringValue(in.Name)
	m.Project = types.StringValue(in.Project)
	m.ResourceClass = types.StringValue(in.ResourceClass)
	m.NodeID = types.StringValue(in.NodeID)
	m.Image = &instanceImageModel{URL: types.StringValue(in.Image.URL), Checksum: stringOrNull(in.Image.Checksum)}
	m.UserData = stringOrNull(in.UserData)
	if len(in.Metadata) == 0 && (m.Metadata.IsNull() || m.Metadata.IsUnknown()) {
		m.Metadata = types.MapNull(types.StringType)
	} else {
		var d diag.Diagnostics
		m.Metadata, d = types.MapValueFrom(ctx, types.StringType, in.Metadata)
		diags.Append(d...)
	}
	switch observed := in.ObservedPowerState; {
	case prevPower.IsNull() && in.PowerState == "":
		m.PowerState = types.StringNull() // power not managed
	case observed == api.PowerOn || observed == api.PowerOff:
		m.PowerState = types.StringValue(string(observed))
	case !prevPower.IsNull() && !prevPower.IsUnknown():
		// No observation (the BMC does not answer: the node's fault says
		// so). Not knowing is not drift: keep the last value.
		m.PowerState = prevPower
	default:
		m.PowerState = types.StringValue(string(in.PowerState))
	}
	m.DeployMethod = types.StringValue(string(in.DeployMethod))
	if len(in.RootDevice) == 0 {
		m.RootDevice = types.MapNull(types.StringType)
	} else {
		var d diag.Diagnostics
		m.RootDevice, d = types.MapValueFrom(ctx, types.StringType, in.RootDevice)
		diags.Append(d...)
	}
	m.State = types.StringValue(string(in.State))
	m.Ready = types.BoolValue(in.Ready)
	m.LastError = types.StringValue(in.LastError)
	// The controller writes durations its own way ("30m" may come back
	// as "30m0s" from older versions): the configured spelling is kept
	// unless the value itself differs (import, or a change outside).
	if prev, err := time.ParseDuration(m.DeployTimeout.ValueString()); in.DeployTimeout == "" {
		m.DeployTimeout = types.StringNull()
	} else if got, gerr := time.ParseDuration(in.DeployTimeout); err != nil || gerr != nil || prev != got {
		m.DeployTimeout = types.StringValue(in.DeployTimeout)
	}
	return diags
}

// keepPlannedObservations puts back what the plan promised for the
// attributes the controller reports on its own (see planmodifiers.go).
func (m *instanceResourceModel) keepPlannedObservations(planned *instanceResourceModel) {
	keepKnown(&m.State, planned.State)
	keepKnown(&m.Ready, planned.Ready)
	keepKnown(&m.LastError, planned.LastError)
}

func metadataFromMap(ctx context.Context, m types.Map) (map[string]string, diag.Diagnostics) {
	if m.IsNull() || m.IsUnknown() {
		return nil, nil
	}
	out := map[string]string{}
	diags := m.ElementsAs(ctx, &out, false)
	return out, diags
}
