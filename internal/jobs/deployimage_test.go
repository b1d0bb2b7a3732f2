package jobs

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/imagecheck"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/netguard"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// imageServer serves a 64 KiB image at /boot.iso (with ranges), answers
// /flaky.iso with 503 for the first failures HEADs, and 404 elsewhere. It
// counts the HEADs of each path.
type imageServer struct {
	*httptest.Server
	failures int64
	heads    map[string]*atomic.Int64
}

func newImageServer(t *testing.T, failures int64) *imageServer {
	t.Helper()
	s := &imageServer{failures: failures, heads: map[string]*atomic.Int64{
		"/boot.iso": new(atomic.Int64), "/flaky.iso": new(atomic.Int64), "/down.iso": new(atomic.Int64), "/missing.iso": new(atomic.Int64),
	}}
	img := strings.Repeat("x", 64<<10)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int64
		if c := s.heads[r.URL.Path]; c != nil && r.Method == http.MethodHead {
			n = c.Add(1)
		}
		switch {
		case r.URL.Path == "/boot.iso",
			r.URL.Path == "/flaky.iso" && (r.Method != http.MethodHead || n > s.failures):
			http.ServeContent(w, r, "boot.iso", time.Time{}, strings.NewReader(img))
		case r.URL.Path == "/flaky.iso", r.URL.Path == "/down.iso":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (h *harness) instance(id string) *baremetal.Instance {
	h.t.Helper()
	inst, err := h.st.GetInstance(h.ctx, id)
	if err != nil {
		h.t.Fatalf("get instance %s: %v", id, err)
	}
	return inst
}

// waitInstance polls until the instance is in state, failing after wait.
func (h *harness) waitInstance(id string, state baremetal.InstanceState) *baremetal.Instance {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		inst := h.instance(id)
		if inst.State == state {
			return inst
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("instance %s: not %s after %s: state=%s last_error=%q\njobs: %s", inst.Name, state, wait, inst.State, inst.LastError, h.jobsOf(inst.NodeID))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// setImage points an instance at another image URL.
func (h *harness) setImage(inst *baremetal.Instance, url string) {
	h.t.Helper()
	h.setInstance(inst.ID, func(i *baremetal.Instance) { i.Image.URL = url })
	inst.Image.URL = url
}

// wantReleased checks a node after its deploy failed on the image: back
// to available with no instance, no fault, no BMC failure, its power
// known, its virtual media empty.
func wantReleased(t *testing.T, h *harness, sys string, n *baremetal.Node) {
	t.Helper()
	n = h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
	if n.Fault != "" || n.LastError != "" || n.BMCFailures != 0 || n.InstanceID != "" || n.PowerState == baremetal.PowerUnknown {
		t.Errorf("node after an image failure: fault=%q last_error=%q failures=%d instance=%q power=%s",
			n.Fault, n.LastError, n.BMCFailures, n.InstanceID, n.PowerState)
	}
	if img, in, _ := h.fleet.Media(sys); in {
		t.Errorf("virtual media still holds %q", img)
	}
	if findEvent(h.events(n.ID), "provision_state", "failed on its image, not on the node") == nil {
		t.Errorf("no event says the image was at fault:%s", dumpEvents(h.events(n.ID)))
	}
}

// A BMC that fetches media at insert (sushy-tools) and cannot fetch the
// image: the instance fails with the BMC's reason, the node is cleaned
// back to available without a fault (issue #9, item 5). A fetchable image
// deploys.
func TestDeployUnfetchableImageOnSushy(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		images := newImageServer(t, 0)
		h, sys := newSimHarnessWith(t, open(t), sim.Options{Systems: 2, Dialect: sim.DialectSushy})
		bad := h.addNode("n-bad", sys[0], baremetal.StateDeploying, false)
		badInst := h.addInstance(bad, "bad-1")
		h.setImage(badInst, images.URL+"/missing.iso")
		good := h.addNode("n-good", sys[1], baremetal.StateDeploying, false)
		goodInst := h.addInstance(good, "good-1")
		h.setImage(goodInst, images.URL+"/boot.iso")
		h.start()
		h.enqueue(DeployArgs{NodeID: bad.ID, InstanceID: badInst.ID})
		h.enqueue(DeployArgs{NodeID: good.ID, InstanceID: goodInst.ID})

		inst := h.waitInstance(badInst.ID, baremetal.InstanceError)
		for _, s := range []string{"could not use the image", "Failed fetching image from URL " + images.URL + "/missing.iso", "404"} {
			if !strings.Contains(inst.LastError, s) {
				t.Errorf("instance last_error does not say %q: %q", s, inst.LastError)
			}
		}
		wantReleased(t, h, sys[0], bad)

		h.waitNode(good.ID, wait, "active", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateActive })
		if inst := h.instance(goodInst.ID); inst.State != baremetal.InstanceActive {
			t.Errorf("good instance %s: %q", inst.State, inst.LastError)
		}
		if img, in, _ := h.fleet.Media(sys[1]); !in || img != goodInst.Image.URL {
			t.Errorf("good node's CD holds %q inserted=%v", img, in)
		}
	})
}

// The controller checks the image URL before the BMC gets it (the sim's
// CD here fetches nothing, so only the check can notice): an image that
// is not there fails the instance at once and never reaches the BMC; a
// flaky image server is retried, a server that stays down fails the
// instance after imageCheckAttempts. The instance's owner is told that
// the image is unreachable, with the HTTP status when there was one; why
// no answer came (refused, no such host: what would make image URLs a
// port scanner of the controller's network) is in the node's event, for
// admins (issue #26, item 23).
func TestDeployImageCheck(t *testing.T) {
	images := newImageServer(t, 2)
	refused := httptest.NewServer(http.NotFoundHandler())
	refused.Close()
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "empty.iso", time.Time{}, strings.NewReader(""))
	}))
	defer empty.Close()

	cases := []struct {
		name, url string
		want      string // the instance's last_error; "" = deploys
		event     string // in the node's event (the admin's detail)
	}{
		{"404", images.URL + "/missing.iso", "image " + images.URL + "/missing.iso: unreachable from the controller (HTTP 404 Not Found)",
			"not found: the server answered HEAD with 404 Not Found"},
		{"refused", refused.URL + "/boot.iso", "image " + refused.URL + "/boot.iso: unreachable from the controller",
			"connection refused by " + strings.TrimPrefix(refused.URL, "http://")},
		{"dns", "http://images.nope.invalid/boot.iso", "image http://images.nope.invalid/boot.iso: unreachable from the controller",
			`DNS: host "images.nope.invalid" not found`},
		{"length", empty.URL + "/empty.iso", "image " + empty.URL + "/empty.iso: the image is empty (0 bytes)",
			"wrong length: the image is empty (0 bytes)"},
		{"down", images.URL + "/down.iso", fmt.Sprintf("gave up after %d attempts: image %s/down.iso: unreachable from the controller (HTTP 503 Service Unavailable)", imageCheckAttempts, images.URL),
			fmt.Sprintf("gave up after %d attempts: image %s/down.iso: the image server answered HEAD with 503", imageCheckAttempts, images.URL)},
		{"metadata", "http://169.254.169.254/latest/meta-data/", "image http://169.254.169.254/latest/meta-data/: unreachable from the controller",
			"refused by the controller's image URL policy"},
		{"flaky", images.URL + "/flaky.iso", "", ""},
		{"ok", images.URL + "/boot.iso", "", ""},
	}
	loopback, _ := netguard.ParsePrefixes("--image-url-allow", "127.0.0.0/8") // the test's image servers
	h, sys := newSimHarness(t, openSQLite(t), len(cases), func(c *Config) {
		c.ImageCheck = imagecheck.New(imagecheck.Options{Timeout: 2 * time.Second, Allow: loopback})
	})
	nodes := make([]*baremetal.Node, len(cases))
	insts := make([]*baremetal.Instance, len(cases))
	for i, tc := range cases {
		nodes[i] = h.addNode("n-"+tc.name, sys[i], baremetal.StateDeploying, false)
		insts[i] = h.addInstance(nodes[i], "i-"+tc.name)
		h.setImage(insts[i], tc.url)
	}
	h.start()
	for i := range cases {
		h.enqueue(DeployArgs{NodeID: nodes[i].ID, InstanceID: insts[i].ID})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				h.waitNode(nodes[i].ID, wait, "active", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateActive })
				h.checkBoot(t, sys[i], tc.url)
				return
			}
			inst := h.waitInstance(insts[i].ID, baremetal.InstanceError)
			if inst.LastError != tc.want {
				t.Errorf("last_error %q, want %q", inst.LastError, tc.want)
			}
			wantReleased(t, h, sys[i], nodes[i])
			if findEvent(h.events(nodes[i].ID), "provision_state", tc.event) == nil {
				t.Errorf("no event of node %s has the detail %q:%s", nodes[i].Name, tc.event, dumpEvents(h.events(nodes[i].ID)))
			}
		})
	}
	if n := images.heads["/down.iso"].Load(); n != imageCheckAttempts {
		t.Errorf("a server that stays down was checked %d times, want %d", n, imageCheckAttempts)
	}
	if n := images.heads["/missing.iso"].Load(); n != 1 {
		t.Errorf("a missing image was checked %d times, want once", n)
	}
	if n := images.heads["/flaky.iso"].Load(); n != 3 {
		t.Errorf("the flaky image was checked %d times, want 3 (two 503s, then the image)", n)
	}
}
