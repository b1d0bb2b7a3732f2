package app_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// quickDialect shortens a dialect's delays (an AMI's 3 s insert) so the
// tests take seconds.
func quickDialect(q *sim.Quirks) {
	if q.InsertDelay > 0 {
		q.InsertDelay = 400 * time.Millisecond
	}
}

// TestVendorDialectsLifecycle drives a node of every vendor dialect
// through the API alone, as an operator and a Terraform run would, on a
// simulated machine that boots the real deploy agent: enroll without a
// system_id, the inventory the BMC gives, power on and a graceful power
// off, an inspection, an image deploy with user data and the OS's
// callback, its erasing clean-up, a live deploy with user data (its config
// drive in a second slot, or a clear failure before any power-on where the
// BMC cannot carry it), and retiring the node. A BMC without usable
// virtual media boots the agent from the network. An operator's media in
// a slot (an XCC's floppy) is never touched.
func TestVendorDialectsLifecycle(t *testing.T) {
	for _, d := range sim.VendorDialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			q := sim.DialectQuirks(d)
			env := testenv.Start(t, testenv.Options{Systems: 1, SimAgent: true, AgentNetboot: true, AgentTimeout: time.Minute,
				SimOptions: sim.Options{Dialect: d, Tweak: quickDialect}})
			admin := client{t, env.URL, env.AdminToken}
			member := client{t, env.URL, env.MemberToken(t, "p1")}
			sys := env.Sim.SystemIDs()[0]
			logMachineOnFailure(t, env, sys)
			start := time.Now()

			var n api.Node
			admin.call("POST", "/v1/nodes", fmt.Sprintf(`{"name":"%s-1","driver":"redfish","resource_class":"rc","bmc":{"address":%q,"username":"admin","password":"password"}}`,
				d, env.Sim.URL()), 201, &n)
			n = admin.waitNode(n.ID, 30*time.Second, false, available)
			wantCPUs, wantMem := q.CPU.Threads(), int(q.MemoryGiB*1024)
			if wantMem == 0 {
				wantMem = 64 << 10
			}
			if q.ZeroInventoryWhenOff {
				wantCPUs, wantMem = 0, 0 // off at enroll: unknown, not 0 stored as a fact
			}
			if n.Properties.CPUs != wantCPUs || n.Properties.MemoryMB != wantMem {
				t.Fatalf("after enroll: properties %+v, want %d hardware threads (%+v) and %d MiB", n.Properties, wantCPUs, q.CPU, wantMem)
			}

			admin.call("POST", "/v1/nodes/"+n.ID+"/power", `{"target":"on"}`, 202, nil)
			admin.waitNode(n.ID, 30*time.Second, false, func(n api.Node) bool { return n.PowerState == "on" })
			admin.call("POST", "/v1/nodes/"+n.ID+"/power", `{"target":"soft_off"}`, 202, nil)
			admin.waitNode(n.ID, 30*time.Second, false, func(n api.Node) bool { return n.PowerState == "off" })

			// Inspection: the agent reports the machine, whatever the
			// BMC's ProcessorSummary said.
			admin.call("POST", "/v1/nodes/"+n.ID+"/inspect", "", 202, nil)
			n = admin.waitNode(n.ID, time.Minute, false, func(n api.Node) bool { return n.ProvisionState == api.StateAvailable })
			if n.Fault != "" || n.LastError != "" {
				t.Fatalf("inspection: fault %q, last_error %q", n.Fault, n.LastError)
			}
			if n.Properties.CPUs != q.CPU.Threads() || n.Properties.LocalGB == 0 {
				t.Fatalf("after inspection: properties %+v, want %d CPUs and a disk", n.Properties, q.CPU.Threads())
			}
			desc, _ := env.Sim.Machine(sys)
			if wantBoot := map[bool]string{true: "network", false: "cd"}[q.EmptyMediaCollection]; desc.BootDevice != wantBoot {
				t.Errorf("the agent booted from %q, want %s", desc.BootDevice, wantBoot)
			}

			// An image deploy with user data that waits for the OS.
			raw := testvm.DiskImage(4<<20, "BAREMETAL-DIALECT-IMAGE")
			sum := sha256.Sum256(raw)
			var inst api.Instance
			member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"disk","resource_class":"rc","image":{"url":%q,"checksum":"sha256:%s"},
				"deploy_method":"image","user_data":"#cloud-config\nhostname: d\n","deploy_timeout":"2m"}`, serveImage(t, raw), hex.EncodeToString(sum[:])), 201, &inst)
			if got := waitInstanceState(t, member, inst.ID, time.Minute, "active", "error"); got.State != "active" {
				t.Fatalf("image deploy: %s %q", got.State, got.LastError)
			}
			member.call("DELETE", "/v1/instances/"+inst.ID, "", 202, nil)
			admin.waitNode(n.ID, time.Minute, false, available)

			// A live deploy with user data needs a second virtual media slot.
			live := env.Sim.URL() + sim.DemoImagePath
			member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"web","resource_class":"rc","deploy_method":"live","image":{"url":%q},"user_data":"#!/bin/sh\necho hi\n"}`, live), 201, &inst)
			slots, _ := env.Sim.MediaSlots(sys)
			got := waitInstanceState(t, member, inst.ID, 30*time.Second, "active", "error")
			switch {
			case q.EmptyMediaCollection:
				if got.State != "error" || !strings.Contains(got.LastError, "no usable virtual media") {
					t.Fatalf("live deploy without virtual media: %s %q", got.State, got.LastError)
				}
			case len(slots) == 1:
				if got.State != "error" || !strings.Contains(got.LastError, "user_data needs a config drive") ||
					!strings.Contains(got.LastError, "one virtual media slot") {
					t.Fatalf("live deploy with user data on a one-slot BMC: %s %q", got.State, got.LastError)
				}
			default:
				if got.State != "active" {
					t.Fatalf("live deploy: %s %q", got.State, got.LastError)
				}
				if img, in, _ := env.Sim.Media(sys); !in || img != live {
					t.Fatalf("the boot CD holds %q (inserted %v)", img, in)
				}
			}
			if got.State == "error" {
				if p, _ := env.Sim.Power(sys); p != "Off" {
					t.Fatalf("the machine was powered on (%s) for a deploy that could not work", p)
				}
			}
			member.call("DELETE", "/v1/instances/"+inst.ID, "", 202, nil)
			admin.waitNode(n.ID, time.Minute, false, available)

			admin.call("DELETE", "/v1/nodes/"+n.ID, "", 202, nil)
			waitGone(t, env, n.ID)
			if p, _ := env.Sim.Power(sys); p != "Off" {
				t.Errorf("retired machine left %s", p)
			}
			slots, _ = env.Sim.MediaSlots(sys)
			for _, s := range slots {
				op, operator := q.OperatorMedia[s.ID]
				switch {
				case operator && (!s.Inserted || s.Image != op):
					t.Errorf("the operator's media in slot %s was touched: %+v", s.ID, s)
				case !operator && s.Inserted:
					t.Errorf("slot %s still holds %s after the clean-up", s.ID, s.Image)
				}
			}
			t.Logf("%s: enroll to retired in %s", d, time.Since(start).Round(time.Millisecond))
		})
	}
}

