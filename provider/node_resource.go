package provider

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

const (
	defaultNodeCreateTimeout = 10 * time.Minute
	defaultNodeUpdateTimeout = 10 * time.Minute
)

// The controller's own rules, repeated here so a bad value fails at plan
// time instead of half-way through an apply. The controller stays the
// authority and checks again.
var (
	nameRE          = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	resourceClassRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
)

const nameRule = "must be a DNS label: 1-63 lowercase letters, digits or hyphens, starting and ending with a letter or digit"

var (
	_ resource.Resource                   = &NodeResource{}
	_ resource.ResourceWithConfigure      = &NodeResource{}
	_ resource.ResourceWithImportState    = &NodeResource{}
	_ resource.ResourceWithValidateConfig = &NodeResource{}
	_ resource.ResourceWithModifyPlan     = &NodeResource{}
)

// NodeResource manages a baremetal_node: a physical server enrolled
// through its BMC.
type NodeResource struct {
	client *apiclient.Client
}

// NewNodeResource is the resource's constructor for the provider.
func NewNodeResource() resource.Resource { return &NodeResource{} }

type nodeResourceModel struct {
	ID                types.String   `tfsdk:"id"`
	Name              types.String   `tfsdk:"name"`
	Driver            types.String   `tfsdk:"driver"`
	BMC               *nodeBMCModel  `tfsdk:"bmc"`
	ResourceClass     types.String   `tfsdk:"resource_class"`
	Properties        types.Object   `tfsdk:"properties"`
	PropertyOverrides types.Set      `tfsdk:"property_overrides"`
	Maintenance       types.Bool     `tfsdk:"maintenance"`
	MaintenanceReason types.String   `tfsdk:"maintenance_reason"`
	CleanErase        types.String   `tfsdk:"clean_erase"`
	InspectOnEnroll   types.Bool     `tfsdk:"inspect_on_enroll"`
	WaitForAvailable  types.Bool     `tfsdk:"wait_for_available"`
	ForceDestroy      types.Bool     `tfsdk:"force_destroy"`
	PowerState        types.String   `tfsdk:"power_state"`
	ProvisionState    types.String   `tfsdk:"provision_state"`
	Fault             types.String   `tfsdk:"fault"`
	LastError         types.String   `tfsdk:"last_error"`
	InstanceID        types.String   `tfsdk:"instance_id"`
	Inventory         types.Object   `tfsdk:"inventory"`
	Timeouts          timeouts.Value `tfsdk:"timeouts"`
}

type nodeBMCModel struct {
	Address           types.String `tfsdk:"address"`
	Username          types.String `tfsdk:"username"`
	Password          types.String `tfsdk:"password"`
	PasswordWO        types.String `tfsdk:"password_wo"`
	PasswordWOVersion types.Int64  `tfsdk:"password_wo_version"`
	Insecure          types.Bool   `tfsdk:"insecure"`
	SystemID          types.String `tfsdk:"system_id"`
	CipherSuite       types.Int64  `tfsdk:"cipher_suite"`
}

// nodeAttrs lets API field paths find their attribute.
var nodeAttrs = map[string]attrKind{
	"name": attrPlain, "driver": attrPlain, "bmc": attrObject, "resource_class": attrPlain,
	"properties": attrObject, "maintenance": attrPlain, "maintenance_reason": attrPlain,
	"clean_erase": attrPlain, "inspect_on_enroll": attrPlain,
}

var propertiesAttrTypes = map[string]attr.Type{
	"cpus":      types.Int64Type,
	"memory_mb": types.Int64Type,
	"local_gb":  types.Int64Type,
	"cpu_arch":  types.StringType,
}

func (r *NodeResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_node"
}

