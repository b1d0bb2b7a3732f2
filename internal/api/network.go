package api

// The network configuration of an instance's OS, as the API takes and
// shows it (baremetal.Network holds the rules, DocNetwork says them): the
// interfaces (NICs by MAC or by the port name inspection reported, bonds,
// VLANs), the addresses on them (static, from an IP pool, or DHCP), and
// DNS. The controller writes it to the config drive as OpenStack
// network_data.json, which cloud-init, Glean and Ignition read at first
// boot.

// Network is an instance's network configuration.
type Network struct {
	Interfaces    []NetInterface `json:"interfaces,omitempty"`
	Addresses     []NetAddress   `json:"addresses,omitempty"`
	DNSServers    []string       `json:"dns_servers,omitempty"`
	SearchDomains []string       `json:"search_domains,omitempty"`
}

// NetInterface is one interface: exactly one of MAC, Port, Bond and VLAN.
type NetInterface struct {
	Name string `json:"name"`
	MAC  string `json:"mac,omitempty"`
	Port string `json:"port,omitempty"`
	MTU  int    `json:"mtu,omitempty"`
	Bond *Bond  `json:"bond,omitempty"`
	VLAN *VLAN  `json:"vlan,omitempty"`
}

// Bond is a Linux bond of NICs.
type Bond struct {
	Interfaces     []string `json:"interfaces"`
	Mode           string   `json:"mode"`
	MIIMon         int      `json:"miimon,omitempty"`
	XmitHashPolicy string   `json:"xmit_hash_policy,omitempty"`
	LACPRate       string   `json:"lacp_rate,omitempty"`
}

// VLAN is an 802.1Q VLAN on a NIC or a bond.
type VLAN struct {
	Interface string `json:"interface"`
	ID        int    `json:"id"`
}

// NetAddress is an address on an interface: exactly one of Address (a
// static CIDR), Pool (an IP pool's next free address) and DHCP.
type NetAddress struct {
	Interface  string   `json:"interface"`
	Address    string   `json:"address,omitempty"`
	Pool       string   `json:"pool,omitempty"`
	DHCP       string   `json:"dhcp,omitempty"`
	Gateway    string   `json:"gateway,omitempty"`
	Routes     []Route  `json:"routes,omitempty"`
	DNSServers []string `json:"dns_servers,omitempty"`
}

// Route is a static route.
type Route struct {
	Destination string `json:"destination"`
	Gateway     string `json:"gateway"`
}

// DocNetwork describes an instance's network, for the provider's schema
// and the API's documentation.
const DocNetwork = "The network configuration of the deployed OS, written to its config drive as OpenStack `network_data.json` " +
	"(read at first boot by cloud-init, Glean, or Ignition's OpenStack provider): `interfaces` (NICs chosen by `mac` or by the `port` " +
	"name the node's inspection reported, bonds of NICs, VLANs on NICs or bonds), `addresses` on them (a static `address` in CIDR form " +
	"with its `gateway` and `routes`, an address from an IP `pool`, or `dhcp`), and DNS. Checked when planned (CIDR syntax, gateway " +
	"inside the subnet, VLAN 1-4094, bond members) and against the node's inspected NICs when the instance is created (an unknown MAC " +
	"or port is refused, naming it): the node must have been inspected. Changing it rebuilds the instance in place."

// BondModes are the bond modes a Bond may have (baremetal.BondModes).
func BondModes() []string {
	return []string{"802.3ad", "active-backup", "balance-xor", "balance-rr", "broadcast", "balance-tlb", "balance-alb"}
}

// LACPRates are the values of a Bond's lacp_rate.
func LACPRates() []string { return []string{"slow", "fast"} }

// DHCPModes are the values of a NetAddress's dhcp.
func DHCPModes() []string { return []string{"ipv4", "ipv6", "ipv6_slaac"} }

// XmitHashPolicies are the values of a Bond's xmit_hash_policy.
func XmitHashPolicies() []string {
	return []string{"layer2", "layer2+3", "layer3+4", "encap2+3", "encap3+4", "vlan+srcmac"}
}

// InstanceAddress is an address an instance's network gives its OS: a
// static one, or one allocated from an IP pool for network.addresses[index].
type InstanceAddress struct {
	Index      int      `json:"index"`
	Interface  string   `json:"interface"`
	Address    string   `json:"address"`
	Gateway    string   `json:"gateway,omitempty"`
	Pool       string   `json:"pool,omitempty"`
	PoolName   string   `json:"pool_name,omitempty"`
	DNSServers []string `json:"dns_servers,omitempty"`
}
