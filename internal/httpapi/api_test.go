package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apitest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/httpapi"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testlog"
)

const (
	adminSecret = "bmt_admin-secret-for-tests"
	bmcPassword = "Sup3r-S3cret-BMC-pw"
)

// fakeJobs records enqueued jobs; the API tests check what is queued, the
// jobs package tests what the jobs do.
type fakeJobs struct {
	n    atomic.Int64
	mu   sync.Mutex
	args []river.JobArgs
}

func (f *fakeJobs) InsertTx(_ context.Context, _ store.Tx, a river.JobArgs) (int64, error) {
	f.mu.Lock()
	f.args = append(f.args, a)
	f.mu.Unlock()
	return f.n.Add(1), nil
}

func (f *fakeJobs) ListJobs(context.Context, string, string) ([]api.Job, error) { return nil, nil }

func (f *fakeJobs) kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var k []string
	for _, a := range f.args {
		k = append(k, a.Kind())
	}
	return k
}

type env struct {
	t      testing.TB
	srv    *httptest.Server
	st     store.Store
	jobs   *fakeJobs
	member string
	other  string
	logs   *testlog.Buffer
	// bodies collects every response body, to prove no secret leaks.
	bodies *testlog.Buffer
}

func newEnv(t testing.TB, open func(testing.TB) store.Store, opts ...func(*httpapi.Options)) *env {
	t.Helper()
	st := open(t)
	e := &env{t: t, st: st, jobs: &fakeJobs{}, logs: &testlog.Buffer{}, bodies: &testlog.Buffer{}}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc := service.New(st, e.jobs, log)
	if _, err := svc.Bootstrap(context.Background(), adminSecret, ""); err != nil {
		t.Fatal(err)
	}
	o := httpapi.Options{Service: svc, Jobs: e.jobs, Logger: log, PublicURL: testPublicURL}
	for _, f := range opts {
		f(&o)
	}
	e.srv = httptest.NewServer(httpapi.New(o))
	t.Cleanup(e.srv.Close)
	e.member = e.createToken(`{"role":"member","project":"p1","name":"member-p1"}`)
	e.other = e.createToken(`{"role":"member","project":"p2","name":"member-p2"}`)
	t.Cleanup(func() {
		for what, s := range map[string]string{"responses": e.bodies.String(), "logs": e.logs.String()} {
			if strings.Contains(s, bmcPassword) {
				t.Errorf("the BMC password appears in %s", what)
			}
		}
	})
	return e
}

func (e *env) createToken(body string) string {
	var tc api.TokenCreated
	e.mustJSON("POST", "/v1/tokens", adminSecret, body, 201, &tc)
	return tc.Secret
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) problem(t testing.TB) api.Problem {
	t.Helper()
	return apitest.Response{Status: r.status, Header: r.header, Body: r.body}.Problem(t)
}

func (e *env) do(method, path, token, body string, hdr ...string) resp {
	e.t.Helper()
	r := apitest.Client{T: e.t, URL: e.srv.URL, Token: token, Record: e.bodies}.Do(method, path, body, hdr...)
	return resp{status: r.Status, header: r.Header, body: r.Body}
}

func (e *env) mustJSON(method, path, token, body string, want int, out any) resp {
	e.t.Helper()
	r := apitest.Client{T: e.t, URL: e.srv.URL, Token: token, Record: e.bodies}.Call(method, path, body, want, out)
	return resp{status: r.Status, header: r.Header, body: r.Body}
}

func nodeBody(name string) string {
	return fmt.Sprintf(`{"name":%q,"driver":"redfish","resource_class":"gpu","bmc":{"address":"https://10.0.0.5","username":"admin","password":%q,"system_id":"/redfish/v1/Systems/%s"}}`, name, bmcPassword, name)
}

func (e *env) createNode(name string) api.Node {
	var n api.Node
	e.mustJSON("POST", "/v1/nodes", adminSecret, nodeBody(name), 201, &n)
	return n
}

