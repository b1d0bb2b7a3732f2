package httpapi_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/redfish"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/httpapi"
)

// One physical server, one node, through the API: a second node on a BMC
// endpoint (however it is spelled, on create or on PATCH) is a 409 naming
// the node that has it, and nothing changes.
func TestDuplicateBMC(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testDuplicateBMC(t, newEnv(t, open))
		})
	}
}

func bmcBody(name, address, systemID string) string {
	return fmt.Sprintf(`{"name":%q,"driver":"redfish","resource_class":"gpu","bmc":{"address":%q,"username":"admin","password":%q,"system_id":%q}}`,
		name, address, bmcPassword, systemID)
}

func wantDuplicateBMC(t *testing.T, what string, r resp, holder api.Node) {
	t.Helper()
	if r.status != 409 {
		t.Fatalf("%s: status %d, want 409: %s", what, r.status, r.body)
	}
	p := r.problem(t)
	if p.Code != "conflict" || p.Field != "bmc.address" ||
		!strings.Contains(p.Detail, fmt.Sprintf("%q", holder.Name)) || !strings.Contains(p.Detail, holder.ID) {
		t.Fatalf("%s: want a conflict on bmc.address naming node %s (%s): %s", what, holder.Name, holder.ID, r.body)
	}
}

func testDuplicateBMC(t *testing.T, e *env) {
	var a api.Node
	e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("bmc-a", "https://10.9.0.1", "/redfish/v1/Systems/1"), 201, &a)

	// The same endpoint, spelled differently: http and https, default
	// port, case, trailing slashes.
	for _, addr := range []string{"https://10.9.0.1", "HTTPS://10.9.0.1:443/", "http://10.9.0.1"} {
		r := e.do("POST", "/v1/nodes", adminSecret, bmcBody("bmc-dup", addr, "/redfish/v1/Systems/1/"))
		wantDuplicateBMC(t, "create on "+addr, r, a)
	}
	e.mustJSON("GET", "/v1/nodes/bmc-dup", adminSecret, "", 404, nil)
	// A member is refused before anything about the BMC is looked at.
	if r := e.do("POST", "/v1/nodes", e.member, bmcBody("bmc-dup", "https://10.9.0.1", "/redfish/v1/Systems/1")); r.status != 403 {
		t.Fatalf("member create of a duplicate: %d %s", r.status, r.body)
	}

	// The BMC's other system, and another port, are other servers.
	var b, c api.Node
	e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("bmc-b", "https://10.9.0.1", "/redfish/v1/Systems/2"), 201, &b)
	e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("bmc-c", "https://10.9.0.1:8443", "/redfish/v1/Systems/1"), 201, &c)

	// PATCH of bmc.system_id or bmc.address onto a's endpoint: refused,
	// the node unchanged.
	wantDuplicateBMC(t, "patch system_id", e.do("PATCH", "/v1/nodes/"+b.ID, adminSecret, `{"bmc":{"system_id":"/redfish/v1/Systems/1"}}`), a)
	wantDuplicateBMC(t, "patch address", e.do("PATCH", "/v1/nodes/"+c.ID, adminSecret, `{"bmc":{"address":"https://10.9.0.1:443"}}`), a)
	if r := e.do("PATCH", "/v1/nodes/"+b.ID, e.member, `{"bmc":{"system_id":"/redfish/v1/Systems/1"}}`); r.status != 403 {
		t.Fatalf("member patch: %d %s", r.status, r.body)
	}
	for _, n := range []api.Node{b, c} {
		var cur api.Node
		e.mustJSON("GET", "/v1/nodes/"+n.ID, adminSecret, "", 200, &cur)
		if cur.Version != n.Version || cur.BMC.Address != n.BMC.Address || cur.BMC.SystemID != n.BMC.SystemID {
			t.Fatalf("a refused PATCH changed node %s: %+v", n.Name, cur.BMC)
		}
	}
	// Other changes of a node are no conflict with its own endpoint.
	e.mustJSON("PATCH", "/v1/nodes/"+a.ID, adminSecret, `{"bmc":{"address":"https://10.9.0.1/"}}`, 200, nil)

	// While a is being deleted it still holds the server: the retire job
	// is powering it off. Forced away, it frees the endpoint.
	e.mustJSON("DELETE", "/v1/nodes/"+a.ID, adminSecret, "", 202, nil)
	r := e.do("POST", "/v1/nodes", adminSecret, bmcBody("bmc-again", "https://10.9.0.1", "/redfish/v1/Systems/1"))
	wantDuplicateBMC(t, "create while the holder is deleting", r, a)
	if p := r.problem(t); !strings.Contains(p.Detail, "still being deleted") {
		t.Fatalf("the conflict does not say the holder is being deleted: %s", p.Detail)
	}
	e.mustJSON("DELETE", "/v1/nodes/"+a.ID+"?force=true", adminSecret, "", 202, nil)
	e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("bmc-again", "https://10.9.0.1", "/redfish/v1/Systems/1"), 201, nil)

	// Concurrent enrollments of one endpoint: exactly one wins, every
	// other is told which node did.
	const racers = 6
	statuses := make([]int, racers)
	bodies := make([]string, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i], bodies[i] = post(e, "/v1/nodes", bmcBody(fmt.Sprintf("racer-%d", i), "https://10.9.0.2", ""))
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, st := range statuses {
		switch {
		case st == 201 && winner < 0:
			winner = i
		case st == 201:
			t.Fatalf("racers %d and %d both enrolled https://10.9.0.2", winner, i)
		case st != 409:
			t.Fatalf("racer %d: %d %s", i, st, bodies[i])
		}
	}
	if winner < 0 {
		t.Fatalf("no racer won: %v", bodies)
	}
	var w api.Node
	e.mustJSON("GET", fmt.Sprintf("/v1/nodes/racer-%d", winner), adminSecret, "", 200, &w)
	for i, body := range bodies {
		if i != winner && (!strings.Contains(body, w.ID) || !strings.Contains(body, `"field":"bmc.address"`)) {
			t.Errorf("racer %d's conflict does not name the winner %s: %s", i, w.ID, body)
		}
	}
}

