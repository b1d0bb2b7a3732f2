package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestCLIPowerWait: --wait follows a power job to its end with progress
// lines, and says why a job of a node in maintenance does not move.
func TestCLIPowerWait(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	nodes := env.EnrollNodes(t, 1, "wait", "gpu")
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	ctx := context.Background()
	c, err := apiclient.New(env.URL, apiclient.Options{Token: env.AdminToken})
	if err != nil {
		t.Fatal(err)
	}

	// Through the command line: returns once the power is observed.
	if err := runNode(ctx, []string{"power", "wait-0", "on", "--wait"}); err != nil {
		t.Fatalf("power on --wait: %v", err)
	}
	n, err := env.App.Store.GetNode(ctx, nodes[0].ID)
	if err != nil || n.PowerState != baremetal.PowerOn {
		t.Fatalf("after power on --wait: power %q, %v", n.PowerState, err)
	}

	// The lines (not a terminal: one per change, then the end).
	acc, err := c.NodePower(ctx, nodes[0].ID, "off")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := waitJob(ctx, c, &out, nodes[0].ID, acc.JobID, "power off wait-0"); err != nil {
		t.Fatalf("waitJob: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "power off wait-0: done in ") || !strings.HasSuffix(last, "node power off") {
		t.Fatalf("last line %q; all:\n%s", last, out.String())
	}
	if !strings.Contains(out.String(), "power off wait-0: job ") {
		t.Fatalf("no progress line:\n%s", out.String())
	}

	// In maintenance the job waits; --wait says so and gives up at its timeout.
	if _, err := env.App.Service.UpdateNode(ctx, env.Admin(), nodes[0].ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
		spec := service.SpecOf(cur)
		spec.Maintenance, spec.MaintenanceReason = true, "reseating a DIMM"
		return spec, nil
	}); err != nil {
		t.Fatal(err)
	}
	acc, err = c.NodePower(ctx, nodes[0].ID, "on")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = waitJob(wctx, c, &out, nodes[0].ID, acc.JobID, "power on wait-0")
	if err == nil || !strings.Contains(err.Error(), "gave up waiting") || !strings.Contains(err.Error(), "node in maintenance, the job waits until it is cleared (reseating a DIMM)") {
		t.Fatalf("waitJob in maintenance: %v\n%s", err, out.String())
	}
}

// TestProgressLineAttempts: a job that gives up shows its bound; one that
// retries until it succeeds (max_attempts 0) shows none, rather than
// "attempt 1/0" or River's 32767.
func TestProgressLineAttempts(t *testing.T) {
	node := &api.Node{PowerState: api.PowerOn}
	for _, c := range []struct {
		max  int
		want string
	}{{6, "attempt 2/6;"}, {0, "attempt 2 (retries until it succeeds);"}} {
		line := progressLine("inspect n", &api.Job{ID: 7, State: "running", Attempt: 2, MaxAttempts: c.max}, node)
		if !strings.Contains(line, c.want) {
			t.Errorf("max_attempts %d: %q, want %q in it", c.max, line, c.want)
		}
	}
}