// makeAvailable moves a node to available the way the verify job would.
func (e *env) makeAvailable(id string) {
	e.t.Helper()
	ctx := context.Background()
	n, err := e.st.GetNode(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	n.ProvisionState, n.PowerState = baremetal.StateAvailable, baremetal.PowerOff
	if err := e.st.UpdateNode(ctx, n); err != nil {
		e.t.Fatal(err)
	}
}

func stores() map[string]func(testing.TB) store.Store {
	return map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres}
}

func TestAPI(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("Nodes", func(t *testing.T) { testNodes(t, newEnv(t, open)) })
			t.Run("NodeErrors", func(t *testing.T) { testNodeErrors(t, newEnv(t, open)) })
			t.Run("Instances", func(t *testing.T) { testInstances(t, newEnv(t, open)) })
			t.Run("Tokens", func(t *testing.T) { testTokens(t, newEnv(t, open)) })
			t.Run("Readiness", func(t *testing.T) { testReadiness(t, newEnv(t, open)) })
		})
	}
}

func testNodes(t *testing.T, e *env) {
	n := e.createNode("rack1-u12")
	if n.ProvisionState != "enroll" || n.BMC == nil || !n.BMC.PasswordSet || n.Version != 1 {
		t.Fatalf("created node: %+v", n)
	}
	if got := e.jobs.kinds(); len(got) != 1 || got[0] != "verify" {
		t.Fatalf("jobs after enroll: %v, want [verify]", got)
	}
	// Get by id and by name; ETag carries the version.
	r := e.mustJSON("GET", "/v1/nodes/rack1-u12", adminSecret, "", 200, nil)
	if r.header.Get("ETag") != `"1"` {
		t.Fatalf("ETag %q", r.header.Get("ETag"))
	}
	// Members see nodes without BMC details.
	var mv api.Node
	e.mustJSON("GET", "/v1/nodes/"+n.ID, e.member, "", 200, &mv)
	if mv.BMC != nil {
		t.Fatalf("member sees BMC details: %+v", mv.BMC)
	}
	// Merge patch: nested objects merge; password rotation keeps the rest.
	var p api.Node
	e.mustJSON("PATCH", "/v1/nodes/"+n.ID, adminSecret, `{"bmc":{"password":"rotated-pw-123"}}`, 200, &p)
	if p.BMC.Address != "https://10.0.0.5" || p.BMC.Username != "admin" || p.Version != 2 {
		t.Fatalf("after password rotation: %+v", p)
	}
	// Maintenance needs a reason; clearing it clears the reason.
	e.mustJSON("PATCH", "/v1/nodes/"+n.ID, adminSecret, `{"maintenance":true,"maintenance_reason":"replacing DIMM"}`, 200, &p)
	if !p.Maintenance || p.MaintenanceReason != "replacing DIMM" {
		t.Fatalf("maintenance not set: %+v", p)
	}
	e.mustJSON("PATCH", "/v1/nodes/"+n.ID, adminSecret, `{"maintenance":false}`, 200, &p)
	if p.Maintenance || p.MaintenanceReason != "" {
		t.Fatalf("maintenance not cleared: %+v", p)
	}
	// Events record who changed what.
	var evs api.EventList
	e.mustJSON("GET", "/v1/nodes/"+n.ID+"/events", adminSecret, "", 200, &evs)
	var sawMaint, sawPw bool
	for _, ev := range evs.Items {
		if ev.Type == "maintenance" && ev.New == "true" && strings.Contains(ev.Message, "replacing DIMM") && strings.HasPrefix(ev.Actor, "token:bootstrap-admin (") {
			sawMaint = true
		}
		if ev.Field == "bmc.password" && ev.Old == "" && ev.New == "" {
			sawPw = true
		}
	}
	if !sawMaint || !sawPw {
		t.Fatalf("events missing maintenance/password change: %+v", evs.Items)
	}
	// Stale If-Match is 412 and changes nothing.
	r = e.do("PATCH", "/v1/nodes/"+n.ID, adminSecret, `{"resource_class":"cpu"}`, "If-Match", `"1"`)
	if r.status != 412 || r.problem(t).Code != "precondition_failed" {
		t.Fatalf("stale If-Match: %d %s", r.status, r.body)
	}
	var cur api.Node
	e.mustJSON("GET", "/v1/nodes/"+n.ID, adminSecret, "", 200, &cur)
	if cur.ResourceClass != "gpu" {
		t.Fatalf("stale PATCH changed the node: %+v", cur)
	}
	// Matching If-Match works.
	r = e.do("PATCH", "/v1/nodes/"+n.ID, adminSecret, `{"resource_class":"cpu"}`, "If-Match", fmt.Sprintf(`"%d"`, cur.Version))
	if r.status != 200 {
		t.Fatalf("fresh If-Match: %d %s", r.status, r.body)
	}
	// List with filters and pagination.
	for i := 0; i < 5; i++ {
		e.createNode(fmt.Sprintf("n%d", i))
	}
	var page1, page2 api.NodeList
	e.mustJSON("GET", "/v1/nodes?limit=4", e.member, "", 200, &page1)
	if len(page1.Items) != 4 || page1.NextCursor == "" {
		t.Fatalf("page 1: %d items, cursor %q", len(page1.Items), page1.NextCursor)
	}
	e.mustJSON("GET", "/v1/nodes?limit=4&cursor="+page1.NextCursor, e.member, "", 200, &page2)
	if len(page2.Items) != 2 || page2.NextCursor != "" {
		t.Fatalf("page 2: %d items, cursor %q", len(page2.Items), page2.NextCursor)
	}
	var cpu api.NodeList
	e.mustJSON("GET", "/v1/nodes?resource_class=cpu&provision_state=enroll&maintenance=false&fault=none", adminSecret, "", 200, &cpu)
	if len(cpu.Items) != 1 || cpu.Items[0].ID != n.ID {
		t.Fatalf("filtered list: %+v", cpu.Items)
	}
	// Delete: 202 with a job; the node is listed, deleting, until its
	// retire ends, unless the list asks for nodes in service only.
	var acc api.Accepted
	e.mustJSON("DELETE", "/v1/nodes/"+n.ID, adminSecret, "", 202, &acc)
	if acc.JobID == 0 {
		t.Fatalf("delete returned no job id: %+v", acc)
	}
	listed := func(query string) bool {
		var all api.NodeList
		e.mustJSON("GET", "/v1/nodes"+query, adminSecret, "", 200, &all)
		for _, x := range all.Items {
			if x.ID == n.ID {
				return x.ProvisionState == api.StateDeleting
			}
		}
		return false
	}
	if !listed("") || !listed("?include_deleting=true&provision_state=deleting") || !listed("?provision_state=deleting") {
		t.Fatal("deleting node not listed (by default, with include_deleting=true, by provision_state)")
	}
	if listed("?include_deleting=false") {
		t.Fatal("deleting node listed with include_deleting=false")
	}
	// Re-enrolling the name while the old node is deleting: clear 409.
	r = e.do("POST", "/v1/nodes", adminSecret, nodeBody("rack1-u12"))
	if p := r.problem(t); r.status != 409 || !strings.Contains(p.Detail, "still being deleted") || p.Field != "name" {
		t.Fatalf("re-enroll while deleting: %d %s", r.status, r.body)
	}
	// Force delete removes the record at once.
	e.mustJSON("DELETE", "/v1/nodes/"+n.ID+"?force=true", adminSecret, "", 202, nil)
	e.mustJSON("GET", "/v1/nodes/"+n.ID+"?", adminSecret, "", 404, nil)
	// Power actions are queued.
	e.mustJSON("POST", "/v1/nodes/n0/power", adminSecret, `{"target":"reset"}`, 202, &acc)
	r = e.do("POST", "/v1/nodes/n0/power", adminSecret, `{"target":"explode"}`)
	if p := r.problem(t); r.status != 400 || p.Field != "target" {
		t.Fatalf("bad power target: %d %s", r.status, r.body)
	}
	// The password is encrypted at rest.
	if s, ok := e.st.(interface{ Path() string }); ok {
		for _, suffix := range []string{"", "-wal"} {
			raw, _ := os.ReadFile(s.Path() + suffix)
			if bytes.Contains(raw, []byte(bmcPassword)) || bytes.Contains(raw, []byte("rotated-pw-123")) {
				t.Fatalf("plaintext BMC password in %s", filepath.Base(s.Path()+suffix))
			}
		}
	}
}

