package provider

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// Plan time: baremetal_node's schema, the checks of a configuration that
// span attributes, and the planned property overrides. Nothing here
// calls the controller; the CRUD is in node_resource.go, the conversions
// from and to the API in node_model.go.

// The controller's own rules, repeated here so a bad value fails at plan
// time instead of half-way through an apply. The controller stays the
// authority and checks again.
var (
	nameRE          = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	resourceClassRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
)

const nameRule = "must be a DNS label: 1-63 lowercase letters, digits or hyphens, starting and ending with a letter or digit"

// derivedTraitsDoc says what derived traits are.
const derivedTraitsDoc = "Traits the controller derives from the node's inspection and its BMC: architecture (`HW_ARCH_X86_64`), " +
	"boot mode (`BOOT_MODE_UEFI`), Secure Boot capability (`COMPUTE_SECURITY_UEFI_SECURE_BOOT`), disk kinds (`STORAGE_DISK_SSD`, " +
	"`STORAGE_DISK_HDD`, `STORAGE_DISK_NVME`) and NIC speeds (`HW_NIC_SPEED_25G`). They follow the hardware: each inspection or " +
	"BMC verification replaces them. Placement matches them like the operator's `traits`."

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
			"traits": schema.SetAttribute{
				MarkdownDescription: "The operator's traits of the node: strings instances ask for with `required_traits` and " +
					"`forbidden_traits` (e.g. `CUSTOM_GPU_A100`, `rack:r12`). At most 50, each 1-255 letters, digits, `_`, `.`, `:`, `/`, `=`, " +
					"`+` or `-`. Managed here: unset means none, so a trait added or removed elsewhere (the CLI, the API) shows as drift " +
					"and the next apply puts the configured set back. Changes in place. The traits the controller derives from the hardware " +
					"are in `derived_traits`, never here.",
				ElementType: types.StringType,
				Optional:    true,
				Validators:  []validator.Set{traitsValidator{}},
			},
			"derived_traits": schema.SetAttribute{
				MarkdownDescription: derivedTraitsDoc + " Read only; each refresh shows the controller's current ones, without a diff.",
				ElementType:         types.StringType,
				Computed:            true,
				// The controller replaces them when it inspects the node or
				// verifies its BMC; an update that does neither keeps them.
				PlanModifiers: []planmodifier.Set{observedUnlessReverified},
			},
			"owner": schema.StringAttribute{
				MarkdownDescription: "Project that owns the node: only its instances are placed on it (an admin can still pin " +
					"another's with `node_id`), and only its members see it. A DNS label like a project name; unset, the node " +
					"serves every project. Changes in place.",
				Optional:   true,
				Validators: []validator.String{stringvalidator.RegexMatches(nameRE, nameRule)},
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
			"bios_settings": biosSettingsAttribute(),
			"secure_boot":   secureBootAttribute(),
			"raid":          raidAttribute(),
			"firmware":      firmwareAttribute(),
			"hardware":      hardwareAttribute(),
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
			"ports":     portsResourceAttribute(),
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true}),
		},
	}
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
