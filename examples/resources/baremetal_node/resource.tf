# A Redfish server. The controller verifies the BMC and fills the
# properties left out from the hardware inventory; one set here (cpu_arch)
# is an override that inspection never changes. The password is
# write-only (Terraform or OpenTofu >= 1.11): it never reaches the state.
resource "baremetal_node" "web01" {
  name           = "web01"
  driver         = "redfish"
  resource_class = "general"

  bmc = {
    address             = "https://10.0.0.5"
    username            = "admin"
    password_wo         = var.bmc_password
    password_wo_version = 1    # change it to send a new password
    insecure            = true # self-signed BMC certificate
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
    address             = "ipmi://10.0.0.6:623"
    username            = "ADMIN"
    password_wo         = var.bmc_password
    password_wo_version = 1
    cipher_suite        = 17
  }

  maintenance        = true
  maintenance_reason = "replacing a failed disk (ticket OPS-1234)"
}

# Maintenance left out, so left to operators (`controller node
# maintenance`, the dashboard or the API): Terraform shows it and neither
# sets nor clears it. With a CLI older than 1.11, use `password` (kept in
# the state, marked sensitive) instead of password_wo.
resource "baremetal_node" "gpu01" {
  name           = "gpu01"
  driver         = "redfish"
  resource_class = "gpu"

  bmc = {
    address  = "https://10.0.0.7"
    username = "admin"
    password = var.legacy_bmc_password
  }
}

# Ephemeral: not stored in saved plans either. Only write-only arguments
# such as password_wo may use it.
variable "bmc_password" {
  type      = string
  sensitive = true
  ephemeral = true
}

variable "legacy_bmc_password" {
  type      = string
  sensitive = true
}
