# The configuration a scheduled CI job plans to catch drift (drift.yml and
# drift.sh in this directory; README.md says how to set it up). The job
# fails when the plan has changes and lists them; the check blocks below
# only warn: a faulted node or one in maintenance is news, not drift.
#
# The provider reads BAREMETAL_ENDPOINT and BAREMETAL_TOKEN, the BMC
# password comes from TF_VAR_bmc_password: CI passes all three from its
# secrets and variables, and nothing here points anywhere.

terraform {
  required_version = ">= 1.5.0" # check blocks
  required_providers {
    baremetal = {
      source = "baremetal-tf/baremetal"
    }
  }

  # Your backend goes here: the drift job must plan against the state your
  # apply job writes (a local state in CI would see every node as new).
  # It is left out so that the acceptance tests run this file as it is.
}

# endpoint and token come from BAREMETAL_ENDPOINT and BAREMETAL_TOKEN.
provider "baremetal" {}

variable "nodes" {
  description = "The nodes this configuration owns, by name (e.g. in a nodes.auto.tfvars next to this file)."
  type = map(object({
    bmc_address    = string
    bmc_username   = string
    system_id      = optional(string)
    resource_class = string
    # Maintenance is managed in code here: an operator who sets it with the
    # API or CLI instead makes the next drift check fail, showing who has
    # to agree. See the baremetal_node docs for leaving it to operators.
    maintenance        = optional(bool, false)
    maintenance_reason = optional(string)
  }))
}

variable "bmc_password" {
  description = "The BMCs' password (TF_VAR_bmc_password, from a CI secret)."
  type        = string
  sensitive   = true
}

resource "baremetal_node" "rack" {
  for_each = var.nodes

  name           = each.key
  driver         = "redfish"
  resource_class = each.value.resource_class

  bmc = {
    address  = each.value.bmc_address
    username = each.value.bmc_username
    # With Terraform or OpenTofu >= 1.11 prefer password_wo (and
    # password_wo_version): it stays out of the state and the plan.
    password  = var.bmc_password
    system_id = each.value.system_id
  }

  maintenance        = each.value.maintenance
  maintenance_reason = each.value.maintenance_reason
}

# The data sources are declared outside the check blocks on purpose: a data
# source scoped inside a check block is re-read at every apply, so plan
# -detailed-exitcode would always report changes and hide real drift.
data "baremetal_nodes" "faulted" {
  fault = "any"
}

data "baremetal_nodes" "in_maintenance" {
  maintenance = true
}

locals {
  # Only the nodes of this configuration: other teams' nodes on the same
  # controller are not this job's news.
  faulted        = [for n in data.baremetal_nodes.faulted.nodes : n if contains(keys(var.nodes), n.name)]
  in_maintenance = [for n in data.baremetal_nodes.in_maintenance.nodes : n if contains(keys(var.nodes), n.name)]
}

# A fault is BMC trouble the controller found by itself (unreachable,
# wrong password, power mismatch, ...). It clears when the BMC answers
# again; meanwhile the node takes no new instances.
check "no_faulted_nodes" {
  assert {
    condition     = length(local.faulted) == 0
    error_message = "Faulted nodes: ${join("; ", sort([for n in local.faulted : "${n.name} (${n.fault} since ${n.fault_since}: ${n.last_error})"]))}"
  }
}

# Maintenance is an operator's decision, never the controller's: a node in
# it takes no new instances and its queued work waits.
check "no_nodes_in_maintenance" {
  assert {
    condition     = length(local.in_maintenance) == 0
    error_message = "Nodes in maintenance: ${join("; ", sort([for n in local.in_maintenance : "${n.name} (${n.maintenance_reason})"]))}"
  }
}
