package provider

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// protoV6ProviderFactories runs the provider in-process for the real
// terraform binary that terraform-plugin-testing drives.
var protoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"baremetal": providerserver.NewProtocol6WithError(New("test")()),
}

// requireAcc skips tests that need the terraform binary unless TF_ACC is
// set, as resource.Test does. `make test` always sets it.
func requireAcc(t *testing.T) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make test and make testacc do)")
	}
}

// described is anything with a markdown description.
type described interface {
	GetMarkdownDescription() string
}

// TestSchemasAreDocumented checks that every attribute of the provider,
// its resources and data sources has a MarkdownDescription, and that the
// schemas pass the framework's own validation.
func TestSchemasAreDocumented(t *testing.T) {
	ctx := context.Background()
	p := New("test")()

	var presp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &presp)
	if presp.Diagnostics.HasError() {
		t.Fatalf("provider schema: %v", presp.Diagnostics)
	}
	if presp.Schema.MarkdownDescription == "" {
		t.Error("provider has no MarkdownDescription")
	}
	for name, a := range presp.Schema.Attributes {
		checkDescribed(t, "provider."+name, a, nil)
	}

	for _, newRes := range p.Resources(ctx) {
		r := newRes()
		var md resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "baremetal"}, &md)
		var sr resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &sr)
		if sr.Diagnostics.HasError() {
			t.Fatalf("%s schema: %v", md.TypeName, sr.Diagnostics)
		}
		if diags := sr.Schema.ValidateImplementation(ctx); diags.HasError() {
			t.Errorf("%s schema invalid: %v", md.TypeName, diags)
		}
		if sr.Schema.MarkdownDescription == "" {
			t.Errorf("%s has no MarkdownDescription", md.TypeName)
		}
		for name, a := range sr.Schema.Attributes {
			checkDescribed(t, md.TypeName+"."+name, a, func(a any) map[string]described {
				switch n := a.(type) {
				case rschema.SingleNestedAttribute:
					return toDescribed(n.Attributes)
				}
				return nil
			})
		}
	}

	for _, newDS := range p.DataSources(ctx) {
		d := newDS()
		var md datasource.MetadataResponse
		d.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "baremetal"}, &md)
		var sr datasource.SchemaResponse
		d.Schema(ctx, datasource.SchemaRequest{}, &sr)
		if sr.Diagnostics.HasError() {
			t.Fatalf("%s schema: %v", md.TypeName, sr.Diagnostics)
		}
		if diags := sr.Schema.ValidateImplementation(ctx); diags.HasError() {
			t.Errorf("%s schema invalid: %v", md.TypeName, diags)
		}
		for name, a := range sr.Schema.Attributes {
			checkDescribed(t, "data."+md.TypeName+"."+name, a, func(a any) map[string]described {
				switch n := a.(type) {
				case dschema.SingleNestedAttribute:
					return toDescribed(n.Attributes)
				case dschema.ListNestedAttribute:
					return toDescribed(n.NestedObject.Attributes)
				}
				return nil
			})
		}
	}
}

func toDescribed[A any](m map[string]A) map[string]described {
	out := map[string]described{}
	for k, v := range m {
		if d, ok := any(v).(described); ok {
			out[k] = d
		}
	}
	return out
}

func checkDescribed(t *testing.T, name string, a any, children func(any) map[string]described) {
	t.Helper()
	d, ok := a.(described)
	if !ok || d.GetMarkdownDescription() == "" {
		t.Errorf("attribute %s has no MarkdownDescription", name)
	}
	if children == nil {
		return
	}
	for k, c := range children(a) {
		checkDescribed(t, name+"."+k, c, children)
	}
}

