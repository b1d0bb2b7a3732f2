package app_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// TestSimMachineRebuildInPlace rebuilds an image instance on a simulated
// machine running the real deploy agent: the same instance, on the same
// node, gets a new image and user data; one agent boot erases the disks
// (the node's policy) and writes the new image and config drive; the new
// OS calls back with the new ready token, and the old config drive's URL
// stops working. A rebuild whose image is wrong leaves the instance in
// error on its node, and the next rebuild with a good image makes it
// active again. Deleting it then cleans the node as usual.
func TestSimMachineRebuildInPlace(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 1, SimAgent: true, AgentTimeout: time.Minute})
	sys := env.Sim.SystemIDs()[0]
	logMachineOnFailure(t, env, sys)
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	node := enroll(admin, env, 0, "rebuild-0", "simm")
	t.Cleanup(func() {
		if t.Failed() {
			os, _ := env.Sim.OS(sys)
			var evs api.EventList
			admin.call("GET", "/v1/nodes/"+node.ID+"/events?limit=60", "", 200, &evs)
			for _, e := range evs.Items {
				t.Logf("event %s %s %s→%s %s", e.Type, e.Field, e.Old, e.New, e.Message)
			}
			t.Logf("simulated OS: %+v", os)
			var jobs map[string]any
			admin.call("GET", "/v1/jobs?node_id="+node.ID, "", 200, &jobs)
			t.Logf("jobs: %v", jobs)
		}
	})
	desc, err := env.Sim.Machine(sys)
	if err != nil {
		t.Fatal(err)
	}
	sda := desc.Disks[0]

	imageA, imageB := testvm.DiskImage(4<<20, "BAREMETAL-IMAGE-A"), testvm.DiskImage(4<<20, "BAREMETAL-IMAGE-B")
	urlA, urlB := serveImage(t, imageA), serveImage(t, imageB)
	sumA, sumB := sha256.Sum256(imageA), sha256.Sum256(imageB)

	var inst api.Instance
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"web","node_id":%q,"image":{"url":%q,"checksum":"sha256:%s"},
		"user_data":"#cloud-config\nhostname: first\n","deploy_timeout":"2m"}`, node.ID, urlA, hex.EncodeToString(sumA[:])), 201, &inst)
	inst = waitInstanceState(t, member, inst.ID, time.Minute, api.InstanceActive, api.InstanceError)
	if inst.State != api.InstanceActive || inst.Rebuilds != 0 {
		t.Fatalf("first deploy: %+v", inst)
	}
	oldDrive := configDriveURL(t, env, inst.ID)
	// Data the first tenant left on another disk: the rebuild's erase
	// must take it (the node's policy erases between images).
	if len(desc.Disks) < 2 {
		t.Fatalf("the simulated machine has %d disks; the test needs a second one", len(desc.Disks))
	}
	writeAt(t, desc.Disks[1].File, 0, bytes.Repeat([]byte("OLD-TENANT-DATA!"), 1<<14))
	bootsBefore := mustMachine(t, env, sys).AgentBoots

	// Rebuild with image B and new user data.
	var rb api.Instance
	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", fmt.Sprintf(`{"image":{"url":%q,"checksum":"sha256:%s"},"user_data":"#cloud-config\nhostname: second\n"}`,
		urlB, hex.EncodeToString(sumB[:])), 202, &rb)
	if rb.ID != inst.ID || rb.NodeID != node.ID || rb.State != api.InstanceDeploying || rb.Rebuilds != 1 || rb.Ready || rb.Image.URL != urlB {
		t.Fatalf("rebuild answer: %+v", rb)
	}
	// A second rebuild while this one runs is refused, and changes nothing.
	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", `{}`, 409, nil)
	rb = waitInstanceState(t, member, inst.ID, time.Minute, api.InstanceActive, api.InstanceError)
	if rb.State != api.InstanceActive || !rb.Ready || rb.NodeID != node.ID || rb.Rebuilds != 1 {
		t.Fatalf("after the rebuild: %+v", rb)
	}
	if disk := readAt(t, sda.File, 0, int64(len(imageB))); !bytes.Equal(disk[512:], imageB[512:]) {
		t.Fatal("the root disk does not hold image B after the rebuild")
	}
	end := readAt(t, sda.File, sda.Bytes-64<<20, 64<<20)
	if !bytes.Contains(end, []byte("hostname: second")) || bytes.Contains(end, []byte("hostname: first")) {
		t.Error("the config drive at the end of the root disk does not carry the new user data (only)")
	}
	if got := readAt(t, desc.Disks[1].File, 0, 1<<20); !bytes.Equal(got, make([]byte, 1<<20)) {
		t.Error("the second disk still holds the first image's data after the rebuild")
	}
	if boots := mustMachine(t, env, sys).AgentBoots - bootsBefore; boots != 1 {
		t.Errorf("%d agent boots for the rebuild; want 1 (the agent that erased writes the image)", boots)
	}
	if os, _ := env.Sim.OS(sys); os.ReadyCalls != 2 || os.LastStatus/100 != 2 {
		t.Errorf("simulated OS after the rebuild: %+v; want its second readiness call accepted", os)
	}
	if resp, err := http.Get(oldDrive); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			t.Errorf("the first deploy's config drive URL still answers %d after the rebuild", resp.StatusCode)
		}
	}
	n := admin.node(node.ID)
	if n.ProvisionState != api.StateActive || n.InstanceID != inst.ID || n.Fault != "" {
		t.Fatalf("node after the rebuild: state %s, instance %q, fault %q", n.ProvisionState, n.InstanceID, n.Fault)
	}
	var evs api.EventList
	admin.call("GET", "/v1/nodes/"+node.ID+"/events?limit=200", "", 200, &evs)
	var sawRebuild, sawErase bool
	for _, e := range evs.Items {
		sawRebuild = sawRebuild || strings.HasPrefix(e.New, "rebuild/")
		sawErase = sawErase || strings.Contains(e.Message, "to erase the disks (metadata) before rebuilding")
	}
	if !sawRebuild || !sawErase {
		t.Errorf("events: rebuild steps %v, erase before the rebuild %v: %+v", sawRebuild, sawErase, evs.Items)
	}

	// A rebuild whose image fails its checksum: error, on its node.
	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", fmt.Sprintf(`{"image":{"url":%q,"checksum":"sha256:%s"}}`,
		urlA, hex.EncodeToString(sumB[:])), 202, nil)
	bad := waitInstanceState(t, member, inst.ID, time.Minute, api.InstanceActive, api.InstanceError)
	if bad.State != api.InstanceError || !strings.Contains(bad.LastError, "checksum") || bad.Rebuilds != 2 {
		t.Fatalf("rebuild with a wrong checksum: %+v", bad)
	}
	n = admin.node(node.ID)
	if n.InstanceID != inst.ID || n.ProvisionState != api.StateDeployFailed || n.Fault != "" {
		t.Fatalf("node after a rebuild that failed on its image: state %s, instance %q, fault %q; want deploy_failed, still the instance's, no fault",
			n.ProvisionState, n.InstanceID, n.Fault)
	}
	// Retried with a good image: active again.
	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", fmt.Sprintf(`{"image":{"url":%q,"checksum":"sha256:%s"}}`,
		urlA, hex.EncodeToString(sumA[:])), 202, nil)
	good := waitInstanceState(t, member, inst.ID, time.Minute, api.InstanceActive, api.InstanceError)
	if good.State != api.InstanceActive || good.LastError != "" || good.Rebuilds != 3 || good.UserData != "#cloud-config\nhostname: second\n" {
		t.Fatalf("retried rebuild: %+v", good)
	}
	if disk := readAt(t, sda.File, 0, int64(len(imageA))); !bytes.Equal(disk[512:], imageA[512:]) {
		t.Fatal("the root disk does not hold image A after the retried rebuild")
	}

	member.call("DELETE", "/v1/instances/"+inst.ID, "", 202, nil)
	admin.waitNode(node.ID, time.Minute, false, available)
}

// TestRebuildLiveAndRefusals rebuilds a live instance (the BMC boots the
// new ISO; no agent, so no erase) and checks what a rebuild refuses: bad
// input, another project's instance, a node in maintenance; each refusal
// changes nothing.
func TestRebuildLiveAndRefusals(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 1})
	sys := env.Sim.SystemIDs()[0]
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	other := client{t, env.URL, env.MemberToken(t, "p2")}
	node := enroll(admin, env, 0, "live-0", "live")

	var inst api.Instance
	member.call("POST", "/v1/instances", `{"name":"live","resource_class":"live","image":{"url":"https://images.example/one.iso"}}`, 201, &inst)
	inst = waitInstanceState(t, member, inst.ID, 30*time.Second, api.InstanceActive, api.InstanceError)
	if inst.State != api.InstanceActive {
		t.Fatalf("deploy: %+v", inst)
	}

	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", `{"image":{"url":"ftp://images.example/two.iso"}}`, 400, nil)
	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", `{"image":{"url":"https://images.example/two.iso"},"flavor":"x"}`, 400, nil)
	other.call("POST", "/v1/instances/"+inst.ID+"/rebuild", `{}`, 404, nil)
	admin.call("PATCH", "/v1/nodes/"+node.ID, `{"maintenance":true,"maintenance_reason":"disk swap"}`, 200, nil)
	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", `{"image":{"url":"https://images.example/two.iso"}}`, 409, nil)
	admin.call("PATCH", "/v1/nodes/"+node.ID, `{"maintenance":false}`, 200, nil)
	var same api.Instance
	member.call("GET", "/v1/instances/"+inst.ID, "", 200, &same)
	if same.Image.URL != inst.Image.URL || same.Rebuilds != 0 || same.State != api.InstanceActive || same.Version != inst.Version {
		t.Fatalf("refused rebuilds changed the instance: %+v, was %+v", same, inst)
	}

	var rb api.Instance
	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", `{"image":{"url":"https://images.example/two.iso"}}`, 202, &rb)
	rb = waitInstanceState(t, member, inst.ID, 30*time.Second, api.InstanceActive, api.InstanceError)
	if rb.State != api.InstanceActive || rb.Rebuilds != 1 || rb.NodeID != node.ID || rb.ID != inst.ID {
		t.Fatalf("live rebuild: %+v", rb)
	}
	if img, inserted, _ := env.Sim.Media(sys); !inserted || img != "https://images.example/two.iso" {
		t.Errorf("virtual media after the live rebuild: %q inserted %v; want the new ISO", img, inserted)
	}
	// An empty body reinstalls what the instance has.
	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", "", 202, nil)
	rb = waitInstanceState(t, member, inst.ID, 30*time.Second, api.InstanceActive, api.InstanceError)
	if rb.State != api.InstanceActive || rb.Rebuilds != 2 || rb.Image.URL != "https://images.example/two.iso" {
		t.Fatalf("reinstall: %+v", rb)
	}
	// Deleting in the middle of a rebuild succeeds at once.
	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", `{}`, 202, nil)
	member.call("DELETE", "/v1/instances/"+inst.ID, "", 202, nil)
	admin.waitNode(node.ID, 30*time.Second, false, available)
}

func mustMachine(t *testing.T, env *testenv.Env, sys string) machineStatus {
	t.Helper()
	st, err := env.Sim.Machine(sys)
	if err != nil {
		t.Fatal(err)
	}
	return machineStatus{AgentBoots: st.AgentBoots}
}

type machineStatus struct{ AgentBoots int }

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// configDriveURL is the URL of the instance's config drive as it is now
// (the key derives from its ready token, which the test reads from the
// store: the API never shows it).
func configDriveURL(t *testing.T, env *testenv.Env, id string) string {
	t.Helper()
	inst, err := env.App.Store.GetInstance(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return env.URL + api.ConfigDrivePath(id, configdrive.Key(inst.ReadyToken))
}
