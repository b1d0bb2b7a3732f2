package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// TestAgentReportHealsAgentLost: the first heartbeat of a fresh agent
// boot clears the agent_lost fault an earlier boot left (the deploy
// retried with a new agent, and this one works), in an event; other
// faults stay.
func TestAgentReportHealsAgentLost(t *testing.T) {
	ctx := context.Background()
	st := storetest.OpenSQLite(t)
	svc := service.New(st, &countingJobs{}, nil)
	for _, c := range []struct {
		fault, want baremetal.Fault
	}{
		{baremetal.FaultAgentLost, baremetal.FaultNone},
		{baremetal.FaultBMCUnreachable, baremetal.FaultBMCUnreachable},
	} {
		n := enrollAvailable(t, st, svc, "heal-"+strings.ReplaceAll(string(c.fault), "_", "-"))
		since := time.Now().Add(-time.Minute)
		n.Fault, n.FaultSince, n.LastError = c.fault, &since, "the machine lost power"
		if err := st.UpdateNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		token, hash := baremetal.NewAgentToken()
		if err := st.PutAgentSession(ctx, &baremetal.AgentSession{NodeID: n.ID, Purpose: baremetal.AgentDeploy, Token: token, TokenHash: hash}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AgentHeartbeat(ctx, token, api.AgentHeartbeat{AgentVersion: "test", BootID: "b1"}, "10.0.2.15"); err != nil {
			t.Fatal(err)
		}
		got, err := st.GetNode(ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Fault != c.want {
			t.Errorf("%s after the agent's first report: fault %q, want %q", c.fault, got.Fault, c.want)
		}
		evs, _, err := st.ListEvents(ctx, n.ID, store.Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var reported, cleared bool
		for _, e := range evs {
			reported = reported || e.Type == "agent" && strings.Contains(e.Message, "booted for deploy")
			cleared = cleared || e.Type == "fault" && e.New == "" && strings.Contains(e.Message, "agent_lost cleared")
		}
		if !reported || cleared != (c.want == baremetal.FaultNone) {
			t.Errorf("%s: events (agent reported %v, fault cleared %v): %+v", c.fault, reported, cleared, evs)
		}
	}
}
