package jobs

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// On a BMC without virtual media, with network boots on, the agent's
// session names the machine by the system UUID its BMC reports (every
// byte order in use), and the node boots once from the network.
func TestAgentBootsFromTheNetworkWithoutVirtualMedia(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarnessWith(t, open(t), sim.Options{Systems: 1, NoVirtualMedia: true}, func(c *Config) {
			c.AgentBoot, c.AgentNetboot, c.PublicURL = true, true, "http://controller.invalid"
		})
		n := h.addNode("n-net", sys[0], baremetal.StateInspecting, false)
		h.start()
		h.enqueue(InspectArgs{NodeID: n.ID})

		var sess *baremetal.AgentSession
		h.waitNode(n.ID, wait, "agent booted", func(cur *baremetal.Node) bool {
			s, err := h.st.GetAgentSession(h.ctx, n.ID)
			if err == nil && cur.PowerState == baremetal.PowerOn {
				sess = s
			}
			return sess != nil
		})
		want := baremetal.NetbootUUID(systemUUID(t, h, sys[0]))
		if want == "" || !slices.Contains(sess.NetbootIDs, want) || len(sess.NetbootIDs) != 3 {
			t.Fatalf("session netboot ids %v, want the BMC's UUID %s in its three byte orders", sess.NetbootIDs, want)
		}
		if target, enabled, err := h.fleet.BootOverride(sys[0]); err != nil || target != "Pxe" {
			// Once is used up by the boot; the target stays until then.
			t.Fatalf("boot override %s/%s (%v), want a network boot", target, enabled, err)
		}
		if ev := findEvent(h.events(n.ID), "inspect", "booted the deploy agent from the network"); ev == nil {
			t.Errorf("no event says how the agent was booted:%s", dumpEvents(h.events(n.ID)))
		}
	})
}

// A machine the controller cannot tell from others (no UUID from its BMC,
// never inspected) is not booted: an agent on the wrong machine would
// erase the wrong disks. Inspected MACs are enough. Without network boots
// the reason names the flag.
func TestAgentNetbootNeedsAnIdentity(t *testing.T) {
	for _, c := range []struct {
		name    string
		netboot bool
		inv     *api.AgentInventory
		want    string // the inspection's failure; "" boots
	}{
		{"off", false, nil, "--agent-netboot"},
		{"no identity", true, nil, "reports no system UUID and it has no inspected NIC MACs"},
		{"inspected", true, &api.AgentInventory{NICs: []api.AgentNIC{{Name: "eno1", MAC: "52:54:00:AA:BB:CC"}}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, sys := newFakeHarness(t, openSQLite(t), 1, func(cfg *Config) {
				cfg.AgentBoot, cfg.AgentNetboot, cfg.PublicURL = true, c.netboot, "http://controller.invalid"
			})
			n := h.addNode("n-"+strings.ReplaceAll(c.name, " ", "-"), sys[0], baremetal.StateInspecting, false)
			if c.inv != nil {
				data, _ := json.Marshal(c.inv)
				if err := h.st.SetInventory(h.ctx, &baremetal.Inventory{NodeID: n.ID, Data: string(data), InspectedAt: n.CreatedAt}); err != nil {
					t.Fatal(err)
				}
			}
			h.start()
			h.enqueue(InspectArgs{NodeID: n.ID})
			if c.want != "" {
				h.waitNode(n.ID, wait, "inspection given up", func(cur *baremetal.Node) bool { return cur.ProvisionState == baremetal.StateAvailable })
				if ev := findEvent(h.events(n.ID), "provision_state", c.want); ev == nil {
					t.Fatalf("no event says %q:%s", c.want, dumpEvents(h.events(n.ID)))
				}
				if _, err := h.st.GetAgentSession(h.ctx, n.ID); !baremetal.IsCode(err, baremetal.CodeNotFound) {
					t.Fatalf("an agent session was left: %v", err)
				}
				return
			}
			h.waitNode(n.ID, wait, "agent booted", func(cur *baremetal.Node) bool { return cur.PowerState == baremetal.PowerOn })
			sess, err := h.st.GetAgentSession(h.ctx, n.ID)
			if err != nil || !slices.Equal(sess.NetbootIDs, []string{"mac:52:54:00:aa:bb:cc"}) {
				t.Fatalf("session %+v (%v), want the inspected MAC as its one netboot id", sess, err)
			}
			h.fake.mu.Lock()
			boot := h.fake.systems[sys[0]].boot
			h.fake.mu.Unlock()
			if boot != bmc.BootPXE {
				t.Fatalf("boot device %q, want pxe", boot)
			}
		})
	}
}

