package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// ciExample is the directory of the CI drift example.
const ciExample = "../examples/ci"

// TestAccCIDriftExample runs examples/ci as its pipeline does: main.tf as it
// is (copied, with the nodes in a tfvars file as its README says), and
// drift.sh with the real terraform binary and jq, against a controller
// where one node of the configuration is faulted, one is in maintenance
// (by configuration) and a node of someone else is both. It checks that
// the check blocks warn, naming exactly this configuration's nodes, without
// failing the plan or the job; that drift made through the API (maintenance
// set by an operator, a node deleted) exits 2 with a summary listing the
// drifted nodes and only the attributes that drifted; that a changed BMC
// password is listed without its value; and that a plan that cannot be made
// exits 1.
func TestAccCIDriftExample(t *testing.T) {
	t.Parallel()
	requireAcc(t)
	jqBinary(t)
	env := accEnv(t, testenv.Options{Systems: 5, PowerSyncInterval: 300 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	ctx := context.Background()
	tf := newTFCLI(t, "BAREMETAL_ENDPOINT="+env.URL, "BAREMETAL_TOKEN="+env.AdminToken, "TF_VAR_bmc_password="+bmcPassword)
	copyExample(t, tf.work)

	type node struct {
		BMCAddress        string `json:"bmc_address"`
		BMCUsername       string `json:"bmc_username"`
		SystemID          string `json:"system_id"`
		ResourceClass     string `json:"resource_class"`
		Maintenance       bool   `json:"maintenance,omitempty"`
		MaintenanceReason string `json:"maintenance_reason,omitempty"`
	}
	sys := env.Sim.SystemIDs()
	nodes := map[string]node{}
	for i, name := range []string{"rack-a", "rack-b", "rack-c", "rack-d"} {
		nodes[name] = node{BMCAddress: env.Sim.URL(), BMCUsername: "admin", SystemID: sys[i], ResourceClass: "ci"}
	}
	held := nodes["rack-b"]
	held.Maintenance, held.MaintenanceReason = true, "swap PSU"
	nodes["rack-b"] = held
	vars, err := json.Marshal(map[string]any{"nodes": nodes})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tf.work, "nodes.auto.tfvars.json"), vars, 0o600); err != nil {
		t.Fatal(err)
	}

	tf.run(0, "apply", "-auto-approve")

	// Trouble that is news, not drift: rack-a's BMC goes down; a node of
	// another team, not in this configuration, is faulted and in
	// maintenance.
	enrollNode(t, env, "other-team", "ci", 4)
	yes, reason := true, "not ours"
	if _, err := c.PatchNode(ctx, "other-team", api.NodePatch{Maintenance: &yes, MaintenanceReason: &reason}, ""); err != nil {
		t.Fatal(err)
	}
	setFault(t, env, sys[0], sim.FaultDown)
	setFault(t, env, sys[4], sim.FaultDown)
	for _, name := range []string{"rack-a", "other-team"} {
		poll(t, name+" faulted", 30*time.Second, func() (bool, error) {
			n, err := c.GetNode(ctx, name)
			return err == nil && n.Fault == "bmc_unreachable", err
		})
	}

	// What terraform itself says: an empty plan (exit 0) with one warning
	// per check block.
	warnings := checkWarnings(t, tf.run(0, "plan", "-detailed-exitcode", "-json"))
	// last_error names the port of a TCP connection: it changes at every
	// power sync.
	faulted := `Faulted nodes: rack-a \(bmc_unreachable since \d{4}-\d\d-\d\dT[0-9:]+Z: [^\n]+\)`
	faultedRE := regexp.MustCompile("^" + faulted + "$")
	if len(warnings) != 2 || !faultedRE.MatchString(warnings[0]) || warnings[1] != "Nodes in maintenance: rack-b (swap PSU)" {
		t.Fatalf("check block warnings:\n  %s\nwant, in this order, one matching %s and %q, naming this configuration's nodes only",
			strings.Join(warnings, "\n  "), faultedRE, "Nodes in maintenance: rack-b (swap PSU)")
	}

	// What the job says: it passes, and the summary and the annotations
	// carry the same warnings.
	run := runDrift(t, tf, 0)
	if !strings.HasPrefix(run.summary, "## No drift\n") {
		t.Errorf("summary of an empty plan:\n%s", run.summary)
	}
	q := regexp.QuoteMeta
	maintained := "Nodes in maintenance: rack-b (swap PSU)"
	checksRE := regexp.MustCompile(q("\n## Warnings from checks\n\nThese do not fail the job.\n\n- `check.no_faulted_nodes`: ") +
		faulted + q("\n- `check.no_nodes_in_maintenance`: "+maintained+"\n") + `\z`)
	if !checksRE.MatchString(run.summary) {
		t.Errorf("summary of an empty plan: want it to end matching %s:\n%s", checksRE, run.summary)
	}
	annotationsRE := regexp.MustCompile("^" + q("::warning title=check.no_faulted_nodes::") + faulted +
		q("\n::warning title=check.no_nodes_in_maintenance::"+maintained) + "$")
	if got := strings.Join(run.annotations, "\n"); !annotationsRE.MatchString(got) {
		t.Errorf("annotations:\n%s\nwant them to match %s", got, annotationsRE)
	}

	// Drift behind Terraform's back: an operator puts rack-c in
	// maintenance through the API, and rack-d's record is removed.
	reason = "PSU swap"
	if _, err := c.PatchNode(ctx, "rack-c", api.NodePatch{Maintenance: &yes, MaintenanceReason: &reason}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteNode(ctx, "rack-d", true); err != nil {
		t.Fatal(err)
	}
	run = runDrift(t, tf, 2)
	wantDrift := "## Drift: 2 resource(s) differ from the configuration\n\n" +
		"An apply would make these changes. *now* is what the refresh read from the controller " +
		"(or the state, for what the controller does not return); *planned* is what the configuration wants.\n" +
		"\n### `baremetal_node.rack[\"rack-c\"] (rack-c)`: update in place\n" +
		"\n| attribute | now | planned |\n|---|---|---|\n" +
		"| `maintenance` | `true` | `false` |\n" +
		"| `maintenance_reason` | `\"PSU swap\"` | `null` |\n" +
		"\n### `baremetal_node.rack[\"rack-d\"] (rack-d)`: create\n" +
		"\nNot found on the controller (deleted outside Terraform?) or new in the configuration.\n" +
		"\n## Warnings from checks\n"
	if !strings.HasPrefix(run.summary, wantDrift) {
		t.Errorf("drift summary:\n%s\nwant it to start with:\n%s", run.summary, wantDrift)
	}
	if want := "- `check.no_nodes_in_maintenance`: Nodes in maintenance: rack-b (swap PSU); rack-c (PSU swap)\n"; !strings.Contains(run.summary, want) {
		t.Errorf("drift summary lacks %q", want)
	}
	if want := []string{
		`::error title=Drift%3A baremetal_node.rack["rack-c"] (rack-c)::update in place: maintenance, maintenance_reason`,
		`::error title=Drift%3A baremetal_node.rack["rack-d"] (rack-d)::create`,
	}; !slices.Equal(run.annotations[:min(2, len(run.annotations))], want) {
		t.Errorf("annotations:\n  %s\nwant them to start with:\n  %s", strings.Join(run.annotations, "\n  "), strings.Join(want, "\n  "))
	}

	// A new BMC password in the configuration is a change too: listed,
	// never shown, neither the old one nor the new one.
	const newPassword = "rotated-Pw-81x"
	tf.env = append(tf.env, "TF_VAR_bmc_password="+newPassword)
	run = runDrift(t, tf, 2)
	if want := "| `bmc.password` | (sensitive) | (sensitive) |\n"; strings.Count(run.summary, want) != 3 {
		t.Errorf("summary with a new BMC password: want %q for rack-a, rack-b and rack-c:\n%s", want, run.summary)
	}
	for _, secret := range []string{bmcPassword, newPassword} {
		if strings.Contains(run.summary, secret) || strings.Contains(run.stdout, secret) || strings.Contains(run.stderr, secret) {
			t.Errorf("a BMC password is in the job's summary or log:\n%s\n%s\n%s", run.summary, run.stdout, run.stderr)
		}
	}

	// No plan, no summary of one: a job that cannot plan is an error.
	tf.env = append(tf.env, "BAREMETAL_TOKEN=not-a-token")
	run = runDrift(t, tf, 1)
	if !strings.HasPrefix(run.summary, "## Drift check failed\n\n`terraform plan` exited 1") {
		t.Errorf("summary of a failed plan:\n%s", run.summary)
	}
	if want := "Check the provider's token (or " + EnvToken + ")"; !strings.Contains(flat(run.stderr), want) {
		t.Errorf("log of a failed plan lacks %q:\n%s", want, run.stderr)
	}
	if want := "::error title=Drift check failed::terraform plan exited 1"; !slices.Contains(run.annotations, want) {
		t.Errorf("annotations of a failed plan: %q; want %q", run.annotations, want)
	}
}

// TestCIExampleWorkflow checks the structure of the example's workflow:
// that it is valid YAML, runs on a schedule and on demand, passes the
// provider's own environment variables from secrets, keeps setup-terraform's
// wrapper off (it would corrupt `terraform show -json`) and runs drift.sh,
// the script TestAccCIDriftExample runs, in the example's directory.
func TestCIExampleWorkflow(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(ciExample, "drift.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On struct {
			Schedule []struct {
				Cron string `yaml:"cron"`
			} `yaml:"schedule"`
			Dispatch *struct{} `yaml:"workflow_dispatch"`
		} `yaml:"on"`
		Jobs map[string]struct {
			Defaults struct {
				Run struct {
					WorkingDirectory string `yaml:"working-directory"`
				} `yaml:"run"`
			} `yaml:"defaults"`
			Env   map[string]string `yaml:"env"`
			Steps []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
				Run  string            `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(src, &wf); err != nil {
		t.Fatalf("drift.yml: %v", err)
	}
	if len(wf.On.Schedule) != 1 || len(strings.Fields(wf.On.Schedule[0].Cron)) != 5 {
		t.Errorf("on.schedule: %+v; want one cron expression of 5 fields", wf.On.Schedule)
	}
	if wf.On.Dispatch == nil {
		t.Error("no on.workflow_dispatch: the job cannot be run on demand")
	}
	job, ok := wf.Jobs["drift"]
	if !ok || len(wf.Jobs) != 1 {
		t.Fatalf("jobs: want exactly one, drift")
	}
	for k, want := range map[string]string{
		EnvEndpoint:           "${{ vars.BAREMETAL_ENDPOINT }}",
		EnvToken:              "${{ secrets.BAREMETAL_TOKEN }}",
		"TF_VAR_bmc_password": "${{ secrets.BMC_PASSWORD }}",
	} {
		if got := job.Env[k]; got != want {
			t.Errorf("env %s = %q, want %q", k, got, want)
		}
	}
	// The working directory is the repository root's examples/ci.
	if dir := job.Defaults.Run.WorkingDirectory; filepath.Clean(filepath.Join("..", dir)) != filepath.Clean(ciExample) {
		t.Errorf("working-directory %q is not the example's directory", dir)
	}
	var setup, runs bool
	for _, s := range job.Steps {
		if strings.HasPrefix(s.Uses, "hashicorp/setup-terraform@") {
			setup = s.With["terraform_wrapper"] == "false" && s.With["terraform_version"] != ""
		}
		if strings.TrimSpace(s.Run) == "./drift.sh" {
			runs = true
		}
	}
	if !setup {
		t.Error("no hashicorp/setup-terraform step with a terraform_version and terraform_wrapper: false")
	}
	if !runs {
		t.Error("no step runs ./drift.sh")
	}
	if fi, err := os.Stat(filepath.Join(ciExample, "drift.sh")); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("drift.sh must be executable: %v, %v", fi, err)
	}
}

// jqBinary is the jq drift.sh runs. Like terraform, it is a tool the test
// needs, not an option: without it the test fails saying so.
func jqBinary(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("jq not found on PATH: the CI example's drift.sh needs it (apt-get install jq; GitHub's runners have it)")
	}
}

// copyExample copies the example's Terraform files into dir: the tests run
// them as they are, never a copy kept in a test.
func copyExample(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(ciExample, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .tf files in %s: %v", ciExample, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// checkWarnings returns the details of the check block warnings in the
// machine-readable output of `terraform plan -json`, sorted, and fails the
// test on any other diagnostic.
func checkWarnings(t *testing.T, out string) []string {
	t.Helper()
	var details []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Type       string `json:"type"`
			Diagnostic struct {
				Severity string `json:"severity"`
				Summary  string `json:"summary"`
				Detail   string `json:"detail"`
			} `json:"diagnostic"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("terraform plan -json printed a line that is not JSON: %v\n%s", err, sc.Text())
		}
		d := line.Diagnostic
		// dev_overrides always warn about themselves.
		if line.Type != "diagnostic" || d.Summary == "Provider development overrides are in effect" {
			continue
		}
		if d.Severity != "warning" || d.Summary != "Check block assertion failed" {
			t.Fatalf("unexpected diagnostic: %+v", d)
		}
		details = append(details, d.Detail)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(details)
	return details
}

// driftRun is what one run of drift.sh left: its log, the workflow
// commands in it, and the step summary it wrote.
type driftRun struct {
	stdout, stderr, summary string
	annotations             []string
}

// runDrift runs the example's drift.sh in tf's working directory, as the
// workflow's step does, with GITHUB_STEP_SUMMARY set, fails the test
// unless it exits with want, and checks that it left no plan behind.
func runDrift(t *testing.T, tf *tfCLI, want int) driftRun {
	t.Helper()
	script, err := filepath.Abs(filepath.Join(ciExample, "drift.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	summary := filepath.Join(dir, "summary.md")
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script)
	cmd.Dir = tf.work
	cmd.Env = append(slices.Clone(tf.env), "TERRAFORM="+tf.tf, "GITHUB_STEP_SUMMARY="+summary, "TMPDIR="+tmp, "TF_IN_AUTOMATION=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("drift.sh: %v", err)
	}
	if code != want {
		t.Fatalf("drift.sh: exit %d, want %d:\n%s\n%s", code, want, stdout.String(), stderr.String())
	}
	// The saved plan and its JSON hold the BMC password in clear text.
	if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
		t.Errorf("drift.sh left %v in its temporary directory (%v)", left, err)
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatalf("drift.sh wrote no summary: %v\n%s", err, stdout.String())
	}
	r := driftRun{stdout: stdout.String(), stderr: stderr.String(), summary: string(b)}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "::") {
			r.annotations = append(r.annotations, l)
		}
	}
	return r
}
