# A node can be imported by id or by name. The BMC password is never
# returned by the API: it stays null in the state until the next apply
# sets it from the configuration.
terraform import baremetal_node.web01 web01
terraform import baremetal_node.web01 6f1c2a9e-8d4b-4a53-9a51-0c2b7d1e5f10