// post sends an admin POST from any goroutine (env.do may call t.Fatal,
// which only the test's own goroutine may).
func post(e *env, path, body string) (int, string) {
	req, err := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+adminSecret)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	_, _ = e.bodies.Write(b)
	return res.StatusCode, string(b)
}

// wantSameMachine checks a 409 refusing a second node for holder's
// machine: on field, naming holder by name and id.
func wantSameMachine(t *testing.T, what string, r resp, field string, holder api.Node) {
	t.Helper()
	if r.status != 409 {
		t.Fatalf("%s: status %d, want 409: %s", what, r.status, r.body)
	}
	p := r.problem(t)
	if p.Code != "conflict" || p.Field != field ||
		!strings.Contains(p.Detail, fmt.Sprintf("%q", holder.Name)) || !strings.Contains(p.Detail, holder.ID) {
		t.Fatalf("%s: want a conflict on %s naming node %s (%s): %s", what, field, holder.Name, holder.ID, r.body)
	}
}

// Issue #25: one machine, one node, whatever the spelling, with no BMC to
// ask (it is down, or far): a node without system_id is its BMC's only
// system, so it and any other node on that BMC are one machine; a system
// spelled as a bare id, without /redfish/v1, with trailing slashes or as
// a URL is that system. Each case below was accepted as a second node
// (or, for the spellings, refused as invalid) before.
func TestSameMachineBySpelling(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			var a, c, s api.Node
			// iLO's trailing slash vs no system_id: the case.
			e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("only-a", "https://10.9.3.1", ""), 201, &a)
			wantSameMachine(t, "system_id with a trailing slash on a BMC enrolled without one",
				e.do("POST", "/v1/nodes", adminSecret, bmcBody("dup", "https://10.9.3.1", "/redfish/v1/Systems/1/")), "bmc.system_id", a)
			// Default port and host case on the address too.
			wantSameMachine(t, "default port", e.do("POST", "/v1/nodes", adminSecret, bmcBody("dup", "https://10.9.3.1:443/", "/redfish/v1/Systems/1")), "bmc.system_id", a)
			wantSameMachine(t, "a bare id", e.do("POST", "/v1/nodes", adminSecret, bmcBody("dup", "HTTPS://10.9.3.1", "1")), "bmc.system_id", a)
			e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("sys-c", "https://bmc-c.example", "/redfish/v1/Systems/1"), 201, &c)
			wantSameMachine(t, "no system_id, host case", e.do("POST", "/v1/nodes", adminSecret, bmcBody("dup", "https://BMC-C.example:443", "")), "bmc.system_id", c)
			// Spellings of one system: accepted, and one key.
			e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("spelled", "https://10.9.3.2", "Systems/1"), 201, &s)
			for _, id := range []string{"1", "/Systems/1/", "/redfish/v1/Systems/1/", "HTTPS://10.9.3.2:443/redfish/v1/Systems/1", "/redfish/v1/systems/1"} {
				wantDuplicateBMC(t, "system_id "+id, e.do("POST", "/v1/nodes", adminSecret, bmcBody("dup", "https://10.9.3.2", id)), s)
			}
			// A system_id URL names its BMC: another host is refused.
			if r := e.do("POST", "/v1/nodes", adminSecret, bmcBody("dup", "https://10.9.3.2", "https://10.9.3.3/redfish/v1/Systems/2")); r.status != 400 ||
				r.problem(t).Field != "bmc.system_id" {
				t.Fatalf("a system_id on another BMC: %d %s", r.status, r.body)
			}
			e.mustJSON("GET", "/v1/nodes/dup", adminSecret, "", 404, nil)
			// Another system of a BMC whose node names one is another machine.
			var c2 api.Node
			e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("sys-c2", "https://bmc-c.example", "2"), 201, &c2)

			// PATCH onto a's BMC, or c2's system_id cleared: refused, nothing changed.
			wantSameMachine(t, "patch onto a BMC enrolled without system_id",
				e.do("PATCH", "/v1/nodes/"+s.ID, adminSecret, `{"bmc":{"address":"https://10.9.3.1"}}`), "bmc.system_id", a)
			wantSameMachine(t, "patch clearing system_id", e.do("PATCH", "/v1/nodes/"+c2.ID, adminSecret, `{"bmc":{"system_id":""}}`), "bmc.system_id", c)
			// Another spelling of its own system changes nothing (no new
			// version, no re-verify).
			var same api.Node
			e.mustJSON("PATCH", "/v1/nodes/"+s.ID, adminSecret, `{"bmc":{"system_id":"/redfish/v1/Systems/1/"}}`, 200, &same)
			if same.Version != s.Version || same.BMC.SystemID != "Systems/1" {
				t.Fatalf("a PATCH respelling the system changed the node: version %d → %d, system_id %q", s.Version, same.Version, same.BMC.SystemID)
			}
		})
	}
}

