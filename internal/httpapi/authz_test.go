package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/httpapi"
)

// The authorization matrix: every route of the server's table, called by
// each kind of caller, against fresh resources owned by project p1. The
// cases come from the table itself, so a route added without a rule here
// fails the test.

// The callers, in the order of authzRule.want.
var authzCallers = []string{"no token", "bad token", "member of the owning project", "member of another project", "admin", "monitor"}

type authzRule struct {
	// body returns a valid request body for case i ("" for none), so that
	// a caller who is allowed gets the route's success status.
	body func(i int) string
	want [6]int
}

// A monitor token opens only the routes that say so (monitorRoutes):
// every other route refuses it (403), reads and writes alike.
func adminOnly(ok int) [6]int           { return [6]int{401, 401, 403, 403, ok, 403} }
func anyMember(ok int) [6]int           { return [6]int{401, 401, ok, ok, ok, 403} }
func ownerOrAdmin(ok, other int) [6]int { return [6]int{401, 401, ok, other, ok, 403} }
func anyRole(ok int) [6]int             { return [6]int{401, 401, ok, ok, ok, ok} }
func adminOrMonitor(ok int) [6]int      { return [6]int{401, 401, 403, 403, ok, ok} }
func public(status int) [6]int          { return [6]int{status, status, status, status, status, status} }

func fixed(body string) func(int) string { return func(int) string { return body } }

// authzRules: one per route, keyed like the route table ("METHOD pattern").
var authzRules = map[string]authzRule{
	"GET /v1/nodes":             {want: anyRole(200)},
	"POST /v1/nodes":            {body: func(i int) string { return nodeBody(fmt.Sprintf("authz-new-%d", i)) }, want: adminOnly(201)},
	"GET /v1/nodes/{id}":        {want: anyMember(200)},
	"PATCH /v1/nodes/{id}":      {body: fixed(`{"resource_class":"cpu"}`), want: adminOnly(200)},
	"DELETE /v1/nodes/{id}":     {want: adminOnly(202)},
	"GET /v1/nodes/{id}/events": {want: adminOnly(200)},
	"POST /v1/nodes/{id}/power": {body: fixed(`{"target":"on"}`), want: adminOnly(202)},
	// This server serves no agent image: an admin is let through and
	// told so (422 invalid_state); inventories exist only after an inspection (404).
	"POST /v1/nodes/{id}/inspect":    {want: adminOnly(422)},
	"GET /v1/nodes/{id}/inventory":   {want: adminOnly(404)},
	"GET /v1/nodes/{id}/console/log": {want: adminOnly(404)},
	// A plain GET (no WebSocket upgrade) is refused once the caller is
	// let through (400); console_test.go opens real sockets.
	"GET /v1/nodes/{id}/console": {want: adminOnly(400)},
	// An admin names the project (400 without one); a member asks for its own.
	"GET /v1/capacity":  {want: [6]int{401, 401, 200, 200, 400, 403}},
	"GET /v1/instances": {want: anyMember(200)},
	"POST /v1/instances": {body: func(i int) string {
		return fmt.Sprintf(`{"name":"authz-new-%d","project":"p1","resource_class":"gpu","image":{"url":"https://images.example/u.iso"}}`, i)
	}, want: ownerOrAdmin(201, 403)},
	// Another project's instance does not exist for a member.
	"GET /v1/instances/{id}":    {want: ownerOrAdmin(200, 404)},
	"PATCH /v1/instances/{id}":  {body: fixed(`{"metadata":{"team":"x"}}`), want: ownerOrAdmin(200, 404)},
	"DELETE /v1/instances/{id}": {want: ownerOrAdmin(202, 404)},
	// An owner's rebuild of an instance still deploying is refused (409):
	// what counts here is that another project's is not found.
	"POST /v1/instances/{id}/rebuild": {body: fixed(`{}`), want: ownerOrAdmin(409, 404)},
	// The instance's own ready token is the only credential: API tokens,
	// even an admin's, are not it.
	"POST /v1/instances/{id}/ready": {want: public(401)},
	// The key in the path is the credential; a wrong one opens nothing,
	// whatever token comes with it.
	"GET /v1/instances/{id}/config-drive/{key}/config-2.iso": {want: public(404)},
	// The agent's per-boot token is the only credential of its heartbeat,
	// and the key in the path the only one of its image.
	"POST /v1/agent/heartbeat":             {body: fixed(`{"agent_version":"x"}`), want: public(401)},
	"GET /v1/agent/boot/{id}/{key}/{file}": {want: public(404)},
	// iPXE asks without credentials; the script for a machine no agent
	// boot is due for only sends it to its next device.
	"GET /v1/agent/netboot":    {want: public(200)},
	"GET /v1/tokens":           {want: adminOnly(200)},
	"POST /v1/tokens":          {body: fixed(`{"role":"member","project":"p9","name":"authz"}`), want: adminOnly(201)},
	"DELETE /v1/tokens/{id}":   {want: adminOnly(204)},
	"GET /v1/quotas/{project}": {want: ownerOrAdmin(200, 403)},
	"PUT /v1/quotas/{project}": {body: fixed(`{"instances":-1}`), want: adminOnly(200)}, // unlimited: no effect on the other cases
	"GET /v1/jobs":             {want: adminOnly(200)},
	// Per-node series name every node of the fleet: not a member's.
	"GET /v1/metrics/nodes": {want: adminOrMonitor(200)},
	"GET /healthz":          {want: public(200)},
	"GET /readyz":           {want: public(200)},
	"GET /openapi.json":     {want: public(200)},
	"GET /metrics":          {want: public(200)},
	// Every role reads address pools (instance networks name them).
	"GET /v1/ip-pools": {want: anyMember(200)},
	"POST /v1/ip-pools": {body: func(i int) string {
		return fmt.Sprintf(`{"name":"authz-new-%d","cidr":"10.99.0.0/24"}`, i)
	}, want: adminOnly(201)},
	"GET /v1/ip-pools/{id}":             {want: anyMember(200)},
	"PATCH /v1/ip-pools/{id}":           {body: fixed(`{"dns_servers":["10.99.0.53"]}`), want: adminOnly(200)},
	"DELETE /v1/ip-pools/{id}":          {want: adminOnly(204)},
	"GET /v1/ip-pools/{id}/allocations": {want: adminOnly(200)},
}

