data "baremetal_node" "web01" {
  name = "web01"
}

output "web01_health" {
  value = {
    provision_state = data.baremetal_node.web01.provision_state
    power_state     = data.baremetal_node.web01.power_state
    fault           = data.baremetal_node.web01.fault
  }
}

# What the last inspection found (null until the node is inspected), e.g.
# the serial numbers to pin an instance's root_device to.
output "web01_disks" {
  value = try({ for d in data.baremetal_node.web01.inventory.disks : d.name => d.serial }, {})
}
