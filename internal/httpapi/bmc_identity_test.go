package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
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
