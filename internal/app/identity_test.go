package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/jobs"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// One machine, one node, through the whole controller (issue #25): a node
// enrolled without system_id gets the system its BMC serves; a second node
// of that machine that got in anyway (enrolled by an older controller,
// here written to the store directly) is found by its verify, stays in
// enroll with fault duplicate naming the first, and becomes the machine's
// node once the first is deleted with force=true.
func TestSecondNodeHealsWhenTheFirstGoes(t *testing.T) {
	env := testenv.Start(t, testenv.Options{SimOptions: sim.Options{IDs: []string{"1"}, TrailingSlashIDs: true}})
	c := client{t: t, url: env.URL, token: env.AdminToken}
	var first api.Node
	c.call("POST", "/v1/nodes", `{"name":"first","driver":"redfish","resource_class":"rc","bmc":{"address":"`+env.Sim.URL()+
		`","username":"admin","password":"password"}}`, 201, &first)
	if first.BMC.SystemID != "/redfish/v1/Systems/1/" {
		t.Fatalf("enrolled without system_id: %q, want the BMC's /redfish/v1/Systems/1/", first.BMC.SystemID)
	}
	start := time.Now()
	c.waitNode(first.ID, 30*time.Second, false, func(n api.Node) bool { return n.ProvisionState == api.StateAvailable })
	t.Logf("first available after %s", time.Since(start))

	ctx := context.Background()
	second := &baremetal.Node{Name: "second", Driver: baremetal.DriverRedfish, ResourceClass: "rc",
		BMC:        baremetal.BMC{Address: env.Sim.URL(), Username: "admin", Password: "password"},
		PowerState: baremetal.PowerUnknown, ProvisionState: baremetal.StateEnroll}
	if err := env.App.Store.InTx(ctx, func(tx store.Tx) error {
		if err := tx.InsertNode(ctx, second); err != nil {
			return err
		}
		_, err := env.App.Jobs.InsertTx(ctx, tx, jobs.VerifyArgs{NodeID: second.ID})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	n := c.waitNode(second.ID, 30*time.Second, false, func(n api.Node) bool { return n.Fault == api.FaultDuplicate })
	t.Logf("second duplicate after %s", time.Since(start))
	if n.ProvisionState != api.StateEnroll || !strings.Contains(n.LastError, `duplicate of node "first" (id `+first.ID+")") {
		t.Fatalf("second node: state %s, last_error %q", n.ProvisionState, n.LastError)
	}

	c.call("DELETE", "/v1/nodes/"+first.ID+"?force=true", "", 202, nil)
	n = c.waitNode(second.ID, 30*time.Second, false, func(n api.Node) bool { return n.ProvisionState == api.StateAvailable })
	t.Logf("second available after %s", time.Since(start))
	if n.Fault != "" || n.LastError != "" || n.BMC.SystemID != "/redfish/v1/Systems/1/" {
		t.Fatalf("second node once the first is gone: fault %q, last_error %q, system_id %q", n.Fault, n.LastError, n.BMC.SystemID)
	}
}
