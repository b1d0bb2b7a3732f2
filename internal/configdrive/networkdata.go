package configdrive

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// OpenStack's network_data.json: links (NICs, bonds, VLANs), networks
// (addresses on links) and services (DNS). The format is Nova's; the
// field choices below follow what cloud-init's converter
// (cloudinit/sources/helpers/openstack.py, convert_net_json) reads, which
// the tests check by running it.
type networkData struct {
	Links    []ndLink    `json:"links"`
	Networks []ndNetwork `json:"networks"`
	Services []ndService `json:"services"`
}

type ndLink struct {
	// ID is the interface's name in our configuration. No "name" is
	// written: cloud-init would rename the guest's NIC to it, and the
	// guest keeps its own names (NICs are matched by MAC).
	ID   string `json:"id"`
	Type string `json:"type"` // phy, bond or vlan
	// EthernetMAC is a NIC's MAC, and a bond's (its first member's, the
	// MAC Linux gives a bond by default).
	EthernetMAC string `json:"ethernet_mac_address,omitempty"`
	MTU         int    `json:"mtu,omitempty"`

	BondLinks          []string `json:"bond_links,omitempty"`
	BondMode           string   `json:"bond_mode,omitempty"`
	BondMIIMon         int      `json:"bond_miimon,omitempty"`
	BondXmitHashPolicy string   `json:"bond_xmit_hash_policy,omitempty"`
	BondLACPRate       string   `json:"bond_lacp_rate,omitempty"`

	VLANLink string `json:"vlan_link,omitempty"`
	VLANID   int    `json:"vlan_id,omitempty"`
	// VLANMAC is required by cloud-init for a VLAN link: its parent's MAC.
	VLANMAC string `json:"vlan_mac_address,omitempty"`
}

type ndNetwork struct {
	ID   string `json:"id"`
	Type string `json:"type"` // ipv4, ipv6, ipv4_dhcp, ipv6_dhcp, ipv6_slaac
	Link string `json:"link"`
	// IPAddress and Netmask: the address without its prefix, and the
	// prefix as a mask (dotted for IPv4, ffff:ffff:: form for IPv6), as
	// Nova writes them.
	IPAddress string      `json:"ip_address,omitempty"`
	Netmask   string      `json:"netmask,omitempty"`
	Routes    []ndRoute   `json:"routes,omitempty"`
	Services  []ndService `json:"services,omitempty"`
	// DNSNameservers and DNSSearch are cloud-init's own keys, which it
	// copies from a network into its subnet. cloud-init before 24.1
	// ignores a network's services, and its netplan output gives an
	// interface that has any DNS setting (a search list) none of the
	// global servers, so a static network carries the servers that apply
	// to it (its own, else the instance's) and the search domains here.
	DNSNameservers []string `json:"dns_nameservers,omitempty"`
	DNSSearch      []string `json:"dns_search,omitempty"`
}

type ndRoute struct {
	Network string `json:"network"`
	Netmask string `json:"netmask"`
	Gateway string `json:"gateway"`
}

type ndService struct {
	Type    string `json:"type"` // dns
	Address string `json:"address"`
}

