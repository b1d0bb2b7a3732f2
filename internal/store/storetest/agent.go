package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// One agent session per node: put replaces (revoking the old token),
// updates are version-checked, the token is sealed at rest, and sessions
// and inventories go with their node.
func testAgentSessions(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	n := newNode("agent-node")
	insertNode(t, s, n)
	const token = "agt_Plaintext-Agent-Token-9c1d"
	sess := &baremetal.AgentSession{NodeID: n.ID, Purpose: baremetal.AgentInspect, Token: token, TokenHash: strings.Repeat("d", 64)}
	must(t, s.PutAgentSession(ctx, sess))
	if sess.Version != 1 || sess.CreatedAt.IsZero() {
		t.Fatalf("after put: %+v", sess)
	}
	got, err := s.GetAgentSession(ctx, n.ID)
	must(t, err)
	same(t, "session by node", sess, got)
	got, err = s.GetAgentSessionByTokenHash(ctx, sess.TokenHash)
	must(t, err)
	same(t, "session by token hash", sess, got)
	_, err = s.GetAgentSessionByTokenHash(ctx, strings.Repeat("e", 64))
	wantCode(t, err, baremetal.CodeNotFound, "")
	_, err = s.GetAgentSession(ctx, "no-such-node")
	wantCode(t, err, baremetal.CodeNotFound, "")
	wantCode(t, s.PutAgentSession(ctx, &baremetal.AgentSession{NodeID: "no-such-node", Purpose: baremetal.AgentInspect,
		Token: "x", TokenHash: strings.Repeat("f", 64)}), baremetal.CodeNotFound, "")

	seen := time.Now()
	got.Command, got.Status, got.Inventory, got.BootID, got.LastSeenAt = `{"id":"c1"}`, `{"id":"c1","state":"running"}`, `{"cpus":2}`, "boot-1", &seen
	must(t, s.UpdateAgentSession(ctx, got))
	if got.Version != 2 {
		t.Fatalf("version after update %d", got.Version)
	}
	again, err := s.GetAgentSession(ctx, n.ID)
	must(t, err)
	same(t, "session after update", got, again)
	// A stale write is a version conflict.
	sess.Command = "stale"
	wantCode(t, s.UpdateAgentSession(ctx, sess), baremetal.CodeConflict, "version")

	// The identity an agent of this boot must present, and the address
	// it is bound to once it has: kept through updates, and a new boot
	// (put) starts unbound again.
	idn := &baremetal.AgentSession{NodeID: n.ID, Purpose: baremetal.AgentDeploy, Token: token + "-id", TokenHash: strings.Repeat("c", 64),
		IdentityIDs: []string{"uuid:4c4c4544-0042-3010-8056-b4c04f4d3132", "mac:52:54:00:12:34:56"}}
	must(t, s.PutAgentSession(ctx, idn))
	got, err = s.GetAgentSession(ctx, n.ID)
	must(t, err)
	same(t, "session with identity", idn, got)
	got.AgentAddr, got.Refused, got.LastSeenAt = "10.0.2.15", "a report from 10.0.2.16: the session is bound to another address", &seen
	must(t, s.UpdateAgentSession(ctx, got))
	bound, err := s.GetAgentSessionByTokenHash(ctx, idn.TokenHash)
	must(t, err)
	same(t, "bound session", got, bound)
	if found, err := s.FindAgentSessionsByNetbootID(ctx, idn.IdentityIDs[1]); err != nil || len(found) != 0 {
		t.Fatalf("a session found by an identity that is not a netboot id: %v %v", found, err)
	}
	must(t, s.PutAgentSession(ctx, bound))
	if again, err := s.GetAgentSession(ctx, n.ID); err != nil || again.AgentAddr != "" || again.Refused != "" || len(again.IdentityIDs) != 2 {
		t.Fatalf("a new boot of a bound session: %+v %v; want it unbound, with its identity", again, err)
	}

	// A new boot replaces the session: the old token finds nothing.
	next := &baremetal.AgentSession{NodeID: n.ID, Purpose: baremetal.AgentInspect, Token: token + "-2", TokenHash: strings.Repeat("9", 64)}
	must(t, s.PutAgentSession(ctx, next))
	_, err = s.GetAgentSessionByTokenHash(ctx, sess.TokenHash)
	wantCode(t, err, baremetal.CodeNotFound, "")
	if cur, err := s.GetAgentSession(ctx, n.ID); err != nil || cur.Token != token+"-2" || cur.Command != "" || cur.Version != 1 {
		t.Fatalf("after replace: %+v %v", cur, err)
	}
	for _, v := range rawStrings(t, s, "SELECT token_sealed FROM agent_sessions") {
		if !strings.HasPrefix(v, "v1:") || strings.Contains(v, token) {
			t.Errorf("stored agent token %q is not sealed", v)
		}
	}
	assertNotOnDisk(t, s, token)

	// Network boots find their session by any of its netboot ids, and
	// only by a whole one: a prefix or a wildcard matches nothing.
	m := newNode("agent-netboot")
	insertNode(t, s, m)
	nb := &baremetal.AgentSession{NodeID: m.ID, Purpose: baremetal.AgentInspect, Token: "agt_nb", TokenHash: strings.Repeat("a", 64),
		NetbootIDs: []string{"uuid:4c4c4544-0042-3010-8056-b4c04f4d3132", "mac:52:54:00:12:34:56"}}
	must(t, s.PutAgentSession(ctx, nb))
	got, err = s.GetAgentSession(ctx, m.ID)
	must(t, err)
	same(t, "netboot session", nb, got)
	for _, id := range nb.NetbootIDs {
		found, err := s.FindAgentSessionsByNetbootID(ctx, id)
		must(t, err)
		if len(found) != 1 || found[0].NodeID != m.ID || found[0].Token != "agt_nb" {
			t.Fatalf("find by %s: %+v", id, found)
		}
	}
	for _, id := range []string{"mac:52:54:00:12:34", "mac:52:54:00:12:34:57", "%", "mac:%", "uuid:4c4c4544-0042-3010-8056-b4c04f4d313_", ""} {
		found, err := s.FindAgentSessionsByNetbootID(ctx, id)
		must(t, err)
		if len(found) != 0 {
			t.Fatalf("find by %q matched %d sessions", id, len(found))
		}
	}
	// A session booted from virtual media has none.
	if found, err := s.FindAgentSessionsByNetbootID(ctx, "mac:00:00:00:00:00:00"); err != nil || len(found) != 0 {
		t.Fatalf("find by an unknown MAC: %v %v", found, err)
	}
	must(t, s.DeleteAgentSession(ctx, m.ID))
	if found, err := s.FindAgentSessionsByNetbootID(ctx, nb.NetbootIDs[1]); err != nil || len(found) != 0 {
		t.Fatalf("find after delete: %v %v", found, err)
	}

	// Inventories: not found before the first, replaced by the next.
	_, err = s.GetInventory(ctx, n.ID)
	wantCode(t, err, baremetal.CodeNotFound, "")
	if at := getNode(t, s, n.ID).InspectedAt; at != nil {
		t.Errorf("a node never inspected has inspected_at %v", at)
	}
	inv := &baremetal.Inventory{NodeID: n.ID, Data: `{"cpus":2}`, InspectedAt: time.Now()}
	must(t, s.SetInventory(ctx, inv))
	gotInv, err := s.GetInventory(ctx, n.ID)
	must(t, err)
	same(t, "inventory", inv, gotInv)
	inv.Data, inv.InspectedAt = `{"cpus":4}`, time.Now().Add(time.Second)
	must(t, s.SetInventory(ctx, inv))
	gotInv, err = s.GetInventory(ctx, n.ID)
	must(t, err)
	same(t, "inventory replaced", inv, gotInv)
	// The node tells when its inventory was stored, in reads of one node
	// and of many, and keeps telling it through its own writes.
	if at := getNode(t, s, n.ID).InspectedAt; at == nil || !at.Equal(gotInv.InspectedAt) {
		t.Errorf("node's inspected_at %v, want the inventory's %v", at, gotInv.InspectedAt)
	}
	withInv := getNode(t, s, n.ID)
	withInv.ResourceClass = "other"
	must(t, s.UpdateNode(ctx, withInv))
	listed, _, err := s.ListNodes(ctx, store.NodeFilter{ResourceClass: "other"})
	must(t, err)
	if len(listed) != 1 || listed[0].InspectedAt == nil || !listed[0].InspectedAt.Equal(gotInv.InspectedAt) {
		t.Errorf("listed after a write: %+v, want inspected at %v", listed, gotInv.InspectedAt)
	}
	byID, err := s.GetNodes(ctx, []string{n.ID})
	must(t, err)
	if len(byID) != 1 || byID[0].InspectedAt == nil || !byID[0].InspectedAt.Equal(gotInv.InspectedAt) {
		t.Errorf("GetNodes: %+v, want inspected at %v", byID, gotInv.InspectedAt)
	}
	wantCode(t, s.SetInventory(ctx, &baremetal.Inventory{NodeID: "no-such-node", Data: "{}", InspectedAt: time.Now()}), baremetal.CodeNotFound, "")
	// A page of nodes' inventories in one read: the nodes never
	// inspected, unknown or unstorable ids have none.
	invs, err := s.GetInventories(ctx, []string{m.ID, n.ID, "no-such-node", "bad\x00id"})
	must(t, err)
	if len(invs) != 1 {
		t.Fatalf("GetInventories: %d inventories, want n's only", len(invs))
	}
	same(t, "inventories", inv, invs[0])
	if invs, err := s.GetInventories(ctx, nil); err != nil || len(invs) != 0 {
		t.Errorf("GetInventories of no ids: %v, %v", invs, err)
	}

	// Both go with their node; deleting a session that is gone is fine.
	must(t, s.DeleteAgentSession(ctx, n.ID))
	must(t, s.DeleteAgentSession(ctx, n.ID))
	must(t, s.PutAgentSession(ctx, next))
	cur := getNode(t, s, n.ID)
	must(t, s.DeleteNode(ctx, n.ID, cur.Version))
	_, err = s.GetAgentSession(ctx, n.ID)
	wantCode(t, err, baremetal.CodeNotFound, "")
	_, err = s.GetInventory(ctx, n.ID)
	wantCode(t, err, baremetal.CodeNotFound, "")
}

