# Fail the plan, before anything is applied, when fewer than 4 instances
# with an A100 GPU and 256 GiB of memory could be placed now. A member
# token answers for its own project; an admin token must name it.
data "baremetal_capacity" "gpu" {
  project         = "ml-team"
  required_traits = ["CUSTOM_GPU_A100"]
  min_memory_mb   = 262144

  lifecycle {
    postcondition {
      condition     = self.placeable >= 4
      error_message = "Room for ${self.placeable} of the 4 GPU instances: ${self.message}"
    }
  }
}

# Only warn (check blocks never fail a plan) when the rollout would leave
# no spare GPU node.
check "gpu_headroom" {
  assert {
    condition     = data.baremetal_capacity.gpu.placeable > 4
    error_message = "4 GPU instances take every free GPU node: ${data.baremetal_capacity.gpu.message}"
  }
}
