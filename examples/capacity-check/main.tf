# A capacity gate for CI: run `terraform plan` on this configuration before
# the job that applies a rollout of `instances` instances of one shape.
# The plan fails (exit 1) with the controller's explanation when they
# cannot all be placed now, and warns when they fit without the spare
# nodes asked for. README.md says how to run it.
#
# The provider reads BAREMETAL_ENDPOINT and BAREMETAL_TOKEN. With a member
# token the capacity is its own project's (leave `project` unset); an
# admin token must name the project.

terraform {
  required_version = ">= 1.5.0" # check blocks
  required_providers {
    baremetal = {
      source = "baremetal-tf/baremetal"
    }
  }
}

provider "baremetal" {}

variable "instances" {
  description = "How many instances of the shape the rollout creates."
  type        = number
}

variable "spare" {
  description = "How many more the fleet should still have room for after the rollout (a warning below that)."
  type        = number
  default     = 1
}

variable "project" {
  description = "Project of the instances; null with a member token (its own)."
  type        = string
  default     = null
}

variable "shape" {
  description = "What each instance asks of its node: the arguments of baremetal_instance of the same names."
  type = object({
    resource_class   = optional(string)
    required_traits  = optional(set(string))
    forbidden_traits = optional(set(string))
    min_cpus         = optional(number)
    min_memory_mb    = optional(number)
    min_disk_gb      = optional(number)
    cpu_arch         = optional(string)
  })
  default = {}
}

data "baremetal_capacity" "rollout" {
  project          = var.project
  resource_class   = var.shape.resource_class
  required_traits  = var.shape.required_traits
  forbidden_traits = var.shape.forbidden_traits
  min_cpus         = var.shape.min_cpus
  min_memory_mb    = var.shape.min_memory_mb
  min_disk_gb      = var.shape.min_disk_gb
  cpu_arch         = var.shape.cpu_arch

  # Fails the plan: an apply would stop half-way through the rollout.
  lifecycle {
    postcondition {
      condition     = self.placeable >= var.instances
      error_message = "Room for ${self.placeable} of the ${var.instances} instances in project ${self.project}${self.quota_remaining == null ? "" : " (quota left: ${self.quota_remaining})"}, ${self.pending} more freeing up: ${self.message}"
    }
  }
}

# Only warns (check blocks never fail a plan): the rollout fits, but
# leaves fewer spare nodes than asked.
check "spare_capacity" {
  assert {
    condition     = data.baremetal_capacity.rollout.placeable >= var.instances + var.spare
    error_message = "After ${var.instances} instances, room for ${data.baremetal_capacity.rollout.placeable - var.instances} more, not ${var.spare}."
  }
}

output "project" {
  value = data.baremetal_capacity.rollout.project
}

output "placeable" {
  description = "How many instances of the shape could be placed now."
  value       = data.baremetal_capacity.rollout.placeable
}
