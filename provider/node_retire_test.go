package provider

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// The retire of a destroyed node can wait: for an operator (maintenance) or
// for its BMC (a fault). These tests run the real terraform binary, as only
// its output shows warnings, and check that such a wait is said: in a
// warning at destroy, in node lists and check blocks, and as an at-once
// refusal of a new node of the same name instead of minutes of "Still
// creating...".

// TestAccNodeRetireWaitsForMaintenance: destroying a node in maintenance
// warns that its retire waits; a new node of the same name is refused at
// once, on its name, saying why; once an operator clears maintenance the
// retire finishes and the same apply succeeds; a healthy destroy warns of
// nothing.
func TestAccNodeRetireWaitsForMaintenance(t *testing.T) {
	t.Parallel()
	requireAcc(t)
	env := accEnv(t, testenv.Options{Systems: 2})
	c := accClient(t, env, env.AdminToken)
	tf := newTFCLI(t, "BAREMETAL_ENDPOINT="+env.URL, "BAREMETAL_TOKEN="+env.AdminToken)

	tf.write(requiredProviders + nodeHCL(env, "old", "held", "rc", 0, `
  maintenance        = true
  maintenance_reason = "swap PSU"
`))
	tf.run(0, "apply", "-auto-approve")
	old, err := c.GetNode(context.Background(), "held")
	if err != nil {
		t.Fatal(err)
	}

	out := flat(tf.run(0, "destroy", "-auto-approve"))
	for _, want := range []string{
		"Destroy complete! Resources: 1 destroyed",
		"Warning: Node held is in maintenance: its retire waits",
		// The API's own 202 message.
		"the retire job waits until maintenance is cleared",
		"Maintenance reason: swap PSU",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("destroy output lacks %q:\n%s", want, out)
		}
	}
	if n, err := c.GetNode(context.Background(), old.ID); err != nil || n.ProvisionState != api.StateDeleting {
		t.Fatalf("after destroy: %+v, %v; want the node deleting while in maintenance", n, err)
	}

	// A create timeout far longer than the test waits: a provider that
	// waited it out would fail with the timeout's message, not this one.
	tf.write(requiredProviders + nodeHCL(env, "new", "held", "rc", 1, `
  timeouts {
    create = "2m"
  }
`))
	start := time.Now()
	out = flat(tf.run(1, "apply", "-auto-approve"))
	t.Logf("same name refused after %s", time.Since(start).Round(time.Millisecond))
	for _, want := range []string{
		"Error: Could not create node held",
		`name = "held"`, // the diagnostic is on the name attribute
		`A node named "held" is still being retired (id ` + old.ID + `), and it is in maintenance ("swap PSU")`,
		"controller node maintenance " + old.ID + " --off",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}

	// The operator lets the retire go on: the name frees up and the same
	// configuration applies.
	no := false
	if _, err := c.PatchNode(context.Background(), old.ID, api.NodePatch{Maintenance: &no}, ""); err != nil {
		t.Fatal(err)
	}
	tf.run(0, "apply", "-auto-approve")
	if _, err := c.GetNode(context.Background(), old.ID); !errors.Is(err, apiclient.ErrNotFound) {
		t.Fatalf("old node after maintenance was cleared and the new one created: %v; want it gone", err)
	}

	out = flat(tf.run(0, "destroy", "-auto-approve"))
	if strings.Contains(out, "Warning: Node") {
		t.Errorf("a healthy node's destroy warned:\n%s", out)
	}
}