// testNodeErrors runs the error matrix on every node endpoint.
func testNodeErrors(t *testing.T, e *env) {
	n := e.createNode("err-node")
	big := `{"name":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`
	type tc struct {
		name, method, path, token, body string
		status                          int
		code, field                     string
	}
	id := "/v1/nodes/" + n.ID
	cases := []tc{
		{"list unauthenticated", "GET", "/v1/nodes", "", "", 401, "unauthorized", ""},
		{"list bad token", "GET", "/v1/nodes", "bmt_nope", "", 401, "unauthorized", ""},
		{"list bad filter", "GET", "/v1/nodes?provision_state=flying", adminSecret, "", 400, "invalid", "provision_state"},
		{"list bad limit", "GET", "/v1/nodes?limit=0", adminSecret, "", 400, "invalid", "limit"},
		{"create unauthenticated", "POST", "/v1/nodes", "", nodeBody("a1"), 401, "unauthorized", ""},
		{"create member", "POST", "/v1/nodes", e.member, nodeBody("a1"), 403, "forbidden", ""},
		{"create malformed", "POST", "/v1/nodes", adminSecret, `{"name":`, 400, "invalid", ""},
		{"create unknown field", "POST", "/v1/nodes", adminSecret, `{"name":"a1","colour":"red"}`, 400, "invalid", "colour"},
		{"create oversized", "POST", "/v1/nodes", adminSecret, big, 413, "payload_too_large", ""},
		{"create bad driver", "POST", "/v1/nodes", adminSecret, strings.Replace(nodeBody("a1"), `"redfish"`, `"ilo"`, 1), 400, "invalid", "driver"},
		{"create bad address", "POST", "/v1/nodes", adminSecret, strings.Replace(nodeBody("a1"), "https://10.0.0.5", "ipmi://x", 1), 400, "invalid", "bmc.address"},
		{"create wrong type", "POST", "/v1/nodes", adminSecret, `{"name":5}`, 400, "invalid", "name"},
		{"create maintenance without reason", "POST", "/v1/nodes", adminSecret, strings.Replace(nodeBody("a1"), `"driver"`, `"maintenance":true,"driver"`, 1), 400, "invalid", "maintenance_reason"},
		{"create duplicate", "POST", "/v1/nodes", adminSecret, nodeBody("err-node"), 409, "conflict", "name"},
		{"get unauthenticated", "GET", id, "", "", 401, "unauthorized", ""},
		{"get missing", "GET", "/v1/nodes/nope", adminSecret, "", 404, "not_found", ""},
		{"patch unauthenticated", "PATCH", id, "", `{}`, 401, "unauthorized", ""},
		{"patch member maintenance", "PATCH", id, e.member, `{"maintenance":true,"maintenance_reason":"x"}`, 403, "forbidden", ""},
		{"patch malformed", "PATCH", id, adminSecret, `{"maintenance":`, 400, "invalid", ""},
		{"patch not object", "PATCH", id, adminSecret, `[1]`, 400, "invalid", ""},
		{"patch unknown field", "PATCH", id, adminSecret, `{"fault":"bmc_unreachable"}`, 400, "invalid", "fault"},
		{"patch nested unknown", "PATCH", id, adminSecret, `{"bmc":{"port":1}}`, 400, "invalid", "bmc.port"},
		{"patch oversized", "PATCH", id, adminSecret, big, 413, "payload_too_large", ""},
		{"patch invalid value", "PATCH", id, adminSecret, `{"bmc":{"system_id":"/redfish/v1/Managers/1"}}`, 400, "invalid", "bmc.system_id"},
		{"patch maintenance without reason", "PATCH", id, adminSecret, `{"maintenance":true}`, 400, "invalid", "maintenance_reason"},
		{"patch missing", "PATCH", "/v1/nodes/nope", adminSecret, `{}`, 404, "not_found", ""},
		{"delete unauthenticated", "DELETE", id, "", "", 401, "unauthorized", ""},
		{"delete member", "DELETE", id, e.member, "", 403, "forbidden", ""},
		{"delete missing", "DELETE", "/v1/nodes/nope", adminSecret, "", 404, "not_found", ""},
		{"delete bad force", "DELETE", id + "?force=maybe", adminSecret, "", 400, "invalid", "force"},
		{"events member", "GET", id + "/events", e.member, "", 403, "forbidden", ""},
		{"events missing", "GET", "/v1/nodes/nope/events", adminSecret, "", 404, "not_found", ""},
		{"power member", "POST", id + "/power", e.member, `{"target":"on"}`, 403, "forbidden", ""},
		{"power unknown field", "POST", id + "/power", adminSecret, `{"target":"on","now":true}`, 400, "invalid", "now"},
		{"power missing", "POST", "/v1/nodes/nope/power", adminSecret, `{"target":"on"}`, 404, "not_found", ""},
		{"no route", "GET", "/v2/nodes", adminSecret, "", 404, "not_found", ""},
	}
	for _, c := range cases {
		r := e.do(c.method, c.path, c.token, c.body)
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, r.status, c.status, r.body)
			continue
		}
		p := r.problem(t)
		if string(p.Code) != c.code || p.Field != c.field {
			t.Errorf("%s: code %q field %q, want %q %q (detail %q)", c.name, p.Code, p.Field, c.code, c.field, p.Detail)
		}
		if c.field != "" && !strings.Contains(p.Detail, c.field) {
			t.Errorf("%s: detail %q does not name %s", c.name, p.Detail, c.field)
		}
	}
	for _, h := range []string{`"1"`} { // stale version on DELETE
		e.mustJSON("PATCH", "/v1/nodes/"+n.ID, adminSecret, `{"resource_class":"cpu"}`, 200, nil)
		r := e.do("DELETE", "/v1/nodes/"+n.ID, adminSecret, "", "If-Match", h)
		if r.status != 412 {
			t.Errorf("stale If-Match on DELETE: %d %s", r.status, r.body)
		}
	}
	// Nothing above changed the node but the one PATCH.
	var cur api.Node
	e.mustJSON("GET", "/v1/nodes/"+n.ID, adminSecret, "", 200, &cur)
	if cur.Maintenance || cur.Version != 2 || cur.ProvisionState != "enroll" {
		t.Fatalf("rejected requests changed the node: %+v", cur)
	}
}

