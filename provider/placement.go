package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// Placement: traits and requirements, as baremetal_node,
// baremetal_instance, baremetal_nodes and baremetal_capacity share them.
// The controller's rules (internal/baremetal/placement.go) are repeated
// here so that a bad trait or minimum fails the plan, not the apply; the
// controller checks again.

var (
	traitRE   = regexp.MustCompile(`^[A-Za-z0-9_.:/=+-]+$`)
	cpuArchRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)
)

const traitRule = "letters, digits and _ . : / = + -"

// traitsValidator checks a set of traits: at most baremetal.MaxTraits,
// each 1 to baremetal.MaxTraitLen characters of traitRule. Diagnostics
// name the attribute and the trait.
type traitsValidator struct{}

var _ validator.Set = traitsValidator{}

func (traitsValidator) Description(context.Context) string {
	return fmt.Sprintf("at most %d traits, each 1-%d characters: %s", baremetal.MaxTraits, baremetal.MaxTraitLen, traitRule)
}

func (v traitsValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (traitsValidator) ValidateSet(_ context.Context, req validator.SetRequest, resp *validator.SetResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	elems := req.ConfigValue.Elements()
	if len(elems) > baremetal.MaxTraits {
		resp.Diagnostics.AddAttributeError(req.Path, "Too many traits",
			fmt.Sprintf("%s holds %d traits; at most %d are allowed.", req.Path, len(elems), baremetal.MaxTraits))
	}
	for _, e := range elems {
		s, ok := e.(types.String)
		if !ok || s.IsUnknown() || s.IsNull() {
			continue
		}
		t := s.ValueString()
		switch {
		case t == "":
			resp.Diagnostics.AddAttributeError(req.Path, "Invalid trait", fmt.Sprintf("%s holds an empty trait.", req.Path))
		case len(t) > baremetal.MaxTraitLen:
			resp.Diagnostics.AddAttributeError(req.Path, "Invalid trait",
				fmt.Sprintf("%s: trait %.40q... is %d characters long; at most %d are allowed.", req.Path, t, len(t), baremetal.MaxTraitLen))
		case !traitRE.MatchString(t):
			resp.Diagnostics.AddAttributeError(req.Path, "Invalid trait",
				fmt.Sprintf("%s: trait %q may hold only %s, 1-%d characters (e.g. CUSTOM_GPU_A100 or rack:r12).", req.Path, t, traitRule, baremetal.MaxTraitLen))
		}
	}
}

// requirementsModel is what an instance asks of its node; the instance,
// baremetal_nodes and baremetal_capacity embed it.
type requirementsModel struct {
	RequiredTraits  types.Set    `tfsdk:"required_traits"`
	ForbiddenTraits types.Set    `tfsdk:"forbidden_traits"`
	MinCPUs         types.Int64  `tfsdk:"min_cpus"`
	MinMemoryMB     types.Int64  `tfsdk:"min_memory_mb"`
	MinDiskGB       types.Int64  `tfsdk:"min_disk_gb"`
	CPUArch         types.String `tfsdk:"cpu_arch"`
}

// requirementAttrs are the attributes of requirementsModel, for
// fieldPath and the config validators.
var requirementAttrs = []string{"required_traits", "forbidden_traits", "min_cpus", "min_memory_mb", "min_disk_gb", "cpu_arch"}

// toAPI is the requirements as the API takes them (traits sorted).
func (m *requirementsModel) toAPI() api.Requirements {
	return api.Requirements{
		RequiredTraits:  setStrings(m.RequiredTraits),
		ForbiddenTraits: setStrings(m.ForbiddenTraits),
		MinCPUs:         int(m.MinCPUs.ValueInt64()),
		MinMemoryMB:     int(m.MinMemoryMB.ValueInt64()),
		MinDiskGB:       int(m.MinDiskGB.ValueInt64()),
		CPUArch:         m.CPUArch.ValueString(),
	}
}

// requirementsZero reports whether r asks nothing.
func requirementsZero(r api.Requirements) bool {
	return len(r.RequiredTraits) == 0 && len(r.ForbiddenTraits) == 0 && r.MinCPUs == 0 &&
		r.MinMemoryMB == 0 && r.MinDiskGB == 0 && r.CPUArch == ""
}

// setFromAPI copies the API's requirements, keeping null what is null
// and not asked (the API says 0 or nothing for both).
func (m *requirementsModel) setFromAPI(r api.Requirements) diag.Diagnostics {
	var diags diag.Diagnostics
	m.RequiredTraits = traitsOrNull(r.RequiredTraits, m.RequiredTraits, &diags)
	m.ForbiddenTraits = traitsOrNull(r.ForbiddenTraits, m.ForbiddenTraits, &diags)
	m.MinCPUs = minimumOrNull(r.MinCPUs, m.MinCPUs)
	m.MinMemoryMB = minimumOrNull(r.MinMemoryMB, m.MinMemoryMB)
	m.MinDiskGB = minimumOrNull(r.MinDiskGB, m.MinDiskGB)
	m.CPUArch = stringOrNull(r.CPUArch) // "" is not an architecture: never configured
	return diags
}

// minimumOrNull is v, or null when v is 0 and the model held null (or
// nothing known): an unset minimum stays unset.
func minimumOrNull(v int, prev types.Int64) types.Int64 {
	if v == 0 && (prev.IsNull() || prev.IsUnknown()) {
		return types.Int64Null()
	}
	return types.Int64Value(int64(v))
}

// traitsOrNull is traits as a set, or null when there are none and the
// model held null (or nothing known): an unset set stays unset, and
// `= []` stays empty.
func traitsOrNull(traits []string, prev types.Set, diags *diag.Diagnostics) types.Set {
	if len(traits) == 0 && (prev.IsNull() || prev.IsUnknown()) {
		return types.SetNull(types.StringType)
	}
	return traitsSet(traits, diags)
}

// traitsSet is traits as a set (empty, never null, for none).
func traitsSet(traits []string, diags *diag.Diagnostics) types.Set {
	elems := make([]attr.Value, len(traits))
	for i, t := range traits {
		elems[i] = types.StringValue(t)
	}
	s, d := types.SetValue(types.StringType, elems)
	diags.Append(d...)
	return s
}

// setStrings is a set of strings' members, sorted (nil for null, unknown
// or empty).
func setStrings(s types.Set) []string {
	if s.IsNull() || s.IsUnknown() {
		return nil
	}
	var out []string
	for _, e := range s.Elements() {
		if v, ok := e.(types.String); ok && !v.IsNull() && !v.IsUnknown() {
			out = append(out, v.ValueString())
		}
	}
	slices.Sort(out)
	return out
}

// requirementsDoc says what the requirements do, for the descriptions.
const requirementsDoc = "A node matches a trait whether the operator set it (`traits`) or the controller derived it " +
	"(`derived_traits`); a minimum is met only by a node whose property is known (set or inspected) and at least that."

// requirementsDataSourceAttributes are the requirements as data source
// arguments (filters).
func requirementsDataSourceAttributes(what string) map[string]dschema.Attribute {
	return map[string]dschema.Attribute{
		"required_traits": dschema.SetAttribute{
			MarkdownDescription: what + " nodes with every one of these traits. " + requirementsDoc,
			ElementType:         types.StringType,
			Optional:            true,
			Validators:          []validator.Set{traitsValidator{}},
		},
		"forbidden_traits": dschema.SetAttribute{
			MarkdownDescription: what + " nodes with none of these traits (operator's or derived).",
			ElementType:         types.StringType,
			Optional:            true,
			Validators:          []validator.Set{traitsValidator{}},
		},
		"min_cpus": dschema.Int64Attribute{
			MarkdownDescription: what + " nodes with at least this many CPU cores (known: set or inspected).",
			Optional:            true,
			Validators:          []validator.Int64{int64validator.Between(0, baremetal.MaxCPUs)},
		},
		"min_memory_mb": dschema.Int64Attribute{
			MarkdownDescription: what + " nodes with at least this much memory, in MiB (known: set or inspected).",
			Optional:            true,
			Validators:          []validator.Int64{int64validator.Between(0, baremetal.MaxMemoryMB)},
		},
		"min_disk_gb": dschema.Int64Attribute{
			MarkdownDescription: what + " nodes with at least this much local disk, in GiB (known: set or inspected).",
			Optional:            true,
			Validators:          []validator.Int64{int64validator.Between(0, baremetal.MaxLocalGB)},
		},
		"cpu_arch": dschema.StringAttribute{
			MarkdownDescription: what + " nodes of this CPU architecture (`x86_64`, `aarch64`, ...).",
			Optional:            true,
			Validators:          []validator.String{cpuArchValidator()},
		},
	}
}

func cpuArchValidator() validator.String {
	return stringvalidator.RegexMatches(cpuArchRE, "must be an architecture name of 1-32 letters, digits, '_', '.' or '-' (e.g. x86_64 or aarch64)")
}

// traitsDisjoint refuses a trait both required and forbidden, which no
// node can satisfy, naming forbidden_traits as the controller does.
type traitsDisjoint struct{}

var (
	_ resource.ConfigValidator   = traitsDisjoint{}
	_ datasource.ConfigValidator = traitsDisjoint{}
)

func (traitsDisjoint) Description(context.Context) string {
	return "no trait may be both in required_traits and in forbidden_traits"
}

func (v traitsDisjoint) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (traitsDisjoint) ValidateResource(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	resp.Diagnostics.Append(checkTraitsDisjoint(ctx, req.Config)...)
}

func (traitsDisjoint) ValidateDataSource(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	resp.Diagnostics.Append(checkTraitsDisjoint(ctx, req.Config)...)
}

func checkTraitsDisjoint(ctx context.Context, config tfsdk.Config) diag.Diagnostics {
	var required, forbidden types.Set
	diags := config.GetAttribute(ctx, path.Root("required_traits"), &required)
	diags.Append(config.GetAttribute(ctx, path.Root("forbidden_traits"), &forbidden)...)
	if diags.HasError() {
		return diags
	}
	var both []string
	for _, t := range setStrings(required) {
		if slices.Contains(setStrings(forbidden), t) {
			both = append(both, t)
		}
	}
	if len(both) > 0 {
		diags.AddAttributeError(path.Root("forbidden_traits"), "Trait both required and forbidden",
			fmt.Sprintf("forbidden_traits holds %s, which required_traits holds too: no node can satisfy that. Remove it from one of them.",
				strings.Join(codeQuotedPlain(both), ", ")))
	}
	return diags
}

// codeQuotedPlain quotes values for a diagnostic ("a", "b").
func codeQuotedPlain(values []string) []string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = fmt.Sprintf("%q", v)
	}
	return q
}

// queryFieldsAsAttrs renames the query parameters an API error names
// (required_trait, forbidden_trait: one a trait) as the data sources'
// arguments (required_traits, forbidden_traits), so the diagnostic points
// at the argument.
func queryFieldsAsAttrs(err error) error {
	if ae, ok := apiclient.AsAPIError(err); ok {
		f := ae.Problem.Field
		for _, name := range []string{"required_trait", "forbidden_trait"} {
			if f == name || strings.HasPrefix(f, name+"[") {
				ae.Problem.Field = name + "s" + strings.TrimPrefix(f, name)
			}
		}
	}
	return err
}