// TestAccNodesRetireWaitsForBMC: a node destroyed while its BMC is down
// warns at destroy, stays listed by baremetal_nodes (fault = "any", with
// provision_state deleting) so a check block sees it, is left out with
// include_deleting = false, and holds its name: a new node of that name
// is refused saying it waits for the BMC. Once the BMC is back the retire
// ends and the new node is created.
func TestAccNodesRetireWaitsForBMC(t *testing.T) {
	t.Parallel()
	requireAcc(t)
	env := accEnv(t, testenv.Options{Systems: 2, PowerSyncInterval: 300 * time.Millisecond})
	c := accClient(t, env, env.AdminToken)
	tf := newTFCLI(t, "BAREMETAL_ENDPOINT="+env.URL, "BAREMETAL_TOKEN="+env.AdminToken)
	lists := requiredProviders + `
data "baremetal_nodes" "faulted" {
  fault = "any"
}
data "baremetal_nodes" "faulted_in_service" {
  fault            = "any"
  include_deleting = false
}
check "no_faulted_nodes" {
  assert {
    condition     = length(data.baremetal_nodes.faulted.nodes) == 0
    error_message = "faulted nodes: ${join(", ", [for n in data.baremetal_nodes.faulted.nodes : "${n.name} (${n.provision_state}, ${n.fault})"])}"
  }
}
output "faulted" {
  value = [for n in data.baremetal_nodes.faulted.nodes : "${n.name}/${n.provision_state}/${n.fault}"]
}
output "faulted_in_service" {
  value = length(data.baremetal_nodes.faulted_in_service.nodes)
}
`
	output := func(name string) string {
		t.Helper()
		var v any
		if err := json.Unmarshal([]byte(tf.run(0, "output", "-json", name)), &v); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}

	tf.write(lists + nodeHCL(env, "old", "busy", "rc", 0, ""))
	tf.run(0, "apply", "-auto-approve")
	old, err := c.GetNode(context.Background(), "busy")
	if err != nil {
		t.Fatal(err)
	}
	setFault(t, env, env.Sim.SystemIDs()[0], sim.FaultDown)
	poll(t, "busy faulted", 30*time.Second, func() (bool, error) {
		n, err := c.GetNode(context.Background(), old.ID)
		return err == nil && n.Fault == "bmc_unreachable", err
	})

	// Destroyed by leaving it out of the configuration.
	tf.write(lists)
	out := flat(tf.run(0, "apply", "-auto-approve"))
	if want := "Warning: Node busy has a BMC fault: its retire waits for the BMC"; !strings.Contains(out, want) {
		t.Errorf("apply that destroyed the faulted node lacks %q:\n%s", want, out)
	}
	// The lists were read before the destroy; read them again.
	out = flat(tf.run(0, "apply", "-auto-approve"))
	if want := "faulted nodes: busy (deleting, bmc_unreachable)"; !strings.Contains(out, want) {
		t.Errorf("the check block does not see the node being retired; want %q in:\n%s", want, out)
	}
	if got := output("faulted"); got != `["busy/deleting/bmc_unreachable"]` {
		t.Errorf("faulted nodes: %s; want the node being retired, with its state", got)
	}
	if got := output("faulted_in_service"); got != "0" {
		t.Errorf("faulted nodes with include_deleting = false: %s; want 0", got)
	}

	tf.write(lists + nodeHCL(env, "new", "busy", "rc", 1, `
  timeouts {
    create = "2m"
  }
`))
	start := time.Now()
	out = flat(tf.run(1, "apply", "-auto-approve"))
	t.Logf("same name refused after %s (grace %s)", time.Since(start).Round(time.Millisecond), retireStuckAfter)
	for _, want := range []string{
		"Error: Could not create node busy",
		`name = "busy"`,
		`A node named "busy" is still being retired (id ` + old.ID + `), waiting for its BMC: fault bmc_unreachable since`,
		"controller node delete " + old.ID + " --force",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}

	// The BMC answers again: the retire powers the machine off, the record
	// and its name go, and the new node is created.
	setFault(t, env, env.Sim.SystemIDs()[0], sim.FaultNone)
	poll(t, "busy retired", 30*time.Second, func() (bool, error) {
		_, err := c.GetNode(context.Background(), old.ID)
		if errors.Is(err, apiclient.ErrNotFound) {
			return true, nil
		}
		return false, err
	})
	tf.run(0, "apply", "-auto-approve")
	if got := output("faulted"); got != `[]` {
		t.Errorf("faulted nodes after the BMC came back: %s", got)
	}
	tf.run(0, "destroy", "-auto-approve")
}
