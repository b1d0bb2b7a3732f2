# Quick start against a local controller with a simulated BMC fleet:
#
#   make run                                   # controller on :8080, 8 simulated BMCs on :8000
#   export BAREMETAL_ENDPOINT=http://127.0.0.1:8080
#   export BAREMETAL_TOKEN=$(cat data/admin-token)
#   export TF_VAR_sim_address=http://127.0.0.1:8000
#
# then see README.md in this directory to point Terraform at a locally built
# provider, and `terraform apply`. The provider reads its endpoint and token
# from the environment: nothing here points it anywhere else.

terraform {
  required_version = ">= 1.5.0"
  required_providers {
    baremetal = {
      source = "baremetal-tf/baremetal"
    }
  }
}

variable "sim_address" {
  description = "Address of the simulated Redfish BMC fleet, every node's BMC (TF_VAR_sim_address; make run prints it)."
  type        = string
}

variable "node_count" {
  description = "How many of the simulated systems to enroll (make run starts 8)."
  type        = number
  default     = 4
}

# endpoint and token come from BAREMETAL_ENDPOINT and BAREMETAL_TOKEN.
provider "baremetal" {}

resource "baremetal_node" "sim" {
  count = var.node_count

  name           = "sim-${count.index + 1}"
  driver         = "redfish"
  resource_class = "baremetal"

  bmc = {
    address   = var.sim_address
    username  = "admin"
    password  = "password"
    system_id = "/redfish/v1/Systems/${count.index + 1}"
  }
}

resource "baremetal_instance" "web" {
  name           = "web-1"
  project        = "demo" # an admin token must name the project
  resource_class = "baremetal"

  # The simulator's demo disk image: the controller checks an image URL
  # before a BMC gets it, so it must answer (make run lets that check
  # reach the simulator on loopback: --image-url-allow). With real BMCs,
  # name your image server's URL and its checksum.
  image = {
    url = "${var.sim_address}/sim/images/demo.img"
  }

  metadata = {
    role = "web"
  }

  # Travels on a config drive the (simulated) BMC fetches from the
  # controller; the simulated OS "boots", reads it and calls back, so apply
  # returns once the instance is ready.
  user_data      = "#cloud-config\nhostname: web-1\n"
  deploy_timeout = "5m"

  power_state = "on"

  # The scheduler needs available nodes first.
  depends_on = [baremetal_node.sim]
}

# Warn when a BMC misbehaves, e.g. after
#   curl -X POST $TF_VAR_sim_address/sim/systems/2/fault -d '{"fault":"down"}'
# The data source is declared outside the check block on purpose: a data
# source scoped inside a check block is re-read at every apply, so plan
# -detailed-exitcode would always report changes and hide real drift.
data "baremetal_nodes" "faulted" {
  fault = "any"
}

check "no_faulted_nodes" {
  assert {
    condition     = length(data.baremetal_nodes.faulted.nodes) == 0
    error_message = "Faulted nodes: ${join(", ", [for n in data.baremetal_nodes.faulted.nodes : "${n.name} (${n.fault})"])}"
  }
}

# Only stable values: outputs that follow provision_state or power would
# change at every refresh and hide real drift in `plan -detailed-exitcode`.
output "nodes" {
  value = { for n in baremetal_node.sim : n.name => n.id }
}

output "web" {
  value = {
    id   = baremetal_instance.web.id
    node = baremetal_instance.web.node_id
  }
}
