package main

import (
	"context"
	"strings"
	"testing"

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
