package baremetal

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// validNetwork is two NICs (one by MAC, one by port) in an 802.3ad bond
// with a tagged VLAN carrying static IPv4 and IPv6, and a third NIC on
// DHCP.
func validNetwork() Network {
	return Network{
		Interfaces: []NetInterface{
			{Name: "nic0", MAC: "52:54:00:00:00:01", MTU: 9000},
			{Name: "nic1", Port: "eno2", MTU: 9000},
			{Name: "bond0", MTU: 9000, Bond: &Bond{Interfaces: []string{"nic0", "nic1"}, Mode: BondModeLACP, MIIMon: 100, XmitHashPolicy: "layer3+4", LACPRate: "fast"}},
			{Name: "vlan100", MTU: 1500, VLAN: &VLAN{Interface: "bond0", ID: 100}},
			{Name: "mgmt", MAC: "52:54:00:00:00:03"},
		},
		Addresses: []NetAddress{
			{Interface: "vlan100", Address: "10.0.0.5/24", Gateway: "10.0.0.1",
				Routes:     []Route{{Destination: "192.168.0.0/16", Gateway: "10.0.0.254"}},
				DNSServers: []string{"10.0.0.2"}},
			{Interface: "vlan100", Address: "2001:db8::5/64", Gateway: "2001:db8::1"},
			{Interface: "mgmt", DHCP: DHCPv4},
			{Interface: "mgmt", DHCP: DHCPv6SLAAC},
			{Interface: "bond0", Pool: "tenant-a", Routes: []Route{{Destination: "172.16.0.0/12", Gateway: "10.9.0.1"}}},
		},
		DNSServers:    []string{"1.1.1.1", "2606:4700:4700::1111"},
		SearchDomains: []string{"example.com", "corp.example.com."},
	}
}

