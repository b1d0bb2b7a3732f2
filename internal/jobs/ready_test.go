package jobs

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

const testPublicURL = "http://controller.example:8080"

func withPublicURL(u string) harnessOpt { return func(c *Config) { c.PublicURL = u } }

// setInstance changes a stored instance (what the service layer would have
// written at create time).
func (h *harness) setInstance(id string, fn func(i *baremetal.Instance)) {
	h.t.Helper()
	h.inTx(func(tx store.Tx) error {
		i, err := tx.GetInstance(h.ctx, id)
		if err != nil {
			return err
		}
		fn(i)
		return tx.UpdateInstance(h.ctx, i)
	})
}

// An instance whose user data cannot reach the OS fails its deploy at
// once with the reason, instead of booting a machine without its
// configuration or retrying something that cannot work.
func TestDeployWithUserDataNeedsAConfigDrive(t *testing.T) {
	for name, tc := range map[string]struct {
		media     bool
		publicURL string
		want      string
	}{
		"no virtual media": {media: false, publicURL: testPublicURL, want: "has no virtual media"},
		"no public url":    {media: true, publicURL: "", want: "no --public-url"},
	} {
		t.Run(name, func(t *testing.T) {
			h, sys := newFakeHarness(t, openSQLite(t), 1, withPublicURL(tc.publicURL))
			h.fake.media = tc.media
			n := h.addNode("n1", sys[0], baremetal.StateDeploying, false)
			inst := h.addInstance(n, "web")
			h.setInstance(inst.ID, func(i *baremetal.Instance) { i.UserData = "#cloud-config\n" })
			h.start()
			h.enqueue(DeployArgs{NodeID: n.ID, InstanceID: inst.ID})
			got := h.waitNode(n.ID, wait, "deploy_failed", func(n *baremetal.Node) bool {
				return n.ProvisionState == baremetal.StateDeployFailed
			})
			if !strings.Contains(got.LastError, "user_data needs a config drive") || !strings.Contains(got.LastError, tc.want) {
				t.Errorf("last_error %q does not say why (want %q)", got.LastError, tc.want)
			}
			i, err := h.st.GetInstance(h.ctx, inst.ID)
			if err != nil || i.State != baremetal.InstanceError || i.LastError != got.LastError {
				t.Errorf("instance: %+v %v", i, err)
			}
			// Failed for good on the first attempt, not retried.
			waitJob(t, h, n.ID, "deploy", string(rivertype.JobStateCancelled))
			if p, _ := h.fake.Power(sys[0]); p != "Off" {
				t.Errorf("machine powered %s although its deploy could not deliver its config", p)
			}
		})
	}
}

// With a deploy_timeout the node boots with its config drive attached,
// then waits for the callback; without one it fails with deploy_timeout.
func TestDeployWaitsForReadyCallbackThenTimesOut(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newFakeHarness(t, open(t), 1, withPublicURL(testPublicURL))
		h.fake.media = true
		n := h.addNode("n1", sys[0], baremetal.StateDeploying, false)
		inst := h.addInstance(n, "web")
		const timeout = 700 * time.Millisecond
		h.setInstance(inst.ID, func(i *baremetal.Instance) {
			i.DeployTimeout, i.ReadyToken, i.ReadyTokenHash = timeout, "rdy_test-token", "unused-here"
		})
		h.start()
		h.enqueue(DeployArgs{NodeID: n.ID, InstanceID: inst.ID})

		// Booted: power on, config drive in its slot, still deploying.
		h.waitNode(n.ID, wait, "booted", func(n *baremetal.Node) bool { return n.PowerState == baremetal.PowerOn })
		var booted *baremetal.Instance
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			i, err := h.st.GetInstance(h.ctx, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			if i.BootedAt != nil {
				booted = i
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if booted == nil {
			i, _ := h.st.GetInstance(h.ctx, inst.ID)
			t.Fatalf("instance never recorded its boot: %+v\nnode %+v\n%s", i, h.node(n.ID), dumpEvents(h.events(n.ID)))
		}
		h.fake.mu.Lock()
		drive, cd := h.fake.systems[sys[0]].drive, h.fake.systems[sys[0]].cd
		h.fake.mu.Unlock()
		wantDrive := testPublicURL + api.ConfigDrivePath(inst.ID, configdrive.Key("rdy_test-token"))
		if drive != wantDrive || cd != inst.Image.URL {
			t.Errorf("media: cd=%q drive=%q, want cd=%q drive=%q", cd, drive, inst.Image.URL, wantDrive)
		}
		if cur := h.node(n.ID); cur.ProvisionState != baremetal.StateDeploying && cur.ProvisionState != baremetal.StateDeployFailed {
			t.Fatalf("node %s before the callback or deadline", cur.ProvisionState)
		}
		if e := findEvent(h.events(n.ID), "deploy", "waiting up to"); e == nil {
			t.Errorf("no event says the deploy waits for the callback:\n%s", dumpEvents(h.events(n.ID)))
		}

		// No callback: the deadline fails the deploy with deploy_timeout.
		got := h.waitNode(n.ID, wait, "deploy_failed", func(n *baremetal.Node) bool {
			return n.ProvisionState == baremetal.StateDeployFailed
		})
		if got.Fault != baremetal.FaultDeployTimeout || !strings.Contains(got.LastError, "did not call POST /v1/instances/"+inst.ID+"/ready") {
			t.Errorf("fault=%q last_error=%q", got.Fault, got.LastError)
		}
		i, err := h.st.GetInstance(h.ctx, inst.ID)
		if err != nil || i.State != baremetal.InstanceError || !strings.Contains(i.LastError, "deploy_timeout") {
			t.Errorf("instance: %+v %v", i, err)
		}
		if strings.Contains(got.LastError, "rdy_test-token") || strings.Contains(dumpEvents(h.events(n.ID)), "rdy_test-token") {
			t.Error("the ready token leaked into last_error or events")
		}
	})
}

// A BMC that cannot fetch the config drive quotes its URL in the error;
// the key in it must not reach last_error, events or the jobs API.
func TestConfigDriveKeyNeverInErrors(t *testing.T) {
	h, sys := newFakeHarness(t, openSQLite(t), 1, withPublicURL(testPublicURL))
	h.fake.media = true
	h.fake.systems[sys[0]].driveFails = true
	n := h.addNode("n1", sys[0], baremetal.StateDeploying, false)
	inst := h.addInstance(n, "web")
	h.setInstance(inst.ID, func(i *baremetal.Instance) { i.UserData, i.ReadyToken = "#!/bin/sh\n", "rdy_secret-token" })
	key := configdrive.Key("rdy_secret-token")
	h.start()
	h.enqueue(DeployArgs{NodeID: n.ID, InstanceID: inst.ID})
	got := h.waitNode(n.ID, wait, "deploy_failed", func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateDeployFailed
	})
	if !strings.Contains(got.LastError, "could not be fetched") || !strings.Contains(got.LastError, "/config-drive/REDACTED/") {
		t.Errorf("last_error %q", got.LastError)
	}
	jobs, err := h.r.ListJobs(h.ctx, n.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	everything := got.LastError + dumpEvents(h.events(n.ID)) + fmt.Sprintf("%+v", jobs)
	if i, _ := h.st.GetInstance(h.ctx, inst.ID); i != nil {
		everything += i.LastError
	}
	if !strings.Contains(fmt.Sprintf("%+v", jobs), "could not be fetched") {
		t.Errorf("the jobs API does not show the error (so this test proves nothing): %+v", jobs)
	}
	if strings.Contains(everything, key) {
		t.Errorf("the config drive key leaked:\n%s", everything)
	}
}