// authzFixture is what one case acts on: a free, available node; an
// instance of project p1 on another node; a token.
type authzFixture struct{ node, instance, token, pool string }

func (e *env) authzFixture(i int) authzFixture {
	e.t.Helper()
	free := e.createNode(fmt.Sprintf("authz-free-%d", i))
	busy := e.createNode(fmt.Sprintf("authz-busy-%d", i))
	e.makeAvailable(free.ID)
	e.makeAvailable(busy.ID)
	var inst api.Instance
	e.mustJSON("POST", "/v1/instances", e.member, fmt.Sprintf(
		`{"name":"authz-%d","node_id":%q,"image":{"url":"https://images.example/u.iso"}}`, i, busy.ID), 201, &inst)
	var tok api.TokenCreated
	e.mustJSON("POST", "/v1/tokens", adminSecret, fmt.Sprintf(`{"role":"member","project":"p9","name":"authz-%d"}`, i), 201, &tok)
	var pool api.IPPool
	e.mustJSON("POST", "/v1/ip-pools", adminSecret, fmt.Sprintf(`{"name":"authz-pool-%d","cidr":"10.98.0.0/24"}`, i), 201, &pool)
	return authzFixture{node: free.ID, instance: inst.ID, token: tok.ID, pool: pool.ID}
}

// authzPath fills a route pattern's wildcards from f; ok is false for a
// wildcard this test does not know.
func authzPath(pattern string, f authzFixture) (string, bool) {
	id := ""
	switch {
	case strings.HasPrefix(pattern, "/v1/nodes/"), strings.HasPrefix(pattern, "/v1/agent/boot/"):
		id = f.node
	case strings.HasPrefix(pattern, "/v1/instances/"):
		id = f.instance
	case strings.HasPrefix(pattern, "/v1/tokens/"):
		id = f.token
	case strings.HasPrefix(pattern, "/v1/ip-pools/"):
		id = f.pool
	}
	p := strings.NewReplacer("{id}", id, "{project}", "p1", "{key}", "not-the-key", "{file}", "agent.iso").Replace(pattern)
	return p, !strings.ContainsAny(p, "{}") && (id != "" || !strings.Contains(pattern, "{id}"))
}

func TestAuthorizationMatrix(t *testing.T) {
	routes := httpapi.Routes()
	seen := map[string]bool{}
	for _, rt := range routes {
		key := rt.Method + " " + rt.Pattern
		seen[key] = true
		rule, ok := authzRules[key]
		switch {
		case !ok:
			t.Errorf("route %s has no authorization rule: add it to authzRules", key)
		case rt.Auth && (rule.want[0] != 401 || rule.want[1] != 401):
			t.Errorf("route %s needs a token, but its rule lets callers without a valid one through", key)
		case !rt.Auth && rule.want != public(rule.want[0]):
			t.Errorf("route %s takes no API token, but its rule answers callers differently", key)
		}
	}
	for key := range authzRules {
		if !seen[key] {
			t.Errorf("authzRules has %s, which is not in the route table", key)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			monitor := e.createToken(`{"role":"monitor","name":"authz-monitor"}`)
			tokens := []string{"", "bmt_not-a-real-token", e.member, e.other, adminSecret, monitor}
			n := 0
			for _, rt := range routes {
				key := rt.Method + " " + rt.Pattern
				rule := authzRules[key]
				for c, token := range tokens {
					n++
					// Fresh resources for every call: a DELETE or a
					// create must not change what the next caller meets.
					f := e.authzFixture(n)
					path, ok := authzPath(rt.Pattern, f)
					if !ok {
						t.Fatalf("route %s: no fixture for its wildcards (%s)", key, path)
					}
					body := ""
					if rule.body != nil {
						body = rule.body(n)
					}
					r := e.do(rt.Method, path, token, body)
					if r.status != rule.want[c] {
						t.Errorf("%s as %s: status %d, want %d: %s", key, authzCallers[c], r.status, rule.want[c], r.body)
						continue
					}
					if r.status >= 400 {
						r.problem(t) // refusals are problem documents too
					}
				}
			}
		})
	}
}
