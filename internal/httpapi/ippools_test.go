package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

func TestIPPools(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testIPPools(t, newEnv(t, open))
		})
	}
}

func testIPPools(t *testing.T, e *env) {
	ctx := context.Background()
	body := `{"name":"rack-a","cidr":"10.40.0.0/24","gateway":"10.40.0.1","ranges":[{"start":"10.40.0.10","end":"10.40.0.12"}],` +
		`"dns_servers":["10.40.0.53"],"search_domains":["rack-a.example"],"description":"rack A"}`

	// Members read pools, only admins write them.
	if r := e.do("POST", "/v1/ip-pools", e.member, body); r.status != 403 {
		t.Fatalf("member create: %d", r.status)
	}
	var p api.IPPool
	r := e.mustJSON("POST", "/v1/ip-pools", adminSecret, body, 201, &p)
	if p.ID == "" || p.CIDR != "10.40.0.0/24" || p.Gateway != "10.40.0.1" || len(p.Ranges) != 1 || p.Version != 1 ||
		r.header.Get("ETag") != `"1"` || r.header.Get("Location") != "/v1/ip-pools/"+p.ID {
		t.Fatalf("created %+v (headers %v)", p, r.header)
	}
	var got api.IPPool
	e.mustJSON("GET", "/v1/ip-pools/rack-a", e.member, "", 200, &got)
	if got.ID != p.ID || got.DNSServers[0] != "10.40.0.53" || got.SearchDomains[0] != "rack-a.example" {
		t.Fatalf("member reads %+v", got)
	}
	var list api.IPPoolList
	e.mustJSON("GET", "/v1/ip-pools", e.member, "", 200, &list)
	if len(list.Items) != 1 || list.Items[0].ID != p.ID {
		t.Fatalf("list %+v", list)
	}

	// Bad input: 400 naming the field, nothing stored.
	for _, tc := range []struct{ body, field, says string }{
		{`{"name":"x","cidr":"10.1.0.5/24"}`, "cidr", "10.1.0.0/24"},
		{`{"name":"x"}`, "cidr", "required"},
		{`{"name":"x","cidr":"10.1.0.0/24","gateway":"10.2.0.1"}`, "gateway", "not inside"},
		{`{"name":"x","cidr":"10.1.0.0/24","gateway":"nope"}`, "gateway", "not an IP address"},
		{`{"name":"x","cidr":"10.1.0.0/24","ranges":[{"start":"10.1.0.9","end":"10.1.0.3"}]}`, "ranges[0].end", "before its start"},
		{`{"name":"x","cidr":"10.1.0.0/24","ranges":[{"start":"10.1.0.1","end":"bad"}]}`, "ranges[0].end", "not an IP address"},
		{`{"name":"x","cidr":"10.1.0.0/24","dns_servers":["10.1.0.53","x"]}`, "dns_servers[1]", "not an IP address"},
		{`{"name":"x","cidr":"10.1.0.0/24","colour":"red"}`, "colour", ""},
		{`{"name":"rack-a","cidr":"10.1.0.0/24"}`, "name", "already exists"},
	} {
		r := e.do("POST", "/v1/ip-pools", adminSecret, tc.body)
		pr := r.problem(t)
		if (r.status != 400 && r.status != 409) || pr.Field != tc.field || !strings.Contains(pr.Detail, tc.says) {
			t.Errorf("POST %s: %d %+v; want the field %s saying %q", tc.body, r.status, pr, tc.field, tc.says)
		}
	}
	e.mustJSON("GET", "/v1/ip-pools", adminSecret, "", 200, &list)
	if len(list.Items) != 1 {
		t.Fatalf("bad input stored pools: %+v", list)
	}

	// Two addresses held: one by a live instance, one by a cleaning node.
	for _, inst := range []string{"inst-1", "inst-2"} {
		if _, err := e.st.AllocateAddress(ctx, p.ID, inst, "node-"+inst); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.st.ReleaseInstanceAddresses(ctx, "inst-2"); err != nil {
		t.Fatal(err)
	}
	if r := e.do("GET", "/v1/ip-pools/"+p.ID+"/allocations", e.member, ""); r.status != 403 {
		t.Errorf("member lists allocations: %d", r.status)
	}
	var allocs api.IPAllocationList
	e.mustJSON("GET", "/v1/ip-pools/rack-a/allocations?limit=1", adminSecret, "", 200, &allocs)
	if len(allocs.Items) != 1 || allocs.Items[0].Address != "10.40.0.10" || allocs.Items[0].InstanceID != "inst-1" || allocs.NextCursor == "" {
		t.Fatalf("first page of allocations: %+v", allocs)
	}
	cursor := allocs.NextCursor
	allocs = api.IPAllocationList{} // omitted members are not overwritten
	e.mustJSON("GET", "/v1/ip-pools/rack-a/allocations?cursor="+cursor, adminSecret, "", 200, &allocs)
	if len(allocs.Items) != 1 || allocs.Items[0].Address != "10.40.0.11" || allocs.Items[0].InstanceID != "" ||
		allocs.Items[0].NodeID != "node-inst-2" || allocs.NextCursor != "" {
		t.Fatalf("second page of allocations: %+v", allocs)
	}

	// PATCH: If-Match, in-place changes, and no held address dropped.
	if r := e.do("PATCH", "/v1/ip-pools/"+p.ID, adminSecret, `{"dns_servers":["1.1.1.1"]}`, "If-Match", `"7"`); r.status != 412 {
		t.Errorf("stale If-Match: %d", r.status)
	}
	var up api.IPPool
	r = e.mustJSON("PATCH", "/v1/ip-pools/"+p.ID, adminSecret, `{"dns_servers":["1.1.1.1","1.0.0.1"],"description":""}`, 200, &up)
	if up.Version != 2 || len(up.DNSServers) != 2 || up.Description != "" || up.Gateway != "10.40.0.1" || len(up.Ranges) != 1 ||
		r.header.Get("ETag") != `"2"` {
		t.Fatalf("after PATCH: %+v", up)
	}
	r = e.do("PATCH", "/v1/ip-pools/"+p.ID, adminSecret, `{"ranges":[{"start":"10.40.0.11","end":"10.40.0.20"}]}`)
	if pr := r.problem(t); r.status != 409 || pr.Field != "ranges" || !strings.Contains(pr.Detail, "10.40.0.10") ||
		strings.Contains(pr.Detail, "10.40.0.11") {
		t.Errorf("range change dropping 10.40.0.10: %d %+v", r.status, pr)
	}
	if r := e.do("PATCH", "/v1/ip-pools/"+p.ID, adminSecret, `{"gateway":null}`); r.status != 400 {
		t.Errorf("null gateway: %d", r.status)
	}
	if r := e.do("PATCH", "/v1/ip-pools/"+p.ID, adminSecret, `{"cidr":"10.41.0.0/24"}`); r.status != 400 || r.problem(t).Field != "cidr" {
		t.Errorf("cidr change: %d", r.status)
	}
	if r := e.do("PATCH", "/v1/ip-pools/"+p.ID, e.member, `{"description":"mine"}`); r.status != 403 {
		t.Errorf("member PATCH: %d", r.status)
	}
	e.mustJSON("PATCH", "/v1/ip-pools/"+p.ID, adminSecret, `{"ranges":[{"start":"10.40.0.10","end":"10.40.0.30"}]}`, 200, &up)

	// DELETE: refused while addresses are held, naming how many.
	r = e.do("DELETE", "/v1/ip-pools/"+p.ID, adminSecret, "")
	if pr := r.problem(t); r.status != 409 || !strings.Contains(pr.Detail, "2 allocated addresses") {
		t.Fatalf("delete of a pool holding addresses: %d %+v", r.status, pr)
	}
	if _, err := e.st.ReleaseInstanceAddresses(ctx, "inst-1"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node-inst-1", "node-inst-2"} {
		if _, err := e.st.FreeNodeAddresses(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.do("DELETE", "/v1/ip-pools/"+p.ID, e.member, ""); r.status != 403 {
		t.Errorf("member delete: %d", r.status)
	}
	if r := e.do("DELETE", "/v1/ip-pools/"+p.ID, adminSecret, "", "If-Match", `"1"`); r.status != 412 {
		t.Errorf("delete with a stale If-Match: %d", r.status)
	}
	if r := e.do("DELETE", "/v1/ip-pools/rack-a", adminSecret, "", "If-Match", `"3"`); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/ip-pools/"+p.ID, adminSecret, ""); r.status != 404 {
		t.Errorf("deleted pool: %d", r.status)
	}
}