// An image deploy's method and root device hints round-trip; an instance
// written without them reads back without them.
func testInstanceDeployMethod(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	i := newInstance("proj-dm", "disk")
	i.DeployMethod = baremetal.DeployImage
	i.RootDevice = map[string]string{"size_gb": ">= 100", "serial": "S1"}
	must(t, s.InsertInstance(ctx, i))
	got, err := s.GetInstance(ctx, i.ID)
	must(t, err)
	same(t, "image instance", i, got)
	got.RootDevice = nil
	got.DeployMethod = baremetal.DeployLive
	must(t, s.UpdateInstance(ctx, got))
	again, err := s.GetInstance(ctx, i.ID)
	must(t, err)
	if again.DeployMethod != baremetal.DeployLive || again.RootDevice != nil {
		t.Fatalf("after update: method %q, root_device %v", again.DeployMethod, again.RootDevice)
	}
}

// Idempotency keys are per token: the same key of another token is
// another key; a key used twice by one token is a conflict.
func testIdempotencyKeys(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	k := &baremetal.IdempotencyKey{TokenID: "tok-a", Key: "idk_1", Kind: "node", RequestHash: strings.Repeat("a", 64), ResourceID: "res-1"}
	must(t, s.PutIdempotencyKey(ctx, k))
	got, err := s.GetIdempotencyKey(ctx, "tok-a", "idk_1")
	must(t, err)
	same(t, "idempotency key", k, got)
	wantCode(t, s.PutIdempotencyKey(ctx, &baremetal.IdempotencyKey{TokenID: "tok-a", Key: "idk_1", Kind: "node", RequestHash: "x", ResourceID: "res-2"}), baremetal.CodeConflict, "key")
	_, err = s.GetIdempotencyKey(ctx, "tok-b", "idk_1")
	wantCode(t, err, baremetal.CodeNotFound, "")
	must(t, s.PutIdempotencyKey(ctx, &baremetal.IdempotencyKey{TokenID: "tok-b", Key: "idk_1", Kind: "instance", RequestHash: "y", ResourceID: "res-3"}))
}

