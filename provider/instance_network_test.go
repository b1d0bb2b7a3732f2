package provider

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestAccInstanceNetwork: a network with a bond of two inspected NICs
// (one by port name, one by MAC), a tagged VLAN and a static
// address; a plan-time error names the attribute at fault (VLAN 4095, a
// gateway outside the subnet) and creates nothing; a NIC the node does not
// have is refused by the controller, on the attribute; changing the
// address rebuilds the instance in place on the same node; a plan after
// the create is empty.
func TestAccInstanceNetwork(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	node := enrollNode(t, env, "net-0", "gpu", 0)
	inv := api.AgentInventory{CPUs: 2, MemoryBytes: 1 << 30,
		NICs: []api.AgentNIC{{Name: "eno1", MAC: "52:54:00:00:00:01", LinkUp: true}, {Name: "eno2", MAC: "52:54:00:00:00:02", LinkUp: true}}}
	data, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := env.App.Store.InTx(ctx, func(tx store.Tx) error {
		return tx.SetInventory(ctx, &baremetal.Inventory{NodeID: node.ID, Data: string(data), InspectedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	const addr = "baremetal_instance.net"
	config := func(mac string, vlan int, address, gateway string) string {
		return providerConfig(env, env.AdminToken) + `
resource "baremetal_instance" "net" {
  name    = "net"
  project = "acc"
  node_id = "` + node.ID + `"
  image = {
    url = "https://images.example.com/net.iso"
  }
  network = {
    interfaces = [
      { name = "nic0", port = "eno1", mtu = 9000 },
      { name = "nic1", mac = "` + mac + `", mtu = 9000 },
      { name = "bond0", mtu = 9000, bond = { interfaces = ["nic0", "nic1"], mode = "802.3ad", lacp_rate = "fast", xmit_hash_policy = "layer3+4" } },
      { name = "vlan100", vlan = { interface = "bond0", id = ` + itoa(vlan) + ` } },
    ]
    addresses = [
      { interface = "vlan100", address = "` + address + `", gateway = "` + gateway + `",
        routes = [{ destination = "10.200.0.0/16", gateway = "10.100.0.254" }] },
    ]
    dns_servers    = ["10.100.0.53"]
    search_domains = ["example.internal"]
  }
}
`
	}
	var id string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkInstancesGone(c),
		Steps: []resource.TestStep{
			{
				Config:      config("52:54:00:00:00:02", 4095, "10.100.0.10/24", "10.100.0.1"),
				ExpectError: regexp.MustCompile(`(?s)network\.interfaces\[3\]\.vlan\.id.*between 1 and 4094`),
			},
			{
				Config:      config("52:54:00:00:00:02", 100, "10.100.0.10/24", "10.9.0.1"),
				ExpectError: regexp.MustCompile(`(?s)Invalid network.*network\.addresses\[0\]\.gateway 10\.9\.0\.1 is not inside`),
			},
			{
				Config:      config("52:54:00:00:00:99", 100, "10.100.0.10/24", "10.100.0.1"),
				ExpectError: regexp.MustCompile(`(?s)Could not create instance net.*network\.interfaces\[1\]\.mac 52:54:00:00:00:99 is not a NIC of the\s+node`),
			},
			{
				// The MAC as some write it: the controller stores it
				// normalized, the state keeps the configuration's spelling.
				Config: config("52-54-00-00-00-02", 100, "10.100.0.10/24", "10.100.0.1"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "state", "active"),
					resource.TestCheckResourceAttr(addr, "network.interfaces.1.mac", "52-54-00-00-00-02"),
					resource.TestCheckResourceAttr(addr, "network.addresses.0.address", "10.100.0.10/24"),
					func(s *terraform.State) error { id, _ = stateAttr(s, addr, "id"); return nil },
				),
			},
			{
				Config:   config("52-54-00-00-00-02", 100, "10.100.0.10/24", "10.100.0.1"),
				PlanOnly: true,
			},
			{
				Config: config("52-54-00-00-00-02", 100, "10.100.0.11/24", "10.100.0.1"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "state", "active"),
					resource.TestCheckResourceAttr(addr, "rebuilds", "1"),
					resource.TestCheckResourceAttr(addr, "network.addresses.0.address", "10.100.0.11/24"),
					resource.TestCheckResourceAttrPtr(addr, "id", &id),
					resource.TestCheckResourceAttr(addr, "node_id", node.ID),
					resource.TestCheckResourceAttr(addr, "network.interfaces.1.mac", "52-54-00-00-00-02"),
				),
			},
			{
				Config:   config("52-54-00-00-00-02", 100, "10.100.0.11/24", "10.100.0.1"),
				PlanOnly: true,
			},
		},
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestAccInstancePoolAddress: an instance whose network takes an address
// from a baremetal_ip_pool shows it in addresses (the pool's lowest free
// one, with its gateway); a new image rebuilds it in place and it keeps the
// address; the plan after each apply is empty.
func TestAccInstancePoolAddress(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	node := enrollNode(t, env, "pool-0", "gpu", 0)
	data, _ := json.Marshal(api.AgentInventory{CPUs: 2, NICs: []api.AgentNIC{{Name: "eno1", MAC: "52:54:00:00:00:01", LinkUp: true}}})
	ctx := context.Background()
	if err := env.App.Store.InTx(ctx, func(tx store.Tx) error {
		return tx.SetInventory(ctx, &baremetal.Inventory{NodeID: node.ID, Data: string(data), InspectedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	const addr = "baremetal_instance.web"
	config := func(image string) string {
		return providerConfig(env, env.AdminToken) + `
resource "baremetal_ip_pool" "tenant" {
  name        = "tenant"
  cidr        = "10.70.0.0/24"
  gateway     = "10.70.0.1"
  ranges      = [{ start = "10.70.0.10", end = "10.70.0.20" }]
  dns_servers = ["10.70.0.53"]
}

resource "baremetal_instance" "web" {
  name    = "web"
  project = "acc"
  node_id = "` + node.ID + `"
  image = {
    url = "` + image + `"
  }
  network = {
    interfaces = [{ name = "nic0", port = "eno1" }]
    addresses  = [{ interface = "nic0", pool = baremetal_ip_pool.tenant.id }]
  }
}
`
	}
	check := resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(addr, "state", "active"),
		resource.TestCheckResourceAttr(addr, "addresses.#", "1"),
		resource.TestCheckResourceAttr(addr, "addresses.0.address", "10.70.0.10/24"),
		resource.TestCheckResourceAttr(addr, "addresses.0.gateway", "10.70.0.1"),
		resource.TestCheckResourceAttr(addr, "addresses.0.pool_name", "tenant"),
		resource.TestCheckResourceAttr(addr, "addresses.0.dns_servers.0", "10.70.0.53"),
		resource.TestCheckResourceAttrPair(addr, "addresses.0.pool", "baremetal_ip_pool.tenant", "id"),
	)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkInstancesGone(c),
		Steps: []resource.TestStep{
			{Config: config("https://images.example.com/one.iso"), Check: check},
			{Config: config("https://images.example.com/one.iso"), PlanOnly: true},
			{
				Config: config("https://images.example.com/two.iso"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(check, resource.TestCheckResourceAttr(addr, "rebuilds", "1")),
			},
			{Config: config("https://images.example.com/two.iso"), PlanOnly: true},
		},
	})
}