func TestFieldPath(t *testing.T) {
	cases := []struct {
		field string
		attrs map[string]attrKind
		want  path.Path
		ok    bool
	}{
		{"bmc.address", nodeAttrs, path.Root("bmc").AtName("address"), true},
		{"properties.cpus", nodeAttrs, path.Root("properties").AtName("cpus"), true},
		{"maintenance_reason", nodeAttrs, path.Root("maintenance_reason"), true},
		{"metadata.role", instanceAttrs, path.Root("metadata").AtMapKey("role"), true},
		{"image.url", instanceAttrs, path.Root("image").AtName("url"), true},
		{"traits[2]", nodeAttrs, path.Root("traits"), true},
		{"bios_settings", nodeAttrs, path.Root("bios_settings"), true},
		{"bios_settings.NumaNodesPerSocket", nodeAttrs, path.Root("bios_settings").AtMapKey("NumaNodesPerSocket"), true},
		{"bios_settings.Proc.Turbo", nodeAttrs, path.Root("bios_settings").AtMapKey("Proc.Turbo"), true},
		{"secure_boot", nodeAttrs, path.Root("secure_boot"), true},
		{"required_traits[0]", instanceAttrs, path.Root("required_traits"), true},
		{"bmc[0]", nodeAttrs, path.Empty(), false},
		{"If-Match", nodeAttrs, path.Empty(), false},
		{"", nodeAttrs, path.Empty(), false},
		{"target", nil, path.Empty(), false},
	}
	for _, c := range cases {
		got, ok := fieldPath(c.field, c.attrs)
		if ok != c.ok || ok && !got.Equal(c.want) {
			t.Errorf("fieldPath(%q) = %v, %v; want %v, %v", c.field, got, ok, c.want, c.ok)
		}
	}
}

