package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// checkPoolsGone is a CheckDestroy: every pool in the state is gone.
func checkPoolsGone(c *apiclient.Client) func(*terraform.State) error {
	return func(s *terraform.State) error {
		for _, rs := range s.RootModule().Resources {
			if rs.Type != "baremetal_ip_pool" {
				continue
			}
			_, err := c.GetIPPool(context.Background(), rs.Primary.ID)
			if errors.Is(err, apiclient.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("ip pool %s still exists", rs.Primary.ID)
		}
		return nil
	}
}

// TestAccIPPool: create, an in-place change of the DNS servers, the data
// source, import by name, a range change refused while an address it
// would drop is held (naming it), and destroy once the address is free.
func TestAccIPPool(t *testing.T) {
	t.Parallel()
	env := accEnv(t, testenv.Options{Systems: 1})
	c := accClient(t, env, env.AdminToken)
	const addr = "baremetal_ip_pool.lan"
	cfg := func(ranges, dns string) string {
		return providerConfig(env, env.AdminToken) + fmt.Sprintf(`
resource "baremetal_ip_pool" "lan" {
  name        = "acc-lan"
  cidr        = "10.60.0.0/24"
  gateway     = "10.60.0.1"
  ranges      = [%s]
  dns_servers = [%s]
}

data "baremetal_ip_pool" "lan" {
  name = baremetal_ip_pool.lan.name
}
`, ranges, dns)
	}
	first := `{ start = "10.60.0.10", end = "10.60.0.19" }, { start = "10.60.0.100", end = "10.60.0.199" }`
	ctx := context.Background()

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkPoolsGone(c),
		Steps: []resource.TestStep{
			{
				Config: cfg(first, `"10.60.0.53"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cidr"), knownvalue.StringExact("10.60.0.0/24")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ranges").AtSliceIndex(1).AtMapKey("end"), knownvalue.StringExact("10.60.0.199")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("search_domains"), knownvalue.ListSizeExact(0)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("description"), knownvalue.StringExact("")),
					statecheck.ExpectKnownValue("data.baremetal_ip_pool.lan", tfjsonpath.New("gateway"), knownvalue.StringExact("10.60.0.1")),
					statecheck.ExpectKnownValue("data.baremetal_ip_pool.lan", tfjsonpath.New("ranges"), knownvalue.ListSizeExact(2)),
				},
				Check: resource.TestCheckResourceAttrPair(addr, "id", "data.baremetal_ip_pool.lan", "id"),
			},
			{
				// DNS changes in place: same pool, same id.
				Config: cfg(first, `"10.60.0.53", "10.60.0.54"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("dns_servers"),
						knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("10.60.0.53"), knownvalue.StringExact("10.60.0.54")})),
				},
				Check: func(s *terraform.State) error {
					p, err := c.GetIPPool(ctx, "acc-lan")
					if err != nil {
						return err
					}
					if id, _ := stateAttr(s, addr, "id"); id != p.ID || p.Version != 2 || len(p.DNSServers) != 2 {
						return fmt.Errorf("controller has %+v; state id %s", p, id)
					}
					return nil
				},
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     "acc-lan",
				ImportStateVerify: true,
			},
			{
				// An instance holds 10.60.0.10: dropping the first range
				// is refused, naming it, and nothing changes.
				PreConfig: func() {
					if _, err := env.App.Store.AllocateAddress(ctx, "acc-lan", "acc-instance", "acc-node"); err != nil {
						t.Fatal(err)
					}
				},
				Config:      cfg(`{ start = "10.60.0.100", end = "10.60.0.199" }`, `"10.60.0.53", "10.60.0.54"`),
				ExpectError: regexp.MustCompile(`(?s)Could not update ip pool acc-lan.*10\.60\.0\.10;`),
			},
			{
				// Once the instance is gone and its node cleaned, the pool
				// may shrink (and be destroyed at the end).
				PreConfig: func() {
					if _, err := env.App.Store.ReleaseInstanceAddresses(ctx, "acc-instance"); err != nil {
						t.Fatal(err)
					}
					if _, err := env.App.Store.FreeNodeAddresses(ctx, "acc-node"); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg(`{ start = "10.60.0.100", end = "10.60.0.199" }`, `"10.60.0.53", "10.60.0.54"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ranges"), knownvalue.ListSizeExact(1)),
				},
			},
		},
	})
}

// TestAccIPPoolValidation: a pool's addresses are checked at plan time,
// each error on the attribute at fault, before any controller is asked.
func TestAccIPPoolValidation(t *testing.T) {
	t.Parallel()
	pool := func(body string) string {
		return unreachableProvider + `
resource "baremetal_ip_pool" "test" {
  name = "p1"
` + body + `
}`
	}
	for _, tc := range []struct{ name, config, want string }{
		{"host bits", pool(`cidr = "10.0.0.5/24"`), `(?s)Invalid cidr.*host bits set; the subnet is 10\.0\.0\.0/24`},
		{"not a cidr", pool(`cidr = "10.0.0.0"`), `(?s)Invalid cidr.*not a CIDR`},
		{"v6 too big", pool(`cidr = "2001:db8::/48"`), `(?s)larger than a /64`},
		{"gateway outside", pool(`
  cidr    = "10.0.0.0/24"
  gateway = "10.0.1.1"`), `(?s)with baremetal_ip_pool\.test,.*gateway 10\.0\.1\.1 is not inside cidr 10\.0\.0\.0/24`},
		{"gateway is the broadcast", pool(`
  cidr    = "10.0.0.0/24"
  gateway = "10.0.0.255"`), `(?s)gateway 10\.0\.0\.255 is the broadcast address`},
		{"range backwards", pool(`
  cidr   = "10.0.0.0/24"
  ranges = [{ start = "10.0.0.20", end = "10.0.0.10" }]`), `(?s)end 10\.0\.0\.10 is before start 10\.0\.0\.20`},
		{"ranges overlap", pool(`
  cidr   = "10.0.0.0/24"
  ranges = [{ start = "10.0.0.10", end = "10.0.0.20" }, { start = "10.0.0.15", end = "10.0.0.30" }]`),
			`(?s)Ranges out of order or overlapping.*10\.0\.0\.15-10\.0\.0\.30 must start after the end of the range before it`},
		{"range outside", pool(`
  cidr   = "10.0.0.0/24"
  ranges = [{ start = "10.0.0.10", end = "10.0.2.20" }]`), `(?s)end 10\.0\.2\.20 is not inside cidr`},
		{"range holds the network address", pool(`
  cidr   = "10.0.0.0/24"
  ranges = [{ start = "10.0.0.0", end = "10.0.0.20" }]`), `(?s)holds 10\.0\.0\.0, the network address`},
		{"bad DNS server", pool(`
  cidr        = "10.0.0.0/24"
  dns_servers = ["10.0.0.53", "dns.example"]`), `(?s)"dns\.example" is not an IP address`},
		{"DNS server not canonical", pool(`
  cidr        = "2001:db8::/64"
  dns_servers = ["2001:DB8::53"]`), `(?s)Write "2001:DB8::53" as 2001:db8::53`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      tc.config,
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}

// The API names a pool's fields as JSON paths; a diagnostic points at
// the attribute.
func TestPoolFieldPath(t *testing.T) {
	for field, want := range map[string]string{
		"name":            "name",
		"ranges":          "ranges",
		"ranges[1].start": "ranges[1].start",
		"dns_servers[0]":  "dns_servers[0]",
		"gateway":         "gateway",
	} {
		p, ok := poolFieldPath(field)
		if !ok || p.String() != want {
			t.Errorf("poolFieldPath(%q) = %s, %v; want %s", field, p, ok, want)
		}
	}
	for _, field := range []string{"", "If-Match", "pool", "ranges[x].start"} {
		if p, ok := poolFieldPath(field); ok {
			t.Errorf("poolFieldPath(%q) = %s; want none", field, p)
		}
	}
}
