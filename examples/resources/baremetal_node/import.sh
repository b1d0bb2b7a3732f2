# A node can be imported by id or by name. The BMC password is never
# returned by the API: bmc.password and bmc.password_wo_version are null
# in the state after an import, so the next apply sends the configured
# password (password or password_wo).
terraform import baremetal_node.web01 web01
terraform import baremetal_node.web01 6f1c2a9e-8d4b-4a53-9a51-0c2b7d1e5f10
