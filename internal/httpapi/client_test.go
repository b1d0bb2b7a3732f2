package httpapi_test

import (
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// TestEventsNameTheClient: every node event names, beside the token, what
// the change came through: Terraform, the CLI or any other API client by
// the User-Agent it sends, the dashboard by its Baremetal-Client header
// (which wins over the browser's User-Agent). A User-Agent holding
// invisible characters is cleaned and cut; a bad Baremetal-Client header
// is refused, naming the header, and changes nothing.
func TestEventsNameTheClient(t *testing.T) {
	e := newEnv(t, storetest.OpenSQLite)
	n := e.createNode("rack1-u1")
	on := true
	lastActor := func() string {
		t.Helper()
		var evs api.EventList
		e.mustJSON("GET", "/v1/nodes/"+n.ID+"/events?limit=1000", adminSecret, "", 200, &evs)
		return evs.Items[len(evs.Items)-1].Actor
	}
	for _, c := range []struct {
		hdr  []string
		want string
	}{
		{[]string{"User-Agent", "terraform-provider-baremetal/0.4.0 terraform/1.5.7"}, "Terraform (terraform-provider-baremetal/0.4.0 terraform/1.5.7)"},
		{[]string{"User-Agent", "baremetal-controller-cli/v0.4.0"}, "the CLI (baremetal-controller-cli/v0.4.0)"},
		{[]string{"User-Agent", "Mozilla/5.0 (X11; Linux x86_64)", api.ClientHeader, "baremetal-dashboard"}, "the dashboard (baremetal-dashboard)"},
		{[]string{"User-Agent", "curl/8.5.0"}, "the API (curl/8.5.0)"},
		{[]string{"User-Agent", ""}, "the API (no User-Agent)"}, // net/http then sends none
		// What HTTP lets through: a tab, a bidirectional override and
		// bytes that are not UTF-8.
		{[]string{"User-Agent", "tool/1\t\u202eexe.\xffend " + strings.Repeat("a", 300)},
			"the API (tool/1 exe. end " + strings.Repeat("a", api.MaxClientLen-len("tool/1 exe. end ")) + ")"},
	} {
		body := `{"maintenance":false}`
		if on {
			body = `{"maintenance":true,"maintenance_reason":"swap PSU"}`
		}
		on = !on
		e.mustJSONHeaders("PATCH", "/v1/nodes/"+n.ID, adminSecret, body, 200, c.hdr...)
		if got, want := lastActor(), "token:bootstrap-admin ("; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, ") via "+c.want) {
			t.Errorf("with %q the event's actor is %q; want %q...%q", c.hdr, got, want, ") via "+c.want)
		}
	}

	before := lastActor()
	for _, bad := range []string{strings.Repeat("d", api.MaxClientLen+1), "dash\u202eboard"} {
		r := e.do("PATCH", "/v1/nodes/"+n.ID, adminSecret, `{"resource_class":"other"}`, api.ClientHeader, bad)
		if p := r.problem(t); r.status != 400 || p.Field != api.ClientHeader || !strings.Contains(p.Detail, "printable") {
			t.Errorf("%s %q: %d %+v; want 400 naming the header", api.ClientHeader, bad, r.status, p)
		}
	}
	var got api.Node
	e.mustJSON("GET", "/v1/nodes/"+n.ID, adminSecret, "", 200, &got)
	if got.ResourceClass != "gpu" || lastActor() != before {
		t.Errorf("a refused request changed the node: class %q, last event by %q", got.ResourceClass, lastActor())
	}
}

// mustJSONHeaders is mustJSON with extra header name/value pairs.
func (e *env) mustJSONHeaders(method, path, token, body string, want int, hdr ...string) resp {
	e.t.Helper()
	r := e.do(method, path, token, body, hdr...)
	if r.status != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}
