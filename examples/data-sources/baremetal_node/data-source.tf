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
