# A pool can be imported by id or by name.
terraform import baremetal_ip_pool.rack_a rack-a
terraform import baremetal_ip_pool.rack_a 0b8e5c3a-51f4-4c7e-9d2a-6a3f1e9c7b21
