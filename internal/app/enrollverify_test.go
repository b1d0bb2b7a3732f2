package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestEnrollVerifiesAtOnce: a Redfish node whose BMC answers fast is
// verified by its enroll request itself (201 with the node available, its power
// and hardware read, the same two events as a verify job writes, and no
// job); a node whose BMC fails the reads, or that is enrolled in
// maintenance, is left in enroll to the verify job, which gets there
// when it can.
func TestEnrollVerifiesAtOnce(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			t.Parallel()
			testEnrollVerifiesAtOnce(t, benchStores[db](t))
		})
	}
}

func testEnrollVerifiesAtOnce(t *testing.T, dbURL string) {
	// A bound no loaded CI machine misses: the default (10 ms) is a
	// matter of the BMC's speed, tested below.
	env := testenv.Start(t, testenv.Options{Systems: 3, PowerSyncInterval: time.Hour, DatabaseURL: dbURL, EnrollVerifyFast: 10 * time.Second})
	admin := client{t, env.URL, env.AdminToken}
	ids := env.Sim.SystemIDs()
	body := func(name, sys, extra string) string {
		return fmt.Sprintf(`{"name":%q,"driver":"redfish","resource_class":"rc"%s,"bmc":{"address":%q,"username":"admin","password":"password","system_id":%q}}`,
			name, extra, env.Sim.URL(), sys)
	}
	// Every verify job so far, whatever its state (the fleet starts empty).
	verifyJobs := func() int { return countJobs(t, env, `kind = 'verify'`) }

	var n api.Node
	admin.call("POST", "/v1/nodes", body("at-once", ids[0], ""), 201, &n)
	if n.ProvisionState != "available" || n.PowerState == "unknown" || n.Properties.CPUs <= 0 || n.Properties.MemoryMB <= 0 {
		t.Fatalf("the enroll's answer: state %s power %s properties %+v, want available with what the BMC said",
			n.ProvisionState, n.PowerState, n.Properties)
	}
	if got := admin.node(n.ID); got.ProvisionState != "available" || got.Version != n.Version {
		t.Fatalf("stored: state %s version %d, answered version %d", got.ProvisionState, got.Version, n.Version)
	}
	if j := verifyJobs(); j != 0 {
		t.Fatalf("%d verify jobs for a node verified at enroll", j)
	}
	var evs api.EventList
	admin.call("GET", "/v1/nodes/"+n.ID+"/events?limit=100", "", 200, &evs)
	var enrolled, verified bool
	for _, e := range evs.Items {
		switch {
		case e.Type == "enrolled":
			enrolled = e.Actor != "controller" && e.New == "enroll" && e.Message == "node enrolled"
		case e.Field == "provision_state" && e.Old == "enroll" && e.New == "available":
			verified = e.Actor == "controller" && strings.HasPrefix(e.Message, "BMC verified: power ")
		}
	}
	if !enrolled || !verified {
		t.Fatalf("events (want the operator's enroll, then the controller's verification): %+v", evs.Items)
	}

	// The BMC answers the login and the Systems collection, then fails
	// the system's reads: the enroll leaves the node to the verify job.
	if err := env.Sim.SetFault(ids[1], sim.FaultError); err != nil {
		t.Fatal(err)
	}
	var slow api.Node
	admin.call("POST", "/v1/nodes", body("later", ids[1], ""), 201, &slow)
	if slow.ProvisionState != "enroll" {
		t.Fatalf("a node whose BMC failed its reads: state %s, want enroll", slow.ProvisionState)
	}
	if j := verifyJobs(); j != 1 {
		t.Fatalf("%d verify jobs for a node left to it", j)
	}
	if err := env.Sim.SetFault(ids[1], sim.FaultNone); err != nil {
		t.Fatal(err)
	}
	admin.waitNode(slow.ID, 30*time.Second, false, func(n api.Node) bool { return n.ProvisionState == "available" })

	// In maintenance: the verify job waits for the operator.
	var m api.Node
	admin.call("POST", "/v1/nodes", body("maint", ids[2], `,"maintenance":true,"maintenance_reason":"racking"`), 201, &m)
	if m.ProvisionState != "enroll" || !m.Maintenance {
		t.Fatalf("a node enrolled in maintenance: state %s maintenance %v", m.ProvisionState, m.Maintenance)
	}
	if j := verifyJobs(); j != 2 {
		t.Fatalf("%d verify jobs for a node enrolled in maintenance", j)
	}
}

// TestEnrollLeavesSlowBMCsToTheJob: a BMC whose requests take longer than
// --enroll-verify-fast (default 10 ms; 30 ms each here: the enroll's
// login and system lookup) is not read further by the enroll, which
// returns the node in enroll; its verify job makes it available.
func TestEnrollLeavesSlowBMCsToTheJob(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 1, PowerSyncInterval: time.Hour, SimOptions: sim.Options{ServiceLatency: 30 * time.Millisecond}})
	admin := client{t, env.URL, env.AdminToken}
	var n api.Node
	admin.call("POST", "/v1/nodes", fmt.Sprintf(`{"name":"slow","driver":"redfish","resource_class":"rc","bmc":{"address":%q,"username":"admin","password":"password","system_id":%q}}`,
		env.Sim.URL(), env.Sim.SystemIDs()[0]), 201, &n)
	if n.ProvisionState != "enroll" {
		t.Fatalf("a node whose BMC answers in 30 ms: state %s, want enroll (left to the job)", n.ProvisionState)
	}
	if j := countJobs(t, env, `kind = 'verify'`); j != 1 {
		t.Fatalf("%d verify jobs, want 1", j)
	}
	admin.waitNode(n.ID, 30*time.Second, false, func(n api.Node) bool { return n.ProvisionState == "available" })
}