func TestNetworkValidate(t *testing.T) {
	ok := validNetwork()
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid network: %v", err)
	}
	cases := []struct {
		field string
		want  string // in the message
		mut   func(*Network)
	}{
		// Interfaces: names.
		{"network.interfaces[0].name", "required", func(n *Network) { n.Interfaces[0].Name = "" }},
		{"network.interfaces[0].name", "lowercase", func(n *Network) { n.Interfaces[0].Name = "Nic0" }},
		{"network.interfaces[0].name", "1-15", func(n *Network) { n.Interfaces[0].Name = "a-very-long-name" }},
		{"network.interfaces[0].name", "1-15", func(n *Network) { n.Interfaces[0].Name = "eth 0" }},
		{"network.interfaces[0].name", "1-15", func(n *Network) { n.Interfaces[0].Name = ".." }},
		{"network.interfaces[4].name", "unique", func(n *Network) { n.Interfaces[4].Name = "nic0" }},
		// Exactly one kind.
		{"network.interfaces[0]", "exactly one of mac, port, bond and vlan (it sets 2)", func(n *Network) { n.Interfaces[0].Port = "eno1" }},
		{"network.interfaces[0]", "it sets 0", func(n *Network) { n.Interfaces[0].MAC = "" }},
		{"network.interfaces[3]", "it sets 2", func(n *Network) {
			n.Interfaces[3].Bond = &Bond{Interfaces: []string{"nic0"}, Mode: BondModeActiveBackup}
		}},
		// MAC and port.
		{"network.interfaces[0].mac", "not a MAC", func(n *Network) { n.Interfaces[0].MAC = "52:54:00:00:00" }},
		{"network.interfaces[0].mac", "not a MAC", func(n *Network) { n.Interfaces[0].MAC = "00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01" }},
		{"network.interfaces[0].mac", "multicast", func(n *Network) { n.Interfaces[0].MAC = "01:00:5e:00:00:01" }},
		{"network.interfaces[0].mac", "multicast or zero", func(n *Network) { n.Interfaces[0].MAC = "00:00:00:00:00:00" }},
		{"network.interfaces[4].mac", "also the MAC of network.interfaces[0]", func(n *Network) { n.Interfaces[4].MAC = "52-54-00-00-00-01" }},
		{"network.interfaces[1].port", "not a NIC name", func(n *Network) { n.Interfaces[1].Port = "eno/2" }},
		{"network.interfaces[4].port", "also the port of network.interfaces[1]", func(n *Network) { n.Interfaces[4].MAC, n.Interfaces[4].Port = "", "eno2" }},
		// MTU.
		{"network.interfaces[0].mtu", "between 68 and 65535", func(n *Network) { n.Interfaces[0].MTU = 67 }},
		{"network.interfaces[0].mtu", "between 68 and 65535", func(n *Network) { n.Interfaces[0].MTU = 65536 }},
		{"network.interfaces[0].mtu", "between 68 and 65535", func(n *Network) { n.Interfaces[0].MTU = -1 }},
		{"network.interfaces[3].mtu", "larger than the MTU of its interface bond0 (9000)", func(n *Network) { n.Interfaces[3].MTU = 9001 }},
		// Bonds.
		{"network.interfaces[2].bond.mode", "required", func(n *Network) { n.Interfaces[2].Bond.Mode = "" }},
		{"network.interfaces[2].bond.mode", "not a bond mode", func(n *Network) { n.Interfaces[2].Bond.Mode = "lacp" }},
		{"network.interfaces[2].bond.miimon", "milliseconds", func(n *Network) { n.Interfaces[2].Bond.MIIMon = -1 }},
		{"network.interfaces[2].bond.xmit_hash_policy", "not a hash policy", func(n *Network) { n.Interfaces[2].Bond.XmitHashPolicy = "layer4" }},
		{"network.interfaces[2].bond.xmit_hash_policy", "applies only to modes", func(n *Network) {
			n.Interfaces[2].Bond.Mode, n.Interfaces[2].Bond.LACPRate = BondModeActiveBackup, ""
		}},
		{"network.interfaces[2].bond.lacp_rate", "slow or fast", func(n *Network) { n.Interfaces[2].Bond.LACPRate = "1" }},
		{"network.interfaces[2].bond.lacp_rate", "only to mode 802.3ad", func(n *Network) { n.Interfaces[2].Bond.Mode = BondModeBalanceXOR }},
		{"network.interfaces[2].bond.interfaces", "required", func(n *Network) { n.Interfaces[2].Bond.Interfaces = nil }},
		{"network.interfaces[2].bond.interfaces[1]", "names no interface", func(n *Network) { n.Interfaces[2].Bond.Interfaces[1] = "nic9" }},
		{"network.interfaces[2].bond.interfaces[1]", "is a VLAN; a bond's members must be NICs", func(n *Network) { n.Interfaces[2].Bond.Interfaces[1] = "vlan100" }},
		{"network.interfaces[2].bond.interfaces[1]", "is a bond; a bond's members must be NICs", func(n *Network) { n.Interfaces[2].Bond.Interfaces[1] = "bond0" }},
		{"network.interfaces[2].bond.interfaces[1]", "listed twice", func(n *Network) { n.Interfaces[2].Bond.Interfaces[1] = "nic0" }},
		{"network.interfaces[5].bond.interfaces[0]", "already a member of bond network.interfaces[2] (bond0)", func(n *Network) {
			n.Interfaces = append(n.Interfaces, NetInterface{Name: "bond1", Bond: &Bond{Interfaces: []string{"nic1"}, Mode: BondModeActiveBackup}})
		}},
		// VLANs.
		{"network.interfaces[3].vlan.id", "between 1 and 4094", func(n *Network) { n.Interfaces[3].VLAN.ID = 0 }},
		{"network.interfaces[3].vlan.id", "between 1 and 4094", func(n *Network) { n.Interfaces[3].VLAN.ID = 4095 }},
		{"network.interfaces[3].vlan.interface", "required", func(n *Network) { n.Interfaces[3].VLAN.Interface = "" }},
		{"network.interfaces[3].vlan.interface", "names no interface", func(n *Network) { n.Interfaces[3].VLAN.Interface = "bond9" }},
		{"network.interfaces[3].vlan.interface", "member of bond bond0; put the VLAN on the bond", func(n *Network) { n.Interfaces[3].VLAN.Interface = "nic0" }},
		{"network.interfaces[5].vlan.interface", "stacked VLANs", func(n *Network) {
			n.Interfaces = append(n.Interfaces, NetInterface{Name: "qinq", VLAN: &VLAN{Interface: "vlan100", ID: 7}})
		}},
		{"network.interfaces[5].vlan.id", "also network.interfaces[3] (vlan100)", func(n *Network) {
			n.Interfaces = append(n.Interfaces, NetInterface{Name: "again", VLAN: &VLAN{Interface: "bond0", ID: 100}})
		}},
		// Addresses: reference and kind.
		{"network.addresses[0].interface", "required", func(n *Network) { n.Addresses[0].Interface = "" }},
		{"network.addresses[0].interface", "names no interface", func(n *Network) { n.Addresses[0].Interface = "vlan200" }},
		{"network.addresses[0].interface", "member of bond bond0; put the address on the bond", func(n *Network) { n.Addresses[0].Interface = "nic1" }},
		{"network.addresses[0]", "exactly one of address, pool and dhcp (it sets 2)", func(n *Network) { n.Addresses[0].DHCP = DHCPv4 }},
		{"network.addresses[4]", "it sets 2", func(n *Network) { n.Addresses[4].Address = "10.9.0.5/24" }},
		{"network.addresses[2]", "it sets 0", func(n *Network) { n.Addresses[2].DHCP = "" }},
		// Static addresses.
		{"network.addresses[0].address", "not an address with its prefix length", func(n *Network) { n.Addresses[0].Address = "10.0.0.5" }},
		{"network.addresses[0].address", "not an address with its prefix length", func(n *Network) { n.Addresses[0].Address = "10.0.0.5/33" }},
		{"network.addresses[0].address", "not an address with its prefix length", func(n *Network) { n.Addresses[0].Address = "10.0.0.256/24" }},
		{"network.addresses[1].address", "not an address with its prefix length", func(n *Network) { n.Addresses[1].Address = "fe80::5%eth0/64" }},
		{"network.addresses[0].address", "network address of 10.0.0.0/24", func(n *Network) { n.Addresses[0].Address = "10.0.0.0/24" }},
		{"network.addresses[0].address", "broadcast address of 10.0.0.0/24", func(n *Network) { n.Addresses[0].Address = "10.0.0.255/24" }},
		{"network.addresses[1].address", "network address of 2001:db8::/64", func(n *Network) { n.Addresses[1].Address = "2001:db8::/64" }},
		{"network.addresses[0].address", "not a host address", func(n *Network) { n.Addresses[0].Address = "127.0.0.1/8" }},
		{"network.addresses[0].address", "not a host address", func(n *Network) { n.Addresses[0].Address = "224.0.0.5/24" }},
		{"network.addresses[1].address", "also network.addresses[0]", func(n *Network) { n.Addresses[1].Address, n.Addresses[1].Gateway = "10.0.0.5/16", "" }},
		// Gateways.
		{"network.addresses[0].gateway", "not an IP address", func(n *Network) { n.Addresses[0].Gateway = "router" }},
		{"network.addresses[0].gateway", "is IPv6 but the address 10.0.0.5/24 is IPv4", func(n *Network) { n.Addresses[0].Gateway = "2001:db8::1" }},
		{"network.addresses[0].gateway", "not inside the address's subnet 10.0.0.0/24", func(n *Network) { n.Addresses[0].Gateway = "10.0.1.1" }},
		{"network.addresses[0].gateway", "the address itself", func(n *Network) { n.Addresses[0].Gateway = "10.0.0.5" }},
		{"network.addresses[0].gateway", "network or broadcast", func(n *Network) { n.Addresses[0].Gateway = "10.0.0.255" }},
		{"network.addresses[1].gateway", "not inside", func(n *Network) { n.Addresses[1].Gateway = "2001:db9::1" }},
		{"network.addresses[5].gateway", "already has the IPv4 default gateway", func(n *Network) {
			n.Addresses = append(n.Addresses, NetAddress{Interface: "mgmt", Address: "192.168.7.5/24", Gateway: "192.168.7.1"})
		}},
		// Routes.
		{"network.addresses[0].routes[0].destination", "not a network in CIDR form", func(n *Network) { n.Addresses[0].Routes[0].Destination = "192.168.0.0" }},
		{"network.addresses[0].routes[0].destination", "host bits set; did you mean 192.168.0.0/16", func(n *Network) { n.Addresses[0].Routes[0].Destination = "192.168.1.0/16" }},
		{"network.addresses[0].routes[0].gateway", "required", func(n *Network) { n.Addresses[0].Routes[0].Gateway = "" }},
		{"network.addresses[0].routes[0].gateway", "not an IP address", func(n *Network) { n.Addresses[0].Routes[0].Gateway = "10.0.0.x" }},
		{"network.addresses[0].routes[0].gateway", "is IPv6 but the destination", func(n *Network) { n.Addresses[0].Routes[0].Gateway = "2001:db8::1" }},
		{"network.addresses[0].routes[0].destination", "is IPv6 but the address 10.0.0.5/24 is IPv4", func(n *Network) {
			n.Addresses[0].Routes[0] = Route{Destination: "2001:db8:1::/48", Gateway: "2001:db8::1"}
		}},
		{"network.addresses[0].routes[0].gateway", "not inside the address's subnet", func(n *Network) { n.Addresses[0].Routes[0].Gateway = "10.1.0.1" }},
		{"network.addresses[0].routes[0].destination", "default route, and network.addresses[0] already has the IPv4 default gateway", func(n *Network) {
			n.Addresses[0].Routes[0].Destination = "0.0.0.0/0"
		}},
		{"network.addresses[0].routes[1].destination", "also routes[0]", func(n *Network) {
			n.Addresses[0].Routes = append(n.Addresses[0].Routes, Route{Destination: "192.168.0.0/16", Gateway: "10.0.0.253"})
		}},
		{"network.addresses[4].routes[0].destination", "not a network", func(n *Network) { n.Addresses[4].Routes[0].Destination = "nowhere" }},
		{"network.addresses[4].routes[0].gateway", "is IPv6", func(n *Network) { n.Addresses[4].Routes[0].Gateway = "fe80::1" }},
		// DHCP.
		{"network.addresses[2].dhcp", "not a DHCP mode", func(n *Network) { n.Addresses[2].DHCP = "dhcp4" }},
		{"network.addresses[2].gateway", "DHCP supplies the gateway", func(n *Network) { n.Addresses[2].Gateway = "10.0.0.1" }},
		{"network.addresses[2].routes", "cannot be set with dhcp", func(n *Network) { n.Addresses[2].Routes = []Route{{Destination: "10.0.0.0/8", Gateway: "10.0.0.1"}} }},
		{"network.addresses[2].dns_servers", "DHCP supplies them", func(n *Network) { n.Addresses[2].DNSServers = []string{"10.0.0.2"} }},
		{"network.addresses[3].dhcp", "also network.addresses[2]", func(n *Network) { n.Addresses[3].DHCP = DHCPv4 }},
		// Pools.
		{"network.addresses[4].gateway", "the pool supplies the gateway", func(n *Network) { n.Addresses[4].Gateway = "10.9.0.1" }},
		{"network.addresses[4].pool", "not an IP pool's name or id", func(n *Network) { n.Addresses[4].Pool = "Tenant A" }},
		// DNS.
		{"network.dns_servers[0]", "not a DNS server's IP address", func(n *Network) { n.DNSServers[0] = "dns.example.com" }},
		{"network.dns_servers[1]", "listed twice", func(n *Network) { n.DNSServers[1] = "1.1.1.1" }},
		{"network.dns_servers", "more than 8", func(n *Network) {
			n.DNSServers = []string{"1.0.0.1", "1.0.0.2", "1.0.0.3", "1.0.0.4", "1.0.0.5", "1.0.0.6", "1.0.0.7", "1.0.0.8", "1.0.0.9"}
		}},
		{"network.addresses[0].dns_servers[0]", "not a DNS server's IP address", func(n *Network) { n.Addresses[0].DNSServers[0] = "0.0.0.0" }},
		{"network.search_domains[0]", "not a DNS domain name", func(n *Network) { n.SearchDomains[0] = "exa mple.com" }},
		{"network.search_domains[0]", "not a DNS domain name", func(n *Network) { n.SearchDomains[0] = "-bad.example" }},
		{"network.search_domains[0]", "not a DNS domain name", func(n *Network) { n.SearchDomains[0] = "a..b" }},
		{"network.search_domains[0]", "not a DNS domain name", func(n *Network) { n.SearchDomains[0] = "." }},
		{"network.search_domains[0]", "not a DNS domain name", func(n *Network) { n.SearchDomains[0] = strings.Repeat("a.", 127) + "com" }},
		{"network.search_domains[1]", "listed twice", func(n *Network) { n.SearchDomains[1] = "example.com" }},
		{"network.dns_servers", "needs network.interfaces", func(n *Network) { n.Interfaces, n.Addresses, n.SearchDomains = nil, nil, nil }},
		{"network.search_domains", "needs network.interfaces", func(n *Network) { n.Interfaces, n.Addresses, n.DNSServers = nil, nil, nil }},
		// Sizes.
		{"network.interfaces", "more than 64", func(n *Network) { n.Interfaces = make([]NetInterface, 65) }},
		{"network.addresses", "more than 64", func(n *Network) { n.Addresses = make([]NetAddress, 65) }},
	}
	for _, c := range cases {
		n := validNetwork()
		c.mut(&n)
		err := n.Validate()
		if ErrorCode(err) != CodeInvalid || ErrorField(err) != c.field || !strings.Contains(ErrorMessage(err), c.want) {
			t.Errorf("%s (%s): got %v (field %q), want invalid %s saying %q", c.field, c.want, err, ErrorField(err), c.field, c.want)
		}
	}
}

