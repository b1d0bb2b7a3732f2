package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// words is a regexp of text as terraform prints it in a diagnostic: any
// white space (terraform wraps long lines) between the words.
func words(s string) string {
	f := strings.Fields(s)
	for i := range f {
		f[i] = regexp.QuoteMeta(f[i])
	}
	return strings.Join(f, `\s+`)
}

// checkSim checks a simulated system's BIOS attributes in effect (as
// text) and Secure Boot, and that nothing is left pending.
func checkSim(env *testenv.Env, system string, want map[string]string, secureBoot bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		attrs, pending, err := env.Sim.BIOS(system)
		if err != nil {
			return err
		}
		for k, v := range want {
			if got := fmt.Sprint(attrs[k]); got != v {
				return fmt.Errorf("the BMC's %s is %s, want %s", k, got, v)
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("BIOS settings left pending on the BMC: %v", pending)
		}
		if on, _, err := env.Sim.SecureBoot(system); err != nil || on != secureBoot {
			return fmt.Errorf("the BMC's Secure Boot is %v (%v), want %v", on, err, secureBoot)
		}
		return nil
	}
}

// waitUnmet polls the API until the node's hardware.unmet is want: the
// controller has read the BMC back.
func waitUnmet(t *testing.T, c *apiclient.Client, name string, want ...string) {
	t.Helper()
	poll(t, "node "+name+" unmet "+strings.Join(want, "; "), 30*time.Second, func() (bool, error) {
		n, err := c.GetNode(context.Background(), name)
		if err != nil {
			return false, err
		}
		if n.Hardware == nil || !slices.Equal(n.Hardware.Unmet, want) {
			return false, fmt.Errorf("hardware %+v", n.Hardware)
		}
		return true, nil
	})
}

// TestAccNodeHardwareSettings: BIOS attributes and Secure Boot declared
// on a new node are applied before it is available, and the plan after
// is empty; an import reads them back; an out-of-band change on the BMC
// is drift in the next plan (that attribute alone), and the apply sets it
// again; a value the BMC's attribute registry refuses fails the apply
// with the controller's words; removing the settings stops managing them
// and changes nothing on the BMC.
func TestAccNodeHardwareSettings(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1, SettingsSyncInterval: 500 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	sys := env.Sim.SystemIDs()[0]
	const addr = "baremetal_node.hw"
	cfg := func(extra string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "hw", "hw", "rc", 0, extra)
	}
	declared := func(numa string) string {
		return fmt.Sprintf(`
  bios_settings = {
    ProcVirtualization = "Disabled"
    NumaNodesPerSocket = %q
  }
  secure_boot = true
`, numa)
	}
	applied := map[string]string{"ProcVirtualization": "Disabled", "NumaNodesPerSocket": "2"}
	empty := []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}
	drift := []plancheck.PlanCheck{
		expectUpdate{addr: addr, changed: []string{"bios_settings.ProcVirtualization", "secure_boot"}, unknown: []string{"hardware"}},
		plancheck.ExpectKnownValue(addr, tfjsonpath.New("bios_settings").AtMapKey("ProcVirtualization"), knownvalue.StringExact("Disabled")),
		plancheck.ExpectKnownValue(addr, tfjsonpath.New("secure_boot"), knownvalue.Bool(true)),
	}
	apiSettings := func(bios map[string]string, secureBoot *bool) resource.TestCheckFunc {
		return checkAPI(c, addr, func(n *api.Node) error {
			if !maps.Equal(n.BIOSSettings, bios) || (n.SecureBoot == nil) != (secureBoot == nil) ||
				secureBoot != nil && *n.SecureBoot != *secureBoot {
				return fmt.Errorf("API bios_settings %v, secure_boot %v; want %v, %v", n.BIOSSettings, n.SecureBoot, bios, secureBoot)
			}
			if n.ProvisionState != api.StateAvailable || n.LastError != "" || len(n.Hardware.Unmet) > 0 {
				return fmt.Errorf("node %s, last_error %q, unmet %q", n.ProvisionState, n.LastError, n.Hardware.Unmet)
			}
			return nil
		})
	}
	on := true
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config: cfg(declared("2")),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("bios_settings"), knownvalue.MapExact(map[string]knownvalue.Check{
						"ProcVirtualization": knownvalue.StringExact("Disabled"), "NumaNodesPerSocket": knownvalue.StringExact("2")})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("secure_boot"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("provision_state"), knownvalue.StringExact("available")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("hardware").AtMapKey("unmet"), knownvalue.ListExact(nil)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("hardware").AtMapKey("waiting"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("hardware").AtMapKey("read_at"), knownvalue.NotNull()),
				},
				Check:            resource.ComposeAggregateTestCheckFunc(checkSim(env, sys, applied, true), apiSettings(applied, &on)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: empty},
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateVerify: true,
				// Read back every --settings-sync-interval.
				ImportStateVerifyIgnore: []string{"bmc.password", "hardware.read_at"},
			},
			{
				// Changed at the console: drift in the plan, that alone.
				PreConfig: func() {
					if err := env.Sim.SetBIOSAttribute(sys, "ProcVirtualization", "Enabled"); err != nil {
						t.Fatal(err)
					}
					if err := env.Sim.SetSecureBoot(sys, false); err != nil {
						t.Fatal(err)
					}
					waitUnmet(t, c, "hw", "bios_settings.ProcVirtualization: want Disabled, is Enabled", "secure_boot: want true, is false")
				},
				Config:             cfg(declared("2")),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks:   resource.ConfigPlanChecks{PostApplyPostRefresh: drift},
			},
			{
				// The apply sets them again.
				Config:           cfg(declared("2")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: drift, PostApplyPostRefresh: empty},
				Check:            resource.ComposeAggregateTestCheckFunc(checkSim(env, sys, applied, true), apiSettings(applied, &on)),
			},
			{
				// The registry is known now: the API refuses the value,
				// naming the attribute, and nothing changes.
				Config:      cfg(declared("9")),
				ExpectError: regexp.MustCompile(`(?s)Could not update node hw.*` + words("BIOS attribute NumaNodesPerSocket must be between 1 and 4, not 9")),
			},
			{
				// Removed: no longer managed; the BMC keeps what it has.
				Config: cfg("  secure_boot = true\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{expectUpdate{addr: addr,
						changed: []string{"bios_settings.ProcVirtualization", "bios_settings.NumaNodesPerSocket"}, unknown: []string{"hardware"}}},
					PostApplyPostRefresh: empty,
				},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("bios_settings"), knownvalue.Null())},
				Check:             resource.ComposeAggregateTestCheckFunc(checkSim(env, sys, applied, true), apiSettings(nil, &on)),
			},
			{
				Config: cfg(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{expectUpdate{addr: addr, changed: []string{"secure_boot"}, unknown: []string{"hardware"}}},
					PostApplyPostRefresh: empty,
				},
				Check: resource.ComposeAggregateTestCheckFunc(checkSim(env, sys, applied, true), apiSettings(nil, nil)),
			},
		},
	})
}

