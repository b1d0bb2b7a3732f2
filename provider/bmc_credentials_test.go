package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// refusedRE is the diagnostic of credentials the BMC refused: with the
// BMC's answer (the simulated BMC's 401), saying that the node stays
// enrolled and what to do. (Terraform wraps the lines.)
var refusedRE = regexp.MustCompile(`(?s)The BMC refused the credentials of node.*The\s+BMC\s+at\s+\S+\s+refused\s+the\s+credentials\s+of\s+node\s+\S+:\s+\d+\s+failed\s+logins\s+in\s+a\s+row\s+\(fault\s+bmc_auth_failed.*Its\s+answer:.*401.*stays\s+enrolled.*keeps\s+retrying.*Correct`)

// refusedNodeHCL is nodeHCL with another BMC password.
func refusedNodeHCL(env *testenv.Env, label, name string, system int, password, extra string) string {
	return strings.Replace(nodeHCL(env, label, name, "rc", system, extra), fmt.Sprintf("password  = %q", bmcPassword), fmt.Sprintf("password  = %q", password), 1)
}

// TestAccNodeCreateWithRefusedPassword: a node whose BMC refuses the
// configured password fails the apply as soon as the BMC has refused it
// twice, with the BMC's answer, instead of at the end of the create
// timeout (3 minutes here, all of which an apply waited before); the node
// stays enrolled with the fault bmc_auth_failed and the controller keeps
// retrying it. With the password corrected, the next apply replaces the
// tainted node, whose record goes at once (it never got into its BMC, and
// a retire would wait for a login forever, holding the name), and the new
// node becomes available.
func TestAccNodeCreateWithRefusedPassword(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_node.typo"
	timeouts := `
  timeouts {
    create = "3m"
  }`
	wrong := providerConfig(env, env.AdminToken) + refusedNodeHCL(env, "typo", "typo", 0, "bmc-s3cret-Zq8", timeouts)
	right := providerConfig(env, env.AdminToken) + refusedNodeHCL(env, "typo", "typo", 0, bmcPassword, timeouts)
	var start time.Time
	var refused *api.Node

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				PreConfig:   func() { start = time.Now() },
				Config:      wrong,
				ExpectError: refusedRE,
			},
			{
				// Still enrolled, faulted, retried; then corrected.
				PreConfig: func() {
					t.Logf("the apply with a refused password failed after %s (plan and apply)", time.Since(start).Round(time.Millisecond))
					n, err := c.GetNode(context.Background(), "typo")
					if err != nil {
						t.Fatal(err)
					}
					if n.ProvisionState != api.StateEnroll || n.Fault != api.FaultBMCAuthFailed || n.BMCFailures < refusalsToFail {
						t.Fatalf("after the failed apply: %s, fault %q, %d failures; want enroll, bmc_auth_failed, at least %d",
							n.ProvisionState, n.Fault, n.BMCFailures, refusalsToFail)
					}
					refused = n
				},
				Config: right,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionReplace),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "provision_state", "available"),
					resource.TestCheckResourceAttr(addr, "fault", ""),
					func(*terraform.State) error {
						if _, err := c.GetNode(context.Background(), refused.ID); !errors.Is(err, apiclient.ErrNotFound) {
							return fmt.Errorf("the refused node %s: %v; want it removed", refused.ID, err)
						}
						return nil
					},
				),
			},
		},
	})
}

// TestAccNodeUpdateToRefusedPassword: an update of a node still in enroll
// that sends a password the BMC refuses fails the same way (the failures
// counted for the password before are not the new one's), and the
// corrected password updates the node in place, which becomes available.
func TestAccNodeUpdateToRefusedPassword(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_node.later"
	cfg := func(password, wait string) string {
		return providerConfig(env, env.AdminToken) + refusedNodeHCL(env, "later", "later", 0, password, `
  wait_for_available = `+wait+`
  timeouts {
    update = "3m"
  }`)
	}
	var id string

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				// Created without waiting: it stays in enroll, refused.
				Config: cfg("first-typo", "false"),
				Check: func(s *terraform.State) error {
					var err error
					id, err = stateAttr(s, addr, "id")
					return err
				},
			},
			{
				PreConfig: func() {
					poll(t, "the first password refused", 30*time.Second, func() (bool, error) {
						n, err := c.GetNode(context.Background(), id)
						return err == nil && n.Fault == api.FaultBMCAuthFailed && n.BMCFailures >= refusalsToFail, err
					})
				},
				Config:      cfg("second-typo", "true"),
				ExpectError: refusedRE,
			},
			{
				Config: cfg(bmcPassword, "true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrPtr(addr, "id", &id),
					resource.TestCheckResourceAttr(addr, "provision_state", "available"),
					resource.TestCheckResourceAttr(addr, "fault", ""),
				),
			},
		},
	})
}
