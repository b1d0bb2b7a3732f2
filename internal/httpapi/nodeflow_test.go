package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// TestNodeFlow: a node shows the flow the controller runs on it (its
// name, declared steps, the current step, its position and since when)
// to admins and members, in the node and in the list, never the notes
// the steps keep for each other; a node in no flow shows null.
func TestNodeFlow(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			ctx := context.Background()
			busy, idle := e.createNode("flow-busy"), e.createNode("flow-idle")
			started := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
			n, err := e.st.GetNode(ctx, busy.ID)
			if err != nil {
				t.Fatal(err)
			}
			n.ProvisionState = baremetal.StateCleaning
			n.Flow = &baremetal.Flow{Name: "cleanup", Steps: []string{"boot_agent", "erase", "power_off", "clear_boot"},
				Step: "erase", StepStartedAt: started, Notes: map[string]string{"erased": "a note for the next step"}}
			if err := e.st.UpdateNode(ctx, n); err != nil {
				t.Fatal(err)
			}
			for who, tok := range map[string]string{"admin": adminSecret, "member": e.member} {
				var got api.Node
				raw := e.mustJSON("GET", "/v1/nodes/"+busy.ID, tok, "", 200, &got)
				f := got.Flow
				if f == nil || f.Name != "cleanup" || f.Step != "erase" || f.StepIndex != 1 || len(f.Steps) != 4 || !f.StepStartedAt.Equal(started) {
					t.Errorf("%s: flow %s", who, show(f))
				}
				if strings.Contains(string(raw.body), "a note for the next step") {
					t.Errorf("%s: the flow's notes are shown: %s", who, raw.body)
				}
				var other api.Node
				e.mustJSON("GET", "/v1/nodes/"+idle.ID, tok, "", 200, &other)
				if other.Flow != nil {
					t.Errorf("%s: a node in no flow shows %s", who, show(other.Flow))
				}
			}
			var list api.NodeList
			e.mustJSON("GET", "/v1/nodes", adminSecret, "", 200, &list)
			for _, item := range list.Items {
				if item.ID == busy.ID && (item.Flow == nil || item.Flow.Step != "erase") {
					t.Errorf("listed: flow %s", show(item.Flow))
				}
			}
		})
	}
}
