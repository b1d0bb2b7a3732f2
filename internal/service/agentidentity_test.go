package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// The node's identity as the jobs store it in the session: its BMC's
// UUID in the three byte orders, and an inspected MAC.
const (
	nodeUUID = "4c4c4544-0042-3010-8056-b4c04f4d3132"
	nodeMAC  = "52:54:00:12:34:56"
)

func identity() []string {
	return append(baremetal.NetbootUUIDs(nodeUUID), baremetal.NetbootMAC(nodeMAC))
}

func inventory(uuid string, macs ...string) *api.AgentInventory {
	inv := &api.AgentInventory{CPUs: 2, System: api.AgentSystem{UUID: uuid}}
	for i, m := range macs {
		inv.NICs = append(inv.NICs, api.AgentNIC{Name: "eth" + string(rune('0'+i)), MAC: m})
	}
	return inv
}

// A boot's token alone gets no work (#26): whoever holds it (the netboot
// script hands the initramfs, token inside, to anyone who presents the
// node's UUID or MAC) gets the command only once a report of its own
// presents the node's identity; the session is then bound to that
// report's address, and a report from any other address, identity or
// not, is refused. A refused report changes nothing but the node's
// events (told once) and is answered 403 without a command; the jobs
// see no report (no inventory, no status, no last seen).
func TestAgentWorkOnlyForTheNodeAndItsFirstAddress(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			svc := service.New(st, &countingJobs{}, nil)
			n := enrollAvailable(t, st, svc, "idn-node")
			cmd := `{"id":"write-1","kind":"write_image","image":{"url":"https://images.example/x.img?sig=secret"},"config_drive_url":"http://c/v1/instances/i/config-drive/k/config-2.iso"}`
			token, hash := baremetal.NewAgentToken()
			if err := st.PutAgentSession(ctx, &baremetal.AgentSession{NodeID: n.ID, Purpose: baremetal.AgentDeploy, Token: token, TokenHash: hash,
				Command: cmd, IdentityIDs: identity(), NetbootIDs: identity()}); err != nil {
				t.Fatal(err)
			}
			beat := func(inv *api.AgentInventory, from string) (api.AgentReply, error) {
				return svc.AgentHeartbeat(ctx, token, api.AgentHeartbeat{AgentVersion: "test", BootID: "b1", Inventory: inv}, from)
			}
			refused := func(what string, reply api.AgentReply, err error) {
				t.Helper()
				if !baremetal.IsCode(err, baremetal.CodeForbidden) || reply.Command != nil {
					t.Fatalf("%s: reply %+v, %v; want 403 and no command", what, reply, err)
				}
				if strings.Contains(err.Error(), nodeUUID) || strings.Contains(err.Error(), "10.0.2.15") {
					t.Errorf("%s: the refusal tells the caller the node's identity or address: %v", what, err)
				}
			}
			unseen := func(what string) {
				t.Helper()
				sess, err := st.GetAgentSession(ctx, n.ID)
				if err != nil || sess.LastSeenAt != nil || sess.Inventory != "" || sess.AgentAddr != "" {
					t.Fatalf("%s: session %+v (%v); want no report taken", what, sess, err)
				}
			}

			// Another machine, with the token: refused, and told once.
			other := inventory("11111111-2222-3333-4444-555555555555", "52:54:00:aa:bb:cc")
			r, err := beat(other, "10.0.2.99")
			refused("another machine", r, err)
			r, err = beat(other, "10.0.2.99")
			refused("another machine again", r, err)
			// No inventory: no identity to check.
			r, err = beat(nil, "10.0.2.98")
			refused("no inventory", r, err)
			// A machine without a UUID and MACs (or with junk).
			r, err = beat(inventory("not-a-uuid", "zz"), "10.0.2.97")
			refused("no identity", r, err)
			unseen("after the refusals")
			var told int
			for _, e := range events(t, st, n.ID) {
				if e.Type == "agent" && strings.Contains(e.Message, "refused a report of the deploy agent booted for deploy") {
					told++
					if !strings.Contains(e.Message, "from 10.0.2.") {
						t.Errorf("refusal event names no address: %s", e.Message)
					}
				}
			}
			if told != 3 {
				t.Errorf("%d refusal events, want 3 (the same refusal is told once)", told)
			}

			// The node itself, by its UUID in another byte order (as its
			// SMBIOS and the BMC may disagree): the command, and bound.
			swapped := strings.TrimPrefix(baremetal.NetbootUUIDs(nodeUUID)[1], "uuid:")
			r, err = beat(inventory(strings.ToUpper(swapped), "52:54:00:00:00:01"), "10.0.2.15")
			if err != nil || r.Command == nil || r.Command.ID != "write-1" {
				t.Fatalf("the node's agent: %+v, %v; want its command", r, err)
			}
			sess, err := st.GetAgentSession(ctx, n.ID)
			if err != nil || sess.AgentAddr != "10.0.2.15" || sess.LastSeenAt == nil || sess.Inventory == "" {
				t.Fatalf("after the node's report: %+v, %v; want it bound to 10.0.2.15", sess, err)
			}
			if ev := findEvent(events(t, st, n.ID), "agent", "reporting from 10.0.2.15 (its identity checked: "); ev == nil {
				t.Errorf("no event says the agent's identity was checked")
			}

			// Bound: the node's own identity from another address is
			// refused; from its address, a report goes on (identity is not
			// asked again).
			r, err = beat(inventory(nodeUUID, nodeMAC), "10.0.2.16")
			refused("the node's identity from another address", r, err)
			if ev := findEvent(events(t, st, n.ID), "agent", "a report from 10.0.2.16, while this boot's agent reports from 10.0.2.15"); ev == nil {
				t.Errorf("no event names the second address")
			}
			r, err = beat(nil, "10.0.2.15")
			if err != nil || r.Command == nil {
				t.Fatalf("the bound agent's next report: %+v, %v", r, err)
			}
		})
	}
}

