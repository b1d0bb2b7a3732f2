package provider

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// cli is a terraform or OpenTofu binary and its version.
type cli struct {
	path         string
	major, minor int
	version      string
	tofu         bool
}

func (c cli) writeOnly() bool { return c.major > 1 || c.major == 1 && c.minor >= 11 }

// cliVersion asks a terraform or tofu binary its version (both answer
// `version -json` with "terraform_version").
func cliVersion(path string) (cli, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "version", "-json")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	if err != nil {
		return cli{}, fmt.Errorf("%s version -json: %w", path, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return cli{}, fmt.Errorf("%s version -json: %w", path, err)
	}
	m := regexp.MustCompile(`^(\d+)\.(\d+)\.`).FindStringSubmatch(v.Version)
	if m == nil {
		return cli{}, fmt.Errorf("%s: unexpected version %q", path, v.Version)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	// Only the text form names the CLI ("OpenTofu v1.12.6").
	cmd = exec.CommandContext(ctx, path, "version")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	text, err := cmd.Output()
	if err != nil {
		return cli{}, fmt.Errorf("%s version: %w", path, err)
	}
	return cli{path: path, major: major, minor: minor, version: v.Version, tofu: bytes.HasPrefix(text, []byte("OpenTofu"))}, nil
}

func (c cli) String() string {
	if c.tofu {
		return "tofu-" + c.version
	}
	return "terraform-" + c.version
}

// defaultCLI is the CLI the acceptance tests run on (TF_ACC_TERRAFORM_PATH).
func defaultCLI(t *testing.T) cli {
	t.Helper()
	c, err := cliVersion(terraformBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeOnlyCLI finds a CLI that supports write-only arguments (terraform
// or OpenTofu >= 1.11): the default one, OpenTofu in .tools/bin, or
// terraform or tofu on PATH or in /usr/local/bin. Without one the test is
// skipped, except in CI, where a write-only test that does not run would
// hide a regression: there it fails, saying what to install.
func writeOnlyCLI(t *testing.T) cli {
	t.Helper()
	candidates := []string{os.Getenv("TF_ACC_TERRAFORM_PATH"), filepath.Join(repoRoot(t), ".tools", "bin", "tofu")}
	for _, name := range []string{"terraform", "tofu"} {
		if p, err := exec.LookPath(name); err == nil {
			candidates = append(candidates, p)
		}
		candidates = append(candidates, filepath.Join("/usr/local/bin", name))
	}
	var seen []string
	for _, p := range candidates {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		c, err := cliVersion(p)
		if err != nil {
			seen = append(seen, err.Error())
			continue
		}
		if c.writeOnly() {
			return c
		}
		seen = append(seen, p+" is "+c.version)
	}
	msg := "no terraform or tofu >= 1.11 on this machine (" + strings.Join(seen, "; ") + "): write-only arguments cannot be tested. " +
		"Put terraform >= 1.11 in /usr/local/bin or on PATH, or OpenTofu >= 1.11 in .tools/bin/tofu."
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return cli{}
}

// useCLI points terraform-plugin-testing at c for the rest of the test,
// with the registry host c gives this provider's address (OpenTofu's
// implied addresses are on its own registry).
func useCLI(t *testing.T, c cli) {
	t.Helper()
	t.Setenv("TF_ACC_TERRAFORM_PATH", c.path)
	host := "registry.terraform.io"
	if c.tofu {
		host = "registry.opentofu.org"
	}
	t.Setenv("TF_ACC_PROVIDER_HOST", host)
}

// TestSecretAttributesInSchema: the BMC password has a write-only form,
// every secret is sensitive, and the version that rotates the write-only
// password is a plain value (it is kept in the state to compare).
func TestSecretAttributesInSchema(t *testing.T) {
	ctx := context.Background()
	schemaOf := func(r resource.Resource) rschema.Schema {
		var resp resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &resp)
		if resp.Diagnostics.HasError() {
			t.Fatal(resp.Diagnostics)
		}
		return resp.Schema
	}
	bmc := schemaOf(NewNodeResource()).Attributes["bmc"].(rschema.SingleNestedAttribute).Attributes
	pw, wo, version := bmc["password"], bmc["password_wo"], bmc["password_wo_version"]
	if !pw.IsSensitive() || !pw.IsOptional() || pw.IsRequired() || pw.IsWriteOnly() {
		t.Errorf("bmc.password: want optional, sensitive, not write-only: %+v", pw)
	}
	if !wo.IsSensitive() || !wo.IsOptional() || !wo.IsWriteOnly() || wo.IsComputed() {
		t.Errorf("bmc.password_wo: want optional, sensitive, write-only: %+v", wo)
	}
	if version.IsSensitive() || !version.IsOptional() || version.IsWriteOnly() {
		t.Errorf("bmc.password_wo_version: want optional, not sensitive, kept in state: %+v", version)
	}
	if ud := schemaOf(NewInstanceResource()).Attributes["user_data"]; !ud.IsSensitive() {
		t.Error("baremetal_instance.user_data must be sensitive")
	}
}

// nodeWithPassword is a node whose bmc block has the given password lines.
func nodeWithPassword(password string) string {
	return unreachableProvider + `
resource "baremetal_node" "test" {
  name           = "n1"
  driver         = "redfish"
  resource_class = "rc"
  bmc = {
    address  = "http://127.0.0.1:2"
    username = "admin"
` + password + `
  }
}
`
}

// TestAccBMCPasswordRules: exactly one of password and password_wo, the
// version exactly with password_wo, on the default CLI and, when there is
// one, on a CLI with write-only arguments; an older CLI refuses
// password_wo, a newer one plans it as null.
func TestAccBMCPasswordRules(t *testing.T) {
	requireAcc(t)
	clis := []cli{defaultCLI(t)}
	if !clis[0].writeOnly() {
		clis = append(clis, writeOnlyCLI(t))
	}
	for _, c := range clis {
		t.Run(c.String(), func(t *testing.T) {
			useCLI(t, c)
			cases := []struct{ name, password, want string }{
				{"both", `    password = "a"
    password_wo = "b"
    password_wo_version = 1`, `(?s)Two BMC passwords.*Set only one of bmc.password and\s+bmc.password_wo`},
				{"neither", ``, `(?s)Missing BMC password.*Set one of bmc.password and bmc.password_wo`},
				{"write-only without version", `    password_wo = "b"`, `(?s)Missing bmc.password_wo_version.*Change the version to rotate the\s+password`},
				{"version without write-only", `    password = "a"
    password_wo_version = 1`, `bmc.password_wo_version without bmc.password_wo`},
			}
			if !c.writeOnly() {
				cases = append(cases, struct{ name, password, want string }{"write-only on an old CLI", `    password_wo = "b"
    password_wo_version = 1`, `(?s)WriteOnly Attribute Not Allowed.*only supported in Terraform 1.11\s+and later`})
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					tfresource.Test(t, tfresource.TestCase{
						ProtoV6ProviderFactories: protoV6ProviderFactories,
						Steps: []tfresource.TestStep{{
							Config:      nodeWithPassword(tc.password),
							PlanOnly:    true,
							ExpectError: regexp.MustCompile(tc.want),
						}},
					})
				})
			}
		})
	}
}

// secretNowhereInPlan fails when secret appears anywhere in the plan,
// sensitive or not, but in the copy of the configuration it carries (where
// the test wrote it): for a write-only argument, which must not be in
// planned values, prior state or resource changes at all.
type secretNowhereInPlan struct{ secret string }

func (c secretNowhereInPlan) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	p := *req.Plan
	p.Config = nil
	b, err := json.Marshal(p)
	if err != nil {
		resp.Error = err
		return
	}
	if bytes.Contains(b, []byte(c.secret)) {
		resp.Error = errors.New("the write-only secret is in the plan")
	}
}

