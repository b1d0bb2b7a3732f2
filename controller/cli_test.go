package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestCLIMaintenance: an operator sets and clears maintenance with the CLI;
// the reason is required, and the events name the operator's token.
func TestCLIMaintenance(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	nodes := env.EnrollNodes(t, 1, "cli", "gpu")
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	ctx := context.Background()
	if err := runNode(ctx, []string{"maintenance", "cli-0"}); err == nil || !strings.Contains(err.Error(), "--reason is required") {
		t.Fatalf("maintenance without reason: %v", err)
	}
	if err := runNode(ctx, []string{"maintenance", "cli-0", "--reason", "swap PSU"}); err != nil {
		t.Fatal(err)
	}
	n, err := env.App.Store.GetNode(ctx, nodes[0].ID)
	if err != nil || !n.Maintenance || n.MaintenanceReason != "swap PSU" {
		t.Fatalf("after CLI maintenance: %+v %v", n, err)
	}
	if err := runNode(ctx, []string{"list", "--maintenance", "true", "-o", "json"}); err != nil {
		t.Fatal(err)
	}
	if err := runNode(ctx, []string{"maintenance", "cli-0", "--off"}); err != nil {
		t.Fatal(err)
	}
	n, _ = env.App.Store.GetNode(ctx, nodes[0].ID)
	if n.Maintenance || n.MaintenanceReason != "" {
		t.Fatalf("after --off: %+v", n)
	}
	member := env.MemberToken(t, "p1")
	t.Setenv("BAREMETAL_TOKEN", member)
	if err := runNode(ctx, []string{"maintenance", "cli-0", "--reason", "x"}); err == nil || !strings.Contains(err.Error(), "only an admin") {
		t.Fatalf("member maintenance via CLI: %v", err)
	}
}

// TestCLIPowerAndFilters: the CLI checks a power action and the list
// filters against the API's values before sending them (a typo is
// answered with the valid ones, and nothing is queued), and soft_off, the
// value the API's route list once forgot, is queued like the others.
func TestCLIPowerAndFilters(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	nodes := env.EnrollNodes(t, 1, "cli", "gpu")
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"power", "cli-0", "sideways"}, `power action "sideways" must be one of on, off, soft_off, reset`},
		{[]string{"list", "--state", "busy"}, `--state "busy" must be one of enroll, available, deploying, active, deploy_failed, cleaning, deleting`},
		{[]string{"list", "--fault", "bmc_down"}, `--fault "bmc_down" must be one of any, none, bmc_unreachable,`},
	} {
		if err := runNode(ctx, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	evs, _, err := env.App.Store.ListEvents(ctx, nodes[0].ID, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == "power_requested" {
			t.Fatalf("a refused action reached the controller: %+v", e)
		}
	}
	if err := runNode(ctx, []string{"power", "cli-0", "soft_off"}); err != nil {
		t.Fatal(err)
	}
	if err := runNode(ctx, []string{"list", "--state", "available", "--fault", "none"}); err != nil {
		t.Fatal(err)
	}
	evs, _, err = env.App.Store.ListEvents(ctx, nodes[0].ID, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(e *baremetal.Event) bool {
		return e.Type == "power_requested" && strings.Contains(e.Message, "power soft_off")
	}) {
		t.Fatalf("no soft_off request among the events %+v", evs)
	}
}
