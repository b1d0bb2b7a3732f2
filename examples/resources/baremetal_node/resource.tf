# A Redfish server. The controller verifies the BMC and fills the
# properties left out from the hardware inventory.
resource "baremetal_node" "web01" {
  name           = "web01"
  driver         = "redfish"
  resource_class = "general"

  bmc = {
    address  = "https://10.0.0.5"
    username = "admin"
    password = var.bmc_password
    insecure = true # self-signed BMC certificate
  }

  properties = {
    cpu_arch = "x86_64"
  }

  timeouts {
    create = "15m"
  }
}

# An IPMI server, taken out of service by an operator.
resource "baremetal_node" "db01" {
  name           = "db01"
  driver         = "ipmi"
  resource_class = "storage"

  bmc = {
    address      = "ipmi://10.0.0.6:623"
    username     = "ADMIN"
    password     = var.bmc_password
    cipher_suite = 17
  }

  maintenance        = true
  maintenance_reason = "replacing a failed disk (ticket OPS-1234)"
}

# Maintenance left to operators (API or `controller node maintenance`):
# Terraform neither sets nor clears it.
resource "baremetal_node" "gpu01" {
  name           = "gpu01"
  driver         = "redfish"
  resource_class = "gpu"

  bmc = {
    address  = "https://10.0.0.7"
    username = "admin"
    password = var.bmc_password
  }

  lifecycle {
    ignore_changes = [maintenance, maintenance_reason]
  }
}

variable "bmc_password" {
  type      = string
  sensitive = true
}
