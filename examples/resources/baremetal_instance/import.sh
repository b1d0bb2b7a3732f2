# An instance can be imported by id or by name.
terraform import baremetal_instance.app app-1
terraform import baremetal_instance.app 0b7e4c1d-2f3a-4e5b-8c6d-7e8f9a0b1c2d
