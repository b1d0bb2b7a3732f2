package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestConfigDriveAndReadyCallback runs the whole path over real HTTP: the
// deploy inserts the config drive URL in the simulated BMC's USB slot, the
// BMC fetches the ISO from the controller, the simulated OS reads the
// ready URL and token from it after power-on and calls back, and only then
// is the instance active. Cleanup ejects both slots.
func TestConfigDriveAndReadyCallback(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 1, SimOptions: sim.Options{OSBootDelay: 300 * time.Millisecond}})
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	sys := env.Sim.SystemIDs()[0]
	node := enroll(admin, env, 0, "cd-0", "cd")
	admin.waitNode(node.ID, 30*time.Second, false, available)

	var inst api.Instance
	member.call("POST", "/v1/instances", `{"name":"web","resource_class":"cd","image":{"url":"https://images.example/x.iso"},
		"user_data":"#cloud-config\nhostname: web\n","deploy_timeout":"5m"}`, 201, &inst)
	deadline := time.Now().Add(60 * time.Second)
	for inst.State != "active" {
		if time.Now().After(deadline) || inst.State == "error" {
			t.Fatalf("instance did not become active: %+v; sim OS %+v", inst, osOf(t, env, sys))
		}
		time.Sleep(100 * time.Millisecond)
		member.call("GET", "/v1/instances/"+inst.ID, "", 200, &inst)
	}
	if !inst.Ready || inst.BootedAt == nil || inst.DeployTimeout != "5m" {
		t.Errorf("active instance: %+v", inst)
	}
	os := osOf(t, env, sys)
	if os.ReadyCalls < 1 || os.LastStatus != 204 {
		t.Errorf("simulated OS: %+v", os)
	}
	slots, err := env.Sim.MediaSlots(sys)
	if err != nil {
		t.Fatal(err)
	}
	var drive, cd bool
	for _, s := range slots {
		switch {
		case s.ConfigDrive && strings.Contains(s.Image, "/v1/instances/"+inst.ID+"/config-drive/"):
			drive = true
		case s.Inserted && s.Image == "https://images.example/x.iso":
			cd = true
		}
	}
	if !drive || !cd {
		t.Errorf("media after deploy (want image and config drive): %+v", slots)
	}
	var evs api.EventList
	admin.call("GET", "/v1/nodes/"+node.ID+"/events", "", 200, &evs)
	var waited, activated bool
	for _, e := range evs.Items {
		waited = waited || strings.Contains(e.Message, "with its config drive") && strings.Contains(e.Message, "waiting up to 5m")
		activated = activated || e.New == "active" && strings.Contains(e.Message, "reported ready")
	}
	if !waited || !activated {
		t.Errorf("events do not tell the story (waited=%v activated=%v): %+v", waited, activated, evs.Items)
	}

	member.call("DELETE", "/v1/instances/"+inst.ID, "", 202, nil)
	admin.waitNode(node.ID, 30*time.Second, false, available)
	if slots, _ = env.Sim.MediaSlots(sys); anyInserted(slots) {
		t.Errorf("media left after cleanup: %+v", slots)
	}
}

// TestConfigDriveOnSingleSlotBMC: a BMC whose only virtual media slot
// holds the boot image cannot take the config drive; the deploy fails at
// once saying so, and deleting the instance cleans the node as usual.
func TestConfigDriveOnSingleSlotBMC(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 1, SimOptions: sim.Options{MediaSlots: []string{"CD"}}})
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	node := enroll(admin, env, 0, "one-slot", "cd")
	admin.waitNode(node.ID, 30*time.Second, false, available)

	var inst api.Instance
	member.call("POST", "/v1/instances", `{"name":"web","resource_class":"cd","image":{"url":"https://images.example/x.iso"},"user_data":"#!/bin/sh\necho hi\n"}`, 201, &inst)
	deadline := time.Now().Add(30 * time.Second)
	for inst.State == "deploying" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		member.call("GET", "/v1/instances/"+inst.ID, "", 200, &inst)
	}
	if inst.State != "error" || !strings.Contains(inst.LastError, "user_data needs a config drive") ||
		!strings.Contains(inst.LastError, "one virtual media slot") {
		t.Fatalf("instance: state %s, last_error %q", inst.State, inst.LastError)
	}
	if p, _ := env.Sim.Power(env.Sim.SystemIDs()[0]); p != "Off" {
		t.Errorf("the machine was powered on (%s) although it could not get its user data", p)
	}
	member.call("DELETE", "/v1/instances/"+inst.ID, "", 202, nil)
	admin.waitNode(node.ID, 30*time.Second, false, available)
}

func osOf(t *testing.T, env *testenv.Env, sys string) sim.OSStatus {
	t.Helper()
	s, err := env.Sim.OS(sys)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func anyInserted(slots []sim.MediaSlot) bool {
	for _, s := range slots {
		if s.Inserted {
			return true
		}
	}
	return false
}
