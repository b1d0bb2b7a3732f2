package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestCLIIPPools: an operator sees pools and what they hold, and a pool
// that holds an address is not deleted.
func TestCLIIPPools(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	ctx := context.Background()
	c, err := apiclient.New(env.URL, apiclient.Options{Token: env.AdminToken, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateIPPool(ctx, api.IPPoolCreate{Name: "cli-lan", CIDR: "10.70.0.0/24", Gateway: "10.70.0.1",
		Ranges: []api.IPRange{{Start: "10.70.0.10", End: "10.70.0.20"}}, DNSServers: []string{"10.70.0.53"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Store.AllocateAddress(ctx, p.ID, "cli-inst", "cli-node"); err != nil {
		t.Fatal(err)
	}

	if row := rowOf(mustCLI(t, runIPPool, "list"), "cli-lan"); !strings.Contains(row, "10.70.0.0/24") || !strings.Contains(row, "10.70.0.10-10.70.0.20") {
		t.Errorf("list row: %q", row)
	}
	if out := mustCLI(t, runIPPool, "show", "cli-lan"); !strings.Contains(out, "10.70.0.53") || !strings.Contains(out, p.ID) {
		t.Errorf("show:\n%s", out)
	}
	if row := rowOf(mustCLI(t, runIPPool, "allocations", "cli-lan"), "10.70.0.10"); !strings.Contains(row, "cli-inst") || !strings.Contains(row, "cli-node") {
		t.Errorf("allocations row: %q", row)
	}
	if _, err := cliRun(t, runIPPool, "delete", "cli-lan"); err == nil || !strings.Contains(err.Error(), "1 allocated address") {
		t.Fatalf("delete of a pool holding an address: %v", err)
	}
	if _, err := env.App.Store.ReleaseInstanceAddresses(ctx, "cli-inst"); err != nil {
		t.Fatal(err)
	}
	if row := rowOf(mustCLI(t, runIPPool, "allocations", "cli-lan"), "10.70.0.10"); !strings.Contains(row, "node cleaning") {
		t.Errorf("held by the cleaning node: %q", row)
	}
	if _, err := env.App.Store.FreeNodeAddresses(ctx, "cli-node"); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, runIPPool, "delete", "cli-lan"); !strings.Contains(out, "deleted") {
		t.Errorf("delete: %q", out)
	}
}
