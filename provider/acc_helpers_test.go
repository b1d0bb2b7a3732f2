package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// bmcPassword is what the simulated BMCs accept in the acceptance tests:
// distinctive, so a leak into any other attribute is easy to spot.
const bmcPassword = "bmc-s3cret-Zq7"

// accEnv starts a real controller with simulated BMCs for one test.
func accEnv(t *testing.T, opts testenv.Options) *testenv.Env {
	t.Helper()
	requireAcc(t)
	opts.SimOptions.Password = bmcPassword
	return testenv.Start(t, opts)
}

// accClient is an API client of env with token, for PreConfig changes
// "outside Terraform" and for checks.
func accClient(t *testing.T, env *testenv.Env, token string) *apiclient.Client {
	t.Helper()
	c, err := apiclient.New(env.URL, apiclient.Options{Token: token, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// providerConfig is the provider block for env with token.
func providerConfig(env *testenv.Env, token string) string {
	return fmt.Sprintf(`
provider "baremetal" {
  endpoint = %q
  token    = %q
  timeout  = "10s"
}
`, env.URL, token)
}

// nodeHCL is a baremetal_node on the i-th simulated system (0-based).
func nodeHCL(env *testenv.Env, label, name, class string, system int, extra string) string {
	return fmt.Sprintf(`
resource "baremetal_node" %q {
  name           = %q
  driver         = "redfish"
  resource_class = %q
  bmc = {
    address   = %q
    username  = "admin"
    password  = %q
    system_id = %q
  }
%s
}
`, label, name, class, env.Sim.URL(), bmcPassword, env.Sim.SystemIDs()[system], extra)
}

// poll waits for cond, failing the test after timeout.
func poll(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok && err == nil {
			return
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not true within %s (last error: %v)", what, timeout, lastErr)
}

// waitNodeHealthy polls the API until the node is in state with no fault.
func waitNodeHealthy(t *testing.T, c *apiclient.Client, idOrName string, state api.ProvisionState, timeout time.Duration) *api.Node {
	t.Helper()
	var last *api.Node
	poll(t, "node "+idOrName+" "+string(state)+" without fault", timeout, func() (bool, error) {
		n, err := c.GetNode(context.Background(), idOrName)
		if err != nil {
			return false, err
		}
		last = n
		if n.ProvisionState != state || n.Fault != "" {
			return false, fmt.Errorf("provision_state %s, fault %q, last_error %q", n.ProvisionState, n.Fault, n.LastError)
		}
		return true, nil
	})
	return last
}

// enrollNode enrolls the i-th simulated system through the API as an
// admin and waits until it is available.
func enrollNode(t *testing.T, env *testenv.Env, name, class string, system int) *api.Node {
	t.Helper()
	c := accClient(t, env, env.AdminToken)
	_, err := c.CreateNode(context.Background(), api.NodeCreate{
		Name: name, Driver: "redfish", ResourceClass: class,
		BMC: api.BMCInput{Address: env.Sim.URL(), Username: "admin", Password: bmcPassword, SystemID: env.Sim.SystemIDs()[system]},
	})
	if err != nil {
		t.Fatal(err)
	}
	return waitNodeHealthy(t, c, name, "available", 30*time.Second)
}

// systemOf returns the simulated system path a node's BMC points at.
func systemOf(t *testing.T, c *apiclient.Client, nodeID string) string {
	t.Helper()
	n, err := c.GetNode(context.Background(), nodeID)
	if err != nil {
		t.Fatal(err)
	}
	return n.BMC.SystemID
}

// setFault injects a fault into a simulated system.
func setFault(t *testing.T, env *testenv.Env, system string, f sim.Fault) {
	t.Helper()
	if err := env.Sim.SetFault(system, f); err != nil {
		t.Fatal(err)
	}
}

// stateAttr reads an attribute of a resource in the state.
func stateAttr(s *terraform.State, addr, key string) (string, error) {
	rs, ok := s.RootModule().Resources[addr]
	if !ok {
		return "", fmt.Errorf("%s not in state", addr)
	}
	v, ok := rs.Primary.Attributes[key]
	if !ok {
		return "", fmt.Errorf("%s has no attribute %s", addr, key)
	}
	return v, nil
}

// checkSecretOnlyIn fails when secret appears in any attribute of any
// resource or data source in the state other than allowed.
func checkSecretOnlyIn(secret string, allowed ...string) func(*terraform.State) error {
	return func(s *terraform.State) error {
		for addr, rs := range s.RootModule().Resources {
			for k, v := range rs.Primary.Attributes {
				if !strings.Contains(v, secret) {
					continue
				}
				ok := false
				for _, a := range allowed {
					if addr+"."+k == a {
						ok = true
					}
				}
				if !ok {
					return fmt.Errorf("secret found in %s.%s", addr, k)
				}
			}
		}
		return nil
	}
}

// secretOnlyInSensitive is a plan check: secret may appear in the planned
// values only at paths the plan marks sensitive (which terraform never
// prints), and nowhere in planned outputs.
type secretOnlyInSensitive struct{ secret string }

var _ plancheck.PlanCheck = secretOnlyInSensitive{}

func (c secretOnlyInSensitive) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	var errs []error
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Change == nil {
			continue
		}
		for _, side := range []struct {
			name      string
			value     any
			sensitive any
		}{{"after", rc.Change.After, rc.Change.AfterSensitive}, {"before", rc.Change.Before, rc.Change.BeforeSensitive}} {
			for _, p := range leaks(side.value, side.sensitive, c.secret, rc.Address) {
				errs = append(errs, fmt.Errorf("%s: secret in non-sensitive planned value %s", side.name, p))
			}
		}
	}
	for name, out := range req.Plan.OutputChanges {
		if out != nil && strings.Contains(fmt.Sprint(out.After), c.secret) {
			errs = append(errs, fmt.Errorf("secret in output %s", name))
		}
	}
	resp.Error = errors.Join(errs...)
}

// leaks walks a planned value alongside its sensitivity mask.
func leaks(v, mask any, secret, at string) []string {
	if b, ok := mask.(bool); ok && b {
		return nil
	}
	switch t := v.(type) {
	case string:
		if strings.Contains(t, secret) {
			return []string{at}
		}
	case map[string]any:
		m, _ := mask.(map[string]any)
		var out []string
		for k, e := range t {
			out = append(out, leaks(e, m[k], secret, at+"."+k)...)
		}
		return out
	case []any:
		l, _ := mask.([]any)
		var out []string
		for i, e := range t {
			var em any
			if i < len(l) {
				em = l[i]
			}
			out = append(out, leaks(e, em, secret, fmt.Sprintf("%s[%d]", at, i))...)
		}
		return out
	}
	return nil
}