// TestAccNodeHardwareSettingsRefusedAtCreate: on a new node the
// controller knows no registry yet, so a value the BMC refuses is the
// configure flow's: the create fails with the controller's reason on the
// attribute, the node is available without the setting (no fault), and
// the corrected configuration replaces the tainted node, with an empty
// plan after.
func TestAccNodeHardwareSettingsRefusedAtCreate(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1, SettingsSyncInterval: 500 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_node.hw"
	cfg := func(value string) string {
		return providerConfig(env, env.AdminToken) + nodeHCL(env, "hw", "hw", "rc", 0, fmt.Sprintf("bios_settings = { NumaNodesPerSocket = %q }", value))
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config: cfg("9"),
				ExpectError: regexp.MustCompile(`(?s)The hardware settings of node hw were not applied.*` +
					words("hardware settings: the BMC would refuse bios_settings.NumaNodesPerSocket: BIOS attribute NumaNodesPerSocket must be between 1 and 4, not 9") + `.*` +
					words("The node is available without them")),
			},
			{
				PreConfig: func() {
					n := waitNodeHealthy(t, c, "hw", api.StateAvailable, 10*time.Second)
					if !strings.HasPrefix(n.LastError, hardwareErrorPrefix) {
						t.Fatalf("last_error %q", n.LastError)
					}
				},
				Config: cfg("3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: checkSim(env, env.Sim.SystemIDs()[0], map[string]string{"NumaNodesPerSocket": "3"}, false),
			},
		},
	})
}

// TestAccNodeHardwareSettingsIPMI: IPMI has neither BIOS settings nor
// Secure Boot; the controller refuses them at create and at update, and
// the diagnostic names the attribute.
func TestAccNodeHardwareSettingsIPMI(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{})
	c := accClient(t, env, env.AdminToken)
	cfg := func(extra string) string {
		// Never verified (nothing listens): the controller refuses the
		// settings before it ever calls the BMC.
		return providerConfig(env, env.AdminToken) + `
resource "baremetal_node" "ipmi" {
  name               = "old-server"
  driver             = "ipmi"
  resource_class     = "rc"
  wait_for_available = false
  force_destroy      = true
  bmc = {
    address  = "ipmi://127.0.0.1:1"
    username = "admin"
    password = "secret"
  }
` + extra + `
}
`
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config: cfg(`bios_settings = { ProcVirtualization = "Disabled" }`),
				ExpectError: regexp.MustCompile(`(?s)Could not create node old-server.*` +
					words("has no BIOS settings (IPMI has none; a Redfish BMC's Bios resource does), so bios_settings cannot be applied")),
			},
			{Config: cfg("")},
			{
				Config: cfg("secure_boot = false"),
				ExpectError: regexp.MustCompile(`(?s)Could not update node old-server.*` +
					words("has no Secure Boot setting (IPMI has none; a Redfish BMC's SecureBoot resource does), so secure_boot cannot be applied")),
			},
		},
	})
}