func (r *NodeResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	stable := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	observed := []planmodifier.String{observedUnlessReverified}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A physical server (node) enrolled in the controller through its BMC. Needs an admin token.\n\n" +
			"A new node starts in `enroll`; the controller reaches its BMC once, fills the `properties` not set here from the " +
			"hardware inventory and makes it `available`. Creation waits for that unless `wait_for_available` is `false`. " +
			"If the BMC cannot be reached the node stays in `enroll` with a `fault` (retried automatically) and " +
			"creation fails when its timeout expires, reporting the fault. Credentials the BMC refuses twice in a row " +
			"(`bmc_auth_failed`) fail it at once instead, with the BMC's answer: a wrong password is not something to wait for. " +
			"The node stays enrolled; correct the password and apply again, and Terraform replaces it (a node whose BMC has " +
			"refused every login since it was enrolled goes at once, as the controller never did anything to the machine). " +
			"An update that sends new BMC settings to a node in `enroll` waits, and fails, the same way.\n\n" +
			"BMC trouble never puts a node in maintenance: `maintenance` is only ever set by an operator, with a reason. " +
			"Destroying a node returns as soon as the controller has queued its retirement, which powers the machine off " +
			"before the record goes; meanwhile the node is in `deleting` and keeps its name. When that retire cannot finish " +
			"by itself (the node is in maintenance, or its BMC has a fault), destroy says so in a warning, and creating a node " +
			"of the same name is refused with the reason rather than waited on.\n\n" +
			"**Who owns `maintenance`.** Decide per node. Leave `maintenance` out of the configuration and it is the operators': " +
			"they set and clear it with the CLI, the dashboard or the API, plans show it as it is and no apply changes it. Or " +
			"manage it in code: set `maintenance` (and `maintenance_reason` with `true`); a change an operator makes elsewhere " +
			"then shows as drift and the next apply puts the configured value back. The node's events name who made each " +
			"change and through which client (Terraform, the CLI, the dashboard or another API client).\n\n" +
			"**Which BMC password argument.** With Terraform >= 1.11 or OpenTofu >= 1.11, set `bmc.password_wo` " +
			"(write-only: sent to the controller, never stored in the plan or the state) with `bmc.password_wo_version`, " +
			"and change the version to rotate the password; pass the password in an ephemeral variable " +
			"(`ephemeral = true`) or from an ephemeral resource so that saved plans hold no copy either. " +
			"Older CLIs refuse write-only arguments: set `bmc.password`, which the state keeps (marked sensitive). " +
			"Switching from `password` to `password_wo` takes the password out of the state at the next apply; " +
			"earlier states (backups, a remote backend's history) still hold it, so rotate it on the BMC then.\n\n" +
			"**What plans show.** An update plans the attributes the controller observes (`power_state`, `provision_state`, " +
			"`fault`, `last_error`, `instance_id`) as the refresh read them, so a change of `maintenance` shows that change alone. " +
			"Only an update that makes the controller re-verify the BMC during the apply (a new `driver`, `bmc.address` or " +
			"`bmc.system_id`, or any update of a node still in `enroll` that the apply waits for) plans them, and the " +
			"`properties` still empty, as `(known after apply)`; so does removing a property from `properties`, which clears " +
			"its override and brings back what inspection found. The state after the apply holds the planned values; the next " +
			"refresh reads what the controller has observed since, without a diff.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The node's id (a UUID), assigned by the controller.",
				Computed:            true,
				PlanModifiers:       stable,
			},
			"name": schema.StringAttribute{
				MarkdownDescription: "Unique name of the node: a DNS label (lowercase letters, digits and hyphens, at most 63 characters). Can be changed in place.",
				Required:            true,
				Validators:          []validator.String{stringvalidator.RegexMatches(nameRE, nameRule)},
			},
			"driver": schema.StringAttribute{
				MarkdownDescription: "How the controller talks to the BMC: " + codeList(api.Drivers()) + ". Changing it updates the node in place; the controller then re-verifies the BMC.",
				Required:            true,
				Validators:          []validator.String{stringvalidator.OneOf(api.Drivers()...)},
			},
			"bmc": schema.SingleNestedAttribute{
				MarkdownDescription: "How to reach the node's baseboard management controller. Changing `address` or `system_id` updates the node in place and makes the controller re-verify it before scheduling on it again.",
				Required:            true,
				Attributes: map[string]schema.Attribute{
					"address": schema.StringAttribute{
						MarkdownDescription: "URL of the BMC: `https://host[:port]` (or `http://`) for `redfish`, `ipmi://host[:port]` for `ipmi` (port 623 by default).",
						Required:            true,
						Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
					},
					"username": schema.StringAttribute{
						MarkdownDescription: "BMC user name.",
						Required:            true,
						Validators:          []validator.String{stringvalidator.LengthBetween(1, 64)},
					},
					"password": schema.StringAttribute{
						MarkdownDescription: "BMC password, for any Terraform or OpenTofu version. Set exactly one of `password` and `password_wo`; " +
							"prefer `password_wo` with Terraform >= 1.11 or OpenTofu >= 1.11. The API never returns the password, so the provider " +
							"keeps the configured value in the state (marked sensitive, but readable by anyone who can read the state) and cannot " +
							"detect changes made outside Terraform. It is null after an import until the next apply sets it.",
						Optional:   true,
						Sensitive:  true,
						Validators: []validator.String{stringvalidator.LengthBetween(1, 256)},
					},
					"password_wo": schema.StringAttribute{
						MarkdownDescription: "BMC password as a write-only argument (Terraform >= 1.11, OpenTofu >= 1.11): sent to the controller " +
							"and never stored in the plan or the state. Use it instead of `password` wherever the CLI supports it. " +
							"Needs `password_wo_version`; as Terraform keeps no trace of the value, a new password is only sent when " +
							"`password_wo_version` changes.",
						Optional:   true,
						Sensitive:  true,
						WriteOnly:  true,
						Validators: []validator.String{stringvalidator.LengthBetween(1, 256)},
					},
					"password_wo_version": schema.Int64Attribute{
						MarkdownDescription: "Version of `password_wo`, required with it and only allowed with it: change it (e.g. add 1) to send " +
							"the current `password_wo` to the controller, which is how a BMC password is rotated. Kept in the state.",
						Optional: true,
					},
					"insecure": schema.BoolAttribute{
						MarkdownDescription: "Skip verification of the BMC's TLS certificate (many BMCs have self-signed ones). Defaults to `false`.",
						Optional:            true,
						Computed:            true,
						Default:             booldefault.StaticBool(false),
					},
					"system_id": schema.StringAttribute{
						MarkdownDescription: "Redfish system: its path (`/redfish/v1/Systems/1`), a bare id (`1`, `System.Embedded.1`) or its URL on the BMC. " +
							"Optional when the BMC manages exactly one system. The controller asks the BMC which system it is and keys the node by " +
							"the system's `@odata.id` as the BMC serves it (one machine is one node, however it is spelled): left unset, this " +
							"attribute then shows that id; set, it keeps your spelling. Only for `redfish`.",
						Optional:      true,
						Computed:      true,
						Validators:    []validator.String{systemIDValidator{}},
						PlanModifiers: []planmodifier.String{systemIDUnlessMoved{}},
					},
					"cipher_suite": schema.Int64Attribute{
						MarkdownDescription: "IPMI lanplus cipher suite to use; `0` (the default) lets the controller find one. Only for `ipmi`.",
						Optional:            true,
						Computed:            true,
						Default:             int64default.StaticInt64(0),
						Validators:          []validator.Int64{int64validator.Between(0, 17)},
					},
				},
			},
			"resource_class": schema.StringAttribute{
				MarkdownDescription: "Class of hardware the node offers; instances ask for a class (e.g. `gpu-large`). 1-63 letters, digits, `.`, `_` or `-`.",
				Required:            true,
				Validators:          []validator.String{stringvalidator.RegexMatches(resourceClassRE, "must be 1-63 letters, digits, '.', '_' or '-'")},
			},
			"properties": schema.SingleNestedAttribute{
				MarkdownDescription: "Hardware properties. Each one set here is an operator's override: the controller shows it as set and " +
					"inspection never changes it. Those left out show what inspection found (the BMC's inventory when the node is verified, " +
					"the deploy agent's when it is inspected). Removing one from the configuration clears its override: the plan shows it " +
					"as `(known after apply)` and the apply brings back the inspected value (empty if the node was never inspected).",
				Optional:      true,
				Computed:      true,
				PlanModifiers: []planmodifier.Object{propertiesUnlessFilled{}},
				Attributes: map[string]schema.Attribute{
					"cpus": schema.Int64Attribute{
						MarkdownDescription: "Number of CPU cores.",
						Optional:            true, Computed: true,
						PlanModifiers: []planmodifier.Int64{propertyUnlessFilled},
						Validators:    []validator.Int64{int64validator.Between(1, 65536)},
					},
					"memory_mb": schema.Int64Attribute{
						MarkdownDescription: "Memory in MiB.",
						Optional:            true, Computed: true,
						PlanModifiers: []planmodifier.Int64{propertyUnlessFilled},
						Validators:    []validator.Int64{int64validator.Between(1, math.MaxInt32)},
					},
					"local_gb": schema.Int64Attribute{
						MarkdownDescription: "Local disk in GiB.",
						Optional:            true, Computed: true,
						PlanModifiers: []planmodifier.Int64{propertyUnlessFilled},
						Validators:    []validator.Int64{int64validator.Between(1, math.MaxInt32)},
					},
					"cpu_arch": schema.StringAttribute{
						MarkdownDescription: "CPU architecture, e.g. `x86_64` or `aarch64`.",
						Optional:            true, Computed: true,
						PlanModifiers: []planmodifier.String{propertyUnlessFilled},
						Validators:    []validator.String{stringvalidator.LengthBetween(1, 32)},
					},
				},
			},
			"property_overrides": schema.SetAttribute{
				MarkdownDescription: "Which `properties` are overrides (" + codeList(api.PropertyNames()) + "): those set in the configuration. " +
					"The others show what inspection found.",
				ElementType: types.StringType,
				Computed:    true,
			},
			"maintenance": schema.BoolAttribute{
				MarkdownDescription: "Take the node out of service. An operator's decision only: the controller never sets it by itself. " +
					"No new instances are placed on a node in maintenance and its queued work waits. `true` requires `maintenance_reason`. " +
					"Unset, maintenance is not managed by this configuration: the attribute shows the node's maintenance as the controller " +
					"reports it (`false` for a new node), and no plan ever changes it, so maintenance an operator sets with the CLI, the " +
					"dashboard or the API stays. Set (`true` or `false`), it is managed here: a change made elsewhere shows as drift and " +
					"the next apply puts the configured value back. Removing it from the configuration stops managing it and changes nothing.",
				Optional:      true,
				Computed:      true,
				PlanModifiers: []planmodifier.Bool{maintenanceUnlessConfigured{}},
			},
			"maintenance_reason": schema.StringAttribute{
				MarkdownDescription: "Why the node is in maintenance; required when `maintenance` is `true` and only allowed then. Recorded in the node's audit events. " +
					"With `maintenance` unset it shows the reason an operator gave, as the controller reports it.",
				Optional:      true,
				Computed:      true,
				PlanModifiers: []planmodifier.String{maintenanceReasonUnlessConfigured{}},
				Validators:    []validator.String{stringvalidator.LengthBetween(1, 1024)},
			},
			"clean_erase": schema.StringAttribute{
				MarkdownDescription: "How cleaning erases this node's disks with the deploy agent between tenants: `metadata` (partition tables " +
					"and filesystem signatures at both ends of every disk), `full` (every byte: NVMe format or blkdiscard where supported, " +
					"else overwrite) or `off` (no erase, and no agent boot). It wins over the controller's setting for the node's resource " +
					"class (`--clean-erase-class`) and its default (`--clean-erase`); leave it unset to follow those. Changes in place.",
				Optional:   true,
				Validators: []validator.String{stringvalidator.OneOf(api.CleanErases()...)},
			},
			"inspect_on_enroll": schema.BoolAttribute{
				MarkdownDescription: "Whether the controller inspects this node with the deploy agent once its BMC is verified " +
					"(`enroll` → `inspecting` → `available`), so its inventory and properties are known before it is scheduled. " +
					"`true` or `false` wins over the controller's `--inspect-on-enroll`; leave it unset to follow that. A node that asks " +
					"for it while the controller cannot inspect it (no deploy agent served, or an IPMI node without `--agent-netboot`) " +
					"becomes `available` uninspected, and its events say why. The controller reads it whenever it verifies the BMC (at " +
					"enrolment, and again after a change of `driver`, `bmc.address` or `bmc.system_id`); changing it alone inspects " +
					"nothing (`controller node inspect` inspects on demand).",
				Optional: true,
			},
			"wait_for_available": schema.BoolAttribute{
				MarkdownDescription: "Wait, on create (and after a BMC change), until the controller has verified the BMC and the node is `available`. " +
					"Not done when `maintenance` is `true`, as the controller does not act on a node in maintenance. Defaults to `true`.",
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(true),
			},
			"force_destroy": schema.BoolAttribute{
				MarkdownDescription: "On destroy, remove the node's record at once without touching its BMC (the API's `force=true`). " +
					"By default destroy queues a retire that powers the machine off and clears its boot override and media " +
					"before the record goes, waiting for as long as the BMC is unreachable (or the node is in maintenance). " +
					"Set this for hardware that is gone for good; the machine is then left as it is. Defaults to `false`. " +
					"A node still in `enroll` whose BMC has refused every login since it was enrolled is removed at once either way: " +
					"the controller never logged in to that BMC, so there is nothing to power off, and a retire could never log in.",
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
			},
			"power_state": schema.StringAttribute{
				MarkdownDescription: "Power state last observed on the BMC: " + codeList(api.PowerStates()) + ".",
				Computed:            true,
				PlanModifiers:       observed,
			},
			"provision_state": schema.StringAttribute{
				MarkdownDescription: "Where the node is in its life cycle: " + codeList(api.ProvisionStates()) + ".",
				Computed:            true,
				PlanModifiers:       observed,
			},
			"fault": schema.StringAttribute{
				MarkdownDescription: "BMC trouble the controller detected (`bmc_unreachable`, `bmc_auth_failed`, `power_mismatch`, ...), or empty when healthy. Faults clear themselves when the BMC answers again.",
				Computed:            true,
				PlanModifiers:       observed,
			},
			"last_error": schema.StringAttribute{
				MarkdownDescription: "The last error the controller met on this node, or empty.",
				Computed:            true,
				PlanModifiers:       observed,
			},
			"instance_id": schema.StringAttribute{
				MarkdownDescription: "Id of the instance on the node, or empty.",
				Computed:            true,
				// Instances come and go on their own; a node update never sets it.
				PlanModifiers: stable,
			},
			"inventory": inventoryResourceAttribute(),
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true}),
		},
	}
}