// What the agents of a range of nodes are doing: one row per session in
// the range, by node id, with its purpose, command, last report and last
// heartbeat (never its token); nodes without a session have none.
func testAgentActivity(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	var ids []string
	for _, name := range []string{"act-1", "act-2", "act-3", "act-4"} {
		n := newNode(name)
		n.ID = name
		insertNode(t, s, n)
		ids = append(ids, n.ID)
	}
	seen := time.Now().Add(-time.Second)
	deploy := &baremetal.AgentSession{NodeID: ids[1], Purpose: baremetal.AgentDeploy, Token: "agt_activity-deploy",
		TokenHash: strings.Repeat("1", 64), Command: `{"id":"c1","kind":"write_image"}`, Inventory: `{"cpus":2}`}
	must(t, s.PutAgentSession(ctx, deploy))
	deploy.Status, deploy.LastSeenAt = `{"id":"c1","state":"running","progress":42}`, &seen
	must(t, s.UpdateAgentSession(ctx, deploy))
	inspect := &baremetal.AgentSession{NodeID: ids[3], Purpose: baremetal.AgentInspect, Token: "agt_activity-inspect",
		TokenHash: strings.Repeat("2", 64)}
	must(t, s.PutAgentSession(ctx, inspect))

	list := func(from, to string) []*baremetal.AgentActivity {
		t.Helper()
		got, err := s.ListAgentActivity(ctx, from, to)
		must(t, err)
		return got
	}
	want := []*baremetal.AgentActivity{
		{NodeID: ids[1], Purpose: baremetal.AgentDeploy, Command: deploy.Command, Status: deploy.Status, LastSeenAt: deploy.LastSeenAt},
		{NodeID: ids[3], Purpose: baremetal.AgentInspect},
	}
	same(t, "activity of every node", want, list(ids[0], ids[3]))
	same(t, "activity of the first two nodes", want[:1], list(ids[0], ids[1]))
	same(t, "activity of one node", want[1:], list(ids[3], ids[3]))
	if got := list(ids[2], ids[2]); len(got) != 0 {
		t.Errorf("a node without a session has activity: %+v", got)
	}
	if got := list("no-such-node\x00", "zzz"); len(got) != 0 {
		t.Errorf("a range no node can be in: %+v", got)
	}
	must(t, s.DeleteAgentSession(ctx, ids[1]))
	same(t, "activity after the deploy's session ended", want[1:], list(ids[0], ids[3]))
}
