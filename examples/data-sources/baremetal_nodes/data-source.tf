# Nodes of a class that can take an instance right now.
data "baremetal_nodes" "free_gpu" {
  resource_class  = "gpu"
  provision_state = "available"
  maintenance     = false
  fault           = "none"
}

output "free_gpu_nodes" {
  value = length(data.baremetal_nodes.free_gpu.nodes)
}

# Warn (without failing the run) when any node has BMC trouble, including
# a node already destroyed whose retire waits for its BMC (it is listed with
# provision_state = "deleting"; include_deleting = false leaves those out).
# The data source is declared outside the check block on purpose: a data
# source scoped inside a check block is re-read at every apply, so plan
# -detailed-exitcode would always report changes and hide real drift.
data "baremetal_nodes" "faulted" {
  fault = "any"
}

check "no_faulted_nodes" {
  assert {
    condition     = length(data.baremetal_nodes.faulted.nodes) == 0
    error_message = "Faulted nodes: ${join(", ", [for n in data.baremetal_nodes.faulted.nodes : "${n.name} (${n.provision_state}, ${n.fault}: ${n.last_error})"])}"
  }
}
