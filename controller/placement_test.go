package main

import (
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestCLIPlacement: node create takes traits and an owner, node show
// tells the operator's traits from the derived ones, node list filters
// by requirements, and node capacity says how many instances of a shape
// fit now and why not more.
func TestCLIPlacement(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 2})
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	t.Setenv(bmcPasswordEnv, "password")
	ids := env.Sim.SystemIDs()
	mustCLI(t, runNode, "create", "--name", "gpu-1", "--class", "gpu", "--bmc-address", env.Sim.URL(), "--bmc-username", "admin",
		"--bmc-system-id", ids[0], "--trait", "CUSTOM_GPU_A100,rack:r1", "--trait", "rack:r1")
	mustCLI(t, runNode, "create", "--name", "team-1", "--class", "gpu", "--bmc-address", env.Sim.URL(), "--bmc-username", "admin",
		"--bmc-system-id", ids[1], "--owner", "team-b")
	for _, name := range []string{"gpu-1", "team-1"} {
		n, err := env.App.Store.GetNode(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		env.WaitNode(t, n.ID, 30*time.Second, func(n *baremetal.Node) bool { return n.ProvisionState == baremetal.StateAvailable })
	}
	show := mustCLI(t, runNode, "show", "gpu-1")
	if fieldOf(show, "traits") != "CUSTOM_GPU_A100 rack:r1" || fieldOf(show, "owner") != "-" || !strings.Contains(fieldOf(show, "derived traits"), "HW_ARCH_") {
		t.Errorf("node show:\n%s", show)
	}
	if show := mustCLI(t, runNode, "show", "team-1"); fieldOf(show, "owner") != "team-b" {
		t.Errorf("node show of an owned node:\n%s", show)
	}
	list := mustCLI(t, runNode, "list", "--trait", "CUSTOM_GPU_A100")
	if rowOf(list, "gpu-1") == "" || rowOf(list, "team-1") != "" {
		t.Errorf("list --trait CUSTOM_GPU_A100:\n%s", list)
	}
	if list := mustCLI(t, runNode, "list", "--owner", "team-b", "--schedulable", "true"); rowOf(list, "team-1") == "" || rowOf(list, "gpu-1") != "" {
		t.Errorf("list --owner team-b --schedulable true:\n%s", list)
	}
	out := mustCLI(t, runNode, "capacity", "--project", "team-a", "--class", "gpu", "--trait", "CUSTOM_GPU_A100")
	if !strings.Contains(out, "1 instances can be placed now for project team-a (1 nodes free that fit; quota: unlimited)") ||
		!strings.Contains(out, "1 lacks trait CUSTOM_GPU_A100") || !strings.Contains(out, "1 is owned by another project") {
		t.Errorf("node capacity:\n%s", out)
	}
	if _, err := cliRun(t, runNode, "capacity", "--class", "gpu"); err == nil || !strings.Contains(err.Error(), "project is required") {
		t.Errorf("capacity without a project as an admin: %v", err)
	}
	if _, err := cliRun(t, runNode, "create", "--name", "bad", "--class", "gpu", "--bmc-address", "https://10.0.0.9", "--bmc-username", "admin",
		"--trait", "no spaces please"); err == nil || !strings.Contains(err.Error(), "traits[0]") {
		t.Errorf("create with a bad trait: %v", err)
	}
}

// fieldOf returns the value of a "key: value" line of node show's output.
func fieldOf(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestCLIShowsHardwareSettings: node show tells the hardware settings a
// node declares and whether the BMC shows them.
func TestCLIShowsHardwareSettings(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	spec := env.NodeSpec(0, "hw-cli", "gpu")
	spec.Settings = baremetal.HardwareSettings{BIOS: map[string]string{"ProcTurboMode": "Disabled"}}
	n, err := env.App.Service.CreateNode(t.Context(), env.Admin(), spec)
	if err != nil {
		t.Fatal(err)
	}
	env.WaitNode(t, n.ID, 30*time.Second, func(n *baremetal.Node) bool {
		return n.ProvisionState == baremetal.StateAvailable && n.Observed.ReadAt != nil
	})
	show := mustCLI(t, runNode, "show", "hw-cli")
	if fieldOf(show, "hardware settings") != "ProcTurboMode=Disabled" || !strings.HasPrefix(fieldOf(show, "settings state"), "in effect (read ") {
		t.Errorf("node show:\n%s", show)
	}
}
