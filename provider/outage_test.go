package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testlog"
)

// outageLength is how long the database stays down during the destroy:
// the scenario of issue #9 (a restart or failover of PostgreSQL), well
// inside the client's retry window (apiclient.DefaultRetryWindow).
const outageLength = 30 * time.Second

// TestAccDestroyRidesThroughDatabaseOutage: the controller's PostgreSQL
// (a private cluster) stops once terraform has planned the destroy of two
// nodes and an instance, and starts again 30 s later. The deletes meet
// 503 unavailable, the provider retries them through the outage, and the
// destroy succeeds without a restart of anything. Afterwards the instance
// is gone and the nodes' retire jobs, queued once the database was back,
// have completed: the nodes are gone and no job was discarded. The
// controller logged the outage, and its end, once.
//
// The database stops after the plan (a pre-apply plan check), not before
// it, so that the outage meets the DELETE requests themselves; the reads
// of a refresh go through the same retry loop of the client.
func TestAccDestroyRidesThroughDatabaseOutage(t *testing.T) {
	t.Parallel()
	requireAcc(t)
	cluster := storetest.StartCluster(t)
	logs := &testlog.Buffer{}
	env := accEnv(t, testenv.Options{Systems: 2, DatabaseURL: cluster.URL("postgres"),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	c := accClient(t, env, env.AdminToken)
	config := providerConfig(env, env.AdminToken) + twoNodes(env) + instanceHCL("app", "app", `
  resource_class = "gpu"
  image = {
    url = "https://images.example.com/app.img"
  }
`)

	var (
		nodeIDs    []string
		instanceID string
		stoppedAt  time.Time
		destroyed  time.Time
		restarted  = make(chan time.Time, 1)
	)
	ids := func(s *terraform.State) error {
		for _, addr := range []string{"baremetal_node.a", "baremetal_node.b"} {
			id, err := stateAttr(s, addr, "id")
			if err != nil {
				return err
			}
			nodeIDs = append(nodeIDs, id)
		}
		var err error
		instanceID, err = stateAttr(s, "baremetal_instance.app", "id")
		return err
	}
	stopDatabase := planCheckFunc(func() error {
		cluster.Stop(t, "fast")
		stoppedAt = time.Now()
		done := make(chan struct{})
		timer := time.AfterFunc(outageLength, func() {
			defer close(done)
			// Not the test's goroutine: a failure to start is an error,
			// not a Fatal.
			cluster.Start(errorsOnly{t})
			restarted <- time.Now()
		})
		t.Cleanup(func() {
			if timer.Stop() {
				// The test ended early: bring the database back so the
				// controller stops cleanly.
				cluster.Start(t)
				return
			}
			<-done
		})
		return nil
	})
	destroyedAll := stateCheckFunc(func(req statecheck.CheckStateRequest) error {
		destroyed = time.Now()
		if s := req.State; s == nil {
			return errors.New("no state")
		} else if s.Values != nil && s.Values.RootModule != nil && len(s.Values.RootModule.Resources) > 0 {
			return fmt.Errorf("%d resources left in the state", len(s.Values.RootModule.Resources))
		}
		return nil
	})

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkInstancesGone(c), checkNodesGone(c)),
		Steps: []resource.TestStep{
			{Config: config, Check: ids},
			{
				Config:  config,
				Destroy: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("baremetal_instance.app", plancheck.ResourceActionDestroy),
						plancheck.ExpectResourceAction("baremetal_node.a", plancheck.ResourceActionDestroy),
						plancheck.ExpectResourceAction("baremetal_node.b", plancheck.ResourceActionDestroy),
						stopDatabase,
					},
				},
				// No Check: on a destroy step it makes the framework
				// refresh, and plan again, before the apply.
				ConfigStateChecks: []statecheck.StateCheck{destroyedAll},
			},
		},
	})
	if t.Failed() {
		return
	}
	select {
	case at := <-restarted:
		t.Logf("database down for %s; destroy applied %s after the database stopped",
			at.Sub(stoppedAt).Round(100*time.Millisecond), destroyed.Sub(stoppedAt).Round(100*time.Millisecond))
	default:
		t.Fatal("the destroy succeeded but the database has not been started again: the outage did not meet the destroy")
	}

	// No job lost: the nodes' retire jobs complete now that the database
	// is back, and nothing was discarded on the way.
	if _, err := c.GetInstance(context.Background(), instanceID); !errors.Is(err, apiclient.ErrNotFound) {
		t.Errorf("instance %s still visible after the destroy: %v", instanceID, err)
	}
	for _, id := range nodeIDs {
		// The record goes before River marks the job completed: wait for
		// both. Jobs by state, not by node: node_id of a removed node is
		// a 404.
		poll(t, "node "+id+" retired", 60*time.Second, func() (bool, error) {
			n, err := c.GetNode(context.Background(), id)
			if err == nil {
				return false, fmt.Errorf("provision_state %s, fault %q, last_error %q", n.ProvisionState, n.Fault, n.LastError)
			}
			if !errors.Is(err, apiclient.ErrNotFound) {
				return false, err
			}
			completed, err := c.ListJobs(context.Background(), apiclient.JobFilter{State: "completed"})
			if err != nil {
				return false, err
			}
			for _, j := range completed {
				if j.Kind == "retire" && j.NodeID == id {
					return true, nil
				}
			}
			return false, errors.New("record removed, retire job not completed")
		})
	}
	discarded, err := c.ListJobs(context.Background(), apiclient.JobFilter{State: "discarded"})
	if err != nil {
		t.Fatal(err)
	}
	if len(discarded) > 0 {
		t.Errorf("jobs discarded across the outage: %+v", discarded)
	}

	poll(t, "the end of the outage logged", 10*time.Second, func() (bool, error) {
		return strings.Contains(logs.String(), `msg="database reachable again"`), nil
	})
	l := logs.String()
	if n := strings.Count(l, `msg="database unreachable"`); n != 1 {
		t.Errorf("the outage was logged %d times, want once", n)
	}
	if n := strings.Count(l, `msg="database reachable again"`); n != 1 {
		t.Errorf("the end of the outage was logged %d times, want once", n)
	}
	if n := strings.Count(l, `msg="internal error"`); n > 0 {
		t.Errorf("%d internal errors logged during the outage", n)
	}
}

// planCheckFunc is a plan check that runs f (an action between plan and
// apply) and fails with its error.
type planCheckFunc func() error

func (f planCheckFunc) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = f()
}

// stateCheckFunc is a state check of the state after the apply.
type stateCheckFunc func(statecheck.CheckStateRequest) error

func (f stateCheckFunc) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	resp.Error = f(req)
}

// errorsOnly turns a Fatal into an Error, for helpers called off the
// test's goroutine, where Fatal must not be called.
type errorsOnly struct{ testing.TB }

func (e errorsOnly) Fatalf(format string, args ...any) {
	e.Helper()
	e.Errorf(format, args...)
}

func (e errorsOnly) Fatal(args ...any) {
	e.Helper()
	e.Error(args...)
}