func testInstances(t *testing.T, e *env) {
	nodes := []api.Node{e.createNode("gpu-0"), e.createNode("gpu-1")}
	for _, n := range nodes {
		e.makeAvailable(n.ID)
	}
	body := func(name string) string {
		return fmt.Sprintf(`{"name":%q,"resource_class":"gpu","image":{"url":"https://images.example/u.iso"}}`, name)
	}
	var inst api.Instance
	r := e.mustJSON("POST", "/v1/instances", e.member, body("web-1"), 201, &inst)
	if inst.Project != "p1" || inst.State != "deploying" || inst.NodeID == "" || r.header.Get("ETag") == "" {
		t.Fatalf("created instance: %+v", inst)
	}
	var node api.Node
	e.mustJSON("GET", "/v1/nodes/"+inst.NodeID, adminSecret, "", 200, &node)
	if node.ProvisionState != "deploying" || node.InstanceID != inst.ID {
		t.Fatalf("node after allocation: %+v", node)
	}
	// Other projects cannot see it.
	e.mustJSON("GET", "/v1/instances/"+inst.ID, e.other, "", 404, nil)
	var list api.InstanceList
	e.mustJSON("GET", "/v1/instances", e.other, "", 200, &list)
	if len(list.Items) != 0 {
		t.Fatalf("other project lists %d instances", len(list.Items))
	}
	e.mustJSON("GET", "/v1/instances/web-1", e.member, "", 200, nil)
	// Quota: 1 instance; the second create is refused, deleting frees it.
	e.mustJSON("PUT", "/v1/quotas/p1", adminSecret, `{"instances":1}`, 200, nil)
	r = e.do("POST", "/v1/instances", e.member, body("web-2"))
	if p := r.problem(t); r.status != 403 || p.Code != "quota_exceeded" || !strings.Contains(p.Detail, "1 of 1") {
		t.Fatalf("over quota: %d %s", r.status, r.body)
	}
	// Error matrix for instances.
	cases := []struct {
		name, method, path, token, body string
		status                          int
		field                           string
	}{
		{"create unauthenticated", "POST", "/v1/instances", "", body("x"), 401, ""},
		{"create malformed", "POST", "/v1/instances", e.other, `{`, 400, ""},
		{"create unknown field", "POST", "/v1/instances", e.other, `{"name":"x","flavor":"big"}`, 400, "flavor"},
		{"create both node and class", "POST", "/v1/instances", e.other, `{"name":"x","resource_class":"gpu","node_id":"gpu-0","image":{"url":"https://i/x"}}`, 400, "resource_class"},
		{"create bad image", "POST", "/v1/instances", e.other, `{"name":"x","resource_class":"gpu","image":{"url":"nope"}}`, 400, "image.url"},
		{"create other project", "POST", "/v1/instances", e.other, `{"name":"x","project":"p1","resource_class":"gpu","image":{"url":"https://i/x"}}`, 403, ""},
		{"create admin without project", "POST", "/v1/instances", adminSecret, body("x"), 400, "project"},
		{"create oversized", "POST", "/v1/instances", e.other, `{"name":"` + strings.Repeat("y", httpapi.MaxBodyBytes) + `"}`, 413, ""},
		{"get missing", "GET", "/v1/instances/nope", e.member, "", 404, ""},
		{"patch bad power", "PATCH", "/v1/instances/web-1", e.member, `{"power_state":"sideways"}`, 400, "power_state"},
		{"patch other project", "PATCH", "/v1/instances/web-1", e.other, `{"power_state":"on"}`, 404, ""},
		{"delete unauthenticated", "DELETE", "/v1/instances/web-1", "", "", 401, ""},
		{"delete other project", "DELETE", "/v1/instances/web-1", e.other, "", 404, ""},
		{"delete missing", "DELETE", "/v1/instances/nope", e.member, "", 404, ""},
		{"delete stale", "DELETE", "/v1/instances/web-1", e.member, "", 412, ""},
	}
	for _, c := range cases {
		var hdr []string
		if c.status == 412 {
			hdr = []string{"If-Match", `"99"`}
		}
		r := e.do(c.method, c.path, c.token, c.body, hdr...)
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, r.status, c.status, r.body)
			continue
		}
		if p := r.problem(t); p.Field != c.field {
			t.Errorf("%s: field %q, want %q (%s)", c.name, p.Field, c.field, p.Detail)
		}
	}
	// Pinned node that is taken: explained.
	r = e.do("POST", "/v1/instances", e.other, fmt.Sprintf(`{"name":"pin","node_id":%q,"image":{"url":"https://i/x"}}`, inst.NodeID))
	if p := r.problem(t); r.status != 409 || p.Code != "no_capacity" || p.Field != "node_id" {
		t.Fatalf("pinned busy node: %d %s", r.status, r.body)
	}
	if p := r.problem(t); p.Capacity == nil || !reflect.DeepEqual(*p.Capacity, api.Capacity{Nodes: 1, Busy: 1, Unmet: []api.UnmetRequirement{}}) {
		t.Fatalf("pinned busy node: counts %s", r.body)
	}
	// Delete: 202 with a cleanup job, gone at once, quota freed.
	var acc api.Accepted
	e.mustJSON("DELETE", "/v1/instances/web-1", e.member, "", 202, &acc)
	if acc.JobID == 0 {
		t.Fatal("no cleanup job id")
	}
	e.mustJSON("GET", "/v1/instances/"+inst.ID, e.member, "", 404, nil)
	e.mustJSON("GET", "/v1/nodes/"+inst.NodeID, adminSecret, "", 200, &node)
	if node.ProvisionState != "cleaning" || node.InstanceID != "" {
		t.Fatalf("node after instance delete: %+v", node)
	}
	var q api.Quota
	e.mustJSON("GET", "/v1/quotas/p1", e.member, "", 200, &q)
	if q.Used != 0 || q.Instances != 1 {
		t.Fatalf("quota after delete: %+v", q)
	}
	k := e.jobs.kinds()
	if k[len(k)-1] != "cleanup" {
		t.Fatalf("last job %v, want cleanup", k)
	}
	// No capacity explains itself with counts.
	spare := nodes[0].ID
	if spare == inst.NodeID {
		spare = nodes[1].ID
	}
	e.mustJSON("PATCH", "/v1/nodes/"+spare, adminSecret, `{"maintenance":true,"maintenance_reason":"fan"}`, 200, nil)
	r = e.do("POST", "/v1/instances", e.member, body("web-3"))
	if p := r.problem(t); r.status != 409 || p.Code != "no_capacity" ||
		!strings.Contains(p.Detail, `no node of class "gpu" is available: 1 cleaning, 1 in maintenance`) {
		t.Fatalf("no capacity: %d %s", r.status, r.body)
	}
	// ... and in numbers, every reason present on the wire (zeros
	// included) so a client need not know which are omitted: the cleaning
	// node frees up by itself, the one in maintenance does not.
	var wire struct {
		Capacity map[string]any `json:"capacity"`
	}
	if err := json.Unmarshal(r.body, &wire); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"nodes": 2.0, "maintenance": 1.0, "fault": 0.0, "unsuitable_driver": 0.0, "busy": 0.0,
		"cleaning": 1.0, "enroll": 0.0, "deleting": 0.0, "inspecting": 0.0, "configuring": 0.0, "pending": 1.0,
		"unsuited": 0.0, "unmet": []any{}, "available": 0.0}
	if fmt.Sprint(wire.Capacity) != fmt.Sprint(want) {
		t.Fatalf("no capacity counts %v, want %v", wire.Capacity, want)
	}
	// Other errors carry no counts.
	if r := e.do("GET", "/v1/instances/nope", e.member, ""); bytes.Contains(r.body, []byte("capacity")) {
		t.Fatalf("a 404 with counts: %s", r.body)
	}
}