func (r *NodeResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig enforces the pairing of maintenance and its reason, which
// the controller would otherwise refuse half-way through an apply.
func (r *NodeResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var maintenance types.Bool
	var reason types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("maintenance"), &maintenance)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("maintenance_reason"), &reason)...)
	if resp.Diagnostics.HasError() || maintenance.IsUnknown() || reason.IsUnknown() {
		return
	}
	hasReason := !reason.IsNull() && strings.TrimSpace(reason.ValueString()) != ""
	if maintenance.ValueBool() && !hasReason {
		resp.Diagnostics.AddAttributeError(path.Root("maintenance_reason"), "Missing maintenance_reason",
			"maintenance_reason is required when maintenance is true: say why the node is taken out of service "+
				"(it is recorded in the node's audit events).")
	}
	if !maintenance.ValueBool() && !reason.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("maintenance_reason"), "maintenance_reason without maintenance",
			"maintenance_reason may only be set when maintenance is true; the controller clears the reason when maintenance ends. "+
				"Remove maintenance_reason or set maintenance = true.")
	}
	validateBMCForDriver(ctx, req, resp)
	validateBMCPassword(ctx, req, resp)
}

// validateBMCPassword asks for exactly one of bmc.password and
// bmc.password_wo, and for password_wo_version exactly with password_wo:
// without a version a changed write-only password would never be sent, as
// Terraform keeps nothing of it to compare. Unknown values (a password
// from another resource) are judged at apply.
func validateBMCPassword(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var bmc *nodeBMCModel
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("bmc"), &bmc)...)
	if resp.Diagnostics.HasError() || bmc == nil ||
		bmc.Password.IsUnknown() || bmc.PasswordWO.IsUnknown() || bmc.PasswordWOVersion.IsUnknown() {
		return
	}
	at := path.Root("bmc")
	const which = "Use bmc.password_wo with bmc.password_wo_version on Terraform >= 1.11 or OpenTofu >= 1.11 (the password is then " +
		"never stored in the state), or bmc.password on older CLIs (kept in the state, marked sensitive)."
	switch plain, wo := !bmc.Password.IsNull(), !bmc.PasswordWO.IsNull(); {
	case plain && wo:
		resp.Diagnostics.AddAttributeError(at.AtName("password_wo"), "Two BMC passwords",
			"Set only one of bmc.password and bmc.password_wo. "+which)
	case !plain && !wo:
		resp.Diagnostics.AddAttributeError(at, "Missing BMC password",
			"Set one of bmc.password and bmc.password_wo. "+which)
	case wo && bmc.PasswordWOVersion.IsNull():
		resp.Diagnostics.AddAttributeError(at.AtName("password_wo_version"), "Missing bmc.password_wo_version",
			"bmc.password_wo needs bmc.password_wo_version (e.g. 1): Terraform keeps no trace of a write-only password, "+
				"so the provider sends it on create and whenever the version changes. Change the version to rotate the password.")
	case !wo && !bmc.PasswordWOVersion.IsNull():
		resp.Diagnostics.AddAttributeError(at.AtName("password_wo_version"), "bmc.password_wo_version without bmc.password_wo",
			"bmc.password_wo_version only says when to send bmc.password_wo; remove it, or set bmc.password_wo instead of bmc.password.")
	}
}

