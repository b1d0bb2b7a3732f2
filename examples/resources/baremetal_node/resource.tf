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

# A GPU server whose BIOS, Secure Boot, RAID volumes and firmware are
# declared here. The controller applies them before the node is first
# available (provision state configuring: write, reset, read back) and
# reads them back periodically: a change made at the console shows as
# drift in the plan, and the next apply sets it again. BIOS values are
# text, as the BMC's attribute registry names them.
resource "baremetal_node" "gpu02" {
  name           = "gpu02"
  driver         = "redfish"
  resource_class = "gpu"

  bmc = {
    address             = "https://10.0.0.8"
    username            = "admin"
    password_wo         = var.bmc_password
    password_wo_version = 1
  }

  bios_settings = {
    ProcVirtualization = "Disabled"
    NumaNodesPerSocket = "2"
  }
  secure_boot = true

  # Every volume the storage is to have: undeclared ones are deleted.
  # Drives by count and media type (the smallest free ones first), or by
  # drive_ids.
  raid = [
    { name = "os", raid_level = "1", drive_count = 2, media_type = "ssd" },
    { name = "scratch", raid_level = "0", drive_count = 2, media_type = "hdd" },
  ]

  # Flashed through the BMC's SimpleUpdate when its inventory shows
  # another version (a BIOS image is applied at the reset that follows).
  firmware = [
    { component = "BIOS", version = "2.1.0", image_url = "https://repo.example.com/gpu/bios-2.1.0.bin" },
  ]
}

output "gpu02_settings_unmet" {
  description = "The declared settings the BMC does not show (empty when all are in effect)."
  value       = baremetal_node.gpu02.hardware.unmet
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