// checkNoTrace fails when any of secrets appears in a file that terraform
// wrote under dir (states, their backups, saved plans, including inside a
// plan's zip entries), or when no state file is there to look at. The
// configuration (.tf files, also copied into saved plans) holds the
// secrets by the test's own doing and is left out. stateOnly reads only
// the current state, for after a switch from bmc.password: the backup of
// the state before and a plan made from it still hold the password.
func checkNoTrace(dir string, stateOnly bool, secrets ...string) tfresource.TestCheckFunc {
	return func(*terraform.State) error {
		states := 0
		var found []string
		look := func(name string, b []byte) {
			for _, s := range secrets {
				if bytes.Contains(b, []byte(s)) {
					found = append(found, fmt.Sprintf("%q in %s", s, name))
				}
			}
		}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(p, ".tf") || strings.HasSuffix(p, ".tf.json") {
				return err
			}
			base := filepath.Base(p)
			if base == "terraform.tfstate" {
				states++
			}
			if stateOnly && base != "terraform.tfstate" {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			look(p, b)
			if zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b))); err == nil {
				for _, f := range zr.File {
					if strings.HasPrefix(f.Name, "tfconfig/") {
						continue
					}
					rc, err := f.Open()
					if err != nil {
						return err
					}
					content, err := io.ReadAll(rc)
					_ = rc.Close()
					if err != nil {
						return err
					}
					look(p+"!"+f.Name, content)
				}
			}
			return nil
		})
		switch {
		case err != nil:
			return err
		case states == 0:
			return fmt.Errorf("no terraform.tfstate under %s: nothing was checked", dir)
		case len(found) > 0:
			return fmt.Errorf("secret written by terraform: %s", strings.Join(found, ", "))
		}
		return nil
	}
}

