# Let the scheduler pick an available node of the class.
resource "baremetal_instance" "app" {
  name           = "app-1"
  resource_class = "general"

  # With the controller serving the deploy agent (--agent-kernel), the
  # default deploy_method "image" writes this disk image (a distribution's
  # qcow2 cloud image; deploy_method's description lists the formats) to
  # the root disk, checking the checksum of the file as served.
  image = {
    url      = "https://images.example.com/noble-server-cloudimg-amd64.img"
    checksum = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
  }

  # The disk to write: the 480 GB SSD, not the data disks.
  root_device = {
    size_gb = ">= 400"
    model   = "SAMSUNG MZ7LH480"
  }

  # Delivered on a config drive (ISO labelled config-2), written as a
  # partition at the end of the root disk; cloud-init reads it as usual.
  user_data = file("${path.module}/cloud-init.yaml")

  # apply returns once the booted OS has called back (the config drive
  # makes cloud-init do that); no call within 20 minutes of power-on fails
  # the deploy with the node fault deploy_timeout.
  deploy_timeout = "20m"

  metadata = {
    role = "app"
  }

  # Keep the server powered on: a node switched off outside Terraform shows
  # up in the plan and the next apply powers it on again.
  power_state = "on"

  timeouts {
    create = "45m"
  }
}

# Pin an instance to one node.
resource "baremetal_instance" "db" {
  name    = "db-1"
  node_id = baremetal_node.db01.id

  # An ISO the BMC boots from virtual media, disks untouched.
  deploy_method = "live"
  image = {
    url = "https://images.example.com/rescue.iso"
  }
}

# Static addresses before the first boot: two NICs bonded (LACP), a tagged
# VLAN on the bond, an address from an IP pool and a fixed one on the
# storage network. Changing image, user_data or network rebuilds the
# instance in place, on the same node, with the same pool addresses.
resource "baremetal_instance" "web" {
  name    = "web-1"
  node_id = baremetal_node.web01.id
  image = {
    url      = "https://images.example.com/noble-server-cloudimg-amd64.img"
    checksum = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
  }

  network = {
    interfaces = [
      # NICs by the names the node's inspection reported (baremetal_node's
      # ports), or by MAC.
      { name = "nic0", port = "eno1", mtu = 9000 },
      { name = "nic1", port = "eno2", mtu = 9000 },
      { name = "bond0", mtu = 9000, bond = {
        interfaces       = ["nic0", "nic1"]
        mode             = "802.3ad"
        lacp_rate        = "fast"
        xmit_hash_policy = "layer3+4"
      } },
      { name = "tenant", vlan = { interface = "bond0", id = 100 } },
      { name = "storage", vlan = { interface = "bond0", id = 200 } },
    ]
    addresses = [
      # The pool's next free address, with its gateway and DNS servers.
      { interface = "tenant", pool = baremetal_ip_pool.tenant.id },
      { interface = "storage", address = "10.200.0.21/24",
      routes = [{ destination = "10.201.0.0/16", gateway = "10.200.0.1" }] },
    ]
    search_domains = ["example.internal"]
  }
}

output "web_address" {
  value = baremetal_instance.web.addresses[0].address
}
