package app_test

import (
	"slices"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestNodeBeingRetiredStaysListed: a node deleted while its BMC is down
// stays deleting, with its fault, until the BMC answers; the plain
// GET /v1/nodes, no query at all, lists it, for admins and members, as
// does fault=any; include_deleting=false leaves it out. The tests of the
// clients that list nodes (CLI, baremetal_nodes, dashboard) passed while
// this list was empty: each asks with include_deleting=true, and only the
// API's default hid the node.
func TestNodeBeingRetiredStaysListed(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testNodeBeingRetiredStaysListed(t, "") })
	t.Run("postgres", func(t *testing.T) { testNodeBeingRetiredStaysListed(t, storetest.PostgresURL(t)) })
}

func testNodeBeingRetiredStaysListed(t *testing.T, dbURL string) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 2, PowerSyncInterval: 200 * time.Millisecond, DatabaseURL: dbURL})
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	gone := enroll(admin, env, 0, "rack-gone", "gpu")
	enroll(admin, env, 1, "rack-kept", "gpu")
	if err := env.Sim.SetFault(env.Sim.SystemIDs()[0], sim.FaultDown); err != nil {
		t.Fatal(err)
	}
	admin.waitNode(gone.ID, 30*time.Second, false, func(n api.Node) bool { return n.Fault == "bmc_unreachable" })
	admin.call("DELETE", "/v1/nodes/"+gone.ID, "", 202, nil)
	if n := admin.node(gone.ID); n.ProvisionState != api.StateDeleting {
		t.Fatalf("after DELETE: %s, want deleting (its BMC is down)", n.ProvisionState)
	}

	list := func(c client, query string) []string {
		t.Helper()
		var l api.NodeList
		c.call("GET", "/v1/nodes"+query, "", 200, &l)
		var rows []string
		for _, n := range l.Items {
			rows = append(rows, n.Name+"/"+string(n.ProvisionState)+"/"+string(n.Fault))
		}
		slices.Sort(rows)
		return rows
	}
	both := []string{"rack-gone/deleting/bmc_unreachable", "rack-kept/available/"}
	for _, tc := range []struct {
		who   string
		c     client
		query string
		want  []string
	}{
		{"admin", admin, "", both},
		{"member", member, "", both},
		{"admin", admin, "?fault=any", both[:1]},
		{"admin", admin, "?include_deleting=true", both},
		{"admin", admin, "?include_deleting=false", both[1:]},
		{"admin", admin, "?include_deleting=false&fault=any", nil},
		{"admin", admin, "?provision_state=deleting&include_deleting=false", both[:1]},
	} {
		if got := list(tc.c, tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("GET /v1/nodes%s as %s: %q, want %q", tc.query, tc.who, got, tc.want)
		}
	}
}
