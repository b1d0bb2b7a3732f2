package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// TestNodeAgentActivity: a node shows what its deploy agent is doing
// (node.agent: why it was booted, the command, the agent's last report
// and its percentage), to admins and members, in the node and in the
// list, from the agent's heartbeats, which do not change the node's
// version; a node without an agent, or with the leftover session of
// work that ended, shows null.
func TestNodeAgentActivity(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			ctx := context.Background()
			busy, idle, done := e.createNode("agent-busy"), e.createNode("agent-idle"), e.createNode("agent-done")
			e.makeAvailable(idle.ID)
			token := map[string]string{}
			for id, state := range map[string]baremetal.ProvisionState{busy.ID: baremetal.StateCleaning, done.ID: baremetal.StateActive} {
				// As the cleanup job leaves them: the node cleaning, the
				// agent's session holding its erase command.
				n, err := e.st.GetNode(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				n.ProvisionState = state
				if err := e.st.UpdateNode(ctx, n); err != nil {
					t.Fatal(err)
				}
				tok, hash := baremetal.NewAgentToken()
				token[id] = tok
				if err := e.st.PutAgentSession(ctx, &baremetal.AgentSession{NodeID: id, Purpose: baremetal.AgentClean, Token: tok, TokenHash: hash,
					Command: `{"id":"erase-1","kind":"erase","erase":"full"}`}); err != nil {
					t.Fatal(err)
				}
			}
			get := func(token string) api.Node {
				t.Helper()
				var n api.Node
				e.mustJSON("GET", "/v1/nodes/"+busy.ID, token, "", 200, &n)
				return n
			}
			heartbeat := func(progress int) {
				t.Helper()
				var reply api.AgentReply
				e.mustJSON("POST", api.AgentHeartbeatPath, token[busy.ID], `{"agent_version":"test","boot_id":"b1","command":
					{"id":"erase-1","state":"running","progress":`+itoa(progress)+`}}`, 200, &reply)
				if reply.Command == nil || reply.Command.ID != "erase-1" {
					t.Fatalf("heartbeat reply %+v", reply)
				}
			}

			// Booted, not yet heard from.
			if a := get(adminSecret).Agent; a == nil || a.Purpose != api.AgentPurposeClean || a.Command != api.AgentErase ||
				a.State != "" || a.Progress != 0 || a.LastSeenAt != nil {
				t.Fatalf("before the agent's first report: agent %s", show(a))
			}
			heartbeat(10)
			before := get(adminSecret).Version
			heartbeat(42)
			for who, tok := range map[string]string{"admin": adminSecret, "member": e.member} {
				n := get(tok)
				if a := n.Agent; a == nil || a.Purpose != api.AgentPurposeClean || a.Command != api.AgentErase ||
					a.State != api.AgentCommandRunning || a.Progress != 42 || a.LastSeenAt == nil {
					t.Fatalf("%s: after a report of 42%%: agent %s", who, show(a))
				}
				if n.Version != before {
					t.Errorf("%s: a report changed the node's version: %d, was %d", who, n.Version, before)
				}
			}
			var list api.NodeList
			e.mustJSON("GET", "/v1/nodes", adminSecret, "", 200, &list)
			seen := 0
			for _, n := range list.Items {
				switch n.ID {
				case busy.ID:
					seen++
					if n.Agent == nil || n.Agent.Progress != 42 {
						t.Errorf("listed: %s's agent %s, want 42%%", n.Name, show(n.Agent))
					}
				case idle.ID, done.ID:
					seen++
					if n.Agent != nil {
						t.Errorf("listed: %s (%s) has agent %s, want null", n.Name, n.ProvisionState, show(n.Agent))
					}
				}
			}
			if seen != 3 {
				t.Fatalf("the list has %d of the 3 nodes: %s", seen, show(list))
			}
			// null, not left out: a client tells "no agent" from an old
			// controller.
			r := e.do("GET", "/v1/nodes/"+idle.ID, e.member, "")
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(r.body, &raw); err != nil || string(raw["agent"]) != "null" {
				t.Fatalf("an idle node's agent member: %q (%v)", raw["agent"], err)
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func show(v any) string { b, _ := json.Marshal(v); return string(b) }
