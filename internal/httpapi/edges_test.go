package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// TestInputEdges sends one table of bad input through the API on both
// stores: every case is a 4xx problem document naming the field, never a
// 500 (PostgreSQL refuses NUL and integers past int32 where SQLite stores
// them), and afterwards nothing has changed.
func TestInputEdges(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testInputEdges(t, newEnv(t, open))
		})
	}
}

type edgeCase struct {
	name, method, path, token, body string
	// hdr are header name/value pairs; the harness sends bodies as
	// application/json unless hdr sets Content-Type.
	hdr         []string
	status      int
	code, field string
	// detail, when set, must appear in the problem's detail.
	detail string
}

func testInputEdges(t *testing.T, e *env) {
	n := e.createNode("edge-node")
	e.makeAvailable(n.ID)
	var inst api.Instance
	e.mustJSON("POST", "/v1/instances", e.member, `{"name":"edge-inst","resource_class":"gpu","image":{"url":"https://i/x"},"metadata":{"a":"b"}}`, 201, &inst)
	e.mustJSON("PUT", "/v1/quotas/p1", adminSecret, `{"instances":5}`, 200, nil)
	var tok api.TokenCreated
	e.mustJSON("POST", "/v1/tokens", adminSecret, `{"role":"member","project":"p1","name":"edge-tok"}`, 201, &tok)
	snapshot := func() string {
		var b strings.Builder
		for _, p := range []string{"/v1/nodes/" + n.ID, "/v1/instances/" + inst.ID, "/v1/tokens", "/v1/quotas/p1", "/v1/nodes?include_deleting=true", "/v1/instances"} {
			r := e.mustJSON("GET", p, adminSecret, "", 200, nil)
			fmt.Fprintf(&b, "%s %s\n", p, r.body)
		}
		return b.String()
	}
	before := snapshot()

	node := "/v1/nodes/" + n.ID
	instance := "/v1/instances/" + inst.ID
	create := func(extra string) string { // a node body with extra members first
		return strings.Replace(nodeBody("edge-new"), "{", "{"+extra, 1)
	}
	instBody := func(extra string) string {
		return `{` + extra + `"name":"edge-new","resource_class":"gpu","image":{"url":"https://i/x"}}`
	}
	cursor := func(key string) string { return url.QueryEscape(store.EncodeCursor(key)) }
	text := []string{"Content-Type", "text/plain"}
	cases := []edgeCase{
		// Authorization.
		{name: "basic scheme", method: "GET", path: "/v1/nodes", hdr: []string{"Authorization", "Basic " + adminSecret}, status: 401, code: "unauthorized"},
		{name: "bearer without token", method: "GET", path: "/v1/nodes", hdr: []string{"Authorization", "bearer "}, status: 401, code: "unauthorized"},
		// Paths that http.ServeMux would redirect.
		{name: "double slash", method: "GET", path: "//v1/nodes", token: adminSecret, status: 404, code: "not_found"},
		{name: "dot dot", method: "GET", path: "/v1/instances/../nodes", token: adminSecret, status: 404, code: "not_found"},
		{name: "dot segment", method: "GET", path: "/v1/nodes/.", token: adminSecret, status: 404, code: "not_found"},
		{name: "escaped dot dot", method: "GET", path: "/v1/nodes/%2e%2e", token: adminSecret, status: 404, code: "not_found"},
		{name: "escaped traversal in project", method: "PUT", path: "/v1/quotas/..%2Fx", token: adminSecret, body: `{"instances":1}`, status: 404, code: "not_found"},
		{name: "slash in project", method: "PUT", path: "/v1/quotas/a%2Fb", token: adminSecret, body: `{"instances":1}`, status: 400, code: "invalid", field: "project"},
		{name: "project not a label", method: "PUT", path: "/v1/quotas/Team_A", token: adminSecret, body: `{"instances":1}`, status: 400, code: "invalid", field: "project"},
		{name: "NUL quota project", method: "GET", path: "/v1/quotas/%00", token: adminSecret, status: 400, code: "invalid", field: "project"},
		// Path ids no row can have: not found on both stores.
		{name: "NUL node id", method: "GET", path: "/v1/nodes/a%00b", token: adminSecret, status: 404, code: "not_found"},
		{name: "bad UTF-8 node id", method: "GET", path: "/v1/nodes/%FF", token: adminSecret, status: 404, code: "not_found"},
		{name: "NUL node patch", method: "PATCH", path: "/v1/nodes/%00", token: adminSecret, body: `{}`, status: 404, code: "not_found"},
		{name: "NUL node delete", method: "DELETE", path: "/v1/nodes/%00", token: adminSecret, status: 404, code: "not_found"},
		{name: "NUL node events", method: "GET", path: "/v1/nodes/%00/events", token: adminSecret, status: 404, code: "not_found"},
		{name: "NUL node power", method: "POST", path: "/v1/nodes/%00/power", token: adminSecret, body: `{"target":"on"}`, status: 404, code: "not_found"},
		{name: "NUL instance id", method: "GET", path: "/v1/instances/%00", token: e.member, status: 404, code: "not_found"},
		{name: "NUL instance patch", method: "PATCH", path: "/v1/instances/%00", token: e.member, body: `{}`, status: 404, code: "not_found"},
		{name: "NUL instance delete", method: "DELETE", path: "/v1/instances/%00", token: e.member, status: 404, code: "not_found"},
		{name: "NUL token delete", method: "DELETE", path: "/v1/tokens/%00", token: adminSecret, status: 404, code: "not_found"},
		{name: "NUL config drive", method: "GET", path: "/v1/instances/%00/config-drive/k/config-2.iso", status: 404, code: "not_found"},
		// The callback does not tell unknown instances from wrong tokens.
		{name: "NUL ready callback", method: "POST", path: "/v1/instances/%00/ready", hdr: []string{"Authorization", "Bearer x"}, status: 401, code: "unauthorized"},
		// Query parameters.
		{name: "jobs limit zero", method: "GET", path: "/v1/jobs?limit=0", token: adminSecret, status: 400, code: "invalid", field: "limit"},
		{name: "jobs limit junk", method: "GET", path: "/v1/jobs?limit=ten", token: adminSecret, status: 400, code: "invalid", field: "limit"},
		{name: "jobs limit too big", method: "GET", path: "/v1/jobs?limit=1001", token: adminSecret, status: 400, code: "invalid", field: "limit"},
		{name: "jobs NUL node", method: "GET", path: "/v1/jobs?node_id=%00", token: adminSecret, status: 404, code: "not_found"},
		{name: "NUL resource_class filter", method: "GET", path: "/v1/nodes?resource_class=%00", token: adminSecret, status: 400, code: "invalid", field: "resource_class"},
		{name: "NUL provision_state filter", method: "GET", path: "/v1/nodes?provision_state=%00", token: adminSecret, status: 400, code: "invalid", field: "provision_state"},
		{name: "NUL project filter", method: "GET", path: "/v1/instances?project=%00", token: adminSecret, status: 400, code: "invalid", field: "project"},
		{name: "traversal project filter", method: "GET", path: "/v1/instances?project=../x", token: adminSecret, status: 400, code: "invalid", field: "project"},
		{name: "cursor not base64", method: "GET", path: "/v1/nodes?cursor=%00", token: adminSecret, status: 400, code: "invalid", field: "cursor"},
		{name: "cursor not an id", method: "GET", path: "/v1/nodes?cursor=" + cursor("zzz"), token: adminSecret, status: 400, code: "invalid", field: "cursor"},
		{name: "cursor with NUL", method: "GET", path: "/v1/nodes?cursor=" + cursor("\x00"), token: adminSecret, status: 400, code: "invalid", field: "cursor"},
		{name: "instances cursor", method: "GET", path: "/v1/instances?cursor=" + cursor("not-an-id"), token: e.member, status: 400, code: "invalid", field: "cursor"},
		{name: "tokens cursor", method: "GET", path: "/v1/tokens?cursor=" + cursor("a\x00"), token: adminSecret, status: 400, code: "invalid", field: "cursor"},
		{name: "events cursor", method: "GET", path: node + "/events?cursor=" + cursor("1\x00"), token: adminSecret, status: 400, code: "invalid", field: "cursor"},
		// Content types.
		{name: "POST text/plain", method: "POST", path: "/v1/nodes", token: adminSecret, body: create(""), hdr: text, status: 415, code: "unsupported_media_type"},
		{name: "POST without type", method: "POST", path: "/v1/instances", token: e.member, body: instBody(""), hdr: []string{"Content-Type", ""}, status: 415, code: "unsupported_media_type"},
		{name: "POST form", method: "POST", path: "/v1/tokens", token: adminSecret, body: `role=admin`, hdr: []string{"Content-Type", "application/x-www-form-urlencoded"}, status: 415, code: "unsupported_media_type"},
		{name: "POST latin-1", method: "POST", path: "/v1/nodes/edge-node/power", token: adminSecret, body: `{"target":"on"}`, hdr: []string{"Content-Type", "application/json; charset=iso-8859-1"}, status: 415, code: "unsupported_media_type"},
		{name: "POST merge patch", method: "POST", path: "/v1/instances", token: e.member, body: instBody(""), hdr: []string{"Content-Type", "application/merge-patch+json"}, status: 415, code: "unsupported_media_type"},
		{name: "PATCH text/plain", method: "PATCH", path: node, token: adminSecret, body: `{}`, hdr: text, status: 415, code: "unsupported_media_type"},
		{name: "PATCH instance text/plain", method: "PATCH", path: instance, token: e.member, body: `{}`, hdr: text, status: 415, code: "unsupported_media_type"},
		{name: "PUT text/plain", method: "PUT", path: "/v1/quotas/p1", token: adminSecret, body: `{"instances":1}`, hdr: text, status: 415, code: "unsupported_media_type"},
		{name: "charset utf-8 is fine", method: "POST", path: "/v1/nodes", token: adminSecret, body: `{}`, hdr: []string{"Content-Type", "application/json; charset=UTF-8"}, status: 400, code: "invalid", field: "name"},
		// Duplicate keys, other letter cases.
		{name: "duplicate key", method: "POST", path: "/v1/nodes", token: adminSecret, body: create(`"name":"edge-dup",`), status: 400, code: "invalid", field: "name", detail: "duplicate"},
		{name: "duplicate nested key", method: "PATCH", path: node, token: adminSecret, body: `{"bmc":{"username":"a","username":"b"}}`, status: 400, code: "invalid", field: "bmc.username", detail: "duplicate"},
		{name: "duplicate patch key", method: "PATCH", path: node, token: adminSecret, body: `{"maintenance":true,"maintenance":false}`, status: 400, code: "invalid", field: "maintenance", detail: "duplicate"},
		{name: "duplicate metadata key", method: "PATCH", path: instance, token: e.member, body: `{"metadata":{"k":"1","k":"2"}}`, status: 400, code: "invalid", field: "metadata.k", detail: "duplicate"},
		{name: "other letter case", method: "POST", path: "/v1/nodes", token: adminSecret, body: create(`"NAME":"x",`), status: 400, code: "invalid", field: "NAME"},
		// null where a value is required.
		{name: "PATCH node null", method: "PATCH", path: node, token: adminSecret, body: `null`, status: 400, code: "invalid"},
		{name: "PATCH instance null", method: "PATCH", path: instance, token: e.member, body: `null`, status: 400, code: "invalid"},
		{name: "remove password", method: "PATCH", path: node, token: adminSecret, body: `{"bmc":{"password":null}}`, status: 400, code: "invalid", field: "bmc.password"},
		{name: "remove name", method: "PATCH", path: node, token: adminSecret, body: `{"name":null}`, status: 400, code: "invalid", field: "name"},
		{name: "remove bmc", method: "PATCH", path: node, token: adminSecret, body: `{"bmc":null}`, status: 400, code: "invalid", field: "bmc"},
		{name: "null power_state", method: "PATCH", path: instance, token: e.member, body: `{"power_state":null}`, status: 400, code: "invalid", field: "power_state"},
		{name: "null metadata", method: "PATCH", path: instance, token: e.member, body: `{"metadata":null}`, status: 400, code: "invalid", field: "metadata"},
		{name: "null metadata value", method: "PATCH", path: instance, token: e.member, body: `{"metadata":{"a":null}}`, status: 400, code: "invalid", field: "metadata.a"},
		{name: "POST null name", method: "POST", path: "/v1/nodes", token: adminSecret, body: `{"name":null}`, status: 400, code: "invalid", field: "name"},
		{name: "POST null body", method: "POST", path: "/v1/tokens", token: adminSecret, body: `null`, status: 400, code: "invalid"},
		{name: "PUT null instances", method: "PUT", path: "/v1/quotas/p1", token: adminSecret, body: `{"instances":null}`, status: 400, code: "invalid", field: "instances"},
		// Numbers: exact, the same for POST and PATCH, named and readable.
		{name: "POST fraction", method: "POST", path: "/v1/nodes", token: adminSecret, body: create(`"properties":{"cpus":1.0},`), status: 400, code: "invalid", field: "properties.cpus", detail: "whole number"},
		{name: "PATCH fraction", method: "PATCH", path: node, token: adminSecret, body: `{"properties":{"cpus":1.0}}`, status: 400, code: "invalid", field: "properties.cpus", detail: "whole number"},
		{name: "PATCH huge exponent", method: "PATCH", path: node, token: adminSecret, body: `{"properties":{"cpus":1e400}}`, status: 400, code: "invalid", field: "properties.cpus", detail: "1e400"},
		{name: "PATCH past int64", method: "PATCH", path: node, token: adminSecret, body: `{"properties":{"local_gb":99999999999999999999}}`, status: 400, code: "invalid", field: "properties.local_gb", detail: "out of range"},
		{name: "PATCH past float64 precision", method: "PATCH", path: node, token: adminSecret, body: `{"properties":{"memory_mb":9007199254740993}}`, status: 400, code: "invalid", field: "properties.memory_mb", detail: "9007199254740993"},
		{name: "POST past int32", method: "POST", path: "/v1/nodes", token: adminSecret, body: create(`"properties":{"memory_mb":2147483648},`), status: 400, code: "invalid", field: "properties.memory_mb", detail: "2147483647"},
		{name: "PATCH too many cpus", method: "PATCH", path: node, token: adminSecret, body: `{"properties":{"cpus":65537}}`, status: 400, code: "invalid", field: "properties.cpus", detail: "65536"},
		{name: "quota past int32", method: "PUT", path: "/v1/quotas/p1", token: adminSecret, body: `{"instances":2147483648}`, status: 400, code: "invalid", field: "instances"},
		{name: "quota fraction", method: "PUT", path: "/v1/quotas/p1", token: adminSecret, body: `{"instances":1.5}`, status: 400, code: "invalid", field: "instances", detail: "whole number"},
		{name: "number as string", method: "PATCH", path: node, token: adminSecret, body: `{"bmc":{"cipher_suite":"3"}}`, status: 400, code: "invalid", field: "bmc.cipher_suite", detail: "integer"},
		// expires_at.
		{name: "expires_at words", method: "POST", path: "/v1/tokens", token: adminSecret, body: `{"role":"admin","expires_at":"tomorrow"}`, status: 400, code: "invalid", field: "expires_at", detail: "RFC 3339"},
		{name: "expires_at number", method: "POST", path: "/v1/tokens", token: adminSecret, body: `{"role":"admin","expires_at":1893456000}`, status: 400, code: "invalid", field: "expires_at", detail: "RFC 3339"},
		// NUL and control characters in stored strings.
		{name: "NUL metadata value", method: "PATCH", path: instance, token: e.member, body: `{"metadata":{"a":"v\u0000"}}`, status: 400, code: "invalid", field: "metadata.a"},
		{name: "NUL metadata key", method: "POST", path: "/v1/instances", token: e.member, body: instBody(`"metadata":{"\u0000":"v"},`), status: 400, code: "invalid", field: "metadata"},
		{name: "NUL user_data", method: "POST", path: "/v1/instances", token: e.member, body: instBody(`"user_data":"#!/bin/sh\n\u0000",`), status: 400, code: "invalid", field: "user_data"},
		{name: "NUL pinned node", method: "POST", path: "/v1/instances", token: e.member, body: `{"name":"edge-new","node_id":"\u0000","image":{"url":"https://i/x"}}`, status: 400, code: "invalid", field: "node_id"},
		{name: "control in image url", method: "POST", path: "/v1/instances", token: e.member, body: `{"name":"edge-new","resource_class":"gpu","image":{"url":"https://i/x\u0085"}}`, status: 400, code: "invalid", field: "image.url"},
		{name: "traversal project", method: "POST", path: "/v1/instances", token: adminSecret, body: instBody(`"project":"../x",`), status: 400, code: "invalid", field: "project"},
		{name: "NUL maintenance_reason", method: "PATCH", path: node, token: adminSecret, body: `{"maintenance":true,"maintenance_reason":"fan\u0000"}`, status: 400, code: "invalid", field: "maintenance_reason"},
		{name: "NUL bmc.username", method: "PATCH", path: node, token: adminSecret, body: `{"bmc":{"username":"ad\u0000min"}}`, status: 400, code: "invalid", field: "bmc.username"},
		{name: "NUL bmc.username POST", method: "POST", path: "/v1/nodes", token: adminSecret, body: strings.Replace(nodeBody("edge-new"), `"admin"`, `"ad\u0000min"`, 1), status: 400, code: "invalid", field: "bmc.username"},
		{name: "NUL cpu_arch", method: "PATCH", path: node, token: adminSecret, body: `{"properties":{"cpu_arch":"x86\u0000"}}`, status: 400, code: "invalid", field: "properties.cpu_arch"},
		{name: "NUL system_id", method: "PATCH", path: node, token: adminSecret, body: `{"bmc":{"system_id":"/redfish/v1/Systems/1\u0000"}}`, status: 400, code: "invalid", field: "bmc.system_id"},
		{name: "NUL token name", method: "POST", path: "/v1/tokens", token: adminSecret, body: `{"role":"admin","name":"ci\u0000"}`, status: 400, code: "invalid", field: "name"},
		{name: "NUL token project", method: "POST", path: "/v1/tokens", token: adminSecret, body: `{"role":"member","project":"p\u0000"}`, status: 400, code: "invalid", field: "project"},
		{name: "traversal token project", method: "POST", path: "/v1/tokens", token: adminSecret, body: `{"role":"member","project":"../x"}`, status: 400, code: "invalid", field: "project"},
		// If-Match (RFC 9110): matching nothing is 412, malformed is 400.
		{name: "If-Match not ours", method: "PATCH", path: node, token: adminSecret, body: `{"resource_class":"cpu"}`, hdr: []string{"If-Match", `"abc"`}, status: 412, code: "precondition_failed"},
		{name: "If-Match weak", method: "PATCH", path: node, token: adminSecret, body: `{"resource_class":"cpu"}`, hdr: []string{"If-Match", fmt.Sprintf(`W/"%d"`, n.Version)}, status: 412, code: "precondition_failed"},
		{name: "If-Match zero", method: "DELETE", path: instance, token: e.member, hdr: []string{"If-Match", `"0"`}, status: 412, code: "precondition_failed"},
		{name: "If-Match leading zero", method: "DELETE", path: node, token: adminSecret, hdr: []string{"If-Match", `"01"`}, status: 412, code: "precondition_failed"},
		{name: "If-Match stale in a list", method: "PATCH", path: instance, token: e.member, body: `{}`, hdr: []string{"If-Match", `"x", "99"`}, status: 412, code: "precondition_failed"},
		{name: "If-Match stale versions", method: "PATCH", path: instance, token: e.member, body: `{}`, hdr: []string{"If-Match", `"98", "99"`}, status: 412, code: "precondition_failed"},
		{name: "If-Match list, missing node", method: "DELETE", path: "/v1/nodes/nope", token: adminSecret, hdr: []string{"If-Match", `"1", "2"`}, status: 404, code: "not_found"},
		{name: "If-Match unquoted", method: "PATCH", path: node, token: adminSecret, body: `{}`, hdr: []string{"If-Match", `1`}, status: 400, code: "invalid", field: "If-Match"},
	}
	// The store suite's bad keys, as path ids, filters and cursors.
	for _, k := range storetest.BadKeys {
		id, q := url.PathEscape(k), url.QueryEscape(k)
		label := fmt.Sprintf("bad key %.20q", k)
		cases = append(cases,
			edgeCase{name: label + " node", method: "GET", path: "/v1/nodes/" + id, token: adminSecret, status: 404, code: "not_found"},
			edgeCase{name: label + " node patch", method: "PATCH", path: "/v1/nodes/" + id, token: adminSecret, body: `{}`, status: 404, code: "not_found"},
			edgeCase{name: label + " instance", method: "GET", path: "/v1/instances/" + id, token: e.member, status: 404, code: "not_found"},
			edgeCase{name: label + " instance delete", method: "DELETE", path: "/v1/instances/" + id, token: adminSecret, status: 404, code: "not_found"},
			edgeCase{name: label + " token delete", method: "DELETE", path: "/v1/tokens/" + id, token: adminSecret, status: 404, code: "not_found"},
			edgeCase{name: label + " jobs node_id", method: "GET", path: "/v1/jobs?node_id=" + q, token: adminSecret, status: 404, code: "not_found"},
			edgeCase{name: label + " resource_class filter", method: "GET", path: "/v1/nodes?resource_class=" + q, token: adminSecret, status: 400, code: "invalid", field: "resource_class"},
			edgeCase{name: label + " project filter", method: "GET", path: "/v1/instances?project=" + q, token: adminSecret, status: 400, code: "invalid", field: "project"},
			edgeCase{name: label + " cursor", method: "GET", path: "/v1/nodes?cursor=" + cursor(k), token: adminSecret, status: 400, code: "invalid", field: "cursor"},
			edgeCase{name: label + " node name", method: "POST", path: "/v1/nodes", token: adminSecret, body: strings.Replace(nodeBody("x"), `"x"`, jsonString(k), 1), status: 400, code: "invalid", field: "name"},
		)
		if strings.ContainsRune(k, 0) || len(k) > 128 { // token names are otherwise free text
			cases = append(cases, edgeCase{name: label + " token name", method: "POST", path: "/v1/tokens", token: adminSecret,
				body: `{"role":"admin","name":` + jsonString(k) + `}`, status: 400, code: "invalid", field: "name"})
		}
		if !strings.Contains(k, "/") { // ../x is a path, not a project
			cases = append(cases, edgeCase{name: label + " quota", method: "GET", path: "/v1/quotas/" + id, token: adminSecret, status: 400, code: "invalid", field: "project"})
		}
		if r := e.do("GET", "/v1/instances?node_id="+q, adminSecret, ""); r.status != 200 || !strings.Contains(string(r.body), `"items":[]`) {
			t.Errorf("%s as node_id filter: %d %s, want an empty list", label, r.status, r.body)
		}
	}
	for _, c := range cases {
		r := e.do(c.method, c.path, c.token, c.body, c.hdr...)
		if r.status != c.status {
			t.Errorf("%s: %s %s: status %d, want %d: %s", c.name, c.method, c.path, r.status, c.status, r.body)
			continue
		}
		p := r.problem(t)
		if string(p.Code) != c.code || p.Field != c.field {
			t.Errorf("%s: code %q field %q, want %q %q (detail %q)", c.name, p.Code, p.Field, c.code, c.field, p.Detail)
		}
		if c.field != "" && !strings.Contains(p.Detail, c.field) {
			t.Errorf("%s: detail %q does not name %s", c.name, p.Detail, c.field)
		}
		if c.detail != "" && !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s: detail %q does not say %q", c.name, p.Detail, c.detail)
		}
		// Messages speak the API's language, not Go's.
		for _, goism := range []string{"json:", "Go value", "float64", "int64", "2006-01-02", "parsing time"} {
			if strings.Contains(p.Detail, goism) {
				t.Errorf("%s: detail %q says %q", c.name, p.Detail, goism)
			}
		}
	}
	if after := snapshot(); after != before {
		t.Errorf("rejected requests changed something:\nbefore %s\nafter  %s", before, after)
	}

	// What must work.
	for _, scheme := range []string{"bearer", "BEARER", "Bearer"} {
		if r := e.do("GET", "/v1/nodes", "", "", "Authorization", scheme+" "+adminSecret); r.status != 200 {
			t.Errorf("Authorization: %s <token>: %d %s", scheme, r.status, r.body)
		}
	}
	if r := e.do("POST", api.ReadyPath(inst.ID), "", "", "Authorization", "bearer wrong"); r.status != 401 {
		t.Errorf("ready callback with a lowercase scheme and a wrong token: %d %s", r.status, r.body)
	}
	var jobs api.JobList
	e.mustJSON("GET", "/v1/jobs?limit=1", adminSecret, "", 200, &jobs)
	if r := e.do("PATCH", node, adminSecret, `{"resource_class":"cpu"}`, "If-Match", "*", "Content-Type", "application/merge-patch+json"); r.status != 200 {
		t.Errorf("If-Match: * with a merge patch: %d %s", r.status, r.body)
	}
	var cur api.Node
	e.mustJSON("GET", node, adminSecret, "", 200, &cur)
	if r := e.do("PATCH", node, adminSecret, `{"maintenance":true,"maintenance_reason":"x"}`, "If-Match", fmt.Sprintf(`"1", W/"7", "%d"`, cur.Version)); r.status != 200 {
		t.Errorf("If-Match list holding the current version: %d %s", r.status, r.body)
	}
	// Integers are exact at the domain's limits, the same in POST and PATCH.
	var big api.Node
	e.mustJSON("PATCH", node, adminSecret, `{"properties":{"memory_mb":2147483647,"cpus":65536}}`, 200, &big)
	if big.Properties.MemoryMB != 2147483647 || big.Properties.CPUs != 65536 {
		t.Errorf("properties after PATCH: %+v", big.Properties)
	}
	e.mustJSON("POST", "/v1/nodes", adminSecret, create(`"properties":{"local_gb":2147483647},`), 201, &big)
	if big.Properties.LocalGB != 2147483647 {
		t.Errorf("properties after POST: %+v", big.Properties)
	}
	// Free text keeps newlines and tabs.
	var withText api.Instance
	e.mustJSON("PATCH", instance, e.member, `{"metadata":{"keys":"ssh-ed25519 A a\n\tssh-ed25519 B b\n"}}`, 200, &withText)
	if withText.Metadata["keys"] != "ssh-ed25519 A a\n\tssh-ed25519 B b\n" {
		t.Errorf("metadata after PATCH: %q", withText.Metadata)
	}
}

// jsonString encodes s as JSON text can hold it: invalid UTF-8 becomes
// U+FFFD on the way (the decoder would do the same), NUL is \u0000.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
