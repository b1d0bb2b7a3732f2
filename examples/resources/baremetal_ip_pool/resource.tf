# A rack's tenant network: instances take their addresses from
# 10.20.0.10-10.20.0.99 and 10.20.0.200-10.20.0.250, lowest free first;
# the gateway is never handed out.
resource "baremetal_ip_pool" "rack_a" {
  name    = "rack-a"
  cidr    = "10.20.0.0/24"
  gateway = "10.20.0.1"
  ranges = [
    { start = "10.20.0.10", end = "10.20.0.99" },
    { start = "10.20.0.200", end = "10.20.0.250" },
  ]
  dns_servers    = ["10.20.0.53", "10.20.1.53"]
  search_domains = ["rack-a.example.com"]
  description    = "rack A, VLAN 120"
}

# An IPv6 pool: the whole /64 but its subnet-router anycast address and
# the gateway.
resource "baremetal_ip_pool" "rack_a_v6" {
  name    = "rack-a-v6"
  cidr    = "2001:db8:120::/64"
  gateway = "2001:db8:120::1"
}