// systemUUID is the UUID the simulated BMC reports for sys.
func systemUUID(t *testing.T, h *harness, sys string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(h.ctx, http.MethodGet, h.fleet.URL()+sys, nil)
	req.SetBasicAuth("admin", "password")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET system %s: %s", sys, res.Status)
	}
	var doc struct{ UUID string }
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc.UUID
}

// Every agent boot, from virtual media too, carries the node's identity,
// which its agent must present before it gets work (service.AgentHeartbeat):
// the BMC's system UUID in its three byte orders and the last
// inspection's MACs. Only a network boot is found by them (NetbootIDs).
// An inspection whose agent's reports were all refused says so when it
// gives up.
func TestAgentSessionCarriesTheNodesIdentity(t *testing.T) {
	dbs(t, func(t *testing.T, open func(testing.TB) store.Store) {
		h, sys := newSimHarness(t, open(t), 1, func(c *Config) {
			c.AgentBoot, c.PublicURL, c.AgentTimeout = true, "http://controller.invalid", 4*time.Second
		})
		n := h.addNode("n-idn", sys[0], baremetal.StateInspecting, false)
		data, _ := json.Marshal(api.AgentInventory{NICs: []api.AgentNIC{{Name: "eno1", MAC: "52:54:00:AA:BB:CC"}}})
		if err := h.st.SetInventory(h.ctx, &baremetal.Inventory{NodeID: n.ID, Data: string(data), InspectedAt: n.CreatedAt}); err != nil {
			t.Fatal(err)
		}
		h.start()
		h.enqueue(InspectArgs{NodeID: n.ID})
		var sess *baremetal.AgentSession
		h.waitNode(n.ID, wait, "agent booted", func(*baremetal.Node) bool {
			s, err := h.st.GetAgentSession(h.ctx, n.ID)
			if err == nil && s.Purpose == baremetal.AgentInspect {
				sess = s
			}
			return sess != nil
		})
		want := append(baremetal.NetbootUUIDs(systemUUID(t, h, sys[0])), "mac:52:54:00:aa:bb:cc")
		if len(want) != 4 || !slices.Equal(sess.IdentityIDs, want) || len(sess.NetbootIDs) != 0 {
			t.Fatalf("virtual media session: identity %v, netboot ids %v; want identity %v and no netboot ids", sess.IdentityIDs, sess.NetbootIDs, want)
		}
		// The agent's reports are refused (as service.AgentHeartbeat
		// records it): the inspection gives up, and says why.
		sess.Refused = "a report from 10.0.2.99 of a machine that is not the node"
		if err := h.st.UpdateAgentSession(h.ctx, sess); err != nil {
			t.Fatal(err)
		}
		got := h.waitNode(n.ID, 3*wait, "inspection given up", func(cur *baremetal.Node) bool { return cur.ProvisionState == baremetal.StateAvailable })
		if !strings.Contains(got.LastError, "did not report within 4s") || !strings.Contains(got.LastError, "the controller refused a report from 10.0.2.99 of a machine that is not the node") {
			t.Fatalf("last_error %q: want the timeout and the refusal", got.LastError)
		}
	})
}