func TestNodePatchHardwareSettings(t *testing.T) {
	bios := func(kv ...string) types.Map {
		if kv == nil {
			return types.MapNull(types.StringType)
		}
		elems := map[string]attr.Value{}
		for i := 0; i < len(kv); i += 2 {
			elems[kv[i]] = types.StringValue(kv[i+1])
		}
		return types.MapValueMust(types.StringType, elems)
	}
	model := func(m types.Map, sb types.Bool) *nodeResourceModel {
		return &nodeResourceModel{nodeModel: nodeModel{Name: types.StringValue("n1"), Properties: types.ObjectNull(propertiesAttrTypes),
			PropertyOverrides: types.SetNull(types.StringType)}, BMC: &nodeBMCModel{},
			BIOSSettings: m, SecureBoot: sb}
	}
	sent := func(p api.NodePatch) string {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []struct {
		name          string
		plan, state   *nodeResourceModel
		want          string
		wantUnchanged bool
	}{
		{"no settings", model(bios(), types.BoolNull()), model(bios(), types.BoolNull()), `{}`, true},
		{"null and {} are alike", model(types.MapValueMust(types.StringType, map[string]attr.Value{}), types.BoolNull()), model(bios(), types.BoolNull()), `{}`, true},
		{"as the BMC has them", model(bios("A", "1", "B", "x"), types.BoolValue(true)), model(bios("B", "x", "A", "1"), types.BoolValue(true)), `{}`, true},
		// Drift: the state holds what the BMC has; the whole declared
		// map goes, so the controller applies it again.
		{"drift", model(bios("A", "1", "B", "x"), types.BoolNull()), model(bios("A", "2", "B", "x"), types.BoolNull()),
			`{"bios_settings":{"A":"1","B":"x"}}`, false},
		{"one removed", model(bios("A", "1"), types.BoolNull()), model(bios("A", "1", "B", "x"), types.BoolNull()),
			`{"bios_settings":{"A":"1","B":null}}`, false},
		{"all removed", model(bios(), types.BoolNull()), model(bios("A", "1"), types.BoolNull()), `{"bios_settings":{"A":null}}`, false},
		{"secure boot on", model(bios(), types.BoolValue(true)), model(bios(), types.BoolValue(false)), `{"secure_boot":true}`, false},
		{"secure boot no longer managed", model(bios(), types.BoolNull()), model(bios(), types.BoolValue(true)), `{"secure_boot":null}`, false},
	}
	for _, c := range cases {
		p, changed := nodePatch(c.plan, c.state)
		if changed == c.wantUnchanged {
			t.Errorf("%s: changed %v", c.name, changed)
		}
		if got := sent(p); got != c.want {
			t.Errorf("%s: sent %s, want %s", c.name, got, c.want)
		}
	}
}

func TestSettingsErrorPath(t *testing.T) {
	plan := &nodeResourceModel{
		BIOSSettings: types.MapValueMust(types.StringType, map[string]attr.Value{
			"Proc": types.StringValue("x"), "ProcTurbo": types.StringValue("y"), "Mem.Test": types.StringValue("z")}),
		SecureBoot: types.BoolValue(true),
	}
	bios := path.Root("bios_settings")
	for msg, want := range map[string]path.Path{
		"hardware settings: the BMC would refuse bios_settings.ProcTurbo: BIOS attribute ProcTurbo takes one of": bios.AtMapKey("ProcTurbo"),
		"hardware settings: bios_settings.Proc: want x, is w; bios_settings.ProcTurbo: want y, is v":             bios.AtMapKey("Proc"),
		"hardware settings: dropped bios_settings.Mem.Test.":                                                     bios.AtMapKey("Mem.Test"),
		"hardware settings: secure_boot: want true, is false":                                                    path.Root("secure_boot"),
		"hardware settings: the BMC did not answer":                                                              bios,
	} {
		if got := settingsErrorPath(msg, plan); !got.Equal(want) {
			t.Errorf("%q: %s, want %s", msg, got, want)
		}
	}
}

// TestAccNodeHardwareDriftInThePlan runs the real terraform as an
// operator does, for what the plugin test framework cannot show: the
// plan's text of a BIOS attribute changed at the console (the README's
// worked example comes from this test's log: go test -v), the progress
// an apply logs while the controller applies the settings, and the
// warning of settings asked for while the node holds an instance, which
// wait for its cleanup with quiet plans meanwhile.
func TestAccNodeHardwareDriftInThePlan(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1, SettingsSyncInterval: 500 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	sys := env.Sim.SystemIDs()[0]
	tf := newTFCLI(t, "BAREMETAL_ENDPOINT="+env.URL, "BAREMETAL_TOKEN="+env.AdminToken)
	config := func(turbo, instance string) string {
		bios := `
  bios_settings = {
    ProcVirtualization = "Disabled"
    NumaNodesPerSocket = 2%s
  }
  secure_boot = true
`
		return requiredProviders + `provider "baremetal" {}` + nodeHCL(env, "r1_07", "r1-07", "gpu", 0, fmt.Sprintf(bios, turbo)) + instance
	}
	simHas := func(name, want string) {
		t.Helper()
		attrs, _, err := env.Sim.BIOS(sys)
		if err != nil || fmt.Sprint(attrs[name]) != want {
			t.Fatalf("the BMC's %s is %v (%v), want %s", name, attrs[name], err, want)
		}
	}
	tf.write(config("", ""))
	tf.run(0, "apply", "-auto-approve")
	simHas("ProcVirtualization", "Disabled")
	simHas("NumaNodesPerSocket", "2")

	// Someone enables virtualization at the console.
	if err := env.Sim.SetBIOSAttribute(sys, "ProcVirtualization", "Enabled"); err != nil {
		t.Fatal(err)
	}
	waitUnmet(t, c, "r1-07", "bios_settings.ProcVirtualization: want Disabled, is Enabled")
	plan := tf.run(2, "plan", "-detailed-exitcode")
	t.Logf("terraform plan after the change at the console:\n%s", plan)
	for _, want := range []string{
		`~ "ProcVirtualization" = "Enabled" -> "Disabled"`,
		"# (1 unchanged element hidden)",
		`"bios_settings.ProcVirtualization: want Disabled, is Enabled",`,
		"Plan: 0 to add, 1 to change, 0 to destroy.",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan does not show %s", want)
		}
	}
	if strings.Contains(plan, "NumaNodesPerSocket") || strings.Contains(plan, "secure_boot") {
		t.Error("the plan shows settings that did not change")
	}

	// The apply sets it again, logging the configure flow's steps.
	tf.env = append(tf.env, "TF_LOG_PROVIDER=INFO")
	out := flat(tf.run(0, "apply", "-auto-approve"))
	tf.env = tf.env[:len(tf.env)-1]
	if !strings.Contains(out, "Apply complete! Resources: 0 added, 1 changed, 0 destroyed.") ||
		!strings.Contains(out, "node r1-07: applying hardware settings") {
		t.Fatalf("apply of the drift:\n%s", out)
	}
	simHas("ProcVirtualization", "Disabled")
	tf.run(0, "plan", "-detailed-exitcode")

	// With an instance on the node, a new setting waits for it.
	instance := `
resource "baremetal_instance" "web" {
  name    = "web"
  project = "acc"
  node_id = baremetal_node.r1_07.id
  image   = { url = "https://images.example.com/one.img" }
}
`
	tf.write(config("", instance))
	tf.run(0, "apply", "-auto-approve")
	tf.write(config("\n    ProcTurboMode      = \"Disabled\"", instance))
	out = flat(tf.run(0, "apply", "-auto-approve"))
	if !strings.Contains(out, "Warning: The hardware settings of node r1-07 wait for the node to be free") ||
		!strings.Contains(out, "it applies the settings once the instance is gone and the node is cleaned") {
		t.Fatalf("apply of a setting on a busy node:\n%s", out)
	}
	simHas("ProcTurboMode", "Enabled")
	tf.run(0, "plan", "-detailed-exitcode")

	// The instance goes: the cleanup, then the settings.
	tf.write(config("\n    ProcTurboMode      = \"Disabled\"", ""))
	tf.run(0, "apply", "-auto-approve")
	poll(t, "node r1-07 configured after its cleanup", time.Minute, func() (bool, error) {
		n, err := c.GetNode(context.Background(), "r1-07")
		if err != nil {
			return false, err
		}
		if n.ProvisionState != api.StateAvailable || n.Hardware.Waiting || len(n.Hardware.Unmet) > 0 {
			return false, fmt.Errorf("node %s, waiting %v, unmet %q, last_error %q", n.ProvisionState, n.Hardware.Waiting, n.Hardware.Unmet, n.LastError)
		}
		return true, nil
	})
	simHas("ProcTurboMode", "Disabled")
	tf.run(0, "plan", "-detailed-exitcode")
}