func TestNodePatchSendsOnlyChanges(t *testing.T) {
	props, _ := propertiesObject(api.Properties{CPUs: 8, MemoryMB: 1024})
	overrides, _ := propertyOverridesSet([]api.PropertyName{api.PropertyCPUs, api.PropertyMemoryMB})
	base := func() *nodeResourceModel {
		return &nodeResourceModel{
			nodeModel: nodeModel{Name: types.StringValue("n1"), Driver: types.StringValue("redfish"),
				ResourceClass: types.StringValue("rc"), Properties: props, PropertyOverrides: overrides,
				Maintenance: types.BoolValue(false)},
			BMC: &nodeBMCModel{Address: types.StringValue("http://a"), Username: types.StringValue("u"),
				Password: types.StringValue("p"), Insecure: types.BoolValue(false), SystemID: types.StringNull(),
				CipherSuite: types.Int64Value(0)},
			MaintenanceReason: types.StringNull(),
		}
	}
	if _, changed := nodePatch(base(), base()); changed {
		t.Fatal("identical models produce a patch")
	}

	// Traits: a change sends the whole set, sorted; none sends [], which
	// clears them. Owner: null frees the node.
	plan := base()
	plan.Traits = types.SetValueMust(types.StringType, []attr.Value{types.StringValue("rack:r12"), types.StringValue("CUSTOM_GPU_A100")})
	p, changed := nodePatch(plan, base())
	if !changed || p.Traits == nil || !slices.Equal(*p.Traits, []string{"CUSTOM_GPU_A100", "rack:r12"}) || p.BMC != nil || p.Owner != nil {
		t.Fatalf("traits change: %+v", p)
	}
	p, _ = nodePatch(base(), plan)
	if p.Traits == nil || *p.Traits == nil || len(*p.Traits) != 0 {
		t.Fatalf("traits removed: %+v", p.Traits)
	}
	state := base()
	state.Traits = types.SetValueMust(types.StringType, nil)
	if _, changed := nodePatch(base(), state); changed {
		t.Fatal("traits null and [] differ")
	}
	state.Owner = types.StringValue("team-a")
	p, _ = nodePatch(base(), state)
	if p.Owner == nil || *p.Owner != "" {
		t.Fatalf("owner removed: %+v", p.Owner)
	}

	plan = base()
	plan.BMC.Address = types.StringValue("http://b")
	p, changed = nodePatch(plan, base())
	if !changed || p.BMC == nil || *p.BMC.Address != "http://b" || p.BMC.Password != nil || p.Name != nil {
		t.Fatalf("address change: %+v", p)
	}

	plan = base()
	plan.BMC.Password = types.StringValue("new")
	p, _ = nodePatch(plan, base())
	if p.BMC == nil || p.BMC.Password == nil || *p.BMC.Password != "new" {
		t.Fatalf("password change not sent: %+v", p.BMC)
	}

	// After an import the state has no password: the configured one is sent.
	state = base()
	state.BMC.Password = types.StringNull()
	p, _ = nodePatch(base(), state)
	if p.BMC == nil || p.BMC.Password == nil || *p.BMC.Password != "p" {
		t.Fatalf("imported node: password not sent: %+v", p.BMC)
	}

	// Write-only: the plan has the configured password_wo; the state only
	// its version.
	writeOnly := func(m *nodeResourceModel, pw string, version int64) *nodeResourceModel {
		m.BMC.Password, m.BMC.PasswordWOVersion = types.StringNull(), types.Int64Value(version)
		m.BMC.PasswordWO = types.StringNull()
		if pw != "" {
			m.BMC.PasswordWO = types.StringValue(pw)
		}
		return m
	}
	p, _ = nodePatch(writeOnly(base(), "wo1", 1), base())
	if p.BMC == nil || p.BMC.Password == nil || *p.BMC.Password != "wo1" {
		t.Fatalf("switch to password_wo: not sent: %+v", p.BMC)
	}
	if _, changed := nodePatch(writeOnly(base(), "wo2", 1), writeOnly(base(), "", 1)); changed {
		t.Fatal("a new password_wo without a new version must send nothing: the version says when")
	}
	p, _ = nodePatch(writeOnly(base(), "wo2", 2), writeOnly(base(), "", 1))
	if p.BMC == nil || p.BMC.Password == nil || *p.BMC.Password != "wo2" {
		t.Fatalf("new password_wo_version: password_wo not sent: %+v", p.BMC)
	}
	p, _ = nodePatch(base(), writeOnly(base(), "", 2))
	if p.BMC == nil || p.BMC.Password == nil || *p.BMC.Password != "p" {
		t.Fatalf("switch back to password: not sent: %+v", p.BMC)
	}

	// memory_mb left the configuration: its override is cleared (null),
	// cpus stays one.
	plan = base()
	plan.Properties, _ = types.ObjectValue(propertiesAttrTypes, map[string]attr.Value{"cpus": types.Int64Value(8),
		"memory_mb": types.Int64Unknown(), "local_gb": types.Int64Value(0), "cpu_arch": types.StringValue("")})
	plan.PropertyOverrides, _ = propertyOverridesSet([]api.PropertyName{api.PropertyCPUs})
	p, _ = nodePatch(plan, base())
	if p.Properties == nil || p.Properties.CPUs == nil || *p.Properties.CPUs != 8 ||
		p.Properties.MemoryMB != nil || p.Properties.LocalGB != nil || p.Properties.CPUArch != nil || p.BMC != nil {
		t.Fatalf("cleared override: %+v", p.Properties)
	}
	if b, _ := json.Marshal(p.Properties); string(b) != `{"cpus":8,"memory_mb":null,"local_gb":null,"cpu_arch":null}` {
		t.Fatalf("cleared override sent as %s", b)
	}

	plan = base()
	plan.Maintenance, plan.MaintenanceReason = types.BoolValue(true), types.StringValue("disk")
	p, _ = nodePatch(plan, base())
	if p.Maintenance == nil || !*p.Maintenance || *p.MaintenanceReason != "disk" || p.BMC != nil {
		t.Fatalf("maintenance: %+v", p)
	}
}

func TestConfiguredClient(t *testing.T) {
	var diags diag.Diagnostics
	if c := configuredClient(nil, &diags); c != nil || diags.HasError() {
		t.Fatal("nil provider data must be tolerated")
	}
	if c := configuredClient("nope", &diags); c != nil || !diags.HasError() {
		t.Fatal("wrong provider data must be reported")
	}
	c, _ := apiclient.New("http://127.0.0.1:1", apiclient.Options{})
	diags = nil
	if got := configuredClient(c, &diags); got != c || diags.HasError() {
		t.Fatal("client not passed through")
	}
}