// validateBMCForDriver catches BMC settings that cannot fit the driver at
// plan time, so a CI plan fails instead of the apply (the controller
// checks the same rules).
func validateBMCForDriver(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var driver types.String
	var bmc *nodeBMCModel
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("driver"), &driver)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("bmc"), &bmc)...)
	if resp.Diagnostics.HasError() || bmc == nil || driver.IsNull() || driver.IsUnknown() {
		return
	}
	d := api.Driver(driver.ValueString())
	if !bmc.Address.IsNull() && !bmc.Address.IsUnknown() {
		addr := bmc.Address.ValueString()
		u, err := url.Parse(addr)
		switch {
		case err != nil || u.Host == "":
			resp.Diagnostics.AddAttributeError(path.Root("bmc").AtName("address"), "Invalid BMC address",
				"bmc.address must be a URL with a host: https://10.0.0.5 for redfish, ipmi://10.0.0.5:623 for ipmi.")
		case u.User != nil:
			resp.Diagnostics.AddAttributeError(path.Root("bmc").AtName("address"), "Credentials in BMC address",
				"bmc.address must not contain credentials; use bmc.username and bmc.password.")
		case d == api.DriverRedfish && u.Scheme != "https" && u.Scheme != "http":
			resp.Diagnostics.AddAttributeError(path.Root("bmc").AtName("address"), "BMC address does not fit the driver",
				fmt.Sprintf("bmc.address scheme %q does not fit driver redfish; use https:// (or http://).", u.Scheme))
		case d == api.DriverIPMI && u.Scheme != "ipmi":
			resp.Diagnostics.AddAttributeError(path.Root("bmc").AtName("address"), "BMC address does not fit the driver",
				fmt.Sprintf("bmc.address scheme %q does not fit driver ipmi; use ipmi://host[:port].", u.Scheme))
		}
	}
	if d == api.DriverIPMI && !bmc.SystemID.IsNull() && !bmc.SystemID.IsUnknown() && bmc.SystemID.ValueString() != "" {
		resp.Diagnostics.AddAttributeError(path.Root("bmc").AtName("system_id"), "system_id needs driver redfish",
			"bmc.system_id is a Redfish system path; it does not apply to driver ipmi.")
	}
	if d == api.DriverRedfish && !bmc.CipherSuite.IsNull() && !bmc.CipherSuite.IsUnknown() && bmc.CipherSuite.ValueInt64() != 0 {
		resp.Diagnostics.AddAttributeError(path.Root("bmc").AtName("cipher_suite"), "cipher_suite needs driver ipmi",
			"bmc.cipher_suite is an IPMI lanplus setting; it does not apply to driver redfish.")
	}
}

func (r *NodeResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan nodeResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultNodeCreateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	// A write-only password is only in the configuration, never in the plan.
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("bmc").AtName("password_wo"), &plan.BMC.PasswordWO)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	in := api.NodeCreate{
		Name:   plan.Name.ValueString(),
		Driver: api.Driver(plan.Driver.ValueString()),
		BMC: api.BMCInput{
			Address:     plan.BMC.Address.ValueString(),
			Username:    plan.BMC.Username.ValueString(),
			Password:    plan.BMC.password(),
			Insecure:    plan.BMC.Insecure.ValueBool(),
			SystemID:    plan.BMC.SystemID.ValueString(),
			CipherSuite: int(plan.BMC.CipherSuite.ValueInt64()),
		},
		ResourceClass:     plan.ResourceClass.ValueString(),
		Properties:        overridesFromPlan(plan.Properties, plan.PropertyOverrides),
		Maintenance:       plan.Maintenance.ValueBool(),
		MaintenanceReason: plan.MaintenanceReason.ValueString(),
		CleanErase:        api.CleanErase(plan.CleanErase.ValueString()),
		InspectOnEnroll:   plan.InspectOnEnroll.ValueBoolPointer(),
	}
	node, err := r.createNode(ctx, in)
	var held *nameHeldError
	if errors.As(err, &held) {
		resp.Diagnostics.AddAttributeError(path.Root("name"), "Could not create node "+in.Name, held.msg)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not create node "+in.Name, err, nodeAttrs)
		return
	}
	tflog.Info(ctx, "node enrolled", map[string]any{"id": node.ID, "name": node.Name})

	// Saved at once: if the wait below fails, the node exists and Terraform
	// must know it (it will be marked tainted).
	secrets, planned := plan.BMC, plan
	resp.Diagnostics.Append(plan.setFromAPI(node, secrets)...)
	plan.keepPlannedMaintenance(&planned)
	plan.Inventory = types.ObjectNull(inventoryAttrTypes) // a new node is not inspected yet
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !plan.WaitForAvailable.ValueBool() || plan.Maintenance.ValueBool() {
		return
	}
	node, err = r.waitVerified(ctx, node.ID, timeout)
	if node != nil {
		resp.Diagnostics.Append(plan.setFromAPI(node, secrets)...)
		plan.keepPlannedMaintenance(&planned)
		// Not inspected yet, as a rule: an inspection on enroll
		// (--inspect-on-enroll) begins as the wait ends, and shows at the
		// next refresh.
		plan.Inventory = readInventory(ctx, r.client, node, types.ObjectNull(inventoryAttrTypes), &resp.Diagnostics)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
	var refused *credentialsRefusedError
	switch {
	case errors.As(err, &refused):
		// Terraform taints a node whose create failed and replaces it at
		// the next apply; Delete removes this one at once then (see
		// retireNotNeeded).
		resp.Diagnostics.AddAttributeError(plan.BMC.passwordPath(), "The BMC refused the credentials of node "+in.Name,
			refused.detail("Correct them and apply again: Terraform replaces this node, which never logged in to its BMC, so its "+
				"record is removed at once without touching the machine. (Fixing the account on the BMC instead makes this node "+
				"available by itself; run terraform untaint on it then, or the next apply replaces it.)"))
	case err != nil:
		resp.Diagnostics.AddError("Node "+in.Name+" did not become available", err.Error())
	}
}

