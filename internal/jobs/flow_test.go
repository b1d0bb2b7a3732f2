package jobs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// stepEvents lists the "step" events of a node, as flow/step.
func stepEvents(evs []*baremetal.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Type == "step" && e.New != "" {
			out = append(out, e.New)
		}
	}
	return out
}

// A flow shows on the node while it runs: its name, its declared steps,
// the current step and since when, each step's start an event. A retire
// whose BMC does not answer stays at power_off, with the BMC's trouble in
// the node's fault; once it answers, the flow goes on from there and the
// record goes.
func TestFlowShowsItsStep(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newFakeHarness(t, open(t), 1)
		n := h.addNode("n-retire", sys[0], baremetal.StateDeleting, false)
		mustPower(t, h, sys[0], true)
		// check_machine makes no BMC call for a node whose driver cannot
		// resolve systems (the fake cannot), power_off's fail.
		h.fault(sys[0], sim.FaultDown)
		h.start()
		h.enqueue(RetireArgs{NodeID: n.ID})
		cur := h.waitNode(n.ID, wait, "faulted at power_off", func(n *baremetal.Node) bool {
			return n.Fault == baremetal.FaultBMCUnreachable
		})
		f := cur.Flow
		if f == nil || f.Name != "retire" || f.Step != "power_off" || f.StepIndex() != 1 ||
			strings.Join(f.Steps, ",") != "check_machine,power_off,clear_boot,remove" || time.Since(f.StepStartedAt) > wait {
			t.Fatalf("flow of a retire waiting for its BMC: %+v", f)
		}
		if got := strings.Join(stepEvents(h.events(n.ID)), ","); got != "retire/check_machine,retire/power_off" {
			t.Errorf("step events %s, want retire/check_machine,retire/power_off", got)
		}
		if e := findEvent(h.events(n.ID), "step", "retire: step power_off (2 of 4) started; check_machine finished after "); e == nil {
			t.Errorf("no event of power_off's start:%s", dumpEvents(h.events(n.ID)))
		}
		h.fault(sys[0], sim.FaultNone)
		h.waitGone(n.ID, wait)
		if p, _ := h.bmc.Power(sys[0]); p != "Off" {
			t.Errorf("retired node left powered %s", p)
		}
	})
}

// A flow picks up at the step its node shows, as after a crash, a
// replica's loss or a retry: a retire recorded at remove removes the
// record without asking the BMC (which would fail: it is down) for what
// the earlier steps did.
func TestFlowResumesAtItsStep(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newFakeHarness(t, open(t), 1)
		n := h.addNode("n-resumed", sys[0], baremetal.StateDeleting, false)
		h.setNode(n.ID, func(n *baremetal.Node) {
			n.Flow = &baremetal.Flow{Name: "retire", Steps: retire.names(), Step: "remove", StepStartedAt: time.Now()}
		})
		h.fault(sys[0], sim.FaultDown)
		before := h.requests(sys[0])
		h.start()
		h.enqueue(RetireArgs{NodeID: n.ID})
		h.waitGone(n.ID, wait)
		if after := h.requests(sys[0]); after != before {
			t.Errorf("the resumed retire asked the BMC again (%d requests)", after-before)
		}
	})
}

// An image deploy whose agent is lost goes back to boot_agent: the node
// shows the flow boot a new agent and wait for its write again.
func TestImageDeployBootsAgainAfterALostAgent(t *testing.T) {
	h, sys, n, _, _ := writingAgent(t, openSQLite(t), time.Now().Add(-20*time.Second), nil)
	if err := h.fleet.SetPower(sys, false); err != nil {
		t.Fatal(err)
	}
	want := "deploy/boot_agent,deploy/write_image,deploy/boot_agent,deploy/write_image"
	h.waitNode(n.ID, wait, "at write_image again", func(*baremetal.Node) bool {
		return strings.Join(stepEvents(h.events(n.ID)), ",") == want
	})
}