// NetworkData renders n as network_data.json for a node whose NICs are
// nics (the inventory's; a port reference is written as that NIC's MAC,
// as the deployed OS may name it otherwise). It returns nil for a
// network with no interfaces: a config drive without network_data.json
// leaves the OS to its own (DHCP) configuration, where an empty one
// would leave it without a network.
//
// n must be resolved: an address still naming a pool is an error (the
// controller allocates pool addresses, into Address, Gateway and
// DNSServers, before it builds a drive). n is validated (Validate) first;
// it is not changed.
func NetworkData(n baremetal.Network, nics []api.AgentNIC) ([]byte, error) {
	// Validate normalizes MACs in place: on a copy, so the caller's
	// network stays as it was.
	n.Interfaces = append([]baremetal.NetInterface(nil), n.Interfaces...)
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("configdrive: network data: %w", err)
	}
	if len(n.Interfaces) == 0 {
		return nil, nil
	}
	for i, a := range n.Addresses {
		if a.Pool != "" {
			return nil, fmt.Errorf("configdrive: network data: network.addresses[%d] still names pool %q: pool addresses are allocated before the drive is built", i, a.Pool)
		}
	}

	macs := map[string]string{} // interface name -> MAC
	for i, it := range n.Interfaces {
		switch {
		case it.MAC != "":
			macs[it.Name] = it.MAC
		case it.Port != "":
			mac, err := portMAC(it.Port, nics)
			if err != nil {
				f := fmt.Sprintf("network.interfaces[%d].port", i)
				return nil, baremetal.FieldErrorf(f, "%s %s: %v", f, it.Port, err)
			}
			macs[it.Name] = mac
		}
	}
	// Bonds take their first member's MAC, VLANs their parent's; VLANs
	// are on NICs or bonds, so two passes settle every name.
	for _, it := range n.Interfaces {
		if it.Bond != nil {
			macs[it.Name] = macs[it.Bond.Interfaces[0]]
		}
	}
	for _, it := range n.Interfaces {
		if it.VLAN != nil {
			macs[it.Name] = macs[it.VLAN.Interface]
		}
	}

	nd := networkData{Links: []ndLink{}, Networks: []ndNetwork{}, Services: dnsServices(n.DNSServers)}
	for _, it := range n.Interfaces {
		l := ndLink{ID: it.Name, MTU: it.MTU}
		switch {
		case it.Bond != nil:
			l.Type = "bond"
			l.EthernetMAC = macs[it.Name]
			l.BondLinks = append([]string(nil), it.Bond.Interfaces...)
			l.BondMode = it.Bond.Mode
			l.BondMIIMon = it.Bond.MIIMon
			l.BondXmitHashPolicy = it.Bond.XmitHashPolicy
			l.BondLACPRate = it.Bond.LACPRate
		case it.VLAN != nil:
			l.Type = "vlan"
			l.VLANLink = it.VLAN.Interface
			l.VLANID = it.VLAN.ID
			l.VLANMAC = macs[it.Name]
		default:
			l.Type = "phy"
			l.EthernetMAC = macs[it.Name]
		}
		nd.Links = append(nd.Links, l)
	}
	for i, a := range n.Addresses {
		nw := ndNetwork{ID: fmt.Sprintf("network%d", i), Link: a.Interface}
		switch a.DHCP {
		case baremetal.DHCPv4:
			nw.Type = "ipv4_dhcp"
		case baremetal.DHCPv6:
			nw.Type = "ipv6_dhcp"
		case baremetal.DHCPv6SLAAC:
			nw.Type = "ipv6_slaac"
		case "":
			if err := staticNetwork(&nw, a, n); err != nil {
				return nil, fmt.Errorf("configdrive: network data: network.addresses[%d]: %w", i, err)
			}
		}
		nd.Networks = append(nd.Networks, nw)
	}
	b, err := json.Marshal(nd)
	if err != nil {
		return nil, fmt.Errorf("configdrive: network data: %w", err)
	}
	return b, nil
}

func staticNetwork(nw *ndNetwork, a baremetal.NetAddress, n baremetal.Network) error {
	p, err := netip.ParsePrefix(a.Address)
	if err != nil {
		return err // Validate checked it
	}
	nw.Type = "ipv6"
	if p.Addr().Is4() {
		nw.Type = "ipv4"
	}
	nw.IPAddress = p.Addr().String()
	nw.Netmask = mask(p.Bits(), p.Addr().BitLen())
	if a.Gateway != "" {
		nw.Routes = append(nw.Routes, ndRoute{Network: zero(p.Addr()), Netmask: mask(0, p.Addr().BitLen()), Gateway: a.Gateway})
	}
	for _, r := range a.Routes {
		dst, err := netip.ParsePrefix(r.Destination)
		if err != nil {
			return err
		}
		nw.Routes = append(nw.Routes, ndRoute{Network: dst.Addr().String(), Netmask: mask(dst.Bits(), dst.Addr().BitLen()), Gateway: r.Gateway})
	}
	nw.Services = dnsServices(a.DNSServers)
	nw.DNSNameservers = a.DNSServers
	if len(nw.DNSNameservers) == 0 {
		nw.DNSNameservers = n.DNSServers
	}
	nw.DNSSearch = n.SearchDomains
	return nil
}

func dnsServices(servers []string) []ndService {
	s := []ndService{}
	for _, a := range servers {
		s = append(s, ndService{Type: "dns", Address: a})
	}
	return s
}

// mask is a prefix length as a netmask: 255.255.255.0, or for IPv6
// ffff:ffff:ffff:ffff:: (what Nova writes and cloud-init reads).
func mask(bits, total int) string {
	m := net.CIDRMask(bits, total)
	a, _ := netip.AddrFromSlice(m)
	return a.String()
}

// zero is the unspecified address of a's family, a default route's
// destination.
func zero(a netip.Addr) string {
	if a.Is4() {
		return "0.0.0.0"
	}
	return "::"
}

// portMAC is the MAC of the inventory's NIC named port.
func portMAC(port string, nics []api.AgentNIC) (string, error) {
	if len(nics) == 0 {
		return "", fmt.Errorf("the node has no inventory of its NICs to find it in")
	}
	for _, nic := range nics {
		if nic.Name == port {
			mac, err := baremetal.NormalizeMAC(nic.MAC)
			if err != nil {
				return "", fmt.Errorf("the inventory's MAC for it, %q, is not a MAC", nic.MAC)
			}
			return mac, nil
		}
	}
	return "", fmt.Errorf("not a NIC in the node's inventory")
}