// TestAccNodeWriteOnlyPassword applies nodes with bmc.password_wo on a
// CLI that supports it and checks that no file terraform writes (state,
// saved plans) holds the password; that a new password_wo alone changes
// nothing, while a new password_wo_version sends it (the controller then
// reaches the BMC it could not before); and that a switch from password to
// password_wo takes the password out of the state.
func TestAccNodeWriteOnlyPassword(t *testing.T) {
	useCLI(t, writeOnlyCLI(t))
	work := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", work) // terraform-plugin-testing's working directories: what checkNoTrace reads
	env := accEnv(t, testenv.Options{Systems: 1, PowerSyncInterval: 500 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_node.wo"
	const wrong = "not-the-bmc-pw-K2v"
	cfg := func(password, extra string) string {
		return providerConfig(env, env.AdminToken) + strings.Replace(
			nodeHCL(env, "wo", "wo", "rc", 0, extra),
			fmt.Sprintf("password  = %q", bmcPassword), password, 1)
	}
	wo := func(pw string, version int) string {
		return fmt.Sprintf("password_wo = %q\n    password_wo_version = %d", pw, version)
	}
	nowait := "  wait_for_available = false"
	passwordNull := statecheck.ExpectKnownValue(addr, tfjsonpath.New("bmc").AtMapKey("password"), knownvalue.Null())
	woNull := statecheck.ExpectKnownValue(addr, tfjsonpath.New("bmc").AtMapKey("password_wo"), knownvalue.Null())

	tfresource.Test(t, tfresource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.RequireAbove(tfversion.Version1_11_0)},
		CheckDestroy:             checkNodesGone(c),
		Steps: []tfresource.TestStep{
			{
				// A wrong password, write-only: the node stays in enroll
				// with an auth fault.
				Config: cfg(wo(wrong, 1), nowait),
				ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("bmc").AtMapKey("password_wo"), knownvalue.Null()),
					secretNowhereInPlan{wrong},
				}},
				ConfigStateChecks: []statecheck.StateCheck{passwordNull, woNull},
				Check: tfresource.ComposeAggregateTestCheckFunc(
					nodeFaultEventually(c, "wo", api.FaultBMCAuthFailed),
					checkNoTrace(work, false, wrong),
				),
			},
			{
				// The right password, same version: Terraform keeps nothing
				// to compare it with, so nothing is planned.
				Config:   cfg(wo(bmcPassword, 1), nowait),
				PlanOnly: true,
			},
			{
				// A new version sends it; the controller re-verifies the
				// node in enroll, which apply now waits for.
				Config: cfg(wo(bmcPassword, 2), ""),
				ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectUpdate{addr: addr, changed: []string{"bmc.password_wo_version", "wait_for_available"}, unknown: reverified("cpus", "memory_mb", "cpu_arch", "local_gb")},
					secretNowhereInPlan{bmcPassword},
				}},
				ConfigStateChecks: []statecheck.StateCheck{passwordNull, woNull},
				Check: tfresource.ComposeAggregateTestCheckFunc(
					tfresource.TestCheckResourceAttr(addr, "provision_state", "available"),
					tfresource.TestCheckResourceAttr(addr, "fault", ""),
					checkNoTrace(work, false, wrong, bmcPassword),
				),
			},
			{
				// The classic password, for older CLIs: in the state, as
				// documented.
				Config: cfg(fmt.Sprintf("password = %q", bmcPassword), ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("bmc").AtMapKey("password"), knownvalue.StringExact(bmcPassword)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("bmc").AtMapKey("password_wo_version"), knownvalue.Null()),
				},
			},
			{
				// Back to write-only: the password leaves the state (the
				// state's backup and the plan made from the state before
				// still hold it).
				Config:            cfg(wo(bmcPassword, 3), ""),
				ConfigStateChecks: []statecheck.StateCheck{passwordNull, woNull},
				Check: tfresource.ComposeAggregateTestCheckFunc(
					tfresource.TestCheckResourceAttr(addr, "fault", ""),
					checkNoTrace(work, true, bmcPassword),
				),
			},
		},
	})
}

// nodeFaultEventually is a check that the node has fault f within 30s.
func nodeFaultEventually(c *apiclient.Client, idOrName string, f api.Fault) tfresource.TestCheckFunc {
	return func(*terraform.State) error {
		var last *api.Node
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			n, err := c.GetNode(context.Background(), idOrName)
			if err != nil {
				return err
			}
			if last = n; n.Fault == f {
				return nil
			}
		}
		return fmt.Errorf("node %s: fault %q (provision_state %s), want %q", idOrName, last.Fault, last.ProvisionState, f)
	}
}