// retireStuckAfter is how long create waits for a node of the same name
// that is being retired while its BMC has a fault: long enough for a
// fault the BMC has just recovered from to go (the retire's next power-off
// clears it), short enough that a dead BMC is reported, not waited on in
// silence ("Still creating..." is all Terraform shows meanwhile).
var retireStuckAfter = 15 * time.Second

// nameHeldError says that a node being retired holds the name and why its
// retire does not finish; it belongs on the name attribute.
type nameHeldError struct{ msg string }

func (e *nameHeldError) Error() string { return e.msg }

// createNode enrolls a node. A name still held by a node being retired
// (after a destroy, or when Terraform replaces a node) frees up once the
// retire job ends, so a retire that is under way is waited for. One that
// cannot end by itself is refused at once (the old node is in maintenance:
// only an operator lets it go on) or after retireStuckAfter (its BMC has a
// fault), with what holds it.
func (r *NodeResource) createNode(ctx context.Context, in api.NodeCreate) (*api.Node, error) {
	for {
		node, err := r.client.CreateNode(ctx, in)
		if !errors.Is(err, apiclient.ErrConflict) {
			return node, err
		}
		old, gerr := r.client.GetNode(ctx, in.Name)
		if gerr != nil || old.ProvisionState != api.StateDeleting {
			return nil, err
		}
		var faultSeen time.Time
		logged := ""
		last, werr := waitFor(ctx, "retired node "+old.ID, func(ctx context.Context) (*api.Node, error) {
			n, err := r.client.GetNode(ctx, old.ID)
			if errors.Is(err, apiclient.ErrNotFound) {
				return nil, nil
			}
			return n, err
		}, func(n *api.Node) (bool, error) {
			if n == nil || n.ProvisionState != api.StateDeleting {
				return true, nil
			}
			why := "its retire job is powering it off"
			switch {
			case n.Maintenance:
				return false, &nameHeldError{fmt.Sprintf("A node named %q is still being retired (id %s), and it is in maintenance (%q): "+
					"the controller acts on nothing in maintenance, so its retire waits until an operator clears maintenance on it "+
					"(controller node maintenance %s --off), or deletes it with force=true if the machine is gone for good "+
					"(controller node delete %s --force). Apply again after that.", in.Name, n.ID, n.MaintenanceReason, n.ID, n.ID)}
			case n.Fault != "":
				if faultSeen.IsZero() {
					faultSeen = time.Now()
				}
				if time.Since(faultSeen) >= retireStuckAfter {
					return false, &nameHeldError{fmt.Sprintf("A node named %q is still being retired (id %s), waiting for its BMC: "+
						"fault %s since %s (last error: %s). The controller powers the machine off before the record and its name go, "+
						"and keeps retrying until the BMC answers. Fix the BMC, or delete that node with force=true if the machine "+
						"is gone for good (controller node delete %s --force). Apply again after that.",
						in.Name, n.ID, n.Fault, faultSince(n), orNone(n.LastError), n.ID)}
				}
				why = "its BMC has fault " + string(n.Fault)
			default:
				faultSeen = time.Time{}
			}
			if why != logged {
				logged = why
				tflog.Info(ctx, "a node of the same name is being retired; waiting for it to go", map[string]any{"name": in.Name, "old_id": n.ID, "why": why})
			}
			return false, nil
		})
		var held *nameHeldError
		switch {
		case errors.As(werr, &held):
			return nil, held
		case werr != nil && last != nil:
			return nil, fmt.Errorf("%w\n\nWaited for the node being retired under that name (%s) to go; it is still in provision_state %q"+
				" (fault %q, last error: %s): %v", err, old.ID, last.ProvisionState, last.Fault, orNone(last.LastError), werr)
		case werr != nil:
			return nil, fmt.Errorf("%w\n\nWaited for the node being retired under that name (%s) to go, but: %v", err, old.ID, werr)
		}
	}
}

