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

// An erase counts only with what the agent read back from each disk
// afterwards: a report of success without it (from an agent that skipped
// the check, or from whoever holds the boot's token) leaves the node
// cleaning with the clean_failed fault, and the cleanup boots a fresh
// agent (new token); a report with it makes the node available, and the
// event says what was read back. (The agent's report is written to its
// session here, as service.AgentHeartbeat does.)
func TestErasingCleanupNeedsTheReadBack(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1, func(c *Config) {
			c.AgentBoot, c.PublicURL, c.CleanErase = true, "http://controller.invalid", "full"
		})
		n := h.addNode("n-readback", sys[0], baremetal.StateCleaning, false)
		h.start()
		h.enqueue(CleanupArgs{NodeID: n.ID})

		booted := func(not string) *baremetal.AgentSession {
			var sess *baremetal.AgentSession
			h.waitNode(n.ID, wait, "agent booted to erase", func(cur *baremetal.Node) bool {
				s, err := h.st.GetAgentSession(h.ctx, n.ID)
				if err == nil && s.Purpose == baremetal.AgentClean && s.Token != not && cur.PowerState == baremetal.PowerOn {
					sess = s
				}
				return sess != nil
			})
			return sess
		}
		report := func(sess *baremetal.AgentSession, st api.AgentCommandStatus) {
			st.ID, st.State = sessionCommand(sess), api.AgentCommandSucceeded
			b, _ := json.Marshal(st)
			seen := time.Now()
			sess.Status, sess.LastSeenAt = string(b), &seen
			if err := h.st.UpdateAgentSession(h.ctx, sess); err != nil {
				t.Fatal(err)
			}
		}

		// "Done", with nothing read back.
		first := booted("")
		report(first, api.AgentCommandStatus{Message: "erased every byte of 1 disk (/dev/sda 100.0 GiB: discarded, then zeroed)"})
		got := h.waitNode(n.ID, wait, "clean_failed", func(cur *baremetal.Node) bool { return cur.Fault == baremetal.FaultCleanFailed })
		if got.ProvisionState != baremetal.StateCleaning || !strings.Contains(got.LastError, "without what it read back") {
			t.Fatalf("after an erase report without its read-back: %s, last_error %q", got.ProvisionState, got.LastError)
		}
		// The ends alone, after a full erase: no samples.
		second := booted(first.Token)
		report(second, api.AgentCommandStatus{Message: "erased every byte of 1 disk", Erased: []api.AgentErasedDisk{
			{Path: "/dev/sda", SizeBytes: 100 << 30, Method: "discarded, then zeroed", VerifiedBytes: 16 << 20}}})
		h.waitNode(n.ID, wait, "clean_failed for no samples", func(cur *baremetal.Node) bool {
			return cur.Fault == baremetal.FaultCleanFailed && strings.Contains(cur.LastError, "no blocks sampled")
		})

		third := booted(second.Token)
		report(third, api.AgentCommandStatus{Message: "erased every byte of 1 disk (/dev/sda 100.0 GiB: discarded, then zeroed) in 20m; read back 24.0 MiB as zeros, 128 blocks sampled across the disk",
			Erased: []api.AgentErasedDisk{{Path: "/dev/sda", SizeBytes: 100 << 30, Method: "discarded, then zeroed", VerifiedBytes: 24 << 20, SampledBlocks: 128}}})
		got = h.waitNode(n.ID, wait, "available", func(cur *baremetal.Node) bool { return cur.ProvisionState == baremetal.StateAvailable })
		if got.Fault != baremetal.FaultNone {
			t.Errorf("available with fault %q (%s)", got.Fault, got.LastError)
		}
		if ev := findEvent(h.events(n.ID), "provision_state", "128 blocks sampled"); ev == nil {
			t.Errorf("no event says what was read back:%s", dumpEvents(h.events(n.ID)))
		}
	})
}

// What a report must carry, per erase mode.
func TestEraseReadBack(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		name   string
		mode   string
		erased []api.AgentErasedDisk
		want   string // "" counts
	}{
		{"nothing", "metadata", nil, "without what it read back"},
		{"metadata, both ends", "metadata", []api.AgentErasedDisk{{Path: "/dev/sda", SizeBytes: gib, Method: "metadata", VerifiedBytes: 16 << 20}}, ""},
		{"metadata, partitions too", "metadata", []api.AgentErasedDisk{{Path: "/dev/sda", SizeBytes: gib, Method: "metadata", VerifiedBytes: 48 << 20}}, ""},
		{"metadata, one end", "metadata", []api.AgentErasedDisk{{Path: "/dev/sda", SizeBytes: gib, Method: "metadata", VerifiedBytes: 8 << 20}}, "read back only 8388608 bytes"},
		{"a small disk, whole", "metadata", []api.AgentErasedDisk{{Path: "/dev/sda", SizeBytes: 3 << 20, Method: "metadata", VerifiedBytes: 3 << 20}}, ""},
		{"one disk of two unread", "metadata", []api.AgentErasedDisk{
			{Path: "/dev/sda", SizeBytes: gib, Method: "metadata", VerifiedBytes: 16 << 20}, {Path: "/dev/sdb", SizeBytes: gib, Method: "metadata"}}, "disk /dev/sdb"},
		{"full, sampled", "full", []api.AgentErasedDisk{{Path: "/dev/nvme0n1", SizeBytes: gib, Method: "NVMe format, cryptographic erase", VerifiedBytes: 24 << 20, SampledBlocks: 128}}, ""},
		{"full, unsampled", "full", []api.AgentErasedDisk{{Path: "/dev/nvme0n1", SizeBytes: gib, Method: "NVMe format, cryptographic erase", VerifiedBytes: 24 << 20}}, "no blocks sampled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := eraseReadBack(&api.AgentCommandStatus{State: api.AgentCommandSucceeded, Erased: c.erased}, c.mode)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("eraseReadBack = %q, want %q", got, c.want)
			}
		})
	}
}
