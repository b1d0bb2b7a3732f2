package provider

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// BenchmarkPlanRefresh applies 500 nodes and 200 instances with the real
// terraform binary and the provider built from this tree (dev_overrides),
// then times `terraform plan` (which refreshes every resource) and counts
// the API requests one plan makes, from the controller's own metrics.
//
//	make tools && TF_ACC_TERRAFORM_PATH=$PWD/.tools/bin/terraform \
//	  go test -run '^$' -bench PlanRefresh -benchtime 3x -timeout 30m ./provider
func BenchmarkPlanRefresh(b *testing.B) {
	const nodes, instances = 500, 200
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		b.Fatal("set TF_ACC_TERRAFORM_PATH (make tools builds terraform into .tools/bin)")
	}
	env := testenv.Start(b, testenv.Options{Systems: nodes, PowerSyncInterval: time.Minute})
	dir := b.TempDir()
	plugin := filepath.Join(dir, "plugins")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(plugin, "terraform-provider-baremetal"), "..").CombinedOutput(); err != nil {
		b.Fatalf("build provider: %v\n%s", err, out)
	}
	rc := filepath.Join(dir, "dev.tfrc")
	must(b, os.WriteFile(rc, []byte(fmt.Sprintf("disable_checkpoint = true\nprovider_installation {\n  dev_overrides {\n    \"baremetal-tf/baremetal\" = %q\n  }\n  direct {}\n}\n", plugin)), 0o600))
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "terraform {\n  required_providers {\n    baremetal = { source = \"baremetal-tf/baremetal\" }\n  }\n}\nprovider \"baremetal\" {\n  endpoint = %q\n  token = %q\n}\n", env.URL, env.AdminToken)
	for i := 0; i < nodes; i++ {
		fmt.Fprintf(&cfg, "resource \"baremetal_node\" \"n%d\" {\n  name = \"n%d\"\n  driver = \"redfish\"\n  resource_class = \"rc\"\n  bmc = {\n    address = %q\n    username = \"admin\"\n    password = \"password\"\n    system_id = %q\n  }\n}\n",
			i, i, env.Sim.URL(), env.Sim.SystemIDs()[i])
	}
	for i := 0; i < instances; i++ {
		fmt.Fprintf(&cfg, "resource \"baremetal_instance\" \"i%d\" {\n  name = \"i%d\"\n  project = \"bench\"\n  node_id = baremetal_node.n%d.id\n  image = { url = \"https://images.example/x.iso\" }\n}\n", i, i, i)
	}
	must(b, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg.String()), 0o600))
	run := func(args ...string) {
		cmd := exec.Command(tf, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("terraform %s: %v\n%s", args[0], err, tailString(string(out), 3000))
		}
	}
	start := time.Now()
	run("apply", "-auto-approve", "-input=false", "-parallelism=20")
	b.Logf("apply of %d nodes + %d instances took %s", nodes, instances, time.Since(start).Round(time.Second))

	before := apiRequests(b, env)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run("plan", "-input=false", "-detailed-exitcode", "-lock=false")
	}
	b.StopTimer()
	calls := apiRequests(b, env) - before - 1 // the first scrape counts itself on the second
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/plan")
	b.ReportMetric(float64(calls)/float64(b.N)/float64(nodes+instances), "api_calls/resource")
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// apiRequests sums the controller's request counter over every route.
func apiRequests(b *testing.B, env *testenv.Env) float64 {
	res, err := http.Get(env.URL + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var sum float64
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "baremetal_http_request_duration_seconds_count{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}
