package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// These configurations are refused before the provider talks to any
// controller, so the endpoint points nowhere.
const unreachableProvider = `
provider "baremetal" {
  endpoint = "http://127.0.0.1:1"
  token    = "unused"
}
`

func nodeConfigWith(extra string) string {
	return unreachableProvider + `
resource "baremetal_node" "test" {
  name           = "n1"
  driver         = "redfish"
  resource_class = "rc"
  bmc = {
    address  = "http://127.0.0.1:2"
    username = "admin"
    password = "password"
  }
` + extra + `
}
`
}

func TestAccValidationErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		config string
		want   string
	}{
		{"bad driver", unreachableProvider + `
resource "baremetal_node" "test" {
  name           = "n1"
  driver         = "idrac"
  resource_class = "rc"
  bmc = {
    address  = "http://127.0.0.1:2"
    username = "admin"
    password = "password"
  }
}`, `(?s)driver value must be one of:.*"redfish".*"ipmi".*got: "idrac"`},
		{"maintenance without reason", nodeConfigWith(`maintenance = true`),
			`(?s)Missing maintenance_reason.*maintenance_reason is required when maintenance is\s+true`},
		{"reason without maintenance", nodeConfigWith(`maintenance_reason = "disk"`),
			`maintenance_reason without maintenance`},
		{"address scheme does not fit redfish", unreachableProvider + `
resource "baremetal_node" "test" {
  name           = "n1"
  driver         = "redfish"
  resource_class = "rc"
  bmc = {
    address  = "ipmi://10.0.0.1"
    username = "admin"
    password = "password"
  }
}`, `(?s)BMC address does not fit the driver.*scheme "ipmi" does not fit driver redfish`},
		{"address scheme does not fit ipmi", unreachableProvider + `
resource "baremetal_node" "test" {
  name           = "n1"
  driver         = "ipmi"
  resource_class = "rc"
  bmc = {
    address  = "https://10.0.0.1"
    username = "admin"
    password = "password"
  }
}`, `(?s)scheme "https" does not fit driver ipmi`},
		{"system_id with ipmi", unreachableProvider + `
resource "baremetal_node" "test" {
  name           = "n1"
  driver         = "ipmi"
  resource_class = "rc"
  bmc = {
    address   = "ipmi://10.0.0.1"
    username  = "admin"
    password  = "password"
    system_id = "/redfish/v1/Systems/1"
  }
}`, `system_id needs driver redfish`},
		{"cipher_suite with redfish", nodeConfigWith(``) + `
resource "baremetal_node" "cs" {
  name           = "n2"
  driver         = "redfish"
  resource_class = "rc"
  bmc = {
    address      = "https://10.0.0.1"
    username     = "admin"
    password     = "password"
    cipher_suite = 17
  }
}`, `cipher_suite needs driver ipmi`},
		{"bad node name", nodeConfigWith(`# name is set above`) + `
resource "baremetal_node" "bad" {
  name           = "Not_A_Label"
  driver         = "redfish"
  resource_class = "rc"
  bmc = {
    address  = "http://127.0.0.1:2"
    username = "admin"
    password = "password"
  }
}`, `(?s)name.*must be a DNS label`},
		{"both node_id and resource_class", unreachableProvider + `
resource "baremetal_instance" "test" {
  name           = "i1"
  resource_class = "rc"
  node_id        = "4f0c8a4e-0b7c-4a43-8a0e-2f1f6c1d9a11"
  image = {
    url = "https://images.example.com/a.img"
  }
}`, `(?s)Invalid Attribute Combination.*Exactly one of these attributes must be configured:\s+\[resource_class,node_id\]`},
		{"neither node_id nor resource_class", unreachableProvider + `
resource "baremetal_instance" "test" {
  name = "i1"
  image = {
    url = "https://images.example.com/a.img"
  }
}`, `(?s)Exactly one of these attributes must be configured`},
		{"bad power_state", unreachableProvider + `
resource "baremetal_instance" "test" {
  name           = "i1"
  resource_class = "rc"
  power_state    = "sleeping"
  image = {
    url = "https://images.example.com/a.img"
  }
}`, `power_state value must be one of`},
		{"deploy_timeout too short", unreachableProvider + `
resource "baremetal_instance" "test" {
  name           = "i1"
  resource_class = "rc"
  deploy_timeout = "10s"
  image = {
    url = "https://images.example.com/a.img"
  }
}`, `(?s)Invalid duration.*deploy_timeout must be a duration between 1m and 24h.*got\s+"10s"`},
		{"deploy_timeout not a duration", unreachableProvider + `
resource "baremetal_instance" "test" {
  name           = "i1"
  resource_class = "rc"
  deploy_timeout = "half an hour"
  image = {
    url = "https://images.example.com/a.img"
  }
}`, `(?s)deploy_timeout must be a duration between 1m and 24h`},
		{"bad fault filter", unreachableProvider + `
data "baremetal_nodes" "test" {
  fault = "broken"
}`, `(?s)fault value must be one of:.*"any".*"none"`},
		{"node data source needs id or name", unreachableProvider + `
data "baremetal_node" "test" {
}`, `(?s)Exactly one of these attributes must be configured:\s+\[id,name\]`},
	}
	for _, tc := range cases {
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

// TestAccProviderUnreachableController: a controller that never answers
// fails the plan with the cause, once the client has retried through what
// could have been a restart (about a minute and a half); in a test of its
// own, in parallel with the others, since it is mostly waiting.
func TestAccProviderUnreachableController(t *testing.T) {
	t.Parallel()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `
provider "baremetal" {
  endpoint = "http://127.0.0.1:1"
  token    = "x"
  timeout  = "1s"
}
data "baremetal_nodes" "all" {}
`,
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Could not list nodes.*connection refused`),
		}},
	})
}

func TestAccProviderConfigErrors(t *testing.T) {
	t.Setenv(EnvEndpoint, "")
	t.Setenv(EnvToken, "")
	cases := []struct {
		name   string
		config string
		want   string
	}{
		{"no endpoint", `
provider "baremetal" {
  token = "x"
}
data "baremetal_nodes" "all" {}
`, `(?s)Missing controller endpoint.*` + EnvEndpoint},
		{"no token", `
provider "baremetal" {
  endpoint = "http://127.0.0.1:1"
}
data "baremetal_nodes" "all" {}
`, `(?s)Missing API token.*` + EnvToken},
		{"bad endpoint", `
provider "baremetal" {
  endpoint = "127.0.0.1:8080"
  token    = "x"
}
data "baremetal_nodes" "all" {}
`, `Invalid URL`},
		{"bad timeout", `
provider "baremetal" {
  endpoint = "http://127.0.0.1:1"
  token    = "x"
  timeout  = "soon"
}
data "baremetal_nodes" "all" {}
`, `Invalid duration`},
	}
	for _, tc := range cases {
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
