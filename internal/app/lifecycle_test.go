package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apitest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// These tests drive a real in-process controller through its HTTP API
// only, as an operator or a Terraform run would, against simulated BMCs.

type client struct {
	t     *testing.T
	url   string
	token string
}

func (c client) call(method, path, body string, want int, out any) {
	c.t.Helper()
	start := time.Now()
	apitest.Client{T: c.t, URL: c.url, Token: c.token}.Call(method, path, body, want, out)
	if method == "DELETE" && time.Since(start) > 2*time.Second {
		c.t.Errorf("%s %s took %s; deletes must return at once", method, path, time.Since(start))
	}
}

func (c client) node(id string) api.Node {
	var n api.Node
	c.call("GET", "/v1/nodes/"+id, "", 200, &n)
	return n
}

// waitNode polls until cond holds, asserting on every read that the
// controller never set maintenance by itself.
func (c client) waitNode(id string, timeout time.Duration, maint bool, cond func(api.Node) bool) api.Node {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n := c.node(id)
		if n.Maintenance != maint {
			c.t.Fatalf("node %s: maintenance is %v, want %v (only an operator changes it)", n.Name, n.Maintenance, maint)
		}
		if cond(n) {
			return n
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("node %s: not there after %s: state=%s fault=%q power=%s last_error=%q", n.Name, timeout, n.ProvisionState, n.Fault, n.PowerState, n.LastError)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func enroll(c client, env *testenv.Env, i int, name, class string) api.Node {
	var n api.Node
	c.call("POST", "/v1/nodes", fmt.Sprintf(`{"name":%q,"driver":"redfish","resource_class":%q,"bmc":{"address":%q,"username":"admin","password":"password","system_id":%q}}`,
		name, class, env.Sim.URL(), env.Sim.SystemIDs()[i]), 201, &n)
	return c.waitNode(n.ID, 30*time.Second, false, func(n api.Node) bool { return n.ProvisionState == "available" })
}

func createInstance(c client, name, class string) api.Instance {
	var inst api.Instance
	c.call("POST", "/v1/instances", fmt.Sprintf(`{"name":%q,"resource_class":%q,"image":{"url":"https://images.example/x.iso"}}`, name, class), 201, &inst)
	return inst
}

func available(n api.Node) bool {
	return n.ProvisionState == "available" && n.Fault == "" && n.InstanceID == ""
}

// TestFaultSelfHeals: a node's BMC dies, the node goes faulted
// (bmc_unreachable) and comes back clean when the BMC returns, with
// maintenance false throughout, observed through the API alone.
func TestFaultSelfHeals(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 1, PowerSyncInterval: 200 * time.Millisecond})
	admin := client{t, env.URL, env.AdminToken}
	n := enroll(admin, env, 0, "heal-0", "gpu")
	if err := env.Sim.SetFault(env.Sim.SystemIDs()[0], sim.FaultDown); err != nil {
		t.Fatal(err)
	}
	f := admin.waitNode(n.ID, 30*time.Second, false, func(n api.Node) bool { return n.Fault == "bmc_unreachable" })
	if f.FaultSince == nil || f.LastError == "" || f.PowerState != "unknown" {
		t.Fatalf("faulted node: %+v", f)
	}
	// A faulted node takes no instance; the error says why.
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	var p api.Problem
	req, _ := http.NewRequest("POST", env.URL+"/v1/instances", strings.NewReader(`{"name":"x","resource_class":"gpu","image":{"url":"https://i/x"}}`))
	req.Header.Set("Authorization", "Bearer "+member.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(res.Body).Decode(&p)
	res.Body.Close()
	if res.StatusCode != 409 || !strings.Contains(p.Detail, "1 faulted (bmc_unreachable)") {
		t.Fatalf("create on faulted node: %d %+v", res.StatusCode, p)
	}
	if err := env.Sim.SetFault(env.Sim.SystemIDs()[0], sim.FaultNone); err != nil {
		t.Fatal(err)
	}
	admin.waitNode(n.ID, 30*time.Second, false, func(n api.Node) bool { return n.Fault == "" && n.PowerState != "unknown" && n.LastError == "" })
	var evs api.EventList
	admin.call("GET", "/v1/nodes/"+n.ID+"/events?limit=1000", "", 200, &evs)
	var healed bool
	for _, e := range evs.Items {
		if strings.Contains(e.Message, "reachable again") && e.Actor == "controller" {
			healed = true
		}
	}
	if !healed {
		t.Fatalf("no 'reachable again' event: %+v", evs.Items)
	}
}

// TestDeleteAlwaysSucceeds deletes an instance whose BMC is down, hung,
// refusing credentials, or healthy: every DELETE is a quick 202, the
// instance is gone at once, and the node returns to available once its
// BMC is healthy.
func TestDeleteAlwaysSucceeds(t *testing.T) {
	t.Parallel()
	modes := []sim.Fault{sim.FaultNone, sim.FaultDown, sim.FaultHang, sim.FaultAuth}
	env := testenv.Start(t, testenv.Options{Systems: len(modes)})
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	var nodes []api.Node
	var insts []api.Instance
	for i, m := range modes {
		class := fmt.Sprintf("c-%d", i)
		nodes = append(nodes, enroll(admin, env, i, fmt.Sprintf("del-%d", i), class))
		insts = append(insts, createInstance(member, fmt.Sprintf("vm-%s", orNone(m)), class))
	}
	for _, n := range nodes {
		admin.waitNode(n.ID, 30*time.Second, false, func(n api.Node) bool { return n.ProvisionState == "active" })
	}
	for i, m := range modes {
		if err := env.Sim.SetFault(env.Sim.SystemIDs()[i], m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range modes {
		var acc api.Accepted
		member.call("DELETE", "/v1/instances/"+insts[i].ID, "", 202, &acc)
		if acc.JobID == 0 {
			t.Fatalf("no cleanup job id for %s", modes[i])
		}
		member.call("GET", "/v1/instances/"+insts[i].ID, "", 404, nil)
	}
	// The healthy one finishes; the others stay cleaning while faulted.
	admin.waitNode(nodes[0].ID, 30*time.Second, false, available)
	for i := 1; i < len(modes); i++ {
		if n := admin.node(nodes[i].ID); n.ProvisionState != "cleaning" {
			t.Fatalf("%s: node is %s while its BMC is broken, want cleaning", modes[i], n.ProvisionState)
		}
	}
	// The cleanups fail (a hung call only after the BMC timeout) and
	// record why; the node stays cleaning meanwhile.
	for i := 1; i < len(modes); i++ {
		n := admin.waitNode(nodes[i].ID, 30*time.Second, false, func(n api.Node) bool { return n.LastError != "" || n.ProvisionState != "cleaning" })
		if n.ProvisionState != "cleaning" {
			t.Errorf("%s: node is %s while its BMC is broken, want cleaning", modes[i], n.ProvisionState)
		}
	}
	for i := 1; i < len(modes); i++ {
		if err := env.Sim.SetFault(env.Sim.SystemIDs()[i], sim.FaultNone); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < len(modes); i++ {
		admin.waitNode(nodes[i].ID, 60*time.Second, false, available)
		if p, _ := env.Sim.Power(env.Sim.SystemIDs()[i]); p != "Off" {
			t.Errorf("%s: node not powered off after cleanup: %s", modes[i], p)
		}
	}
}

func orNone(f sim.Fault) string {
	if f == sim.FaultNone {
		return "healthy"
	}
	return string(f)
}

// TestDeleteDuringDeployAndInMaintenance covers three paths: deleting an
// instance still deploying (the deploy is cancelled, the node cleaned);
// deleting in maintenance (the cleanup waits, then resumes when the
// operator clears maintenance); and deleting a node with an instance.
func TestDeleteDuringDeployAndInMaintenance(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 4})
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}

	// 1. Delete while deploying: hang the BMC so the deploy is stuck.
	n0 := enroll(admin, env, 0, "dep-0", "a")
	_ = env.Sim.SetFault(env.Sim.SystemIDs()[0], sim.FaultHang)
	i0 := createInstance(member, "vm-deploying", "a")
	member.call("DELETE", "/v1/instances/"+i0.ID, "", 202, nil)
	if n := admin.node(n0.ID); n.ProvisionState != "cleaning" || n.InstanceID != "" {
		t.Fatalf("node after deleting a deploying instance: %+v", n)
	}
	_ = env.Sim.SetFault(env.Sim.SystemIDs()[0], sim.FaultNone)
	admin.waitNode(n0.ID, 60*time.Second, false, available)

	// 2. Delete in maintenance: cleanup waits, resumes when cleared.
	n1 := enroll(admin, env, 1, "maint-1", "b")
	i1 := createInstance(member, "vm-maint", "b")
	admin.waitNode(n1.ID, 30*time.Second, false, func(n api.Node) bool { return n.ProvisionState == "active" })
	admin.call("PATCH", "/v1/nodes/"+n1.ID, `{"maintenance":true,"maintenance_reason":"reseating NIC"}`, 200, nil)
	member.call("DELETE", "/v1/instances/"+i1.ID, "", 202, nil)
	time.Sleep(1500 * time.Millisecond)
	if n := admin.waitNode(n1.ID, time.Second, true, func(api.Node) bool { return true }); n.ProvisionState != "cleaning" {
		t.Fatalf("node in maintenance left cleaning by itself: %s", n.ProvisionState)
	}
	var jl api.JobList
	admin.call("GET", "/v1/jobs?node_id="+n1.ID, "", 200, &jl)
	var waiting bool
	for _, j := range jl.Items {
		if j.Kind == "cleanup" && j.State != "completed" && j.State != "discarded" && j.State != "cancelled" {
			waiting = true
		}
	}
	if !waiting {
		t.Fatalf("no waiting cleanup job for the node in maintenance: %+v", jl.Items)
	}
	admin.call("PATCH", "/v1/nodes/"+n1.ID, `{"maintenance":false}`, 200, nil)
	admin.waitNode(n1.ID, 60*time.Second, false, available)

	// 3. Delete a node with an instance: the instance goes first, the node
	// is retired and its record removed.
	n2 := enroll(admin, env, 2, "retire-2", "c")
	i2 := createInstance(member, "vm-retire", "c")
	admin.waitNode(n2.ID, 30*time.Second, false, func(n api.Node) bool { return n.ProvisionState == "active" })
	admin.call("DELETE", "/v1/nodes/"+n2.ID, "", 202, nil)
	member.call("GET", "/v1/instances/"+i2.ID, "", 404, nil)
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest("GET", env.URL+"/v1/nodes/"+n2.ID, nil)
		req.Header.Set("Authorization", "Bearer "+env.AdminToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retired node still there after 60s (status %d)", res.StatusCode)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if p, _ := env.Sim.Power(env.Sim.SystemIDs()[2]); p != "Off" {
		t.Fatalf("retired node not powered off: %s", p)
	}
	// Its job history still answers by id (not by name: that is gone).
	var history api.JobList
	admin.call("GET", "/v1/jobs?node_id="+n2.ID, "", 200, &history)
	if !slices.ContainsFunc(history.Items, func(j api.Job) bool { return j.Kind == "retire" }) {
		t.Fatalf("jobs of the retired node: %+v, want its retire job", history.Items)
	}
	admin.call("GET", "/v1/jobs?node_id=retire-2", "", 404, nil)

	// 4. Delete a node in maintenance: it goes deleting at once, the
	// retire waits for the operator; only maintenance may still change,
	// and clearing it lets the retire finish.
	n3 := enroll(admin, env, 3, "maint-del-3", "d")
	admin.call("PATCH", "/v1/nodes/"+n3.ID, `{"maintenance":true,"maintenance_reason":"decommission check"}`, 200, nil)
	var acc api.Accepted
	admin.call("DELETE", "/v1/nodes/"+n3.ID, "", 202, &acc)
	if !strings.Contains(acc.Message, "maintenance") {
		t.Errorf("202 for a node in maintenance does not say the retire waits: %q", acc.Message)
	}
	time.Sleep(time.Second)
	if n := admin.waitNode(n3.ID, time.Second, true, func(api.Node) bool { return true }); n.ProvisionState != "deleting" {
		t.Fatalf("node in maintenance: %s, want deleting", n.ProvisionState)
	}
	admin.call("PATCH", "/v1/nodes/"+n3.ID, `{"resource_class":"x"}`, 422, nil)
	admin.call("PATCH", "/v1/nodes/"+n3.ID, `{"maintenance":false}`, 200, nil)
	waitGone(t, env, n3.ID)
}

func waitGone(t *testing.T, env *testenv.Env, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest("GET", env.URL+"/v1/nodes/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+env.AdminToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == 404 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s still there after 60s (status %d)", id, res.StatusCode)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestNodeDeleteWithDeadBMC: deleting a node whose BMC hangs returns at
// once; the node stays deleting (with its fault) for as long as the BMC
// is dead, and is removed only after the machine was powered off and its
// media and boot override cleared — never left running unmanaged.
func TestNodeDeleteWithDeadBMC(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 1})
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	sys := env.Sim.SystemIDs()[0]
	n := enroll(admin, env, 0, "dead-0", "gpu")
	createInstance(member, "vm-dead", "gpu")
	admin.waitNode(n.ID, 30*time.Second, false, func(n api.Node) bool { return n.ProvisionState == "active" })
	if err := env.Sim.SetFault(sys, sim.FaultHang); err != nil {
		t.Fatal(err)
	}
	admin.call("DELETE", "/v1/nodes/"+n.ID, "", 202, nil)
	f := admin.waitNode(n.ID, 30*time.Second, false, func(n api.Node) bool { return n.Fault != "" })
	if f.ProvisionState != "deleting" {
		t.Fatalf("node with a dead BMC: %s, want deleting", f.ProvisionState)
	}
	time.Sleep(3 * time.Second) // several retries with testenv's 1 s backoff cap
	if got := admin.node(n.ID); got.ProvisionState != "deleting" {
		t.Fatalf("node gone or moved while its BMC is dead: %+v", got)
	}
	if err := env.Sim.SetFault(sys, sim.FaultNone); err != nil {
		t.Fatal(err)
	}
	waitGone(t, env, n.ID)
	if p, _ := env.Sim.Power(sys); p != "Off" {
		t.Errorf("retired node left powered %s", p)
	}
	if img, inserted, _ := env.Sim.Media(sys); inserted {
		t.Errorf("retired node still has media %s inserted", img)
	}
	if target, enabled, _ := env.Sim.BootOverride(sys); enabled != "Disabled" && target != "None" {
		t.Errorf("retired node keeps boot override %s/%s", target, enabled)
	}
}

// TestLostJobIsRequeued: a node left cleaning without any job (the rare
// lost-job race, simulated by writing the state directly) is picked up by
// the next power-sync pass and cleaned.
func TestLostJobIsRequeued(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 1, PowerSyncInterval: time.Second})
	admin := client{t, env.URL, env.AdminToken}
	n := enroll(admin, env, 0, "lost-0", "gpu")
	ctx := context.Background()
	node, err := env.App.Store.GetNode(ctx, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	node.ProvisionState = baremetal.StateCleaning
	if err := env.App.Store.UpdateNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	admin.waitNode(n.ID, 30*time.Second, false, available)
}