func testTokens(t *testing.T, e *env) {
	var tc api.TokenCreated
	e.mustJSON("POST", "/v1/tokens", adminSecret, `{"role":"member","project":"p9","name":"ci"}`, 201, &tc)
	if tc.Secret == "" || tc.ID == "" {
		t.Fatalf("token: %+v", tc)
	}
	e.mustJSON("GET", "/v1/instances", tc.Secret, "", 200, nil)
	var list api.TokenList
	e.mustJSON("GET", "/v1/tokens", adminSecret, "", 200, &list)
	raw, _ := json.Marshal(list)
	if strings.Contains(string(raw), tc.Secret) || strings.Contains(string(raw), "secret") {
		t.Fatalf("token list shows secrets: %s", raw)
	}
	for _, c := range []struct {
		method, path, token, body string
		status                    int
		field                     string
	}{
		{"POST", "/v1/tokens", "", `{"role":"admin"}`, 401, ""},
		{"POST", "/v1/tokens", e.member, `{"role":"admin"}`, 403, ""},
		{"GET", "/v1/tokens", e.member, "", 403, ""},
		{"POST", "/v1/tokens", adminSecret, `{"role":"root"}`, 400, "role"},
		{"POST", "/v1/tokens", adminSecret, `{"role":"member"}`, 400, "project"},
		{"POST", "/v1/tokens", adminSecret, `{"role":"monitor","project":"p1","name":"prom"}`, 400, "project"},
		{"POST", "/v1/tokens", adminSecret, `{"role":"admin","x":1}`, 400, "x"},
		{"POST", "/v1/tokens", adminSecret, `{"role":"admin","expires_at":"2001-01-01T00:00:00Z"}`, 400, "expires_at"},
		{"POST", "/v1/tokens", adminSecret, `{"role":"admin"}`, 400, "name"}, // events name the token: a name is required
		{"POST", "/v1/tokens", adminSecret, `{"role":"admin","name":"  "}`, 400, "name"},
		{"DELETE", "/v1/tokens/nope", adminSecret, "", 404, ""},
		{"PUT", "/v1/quotas/p1", adminSecret, `{"instances":-5}`, 400, "instances"},
		{"PUT", "/v1/quotas/p1", e.member, `{"instances":5}`, 403, ""},
		{"GET", "/v1/quotas/p2", e.member, "", 403, ""},
		{"GET", "/v1/jobs", e.member, "", 403, ""},
		{"GET", "/v1/jobs?state=exploded", adminSecret, "", 400, "state"},
	} {
		r := e.do(c.method, c.path, c.token, c.body)
		if r.status != c.status {
			t.Errorf("%s %s: %d, want %d: %s", c.method, c.path, r.status, c.status, r.body)
			continue
		}
		if p := r.problem(t); p.Field != c.field {
			t.Errorf("%s %s: field %q, want %q", c.method, c.path, p.Field, c.field)
		}
	}
	r := e.do("DELETE", "/v1/tokens/"+tc.ID, adminSecret, "")
	if r.status != 204 {
		t.Fatalf("delete token: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/instances", tc.Secret, ""); r.status != 401 {
		t.Fatalf("revoked token still works: %d", r.status)
	}
	// Health endpoints need no token.
	e.mustJSON("GET", "/healthz", "", "", 200, nil)
	e.mustJSON("GET", "/readyz", "", "", 200, nil)
	if r := e.do("GET", "/metrics", "", ""); r.status != 200 || !strings.Contains(string(r.body), "baremetal_http_request_duration_seconds") {
		t.Fatalf("metrics: %d", r.status)
	}
}

// force=true&unverified_only=true removes a node still in enroll (one
// whose BMC never took its credentials) and refuses, changing nothing, a
// node verified meanwhile: the provider's removal of a node whose BMC
// refused every login cannot remove one that just became usable.
func TestDeleteUnverifiedOnly(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			fresh := e.createNode("fresh")
			verified := e.createNode("verified")
			e.makeAvailable(verified.ID)

			r := e.do("DELETE", "/v1/nodes/"+fresh.ID+"?unverified_only=true", adminSecret, "")
			if p := r.problem(t); r.status != 400 || p.Field != "unverified_only" {
				t.Fatalf("unverified_only without force: %d %s", r.status, r.body)
			}
			r = e.do("DELETE", "/v1/nodes/"+verified.ID+"?force=true&unverified_only=true", adminSecret, "")
			if r.status != 409 || !strings.Contains(string(r.body), "is available now") {
				t.Fatalf("verified node: %d %s", r.status, r.body)
			}
			var still api.Node
			e.mustJSON("GET", "/v1/nodes/"+verified.ID, adminSecret, "", 200, &still)
			if still.ProvisionState != api.StateAvailable {
				t.Fatalf("the refused delete changed the node: %s", still.ProvisionState)
			}
			e.mustJSON("DELETE", "/v1/nodes/"+fresh.ID+"?force=true&unverified_only=true", adminSecret, "", 202, nil)
			e.mustJSON("GET", "/v1/nodes/"+fresh.ID, adminSecret, "", 404, nil)
		})
	}
}