// An image deploy recorded at boot_disk (the agent wrote the image; then
// the controller crashed, or the BMC failed the boot) boots the written
// disk: no new agent, no second write, and the event says what the agent
// wrote, from the flow's notes.
func TestImageDeployResumesAtBootDisk(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, systems := newSimHarness(t, open(t), 1, func(c *Config) { c.AgentBoot, c.PublicURL = true, "http://controller.invalid" })
		n := h.addNode("n-written", systems[0], baremetal.StateDeploying, false)
		inst := h.addInstance(n, "web")
		h.setInstance(inst.ID, func(i *baremetal.Instance) { i.DeployMethod = baremetal.DeployImage })
		h.setNode(n.ID, func(n *baremetal.Node) {
			n.Flow = &baremetal.Flow{Name: "deploy", Steps: imageDeploy.names(), Step: "boot_disk", StepStartedAt: time.Now(),
				Notes: map[string]string{"written": "wrote 2.0 GiB to /dev/sda"}}
		})
		h.start()
		h.enqueue(DeployArgs{NodeID: n.ID, InstanceID: inst.ID})
		got := h.waitNode(n.ID, wait, "active", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateActive })
		if got.Flow != nil {
			t.Errorf("flow %+v after the deploy", got.Flow)
		}
		evs := h.events(n.ID)
		if e := findEvent(evs, "provision_state", "wrote 2.0 GiB to /dev/sda; booted from disk"); e == nil {
			t.Errorf("no event says what was written and booted:%s", dumpEvents(evs))
		}
		if e := findEvent(evs, "deploy", "booted the deploy agent"); e != nil {
			t.Errorf("the resumed deploy booted the agent again: %s", e.Message)
		}
		if target, enabled, err := h.fleet.BootOverride(systems[0]); err != nil || target != "Hdd" || enabled != "Continuous" {
			t.Errorf("boot override %s %s (%v), want a persistent boot from disk", target, enabled, err)
		}
	})
}

// A cleanup recorded at power_off after its erase powers off and
// finishes without booting the agent to erase again, and says what the
// erase did, from the flow's notes.
func TestCleanupResumesAfterTheErase(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, systems := newSimHarness(t, open(t), 1, func(c *Config) {
			c.AgentBoot, c.PublicURL, c.CleanErase = true, "http://controller.invalid", "metadata"
		})
		n := h.addNode("n-erased", systems[0], baremetal.StateCleaning, false)
		mustPower(t, h, systems[0], true)
		h.setNode(n.ID, func(n *baremetal.Node) {
			n.Flow = &baremetal.Flow{Name: "cleanup", Steps: cleanupErasing.names(), Step: "power_off", StepStartedAt: time.Now(),
				Notes: map[string]string{"erased": "disks erased (metadata): 1 disk"}}
		})
		h.start()
		h.enqueue(CleanupArgs{NodeID: n.ID})
		h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
		evs := h.events(n.ID)
		if e := findEvent(evs, "provision_state", "cleaned: disks erased (metadata): 1 disk; powered off"); e == nil {
			t.Errorf("no event says what the erase did:%s", dumpEvents(evs))
		}
		if e := findEvent(evs, "clean", "booted the deploy agent"); e != nil {
			t.Errorf("the resumed cleanup erased again: %s", e.Message)
		}
		if p, _ := h.bmc.Power(systems[0]); p != "Off" {
			t.Errorf("power %s after the cleanup", p)
		}
	})
}

// An inspection that cannot boot the agent fails at boot_agent, and the
// node's events say so, besides its last_error.
func TestInspectionFailsAtItsStep(t *testing.T) {
	h, systems := newSimHarness(t, openSQLite(t), 1)
	n := h.addNode("n-noagent", systems[0], baremetal.StateInspecting, false)
	h.start()
	h.enqueue(InspectArgs{NodeID: n.ID})
	got := h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
	if !strings.Contains(got.LastError, "serves no deploy agent image") || got.Flow != nil {
		t.Errorf("after the inspection: last_error %q, flow %+v", got.LastError, got.Flow)
	}
	evs := h.events(n.ID)
	if e := findEvent(evs, "step", "inspect: step boot_agent (1 of 4) failed: the controller serves no deploy agent image"); e == nil {
		t.Errorf("no event says where the inspection failed:%s", dumpEvents(evs))
	}
	if got := strings.Join(stepEvents(evs), ","); got != "inspect/boot_agent,inspect/power_off,inspect/clear_boot" {
		t.Errorf("step events %s", got)
	}
}

// Steps that send each other back and forth fail the job's attempt (which
// River retries) instead of spinning in it.
func TestFlowStepsInCirclesFailTheAttempt(t *testing.T) {
	h, sys := newFakeHarness(t, openSQLite(t), 1)
	n := h.addNode("n-circles", sys[0], baremetal.StateCleaning, false)
	ping := func(to string) func(context.Context, *flowRun) (stepResult, error) {
		return func(context.Context, *flowRun) (stepResult, error) { return goTo(to), nil }
	}
	f := &flow{name: "cleanup", state: baremetal.StateCleaning, fail: keepTrying,
		steps: []flowStep{{"ping", ping("pong")}, {"pong", ping("ping")}}}
	r := &flowRun{nodeWork: h.r.nodeWork, job: &rivertype.JobRow{ID: 1, Kind: "cleanup"}, flow: f, node: h.node(n.ID)}
	if err := r.work(h.ctx); err == nil || !strings.Contains(err.Error(), "went round in circles") {
		t.Fatalf("work: %v", err)
	}
}
