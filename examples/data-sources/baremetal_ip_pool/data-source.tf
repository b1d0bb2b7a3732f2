# A pool the operators manage in another configuration.
data "baremetal_ip_pool" "rack_a" {
  name = "rack-a"
}

output "rack_a_network" {
  value = {
    cidr        = data.baremetal_ip_pool.rack_a.cidr
    gateway     = data.baremetal_ip_pool.rack_a.gateway
    dns_servers = data.baremetal_ip_pool.rack_a.dns_servers
  }
}
