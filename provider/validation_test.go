package provider

import (
	"fmt"
	"regexp"
	"strings"
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

// instanceWith is a baremetal_instance placed by the requirements in extra.
func instanceWith(extra string) string {
	return unreachableProvider + `
resource "baremetal_instance" "test" {
  name = "i1"
  image = {
    url = "https://images.example.com/a.img"
  }
` + extra + `
}
`
}

// manyTraits is n distinct traits, as HCL list elements.
func manyTraits(n int) string {
	t := make([]string, n)
	for i := range t {
		t[i] = fmt.Sprintf("%q", fmt.Sprintf("CUSTOM_T%d", i))
	}
	return strings.Join(t, ", ")
}

// manyBIOSSettings is n distinct BIOS attributes, as HCL map elements.
func manyBIOSSettings(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "\n    Attr%d = \"x\"", i)
	}
	return b.String() + "\n"
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
}`, `(?s)Invalid Attribute Combination.*These attributes cannot be configured together:\s+\[resource_class,node_id\]`},
		{"neither node_id, resource_class nor a requirement", unreachableProvider + `
resource "baremetal_instance" "test" {
  name = "i1"
  image = {
    url = "https://images.example.com/a.img"
  }
}`, `(?s)At least one of these attributes must be configured:\s+\[resource_class,node_id,required_traits,forbidden_traits,min_cpus,min_memory_mb,min_disk_gb,cpu_arch\]`},
		{"trait both required and forbidden", instanceWith(`
  required_traits  = ["CUSTOM_GPU_A100", "rack:r12"]
  forbidden_traits = ["CUSTOM_GPU_A100"]
`), `(?s)Trait both required and forbidden.*forbidden_traits holds "CUSTOM_GPU_A100", which required_traits holds too`},
		{"trait with a space", instanceWith(`
  required_traits = ["CUSTOM GPU"]
`), `(?s)Invalid trait.*required_traits: trait "CUSTOM GPU" may hold only letters, digits and _ \. :\s+/\s+=\s+\+\s+-`},
		{"empty forbidden trait", instanceWith(`
  forbidden_traits = [""]
`), `(?s)Invalid trait.*forbidden_traits holds an empty trait`},
		{"trait too long", instanceWith(`
  required_traits = ["` + strings.Repeat("A", 256) + `"]
`), `(?s)Invalid trait.*is 256\s+characters long; at most 255`},
		{"too many traits", nodeConfigWith(`traits = [` + manyTraits(51) + `]`), `(?s)Too many traits.*traits holds 51 traits; at most 50`},
		{"bad node trait", nodeConfigWith(`traits = ["gpu,a100"]`), `(?s)Invalid trait.*traits: trait "gpu,a100" may hold only`},
		{"BIOS attribute name with a space", nodeConfigWith(`bios_settings = { "Proc Virt" = "Disabled" }`),
			`(?s)Invalid BIOS attribute name.*"Proc Virt" is not a BIOS attribute name`},
		{"BIOS attribute name starting with a digit", nodeConfigWith(`bios_settings = { "1Proc" = "Disabled" }`),
			`(?s)Invalid BIOS attribute name.*"1Proc" is not a BIOS attribute name`},
		{"BIOS value too long", nodeConfigWith(`bios_settings = { AssetTag = "` + strings.Repeat("x", 1025) + `" }`),
			`(?s)Invalid BIOS value.*bios_settings\["AssetTag"\] holds 1025 bytes; at most 1024`},
		{"BIOS value on two lines", nodeConfigWith(`bios_settings = { AssetTag = "a\nb" }`),
			`(?s)Invalid BIOS value.*must be a single line`},
		{"too many BIOS settings", nodeConfigWith(`bios_settings = {` + manyBIOSSettings(513) + `}`),
			`(?s)Too many BIOS settings.*bios_settings holds 513 attributes; at most 512`},
		{"owner not a DNS label", nodeConfigWith(`owner = "Team_A"`), `(?s)owner.*must be a DNS label`},
		{"negative minimum", instanceWith(`
  min_memory_mb = -1
`), `(?s)min_memory_mb value must be between 0 and 2147483647, got: -1`},
		{"bad cpu_arch", instanceWith(`
  cpu_arch = "x86 64"
`), `(?s)cpu_arch must be an architecture name`},
		{"capacity: trait both required and forbidden", unreachableProvider + `
data "baremetal_capacity" "test" {
  project          = "acc"
  required_traits  = ["CUSTOM_GPU_A100"]
  forbidden_traits = ["CUSTOM_GPU_A100"]
}`, `(?s)Trait both required and forbidden`},
		{"nodes: bad required trait", unreachableProvider + `
data "baremetal_nodes" "test" {
  required_traits = ["a b"]
}`, `(?s)Invalid trait.*required_traits: trait "a b"`},
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