// A BMC that answers InsertMedia 204 and inserts nothing (some iDRAC
// firmware) never gets its instance active: the deploy fails naming the
// slot and what it shows, and the node heals at the clean-up.
func TestDeployOnBMCThatDropsMedia(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 1, SimOptions: sim.Options{Dialect: sim.DialectIDRAC9,
		Tweak: func(q *sim.Quirks) { q.InsertIgnored = true }}})
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	n := enroll(admin, env, 0, "idrac-1", "rc")
	var inst api.Instance
	member.call("POST", "/v1/instances", `{"name":"web","resource_class":"rc","image":{"url":"https://images.example/x.iso"}}`, 201, &inst)
	got := waitInstanceState(t, member, inst.ID, 60*time.Second, "active", "error")
	if got.State != "error" || !strings.Contains(got.LastError, "virtual media slot CD") || !strings.Contains(got.LastError, "Inserted=false") {
		t.Fatalf("instance: %s %q", got.State, got.LastError)
	}
	if p, _ := env.Sim.Power(env.Sim.SystemIDs()[0]); p != "Off" {
		t.Fatalf("the machine was powered on (%s) without its image", p)
	}
	member.call("DELETE", "/v1/instances/"+inst.ID, "", 202, nil)
	admin.waitNode(n.ID, 30*time.Second, false, available)
}
