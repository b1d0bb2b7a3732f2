package jobs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// TestInspectionKeepsOverrides: the BMC's inventory at verify and the
// deploy agent's at inspection fill the properties the operator did not
// override and never touch those the operator did, while what they found
// is remembered under the overrides. (The agent's report is written to
// its session here, as service.AgentHeartbeat does; the agent itself is
// proven on a real VM in internal/app.)
func TestInspectionKeepsOverrides(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1, func(c *Config) {
			c.AgentBoot, c.PublicURL = true, "http://controller.invalid"
		})
		n := h.addNode("n-ovr", sys[0], baremetal.StateEnroll, false)
		h.setNode(n.ID, func(n *baremetal.Node) { n.SetOverrides(baremetal.Properties{CPUs: 128, LocalGB: 500}) })
		h.start()
		h.enqueue(VerifyArgs{NodeID: n.ID})
		got := h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
		// The simulated BMC reports 32 logical CPUs, 64 GiB and x86_64.
		if want := (baremetal.Properties{CPUs: 128, MemoryMB: 65536, LocalGB: 500, CPUArch: "x86_64"}); got.Properties != want {
			t.Fatalf("after verify: %+v, want %+v", got.Properties, want)
		}
		if want := (baremetal.Properties{CPUs: 32, MemoryMB: 65536, CPUArch: "x86_64"}); got.Inspected != want {
			t.Fatalf("inspected after verify: %+v, want %+v", got.Inspected, want)
		}

		h.setNode(n.ID, func(n *baremetal.Node) { n.ProvisionState = baremetal.StateInspecting })
		h.enqueue(InspectArgs{NodeID: n.ID})
		var sess *baremetal.AgentSession
		deadline := time.Now().Add(wait)
		for sess == nil || sess.Purpose != baremetal.AgentInspect {
			if time.Now().After(deadline) {
				t.Fatalf("no agent session for inspection: %+v", sess)
			}
			time.Sleep(50 * time.Millisecond)
			sess, _ = h.st.GetAgentSession(h.ctx, n.ID)
		}
		// The memory installed (SMBIOS), not what the agent's kernel
		// can use, is the node's memory.
		inv, err := json.Marshal(api.AgentInventory{CPUs: 4, MemoryBytes: 7900 << 20, InstalledMemoryBytes: 8 << 30,
			Disks: []api.AgentDisk{{Name: "vda", Path: "/dev/vda", SizeBytes: 100 << 30}}})
		if err != nil {
			t.Fatal(err)
		}
		seen := time.Now()
		sess.Inventory, sess.LastSeenAt = string(inv), &seen
		if err := h.st.UpdateAgentSession(h.ctx, sess); err != nil {
			t.Fatal(err)
		}
		got = h.waitNode(n.ID, 3*wait, "inspected", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
		if want := (baremetal.Properties{CPUs: 128, MemoryMB: 8192, LocalGB: 500, CPUArch: "x86_64"}); got.Properties != want {
			t.Fatalf("after inspection: %+v, want %+v (overrides kept, memory from the agent)", got.Properties, want)
		}
		if want := (baremetal.Properties{CPUs: 4, MemoryMB: 8192, LocalGB: 100, CPUArch: "x86_64"}); got.Inspected != want {
			t.Fatalf("inspected after inspection: %+v, want %+v", got.Inspected, want)
		}
		if got.Overrides != (baremetal.PropertyOverrides{CPUs: true, LocalGB: true}) {
			t.Fatalf("overrides after inspection: %+v", got.Overrides)
		}
	})
}

// A controller whose agent ISO boots BIOS only does not boot it on a node
// whose BMC reports UEFI: the inspection ends at once saying why, and the
// machine is never powered on (issue #25: boot mode).
func TestAgentISOBootModeMismatch(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1, func(c *Config) {
			c.AgentBoot, c.AgentBIOSOnly, c.PublicURL = true, true, "http://controller.invalid"
		})
		n := h.addNode("n-uefi", sys[0], baremetal.StateInspecting, false)
		h.start()
		h.enqueue(InspectArgs{NodeID: n.ID})
		got := h.waitNode(n.ID, wait, "available", func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
		if !strings.Contains(got.LastError, "boots UEFI") || !strings.Contains(got.LastError, "BIOS only") {
			t.Fatalf("last_error %q does not say why the agent was not booted", got.LastError)
		}
		if st, _ := h.fleet.OS(sys[0]); st.PowerOns != 0 {
			t.Fatalf("the machine was powered on %d times", st.PowerOns)
		}
		if sess, err := h.st.GetAgentSession(h.ctx, n.ID); err == nil {
			t.Fatalf("an agent session was stored: %+v", sess)
		}
	})
}