// A node with no identity known when its agent was booted (virtual media,
// never inspected, no UUID from its BMC) has its agent taken on the first
// report, which binds the session; the event says the identity was not
// checked. A MAC of the last inspection is identity enough.
func TestAgentIdentityUnknownOrByMAC(t *testing.T) {
	ctx := context.Background()
	st := storetest.OpenSQLite(t)
	svc := service.New(st, &countingJobs{}, nil)
	for _, c := range []struct {
		name  string
		ids   []string
		inv   *api.AgentInventory
		event string
	}{
		{"unknown", nil, inventory("", nodeMAC), "its identity not checked: the node had none known"},
		{"by mac", []string{baremetal.NetbootMAC(nodeMAC)}, inventory("", "52:54:00:00:00:09", strings.ToUpper(nodeMAC)), "its identity checked: mac:" + nodeMAC},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := enrollAvailable(t, st, svc, "idn-"+strings.ReplaceAll(c.name, " ", "-"))
			token, hash := baremetal.NewAgentToken()
			if err := st.PutAgentSession(ctx, &baremetal.AgentSession{NodeID: n.ID, Purpose: baremetal.AgentClean, Token: token, TokenHash: hash,
				Command: `{"id":"erase-1","kind":"erase","erase":"metadata"}`, IdentityIDs: c.ids}); err != nil {
				t.Fatal(err)
			}
			r, err := svc.AgentHeartbeat(ctx, token, api.AgentHeartbeat{AgentVersion: "test", Inventory: c.inv}, "192.0.2.7")
			if err != nil || r.Command == nil {
				t.Fatalf("first report: %+v, %v; want the command", r, err)
			}
			if ev := findEvent(events(t, st, n.ID), "agent", c.event); ev == nil {
				t.Errorf("no event says %q", c.event)
			}
			if _, err := svc.AgentHeartbeat(ctx, token, api.AgentHeartbeat{AgentVersion: "test", Inventory: c.inv}, "192.0.2.8"); !baremetal.IsCode(err, baremetal.CodeForbidden) {
				t.Errorf("a report from another address: %v, want 403", err)
			}
		})
	}
}

func events(t *testing.T, st store.Store, nodeID string) []*baremetal.Event {
	t.Helper()
	evs, _, err := st.ListEvents(context.Background(), nodeID, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func findEvent(evs []*baremetal.Event, typ, sub string) *baremetal.Event {
	for _, e := range evs {
		if e.Type == typ && strings.Contains(e.Message, sub) {
			return e
		}
	}
	return nil
}
