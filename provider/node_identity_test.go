package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// nodeOnSystemHCL is a baremetal_node on env's BMC with system_id as
// given (omitted when "").
func nodeOnSystemHCL(env *testenv.Env, label, name, systemID string) string {
	system := ""
	if systemID != "" {
		system = fmt.Sprintf("system_id = %q", systemID)
	}
	return fmt.Sprintf(`
resource "baremetal_node" %q {
  name           = %q
  driver         = "redfish"
  resource_class = "rc1"
  bmc = {
    address  = %q
    username = "admin"
    password = %q
    %s
  }
}
`, label, name, env.Sim.URL(), bmcPassword, system)
}

// TestAccNodeSameMachine (issue #25): one machine is one node, whatever
// the spelling. On an iLO-like BMC (every @odata.id ends with a slash), a
// node left without system_id shows the system the BMC serves; a second
// baremetal_node for that machine (another spelling of its system, or
// none) fails the apply with a diagnostic naming the first; a configured
// spelling of the node's own system is kept, without a perpetual diff.
func TestAccNodeSameMachine(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{SimOptions: sim.Options{IDs: []string{"1"}, TrailingSlashIDs: true}})
	c := accClient(t, env, env.AdminToken)
	first := providerConfig(env, env.AdminToken) + nodeOnSystemHCL(env, "a", "first", "")
	var firstID string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkNodesGone(c),
		Steps: []resource.TestStep{
			{
				Config: first,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("baremetal_node.a", "provision_state", "available"),
					resource.TestCheckResourceAttr("baremetal_node.a", "bmc.system_id", "/redfish/v1/Systems/1/"),
					func(s *terraform.State) error {
						firstID = s.RootModule().Resources["baremetal_node.a"].Primary.ID
						return nil
					},
				),
			},
			{Config: first, PlanOnly: true},
			{
				// The case: iLO's spelling of the machine the
				// first node has without system_id.
				Config:      first + nodeOnSystemHCL(env, "b", "second", "/redfish/v1/Systems/1/"),
				ExpectError: regexp.MustCompile(`(?s)Could not create node second.*node\s+"first"\s+\(id\s+[0-9a-f-]+.*already\s+manages.*enrolled\s+only\s+once`),
			},
			{
				Config:      first + nodeOnSystemHCL(env, "b", "second", "1"),
				ExpectError: regexp.MustCompile(`(?s)Could not create node second.*node\s+"first"\s+\(id\s+[0-9a-f-]+.*already\s+manages.*enrolled\s+only\s+once`),
			},
			{
				Config:      first + nodeOnSystemHCL(env, "b", "second", ""),
				ExpectError: regexp.MustCompile(`(?s)Could not create node second.*node\s+"first"\s+\(id\s+[0-9a-f-]+.*enrolled\s+only\s+once`),
			},
			{
				// The first node's own system, spelled as the operator
				// likes: one in-place update that changes nothing on the
				// controller, then no diff.
				Config: providerConfig(env, env.AdminToken) + nodeOnSystemHCL(env, "a", "first", "Systems/1"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("baremetal_node.a", plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("baremetal_node.a", "bmc.system_id", "Systems/1"),
					resource.TestCheckResourceAttr("baremetal_node.a", "provision_state", "available"),
					func(*terraform.State) error {
						n, err := c.GetNode(t.Context(), firstID)
						if err != nil {
							return err
						}
						if n.BMC.SystemID != "/redfish/v1/Systems/1/" || n.ProvisionState != "available" {
							return fmt.Errorf("the controller's node after a respelled system_id: system_id %q, %s", n.BMC.SystemID, n.ProvisionState)
						}
						return nil
					},
				),
			},
			{Config: providerConfig(env, env.AdminToken) + nodeOnSystemHCL(env, "a", "first", "Systems/1"), PlanOnly: true},
		},
	})
}

// A node the controller found to be a second node of another's machine
// (fault duplicate) ends the wait for its verification at once, with the
// controller's words naming the other node: no wait would end it.
func TestWaitVerifiedStopsOnADuplicate(t *testing.T) {
	oldMin, oldMax := pollMin, pollMax
	pollMin, pollMax = time.Millisecond, 5*time.Millisecond
	t.Cleanup(func() { pollMin, pollMax = oldMin, oldMax })
	var gets atomic.Int64
	const lastError = `duplicate of node "first" (id 0f9c): this node's BMC settings reach system /redfish/v1/Systems/1/ of the BMC at https://10.0.0.5`
	c := testClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := api.Node{ID: "n2", Name: "second", ProvisionState: api.StateEnroll}
		if gets.Add(1) > 2 {
			n.Fault, n.LastError = api.FaultDuplicate, lastError
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(n)
	}))
	r := &NodeResource{client: c}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := waitVerified(ctx, r.client, "n2", 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "second node of another node's machine") || !strings.Contains(err.Error(), lastError) {
		t.Fatalf("waitVerified on a duplicate: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("waitVerified waited out its timeout on a duplicate")
	}
}

// TestCreateNodeWhenTheOldNodeGoesMeanwhile: the create is refused
// because a node being retired holds the name, and that node is gone by
// the time the provider looks (the retire ended in between): the create
// is sent again instead of failing with the stale 409. A conflict on
// another field (the machine) is not retried.
func TestCreateNodeWhenTheOldNodeGoesMeanwhile(t *testing.T) {
	for _, field := range []string{"name", "bmc.address"} {
		t.Run(field, func(t *testing.T) {
			var posts atomic.Int64
			c := testClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch {
				case r.Method == http.MethodPost && posts.Add(1) == 1:
					w.Header().Set("Content-Type", "application/problem+json")
					w.WriteHeader(http.StatusConflict)
					_ = json.NewEncoder(w).Encode(api.Problem{Type: "about:blank", Title: "Conflict", Status: 409, Field: field,
						Detail: `a node named "hw" is still being deleted (id 93075288); wait for its retire job to finish or delete it with force=true`})
				case r.Method == http.MethodPost:
					w.WriteHeader(http.StatusCreated)
					_ = json.NewEncoder(w).Encode(api.Node{ID: "new", Name: "hw", ProvisionState: api.StateAvailable})
				default: // GET /v1/nodes/hw: gone
					w.Header().Set("Content-Type", "application/problem+json")
					w.WriteHeader(http.StatusNotFound)
					_ = json.NewEncoder(w).Encode(api.Problem{Type: "about:blank", Title: "Not Found", Status: 404, Detail: "node hw not found"})
				}
			}))
			n, err := createNode(context.Background(), c, api.NodeCreate{Name: "hw"})
			switch field {
			case "name":
				if err != nil || n == nil || n.ID != "new" || posts.Load() != 2 {
					t.Fatalf("create after the old node went: %+v, %v (%d POSTs)", n, err, posts.Load())
				}
			default:
				if err == nil || posts.Load() != 1 {
					t.Fatalf("a conflict on %s was retried or lost: %+v, %v (%d POSTs)", field, n, err, posts.Load())
				}
			}
		})
	}
}