func faultSince(n *api.Node) string {
	if n.FaultSince == nil {
		return "unknown"
	}
	return n.FaultSince.UTC().Format(time.RFC3339)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// refusalsToFail is how many times in a row the BMC refuses a node's
// credentials before a wait for the node to be verified gives up: a BMC
// may refuse a login once while it restarts its account service, but
// credentials refused twice are almost always a mistake in the
// configuration, and no wait fixes that.
const refusalsToFail = 2

// credentialsRefusedError ends a wait for verification: the node's BMC
// refused its credentials refusalsToFail times or more in a row.
type credentialsRefusedError struct{ node *api.Node }

func (e *credentialsRefusedError) Error() string {
	return fmt.Sprintf("the BMC of node %s refused its credentials (%d failed logins in a row): %s", e.node.Name, e.node.BMCFailures, e.node.LastError)
}

// detail explains the refusal with the BMC's answer; next says what to do.
func (e *credentialsRefusedError) detail(next string) string {
	n := e.node
	addr := "The BMC"
	if n.BMC != nil {
		addr = "The BMC at " + n.BMC.Address
	}
	return fmt.Sprintf("%s refused the credentials of node %s: %d failed logins in a row (fault %s since %s). Its answer: %s\n\n"+
		"A wrong bmc.password (or bmc.username) is the usual cause, which no wait fixes, so the apply stops here. The node "+
		"stays enrolled, and the controller keeps retrying its BMC with backoff. %s With bmc.password_wo, change "+
		"bmc.password_wo_version too, or the new password is not sent.",
		addr, n.Name, n.BMCFailures, n.Fault, faultSince(n), orNone(n.LastError), next)
}

// waitVerified waits until the controller has verified the node's BMC
// (provision_state leaves enroll). A node that stays in enroll with a
// fault is tolerated until the timeout: the controller keeps retrying and
// faults clear themselves. Credentials the BMC refuses refusalsToFail
// times in a row are not: they end the wait with a
// *credentialsRefusedError.
func (r *NodeResource) waitVerified(ctx context.Context, id string, timeout time.Duration) (*api.Node, error) {
	node, err := waitFor(ctx, "node "+id+" to be verified", func(ctx context.Context) (*api.Node, error) {
		return r.client.GetNode(ctx, id)
	}, func(n *api.Node) (bool, error) {
		switch n.ProvisionState {
		case api.StateEnroll:
			if n.Fault == api.FaultDuplicate {
				// The verify found another node's machine behind these
				// settings: no wait ends that.
				return false, fmt.Errorf("node %s is a second node of another node's machine, and the controller will not use it: %s", n.Name, n.LastError)
			}
			if n.Fault == api.FaultBMCAuthFailed && n.BMCFailures >= refusalsToFail {
				return false, &credentialsRefusedError{n}
			}
			return false, nil
		case api.StateDeleting:
			return false, fmt.Errorf("node %s is being deleted (by someone else?) while waiting for it to become available", n.Name)
		default:
			return true, nil
		}
	})
	switch {
	case err == nil:
		return node, nil
	case errors.Is(err, errWaitTimeout) && node != nil:
		msg := fmt.Sprintf("The controller did not verify node %s within %s: it is still in provision_state %q", node.Name, timeout, node.ProvisionState)
		if node.Fault != "" {
			msg += fmt.Sprintf(" with fault %q", node.Fault)
		}
		if node.LastError != "" {
			msg += fmt.Sprintf(".\n\nLast error: %s", node.LastError)
		}
		msg += ".\n\nThe node was enrolled and the controller keeps retrying its BMC. Check the bmc settings and the BMC's network, " +
			"raise the create timeout, or set wait_for_available = false."
		return node, errors.New(msg)
	case errors.Is(err, apiclient.ErrNotFound):
		return nil, fmt.Errorf("node %s was deleted while waiting for it to become available", id)
	default:
		return node, err
	}
}

func (r *NodeResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state nodeResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	node, err := r.client.GetNode(ctx, state.ID.ValueString())
	if errors.Is(err, apiclient.ErrNotFound) || err == nil && node.ProvisionState == api.StateDeleting {
		tflog.Info(ctx, "node is gone or being deleted; removing it from the state", map[string]any{"id": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not read node "+state.ID.ValueString(), err, nil)
		return
	}
	if state.WaitForAvailable.IsNull() {
		state.WaitForAvailable = types.BoolValue(true)
	}
	if state.ForceDestroy.IsNull() {
		state.ForceDestroy = types.BoolValue(false)
	}
	resp.Diagnostics.Append(state.setFromAPI(node, state.BMC)...) // nil after an import: no password known
	state.Inventory = readInventory(ctx, r.client, node, state.Inventory, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *NodeResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state nodeResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultNodeUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("bmc").AtName("password_wo"), &plan.BMC.PasswordWO)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	planned, secrets := plan, plan.BMC // setFromAPI overwrites plan with what the controller says
	patch, changed := nodePatch(&plan, &state)
	node := (*api.Node)(nil)
	if changed {
		var err error
		node, err = r.client.PatchNode(ctx, state.ID.ValueString(), patch, "")
		if err != nil {
			addAPIError(&resp.Diagnostics, "Could not update node "+state.Name.ValueString(), err, nodeAttrs)
			return
		}
	} else {
		// Only provider-side settings (wait_for_available, force_destroy,
		// timeouts) changed.
		var err error
		if node, err = r.client.GetNode(ctx, state.ID.ValueString()); err != nil {
			addAPIError(&resp.Diagnostics, "Could not read node "+state.Name.ValueString(), err, nil)
			return
		}
	}
	resp.Diagnostics.Append(plan.setFromAPI(node, secrets)...)
	resp.Diagnostics.Append(plan.keepPlannedObservations(&planned)...)
	if plan.Inventory.IsUnknown() {
		plan.Inventory = readInventory(ctx, r.client, node, state.Inventory, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if node.ProvisionState != api.StateEnroll || !plan.WaitForAvailable.ValueBool() || plan.Maintenance.ValueBool() {
		return
	}
	node, err := r.waitVerified(ctx, node.ID, timeout)
	if node != nil {
		resp.Diagnostics.Append(plan.setFromAPI(node, secrets)...)
		resp.Diagnostics.Append(plan.keepPlannedObservations(&planned)...)
		if plan.Inventory.IsUnknown() {
			plan.Inventory = readInventory(ctx, r.client, node, state.Inventory, &resp.Diagnostics)
		}
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
	var refused *credentialsRefusedError
	switch {
	case errors.As(err, &refused):
		resp.Diagnostics.AddAttributeError(plan.BMC.passwordPath(), "The BMC refused the credentials of node "+plan.Name.ValueString(),
			refused.detail("The update was saved. Correct the credentials and apply again: the node is updated in place."))
	case err != nil:
		resp.Diagnostics.AddError("Node "+plan.Name.ValueString()+" was updated but not re-verified", err.Error())
	}
}

// nodePatch builds the merge patch from state to plan. The BMC is sent
// whole when any of it (or the driver, which the address must fit)
// changes, the password only when it changed: the controller keeps the
// stored one otherwise.
func nodePatch(plan, state *nodeResourceModel) (api.NodePatch, bool) {
	var p api.NodePatch
	changed := false
	str := func(s types.String) *string { v := s.ValueString(); return &v }
	if !plan.Name.Equal(state.Name) {
		p.Name, changed = str(plan.Name), true
	}
	if !plan.Driver.Equal(state.Driver) {
		d := api.Driver(plan.Driver.ValueString())
		p.Driver, changed = &d, true
	}
	// The password goes out when it may differ from the controller's: a
	// new bmc.password, a new password_wo_version (the only sign of a new
	// write-only password), a switch between the two, or no state of it.
	newPassword := state.BMC == nil || !plan.BMC.Password.Equal(state.BMC.Password) ||
		!plan.BMC.PasswordWOVersion.Equal(state.BMC.PasswordWOVersion)
	if newPassword || !plan.Driver.Equal(state.Driver) ||
		!plan.BMC.Address.Equal(state.BMC.Address) || !plan.BMC.Username.Equal(state.BMC.Username) ||
		!plan.BMC.Insecure.Equal(state.BMC.Insecure) ||
		!plan.BMC.SystemID.Equal(state.BMC.SystemID) || !plan.BMC.CipherSuite.Equal(state.BMC.CipherSuite) {
		insecure := plan.BMC.Insecure.ValueBool()
		cipher := int(plan.BMC.CipherSuite.ValueInt64())
		p.BMC = &api.BMCPatch{
			Address:     str(plan.BMC.Address),
			Username:    str(plan.BMC.Username),
			Insecure:    &insecure,
			SystemID:    str(plan.BMC.SystemID),
			CipherSuite: &cipher,
		}
		if newPassword {
			pw := plan.BMC.password()
			p.BMC.Password = &pw
		}
		changed = true
	}
	if !plan.ResourceClass.Equal(state.ResourceClass) {
		p.ResourceClass, changed = str(plan.ResourceClass), true
	}
	if !plan.Properties.Equal(state.Properties) || !plan.PropertyOverrides.Equal(state.PropertyOverrides) {
		p.Properties, changed = propertiesPatch(plan.Properties, plan.PropertyOverrides), true
	}
	if !plan.Maintenance.Equal(state.Maintenance) || !plan.MaintenanceReason.Equal(state.MaintenanceReason) {
		m := plan.Maintenance.ValueBool()
		p.Maintenance, p.MaintenanceReason, changed = &m, str(plan.MaintenanceReason), true
	}
	if !plan.CleanErase.Equal(state.CleanErase) {
		mode := api.CleanErase(plan.CleanErase.ValueString()) // null: "", the class's or the controller's
		p.CleanErase, changed = &mode, true
	}
	if !plan.InspectOnEnroll.Equal(state.InspectOnEnroll) {
		// null unsets it: the node follows --inspect-on-enroll again.
		p.InspectOnEnroll, changed = &api.Nullable[bool]{Value: plan.InspectOnEnroll.ValueBoolPointer()}, true
	}
	return p, changed
}

func (r *NodeResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state nodeResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	force := state.ForceDestroy.ValueBool()
	var accepted *api.Accepted
	var err error
	if !force && r.retireNotNeeded(ctx, state.ID.ValueString()) {
		// Removed only if it is still unverified when the controller
		// looks (in the delete's own transaction): a node whose BMC took
		// the corrected credentials meanwhile is retired as any other.
		accepted, err = r.client.DeleteUnverifiedNode(ctx, state.ID.ValueString())
		if err == nil {
			force = true
		} else if errors.Is(err, apiclient.ErrConflict) {
			accepted, err = r.client.DeleteNode(ctx, state.ID.ValueString(), false)
		}
	} else {
		accepted, err = r.client.DeleteNode(ctx, state.ID.ValueString(), force)
	}
	if errors.Is(err, apiclient.ErrNotFound) {
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Could not delete node "+state.Name.ValueString(), err, nil)
		return
	}
	tflog.Info(ctx, "node deletion queued", map[string]any{"id": state.ID.ValueString(), "job_id": accepted.JobID, "message": accepted.Message})
	if !force {
		r.warnIfRetireWaits(ctx, state.ID.ValueString(), state.Name.ValueString(), accepted.Message, &resp.Diagnostics)
	}
}

// retireNotNeeded reports whether a node goes without a retire: one whose
// BMC has refused every login since it was enrolled (it is in enroll with
// fault bmc_auth_failed, and never left enroll), as after a create that
// failed on a wrong password, which Terraform replaces once the password
// is corrected. The controller never got into its BMC, so it never did
// anything to the machine; and a retire, which powers the machine off
// first, would wait for a login the BMC refuses for ever (a node being
// deleted takes no new credentials), holding the node's name against its
// replacement. A failed look keeps the retire.
func (r *NodeResource) retireNotNeeded(ctx context.Context, id string) bool {
	n, err := r.client.GetNode(ctx, id)
	if err != nil || n.ProvisionState != api.StateEnroll || n.Fault != api.FaultBMCAuthFailed {
		return false
	}
	events, err := r.client.ListNodeEvents(ctx, id)
	if err != nil {
		return false
	}
	for _, e := range events {
		if e.Field == "provision_state" && e.Old == string(api.StateEnroll) {
			return false // verified once: it may have run an instance since
		}
	}
	tflog.Info(ctx, "the node's BMC has refused every login since it was enrolled: removing its record without a retire",
		map[string]any{"id": id, "last_error": n.LastError})
	return true
}

// warnIfRetireWaits tells, as a warning, when the retire just queued
// cannot finish by itself: Terraform says "Destruction complete" either
// way, but the node then stays in deleting, holding its name, until an
// operator clears maintenance or its BMC answers. A failed look is only
// logged: the delete itself succeeded.
func (r *NodeResource) warnIfRetireWaits(ctx context.Context, id, name, apiMessage string, diags *diag.Diagnostics) {
	n, err := r.client.GetNode(ctx, id)
	if errors.Is(err, apiclient.ErrNotFound) {
		return
	}
	if err != nil {
		tflog.Warn(ctx, "could not read the node after queuing its retire", map[string]any{"id": id, "error": err.Error()})
		return
	}
	if n.ProvisionState != api.StateDeleting {
		return
	}
	const after = "\n\nTerraform no longer manages the node; the controller keeps it in provision_state deleting " +
		"(its name stays taken, and node lists show it) until the retire has powered the machine off."
	switch {
	case n.Maintenance:
		diags.AddWarning("Node "+name+" is in maintenance: its retire waits",
			fmt.Sprintf("The controller answered: %s.%s\n\nMaintenance reason: %s", apiMessage, after, n.MaintenanceReason))
	case n.Fault != "":
		diags.AddWarning("Node "+name+" has a BMC fault: its retire waits for the BMC",
			fmt.Sprintf("The node has fault %s (last error: %s); the retire job keeps retrying until the BMC answers.%s "+
				"For a machine that is gone for good, set force_destroy = true before destroying, or delete the node with force=true "+
				"(controller node delete %s --force).", n.Fault, orNone(n.LastError), after, n.ID))
	}
}

func (r *NodeResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	// The API takes an id or a name; Read replaces a name with the id.
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

// setFromAPI copies the node into the model. The BMC password is not in
// the API's answer: bmc.password and password_wo_version are kept from
// secrets (nil: unknown, as after an import). bmc.password_wo is always
// null here, which is how it stays out of the state.
func (m *nodeResourceModel) setFromAPI(n *api.Node, secrets *nodeBMCModel) diag.Diagnostics {
	m.ID = types.StringValue(n.ID)
	m.Name = types.StringValue(n.Name)
	m.Driver = types.StringValue(string(n.Driver))
	if n.BMC != nil {
		password, version := types.StringNull(), types.Int64Null()
		if secrets != nil {
			password, version = secrets.Password, secrets.PasswordWOVersion
		}
		m.BMC = &nodeBMCModel{
			Address:           types.StringValue(n.BMC.Address),
			Username:          types.StringValue(n.BMC.Username),
			Password:          password,
			PasswordWO:        types.StringNull(),
			PasswordWOVersion: version,
			Insecure:          types.BoolValue(n.BMC.Insecure),
			SystemID:          systemIDFrom(n.BMC.SystemID, secrets),
			CipherSuite:       types.Int64Value(int64(n.BMC.CipherSuite)),
		}
	}
	m.ResourceClass = types.StringValue(n.ResourceClass)
	var diags diag.Diagnostics
	m.Properties, diags = propertiesObject(n.Properties)
	overrides, d := propertyOverridesSet(n.PropertyOverrides)
	diags.Append(d...)
	m.PropertyOverrides = overrides
	m.Maintenance = types.BoolValue(n.Maintenance)
	m.MaintenanceReason = stringOrNull(n.MaintenanceReason)
	m.CleanErase = stringOrNull(string(n.CleanErase))
	m.InspectOnEnroll = types.BoolPointerValue(n.InspectOnEnroll)
	m.PowerState = types.StringValue(string(n.PowerState))
	m.ProvisionState = types.StringValue(string(n.ProvisionState))
	m.Fault = types.StringValue(string(n.Fault))
	m.LastError = types.StringValue(n.LastError)
	m.InstanceID = types.StringValue(n.InstanceID)
	return diags
}

// keepPlannedObservations puts back what the plan promised for the
// attributes the controller observes (see planmodifiers.go).
func (m *nodeResourceModel) keepPlannedObservations(planned *nodeResourceModel) diag.Diagnostics {
	keepKnown(&m.PowerState, planned.PowerState)
	keepKnown(&m.ProvisionState, planned.ProvisionState)
	keepKnown(&m.Fault, planned.Fault)
	keepKnown(&m.LastError, planned.LastError)
	keepKnown(&m.InstanceID, planned.InstanceID)
	m.keepPlannedMaintenance(planned)
	// An update never changes the inventory: the plan kept the state's.
	keepKnown(&m.Inventory, planned.Inventory)
	return keepKnownMembers(&m.Properties, planned.Properties)
}

// keepPlannedMaintenance puts back the planned maintenance: not an
// observation, but an operator may set it between plan and apply too
// (while a create or an update waits, say) where the configuration leaves
// it to operators, and the next refresh shows it.
func (m *nodeResourceModel) keepPlannedMaintenance(planned *nodeResourceModel) {
	keepKnown(&m.Maintenance, planned.Maintenance)
	keepKnown(&m.MaintenanceReason, planned.MaintenanceReason)
}

// passwordPath is the attribute of the configured password, where a
// refusal of the credentials is reported.
func (b *nodeBMCModel) passwordPath() path.Path {
	if b == nil || b.Password.IsNull() {
		return path.Root("bmc").AtName("password_wo")
	}
	return path.Root("bmc").AtName("password")
}

// password is the password to send: the write-only one when configured.
func (b *nodeBMCModel) password() string {
	if !b.PasswordWO.IsNull() {
		return b.PasswordWO.ValueString()
	}
	return b.Password.ValueString()
}

func propertiesObject(p api.Properties) (types.Object, diag.Diagnostics) {
	return types.ObjectValue(propertiesAttrTypes, map[string]attr.Value{
		"cpus":      types.Int64Value(int64(p.CPUs)),
		"memory_mb": types.Int64Value(int64(p.MemoryMB)),
		"local_gb":  types.Int64Value(int64(p.LocalGB)),
		"cpu_arch":  types.StringValue(p.CPUArch),
	})
}

// overridesFromPlan returns the planned properties that are overrides
// (named in the planned property_overrides); the others are sent empty,
// which leaves them to inspection.
func overridesFromPlan(props types.Object, overrides types.Set) api.Properties {
	var p api.Properties
	if props.IsNull() || props.IsUnknown() {
		return p
	}
	names := setNames(overrides)
	attrs := props.Attributes()
	if v, ok := attrs["cpus"].(basetypes.Int64Value); ok && names[api.PropertyCPUs] {
		p.CPUs = int(v.ValueInt64())
	}
	if v, ok := attrs["memory_mb"].(basetypes.Int64Value); ok && names[api.PropertyMemoryMB] {
		p.MemoryMB = int(v.ValueInt64())
	}
	if v, ok := attrs["local_gb"].(basetypes.Int64Value); ok && names[api.PropertyLocalGB] {
		p.LocalGB = int(v.ValueInt64())
	}
	if v, ok := attrs["cpu_arch"].(basetypes.StringValue); ok && names[api.PropertyCPUArch] {
		p.CPUArch = v.ValueString()
	}
	return p
}

// propertiesPatch is the merge patch of the node's overrides: each
// planned override with its value, every other property null, which
// clears an override the configuration no longer sets.
func propertiesPatch(props types.Object, overrides types.Set) *api.PropertiesPatch {
	p := overridesFromPlan(props, overrides)
	names := setNames(overrides)
	var out api.PropertiesPatch
	if names[api.PropertyCPUs] {
		out.CPUs = &p.CPUs
	}
	if names[api.PropertyMemoryMB] {
		out.MemoryMB = &p.MemoryMB
	}
	if names[api.PropertyLocalGB] {
		out.LocalGB = &p.LocalGB
	}
	if names[api.PropertyCPUArch] {
		out.CPUArch = &p.CPUArch
	}
	return &out
}

func setNames(s types.Set) map[api.PropertyName]bool {
	names := map[api.PropertyName]bool{}
	if s.IsNull() || s.IsUnknown() {
		return names
	}
	for _, e := range s.Elements() {
		if v, ok := e.(types.String); ok {
			names[api.PropertyName(v.ValueString())] = true
		}
	}
	return names
}

func propertyOverridesSet(names []api.PropertyName) (types.Set, diag.Diagnostics) {
	elems := make([]attr.Value, len(names))
	for i, n := range names {
		elems[i] = types.StringValue(string(n))
	}
	return types.SetValue(types.StringType, elems)
}

// ModifyPlan plans the operator's property overrides from the
// configuration: a property set there is an override, one left out is
// not. A property whose override the configuration no longer sets is
// planned unknown, as the apply clears the override and the controller
// then shows what inspection found. (Without this, Terraform would keep
// the old value of an optional and computed attribute that left the
// configuration, and never clear the override.)
func (r *NodeResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var config, planned types.Object
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("properties"), &config)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("properties"), &planned)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if config.IsUnknown() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("property_overrides"), types.SetUnknown(types.StringType))...)
		return
	}
	configured := map[string]bool{}
	if !config.IsNull() {
		for k, v := range config.Attributes() {
			configured[k] = !v.IsNull()
		}
	}
	names := make([]api.PropertyName, 0, len(configured))
	for _, n := range api.PropertyNames() {
		if configured[n] {
			names = append(names, api.PropertyName(n))
		}
	}
	overrides, diags := propertyOverridesSet(names)
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("property_overrides"), overrides)...)
	if req.State.Raw.IsNull() || planned.IsNull() || planned.IsUnknown() {
		return
	}
	var was types.Set
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("property_overrides"), &was)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cleared := false
	members := planned.Attributes()
	replanned := make(map[string]attr.Value, len(members))
	for k, v := range members {
		replanned[k] = v
		if setNames(was)[api.PropertyName(k)] && !configured[k] {
			replanned[k], cleared = unknownOf(v), true
		}
	}
	if !cleared {
		return
	}
	obj, diags := types.ObjectValue(planned.AttributeTypes(ctx), replanned)
	resp.Diagnostics.Append(diags...)
	if !diags.HasError() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("properties"), obj)...)
	}
}