func TestNetworkValidateAccepts(t *testing.T) {
	cases := map[string]Network{
		"empty": {},
		"DHCP on one NIC": {
			Interfaces: []NetInterface{{Name: "eth0", Port: "eth0"}},
			Addresses:  []NetAddress{{Interface: "eth0", DHCP: DHCPv4}, {Interface: "eth0", DHCP: DHCPv6}},
		},
		"a bond with no addresses of its own, only VLANs": {
			Interfaces: []NetInterface{
				{Name: "a", MAC: "AA:BB:CC:00:00:01"}, {Name: "b", MAC: "aabb.cc00.0002"},
				{Name: "bond0", Bond: &Bond{Interfaces: []string{"a", "b"}, Mode: BondModeActiveBackup, MIIMon: 100}},
				{Name: "v10", VLAN: &VLAN{Interface: "bond0", ID: 10}}, {Name: "v4094", VLAN: &VLAN{Interface: "bond0", ID: 4094}},
			},
			Addresses: []NetAddress{{Interface: "v10", Address: "10.0.0.5/31", Gateway: "10.0.0.4"}, {Interface: "v4094", Address: "192.168.1.1/32"}},
		},
		"VLANs with one id on two parents": {
			Interfaces: []NetInterface{
				{Name: "a", MAC: "52:54:00:00:00:01"}, {Name: "b", MAC: "52:54:00:00:00:02"},
				{Name: "a.5", VLAN: &VLAN{Interface: "a", ID: 5}}, {Name: "b.5", VLAN: &VLAN{Interface: "b", ID: 5}},
			},
		},
		"every bond mode": func() Network {
			var n Network
			for i, m := range BondModes {
				nic := string(rune('a' + i))
				n.Interfaces = append(n.Interfaces, NetInterface{Name: nic, Port: "eth" + nic},
					NetInterface{Name: "bond" + nic, Bond: &Bond{Interfaces: []string{nic}, Mode: m}})
			}
			return n
		}(),
		"IPv6 /127 and /128, routes of both families": {
			Interfaces: []NetInterface{{Name: "a", Port: "eno1"}},
			Addresses: []NetAddress{
				{Interface: "a", Address: "2001:db8::/127", Gateway: "2001:db8::1"},
				{Interface: "a", Address: "2001:db8:1::1/128"},
				{Interface: "a", Address: "10.1.0.9/16", Routes: []Route{{Destination: "0.0.0.0/0", Gateway: "10.1.0.1"}, {Destination: "10.2.0.0/16", Gateway: "10.1.255.254"}}},
			},
		},
		"a pool by id": {
			Interfaces: []NetInterface{{Name: "a", Port: "eno1"}},
			Addresses:  []NetAddress{{Interface: "a", Pool: "6f1c1b2e-8d3a-4c1e-9f57-0d9b2f0e1a11", DNSServers: []string{"10.0.0.2"}}},
		},
	}
	for name, n := range cases {
		if err := n.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestNetworkValidateNormalizesMACs(t *testing.T) {
	n := Network{Interfaces: []NetInterface{{Name: "a", MAC: "AA-BB-CC-00-00-01"}, {Name: "b", MAC: "aabb.cc00.0002"}, {Name: "c", MAC: " AA:bb:CC:00:00:03 "}}}
	if err := n.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"aa:bb:cc:00:00:01", "aa:bb:cc:00:00:02", "aa:bb:cc:00:00:03"} {
		if got := n.Interfaces[i].MAC; got != want {
			t.Errorf("interface %d: MAC %q, want %q", i, got, want)
		}
	}
}

// The JSON names are the API's: a stored network reads back the same.
func TestNetworkJSON(t *testing.T) {
	n := validNetwork()
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"interfaces"`, `"mac"`, `"port"`, `"mtu"`, `"bond"`, `"mode"`, `"miimon"`, `"xmit_hash_policy"`, `"lacp_rate"`,
		`"vlan"`, `"addresses"`, `"address"`, `"gateway"`, `"routes"`, `"destination"`, `"dns_servers"`, `"pool"`, `"dhcp"`, `"search_domains"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON has no %s: %s", k, b)
		}
	}
	var back Network
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if string(b2) != string(b) {
		t.Fatalf("round trip:\n%s\n%s", b, b2)
	}
	if b, _ := json.Marshal(Network{}); string(b) != "{}" {
		t.Fatalf("empty network: %s", b)
	}
}

