package app_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestSushyLifecycle runs a node's life against BMCs that behave like
// sushy-tools (boot override quirks, images fetched at insert), with the
// controller's image check on, through the API only (issue #9, items 1
// and 5): deploy and delete finish; an image the controller finds missing,
// and one only the BMC cannot fetch, fail their instance with the reason
// and leave the node available without a fault; deleting such an instance
// leaves the node alone; retiring the node removes it.
func TestSushyLifecycle(t *testing.T) {
	t.Parallel()
	img := strings.Repeat("x", 64<<10)
	images := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/boot.iso":
			http.ServeContent(w, r, "boot.iso", time.Time{}, strings.NewReader(img))
		case r.URL.Path == "/ranges-only.iso" && (r.Method == http.MethodHead || r.Header.Get("Range") != ""):
			// Looks fine to the controller's check; the BMC's full GET fails.
			http.ServeContent(w, r, "boot.iso", time.Time{}, strings.NewReader(img))
		case r.URL.Path == "/ranges-only.iso":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	defer images.Close()

	env := testenv.Start(t, testenv.Options{Systems: 1, ImageCheck: true, SimOptions: sim.Options{Dialect: sim.DialectSushy}})
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	n := enroll(admin, env, 0, "sushy-0", "sushy")
	create := func(name, path string) api.Instance {
		var inst api.Instance
		member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":%q,"resource_class":"sushy","image":{"url":%q}}`, name, images.URL+path), 201, &inst)
		return inst
	}
	waitInstance := func(id string, state api.InstanceState) api.Instance {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var inst api.Instance
			member.call("GET", "/v1/instances/"+id, "", 200, &inst)
			if inst.State == state {
				return inst
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %s: not %s after 30s: state=%s last_error=%q", inst.Name, state, inst.State, inst.LastError)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// A good image deploys, and deleting it cleans the node on sushy.
	inst := create("vm-ok", "/boot.iso")
	waitInstance(inst.ID, "active")
	member.call("DELETE", "/v1/instances/"+inst.ID, "", 202, nil)
	admin.waitNode(n.ID, 30*time.Second, false, available)

	for _, tc := range []struct{ name, path, want string }{
		{"vm-missing", "/missing.iso", "image " + images.URL + "/missing.iso: unreachable from the controller (HTTP 404 Not Found)"},
		{"vm-bmc-fetch", "/ranges-only.iso", "Failed fetching image from URL " + images.URL + "/ranges-only.iso: 500 Server Error"},
	} {
		inst := create(tc.name, tc.path)
		got := waitInstance(inst.ID, "error")
		if !strings.Contains(got.LastError, tc.want) {
			t.Errorf("%s: last_error %q, want %q", tc.name, got.LastError, tc.want)
		}
		node := admin.waitNode(n.ID, 30*time.Second, false, available)
		if node.PowerState == "unknown" || node.LastError != "" {
			t.Errorf("%s: node after the image failed: power=%s last_error=%q", tc.name, node.PowerState, node.LastError)
		}
		// Deleting the failed instance leaves the released node alone.
		var acc api.Accepted
		member.call("DELETE", "/v1/instances/"+inst.ID, "", 202, &acc)
		member.call("GET", "/v1/instances/"+inst.ID, "", 404, nil)
		if node := admin.node(n.ID); !available(node) {
			t.Errorf("%s: deleting the failed instance touched its former node: state=%s instance=%q", tc.name, node.ProvisionState, node.InstanceID)
		}
	}

	// The node still takes instances, and retiring it finishes on sushy.
	inst = create("vm-again", "/boot.iso")
	waitInstance(inst.ID, "active")
	admin.call("DELETE", "/v1/nodes/"+n.ID, "", 202, nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest("GET", env.URL+"/v1/nodes/"+n.ID, nil)
		req.Header.Set("Authorization", "Bearer "+env.AdminToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			n := admin.node(n.ID)
			t.Fatalf("retired node still there: state=%s fault=%q last_error=%q", n.ProvisionState, n.Fault, n.LastError)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if p, _ := env.Sim.Power(env.Sim.SystemIDs()[0]); p != "Off" {
		t.Errorf("retired system left %s", p)
	}
}