// resolving makes enroll ask the BMC which system a node is, as the
// controller does.
func resolving(t testing.TB) func(*httpapi.Options) {
	o := redfish.NewOpener(redfish.Options{Timeout: 5 * time.Second})
	t.Cleanup(o.Close)
	return func(opts *httpapi.Options) {
		opts.Service.ResolveSystemsAtEnroll(bmc.Drivers{"redfish": o}, 5*time.Second)
	}
}

func startSim(t testing.TB, opts sim.Options) *sim.Fleet {
	t.Helper()
	opts.Password = bmcPassword
	f, err := sim.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// Issue #25, with the BMC answering at enroll (an iLO: every @odata.id
// ends with a slash): a node without system_id gets the system the BMC
// serves, and every other spelling of that machine, without system_id
// too, is a 409 naming it. A system the BMC does not have is refused on
// bmc.system_id with the URL tried and the systems it lists.
func TestSameMachineResolvedAtEnroll(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ilo := startSim(t, sim.Options{IDs: []string{"1"}, TrailingSlashIDs: true})
			// Reached by name, so that the host's case can differ.
			url := strings.Replace(ilo.URL(), "127.0.0.1", "localhost", 1)
			e := newEnv(t, open, resolving(t))
			var a api.Node
			e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("ilo-a", url, ""), 201, &a)
			if a.BMC.SystemID != "/redfish/v1/Systems/1/" {
				t.Fatalf("enrolled without system_id: system_id %q, want the BMC's /redfish/v1/Systems/1/", a.BMC.SystemID)
			}
			upper := strings.ToUpper(url)
			for _, c := range []struct{ address, system string }{
				{url, ""}, // the BMC's only system, asked again
				{url, "/redfish/v1/Systems/1/"},
				{url, "/redfish/v1/Systems/1"},
				{url + "/", "1"},
				{upper, "/Systems/1"},
				{url, upper + "/redfish/v1/Systems/1/"},
				{upper, ""},
			} {
				r := e.do("POST", "/v1/nodes", adminSecret, bmcBody("ilo-dup", c.address, c.system))
				wantDuplicateBMC(t, fmt.Sprintf("%s system_id %q", c.address, c.system), r, a)
			}
			r := e.do("POST", "/v1/nodes", adminSecret, bmcBody("ilo-dup", url, "/redfish/v1/Systems/2"))
			p := r.problem(t)
			if r.status != 400 || p.Field != "bmc.system_id" || !strings.Contains(p.Detail, url+"/redfish/v1/Systems/2 answered 404") ||
				!strings.Contains(p.Detail, "lists /redfish/v1/Systems/1/") || !strings.Contains(p.Detail, "set bmc.system_id to it, or leave system_id unset") {
				t.Fatalf("a system the BMC does not have: %d %s", r.status, r.body)
			}
			e.mustJSON("GET", "/v1/nodes/ilo-dup", adminSecret, "", 404, nil)

			// Several systems and none named: refused, listing them. Named:
			// each its own node, keyed by the BMC's spelling.
			multi := startSim(t, sim.Options{IDs: []string{"A", "B"}, TrailingSlashIDs: true})
			r = e.do("POST", "/v1/nodes", adminSecret, bmcBody("multi", multi.URL(), ""))
			if p := r.problem(t); r.status != 400 || p.Field != "bmc.system_id" || !strings.Contains(p.Detail, "several systems") ||
				!strings.Contains(p.Detail, "/redfish/v1/Systems/A/, /redfish/v1/Systems/B/") {
				t.Fatalf("several systems, none named: %d %s", r.status, r.body)
			}
			var ma, mb api.Node
			e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("multi-a", multi.URL(), "A"), 201, &ma)
			e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("multi-b", multi.URL(), "/redfish/v1/Systems/B"), 201, &mb)
			if ma.BMC.SystemID != "/redfish/v1/Systems/A/" || mb.BMC.SystemID != "/redfish/v1/Systems/B/" {
				t.Fatalf("systems as the BMC serves them: %q, %q", ma.BMC.SystemID, mb.BMC.SystemID)
			}
			wantDuplicateBMC(t, "multi-a again", e.do("POST", "/v1/nodes", adminSecret, bmcBody("multi-dup", multi.URL(), "Systems/A")), ma)
			// Case matters in a Redfish id.
			r = e.do("POST", "/v1/nodes", adminSecret, bmcBody("multi-dup", multi.URL(), "a"))
			if r.status != 400 || r.problem(t).Field != "bmc.system_id" {
				t.Fatalf("system a on a BMC with A and B: %d %s", r.status, r.body)
			}
		})
	}
}

// A BMC that does not answer does not hold enroll up beyond its bound:
// the node is enrolled on its settings, the verify job asks later.
func TestEnrollDoesNotWaitForADeadBMC(t *testing.T) {
	// A listener that never accepts: connections hang as to a dead BMC.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	o := redfish.NewOpener(redfish.Options{Timeout: 5 * time.Second})
	t.Cleanup(o.Close)
	e := newEnv(t, stores()["sqlite"], func(opts *httpapi.Options) {
		opts.Service.ResolveSystemsAtEnroll(bmc.Drivers{"redfish": o}, 300*time.Millisecond)
	})
	start := time.Now()
	var n api.Node
	e.mustJSON("POST", "/v1/nodes", adminSecret, bmcBody("hung", "http://"+ln.Addr().String(), ""), 201, &n)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("enroll took %s with a hung BMC, bound 300ms", took)
	}
	if n.BMC.SystemID != "" || n.ProvisionState != api.StateEnroll {
		t.Fatalf("enrolled with a hung BMC: system_id %q, state %s", n.BMC.SystemID, n.ProvisionState)
	}
}