func TestNetworkValidateFor(t *testing.T) {
	nics := []api.AgentNIC{
		{Name: "eno1", MAC: "52:54:00:00:00:01"},
		{Name: "eno2", MAC: "52:54:00:00:00:02"},
		{Name: "eno3", MAC: "52:54:00:00:00:03"},
	}
	ok := validNetwork()
	if err := ok.ValidateFor(nics); err != nil {
		t.Fatalf("valid network: %v", err)
	}
	cases := []struct {
		name, field, want string
		nics              []api.AgentNIC
		mut               func(*Network)
	}{
		{"unknown MAC", "network.interfaces[4].mac", "52:54:00:00:00:09 is not a NIC of the node; its NICs are: eno1 (52:54:00:00:00:01), eno2",
			nics, func(n *Network) { n.Interfaces[4].MAC = "52:54:00:00:00:09" }},
		{"unknown port", "network.interfaces[1].port", "eno7 is not a NIC of the node", nics, func(n *Network) { n.Interfaces[1].Port = "eno7" }},
		{"one NIC by MAC and by port", "network.interfaces[4]", "is NIC eno1 (52:54:00:00:00:01), which network.interfaces[0] (nic0) already configures",
			nics, func(n *Network) { n.Interfaces[4].MAC, n.Interfaces[4].Port = "", "eno1" }},
		{"no inventory", "network.interfaces[0].mac", "no inventory of its NICs yet; inspect the node first", nil, func(*Network) {}},
		{"no inventory, by port first", "network.interfaces[0].port", "no inventory", nil, func(n *Network) { n.Interfaces[0].MAC, n.Interfaces[0].Port = "", "eno1" }},
		{"static errors first", "network.interfaces[3].vlan.id", "between 1 and 4094", nics, func(n *Network) { n.Interfaces[3].VLAN.ID = 5000 }},
	}
	for _, c := range cases {
		n := validNetwork()
		c.mut(&n)
		err := n.ValidateFor(c.nics)
		if ErrorCode(err) != CodeInvalid || ErrorField(err) != c.field || !strings.Contains(ErrorMessage(err), c.want) {
			t.Errorf("%s: got %v (field %q), want invalid %s saying %q", c.name, err, ErrorField(err), c.field, c.want)
		}
	}
	// The inventory's MACs are compared in normal form, and a network
	// of no NICs needs no inventory.
	n := Network{Interfaces: []NetInterface{{Name: "a", MAC: "52:54:00:00:00:03"}}}
	if err := n.ValidateFor([]api.AgentNIC{{Name: "x", MAC: "52-54-00-00-00-03"}}); err != nil {
		t.Errorf("inventory MAC in another form: %v", err)
	}
	if err := (&Network{}).ValidateFor(nil); err != nil {
		t.Errorf("empty network, no inventory: %v", err)
	}
}

// The constants are the API's lists' members: a mode added to one and
// not the other would be refused by one side.
func TestNetworkListsAreTheAPIs(t *testing.T) {
	if !slices.Contains(BondModes, BondModeLACP) || !slices.Contains(BondModes, BondModeActiveBackup) || !slices.Contains(BondModes, BondModeBalanceXOR) ||
		!slices.Contains(BondModes, BondModeBalanceRR) || !slices.Contains(BondModes, BondModeBroadcast) ||
		!slices.Contains(BondModes, BondModeBalanceTLB) || !slices.Contains(BondModes, BondModeBalanceALB) || len(BondModes) != 7 {
		t.Errorf("BondModes %v are not the bond mode constants", BondModes)
	}
	if !slices.Equal(DHCPModes, []string{DHCPv4, DHCPv6, DHCPv6SLAAC}) {
		t.Errorf("DHCPModes %v are not the DHCP constants", DHCPModes)
	}
}
