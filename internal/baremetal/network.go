package baremetal

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// Network is an instance's network configuration: the interfaces the
// deployed OS brings up (NICs, bonds, VLANs), the addresses on them, and
// DNS. It is written to the config drive as OpenStack network_data.json
// (internal/configdrive), which cloud-init, Glean and Ignition read before
// the OS's first boot reaches the network, so a machine can come up with
// static addresses on a bonded, tagged link without DHCP.
//
// It is stored as JSON with the instance and mirrored by the API, so its
// JSON names are the API's and the field paths errors name
// ("network.interfaces[1].vlan.id") are those of the request body.
type Network struct {
	Interfaces    []NetInterface `json:"interfaces,omitempty"`
	Addresses     []NetAddress   `json:"addresses,omitempty"`
	DNSServers    []string       `json:"dns_servers,omitempty"`
	SearchDomains []string       `json:"search_domains,omitempty"`
}

// NetInterface is one interface of the deployed OS. Exactly one of MAC,
// Port, Bond and VLAN says what it is: a physical NIC chosen by its MAC,
// a physical NIC chosen by the name the node's inspection reported for it
// (e.g. "eno1"; the controller puts its MAC in network_data.json, since a
// name seen by the agent's kernel need not be the name the deployed OS
// gives it), a bond of NICs, or a VLAN on a NIC or a bond.
type NetInterface struct {
	// Name is this configuration's id for the interface, referenced by
	// bonds, VLANs and addresses. It is not the name the OS gives the
	// interface.
	Name string `json:"name"`
	MAC  string `json:"mac,omitempty"`
	Port string `json:"port,omitempty"`
	// MTU is the interface's MTU; 0 leaves the OS's default.
	MTU  int   `json:"mtu,omitempty"`
	Bond *Bond `json:"bond,omitempty"`
	VLAN *VLAN `json:"vlan,omitempty"`
}

// Physical reports whether the interface is a NIC (by MAC or by port).
func (i *NetInterface) Physical() bool { return i.Bond == nil && i.VLAN == nil }

// Bond is a Linux bond of physical NICs.
type Bond struct {
	// Interfaces are the names of the member NICs (NetInterface.Name).
	Interfaces []string `json:"interfaces"`
	// Mode is one of BondModes.
	Mode string `json:"mode"`
	// MIIMon is the link monitoring interval in milliseconds; 0 leaves
	// the OS's default.
	MIIMon int `json:"miimon,omitempty"`
	// XmitHashPolicy (one of XmitHashPolicies) applies to 802.3ad,
	// balance-xor and balance-tlb.
	XmitHashPolicy string `json:"xmit_hash_policy,omitempty"`
	// LACPRate ("slow" or "fast") applies to 802.3ad.
	LACPRate string `json:"lacp_rate,omitempty"`
}

// VLAN is an 802.1Q VLAN on a NIC or a bond.
type VLAN struct {
	// Interface is the name of the NIC or bond the VLAN is tagged on.
	Interface string `json:"interface"`
	ID        int    `json:"id"`
}

// NetAddress is an address on an interface. Exactly one of Address, Pool
// and DHCP says where it comes from: a static CIDR, the next free address
// of an IP pool (which the controller resolves into Address, Gateway and
// DNSServers when the instance is created), or DHCP (one of DHCPModes).
type NetAddress struct {
	Interface string `json:"interface"`
	// Address is a host address with its prefix length, e.g. 10.0.0.5/24
	// or 2001:db8::5/64.
	Address string `json:"address,omitempty"`
	Pool    string `json:"pool,omitempty"`
	DHCP    string `json:"dhcp,omitempty"`
	// Gateway is the default route's next hop, inside Address's subnet.
	Gateway string  `json:"gateway,omitempty"`
	Routes  []Route `json:"routes,omitempty"`
	// DNSServers are this network's DNS servers (a pool's, once
	// resolved); Network.DNSServers apply where an address has none.
	DNSServers []string `json:"dns_servers,omitempty"`
}

// Route is a static route through a next hop in the address's subnet.
type Route struct {
	// Destination is a network in CIDR form, e.g. 192.168.0.0/16.
	Destination string `json:"destination"`
	Gateway     string `json:"gateway"`
}

// The bond modes Linux's bonding driver has, by the names network_data.json
// and netplan use.
const (
	BondModeLACP         = "802.3ad"
	BondModeActiveBackup = "active-backup"
	BondModeBalanceXOR   = "balance-xor"
	BondModeBalanceRR    = "balance-rr"
	BondModeBroadcast    = "broadcast"
	BondModeBalanceTLB   = "balance-tlb"
	BondModeBalanceALB   = "balance-alb"
)

// BondModes lists them (the API's list: api.BondModes).
var BondModes = api.BondModes()

// XmitHashPolicies are the bonding driver's transmit hash policies.
var XmitHashPolicies = api.XmitHashPolicies()

// xmitHashModes are the modes that hash to pick a member (the driver
// ignores the policy in the others).
var xmitHashModes = []string{BondModeLACP, BondModeBalanceXOR, BondModeBalanceTLB}

// LACPRates are how often an 802.3ad partner is asked for LACPDUs.
var LACPRates = api.LACPRates()

// The DHCP modes of an address.
const (
	DHCPv4      = "ipv4"
	DHCPv6      = "ipv6"       // stateful DHCPv6
	DHCPv6SLAAC = "ipv6_slaac" // router advertisements
)

// Bounds of a network. They keep the stored JSON and the config drive
// small; no machine needs more.
const (
	MinMTU        = 68 // IPv4's minimum (RFC 791)
	MaxMTU        = 65535
	MaxNetItems   = 64 // interfaces, addresses, a bond's members, an address's routes
	MaxDNSServers = 8
	// MaxSearchDomains bounds the search list; resolvers use only the
	// first few anyway.
	MaxSearchDomains = 32
)

// DHCPModes lists them (the API's list: api.DHCPModes).
var DHCPModes = api.DHCPModes()

// ifaceNameRE is an interface name: short enough for a Linux interface
// name (IFNAMSIZ), in characters every consumer of network_data.json
// accepts as a link id.
var ifaceNameRE = regexp.MustCompile(`^[a-z0-9_.-]{1,15}$`)

// portRE is a NIC name as the kernel reports it (inspection's names).
var portRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)

// Validate checks n on its own, without the node's inventory (which
// ValidateFor adds), so it can run at plan time. It normalizes every
// MAC to lower-case colon form in place, so that stored MACs compare
// equal to the inventory's. Errors are CodeInvalid naming the field
// ("network.interfaces[1].vlan.id").
func (n *Network) Validate() error {
	if len(n.Interfaces) > MaxNetItems {
		return FieldErrorf("network.interfaces", "network.interfaces has %d entries, more than %d", len(n.Interfaces), MaxNetItems)
	}
	if len(n.Addresses) > MaxNetItems {
		return FieldErrorf("network.addresses", "network.addresses has %d entries, more than %d", len(n.Addresses), MaxNetItems)
	}
	byName := map[string]int{}
	for i := range n.Interfaces {
		if err := n.checkInterface(i, byName); err != nil {
			return err
		}
	}
	for i := range n.Interfaces {
		if err := n.checkLinks(i, byName); err != nil {
			return err
		}
	}
	if err := checkDNS("network.dns_servers", n.DNSServers); err != nil {
		return err
	}
	// Without interfaces no network_data.json is written and the OS
	// configures its network itself: DNS alone would be dropped.
	if len(n.Interfaces) == 0 && len(n.DNSServers) > 0 {
		return FieldErrorf("network.dns_servers", "network.dns_servers needs network.interfaces: without interfaces the OS configures its own network")
	}
	if len(n.Interfaces) == 0 && len(n.SearchDomains) > 0 {
		return FieldErrorf("network.search_domains", "network.search_domains needs network.interfaces: without interfaces the OS configures its own network")
	}
	if len(n.SearchDomains) > MaxSearchDomains {
		return FieldErrorf("network.search_domains", "network.search_domains has %d entries, more than %d", len(n.SearchDomains), MaxSearchDomains)
	}
	for i, d := range n.SearchDomains {
		f := fmt.Sprintf("network.search_domains[%d]", i)
		if err := checkDomain(f, d); err != nil {
			return err
		}
		if slices.Contains(n.SearchDomains[:i], d) {
			return FieldErrorf(f, "%s: search domain %q is listed twice", f, d)
		}
	}
	return n.checkAddresses(byName)
}

// checkInterface checks interface i by itself and records its name.
func (n *Network) checkInterface(i int, byName map[string]int) error {
	it := &n.Interfaces[i]
	f := fmt.Sprintf("network.interfaces[%d]", i)
	if it.Name == "" {
		return FieldErrorf(f+".name", "%s.name is required", f)
	}
	if !ifaceNameRE.MatchString(it.Name) || it.Name == "." || it.Name == ".." {
		return FieldErrorf(f+".name", "%s.name %q must be 1-15 lowercase letters, digits, '_', '.' or '-'", f, safeQuote(it.Name))
	}
	if j, dup := byName[it.Name]; dup {
		return FieldErrorf(f+".name", "%s.name %q is also the name of network.interfaces[%d]; names must be unique", f, it.Name, j)
	}
	byName[it.Name] = i

	kinds := 0
	for _, set := range []bool{it.MAC != "", it.Port != "", it.Bond != nil, it.VLAN != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return FieldErrorf(f, "%s (%s) must set exactly one of mac, port, bond and vlan (it sets %d)", f, it.Name, kinds)
	}
	if it.MTU != 0 && (it.MTU < MinMTU || it.MTU > MaxMTU) {
		return FieldErrorf(f+".mtu", "%s.mtu must be between %d and %d, got %d", f, MinMTU, MaxMTU, it.MTU)
	}
	switch {
	case it.MAC != "":
		mac, err := NormalizeMAC(it.MAC)
		if err != nil {
			return FieldErrorf(f+".mac", "%s.mac %q is not a MAC address (six bytes, e.g. 52:54:00:12:34:56)", f, safeQuote(it.MAC))
		}
		if hw, _ := net.ParseMAC(mac); hw[0]&1 != 0 || mac == "00:00:00:00:00:00" {
			return FieldErrorf(f+".mac", "%s.mac %s is a multicast or zero address, not a NIC's", f, mac)
		}
		it.MAC = mac
		for j := range i {
			if n.Interfaces[j].MAC == mac {
				return FieldErrorf(f+".mac", "%s.mac %s is also the MAC of network.interfaces[%d] (%s); a NIC is configured once", f, mac, j, n.Interfaces[j].Name)
			}
		}
	case it.Port != "":
		if !portRE.MatchString(it.Port) {
			return FieldErrorf(f+".port", "%s.port %q is not a NIC name (1-15 letters, digits, '_', '.' or '-', as inspection reports them, e.g. eno1)", f, safeQuote(it.Port))
		}
		for j := range i {
			if n.Interfaces[j].Port == it.Port {
				return FieldErrorf(f+".port", "%s.port %s is also the port of network.interfaces[%d] (%s); a NIC is configured once", f, it.Port, j, n.Interfaces[j].Name)
			}
		}
	case it.Bond != nil:
		b := it.Bond
		if b.Mode == "" {
			return FieldErrorf(f+".bond.mode", "%s.bond.mode is required; use one of: %s", f, strings.Join(BondModes, ", "))
		}
		if !slices.Contains(BondModes, b.Mode) {
			return FieldErrorf(f+".bond.mode", "%s.bond.mode %q is not a bond mode; use one of: %s", f, safeQuote(b.Mode), strings.Join(BondModes, ", "))
		}
		if b.MIIMon < 0 || b.MIIMon > 1<<31-1 {
			return FieldErrorf(f+".bond.miimon", "%s.bond.miimon must be 0 (the OS's default) or a positive number of milliseconds, got %d", f, b.MIIMon)
		}
		if b.XmitHashPolicy != "" {
			if !slices.Contains(XmitHashPolicies, b.XmitHashPolicy) {
				return FieldErrorf(f+".bond.xmit_hash_policy", "%s.bond.xmit_hash_policy %q is not a hash policy; use one of: %s", f, safeQuote(b.XmitHashPolicy), strings.Join(XmitHashPolicies, ", "))
			}
			if !slices.Contains(xmitHashModes, b.Mode) {
				return FieldErrorf(f+".bond.xmit_hash_policy", "%s.bond.xmit_hash_policy applies only to modes %s, not %s", f, strings.Join(xmitHashModes, ", "), b.Mode)
			}
		}
		if b.LACPRate != "" {
			if !slices.Contains(LACPRates, b.LACPRate) {
				return FieldErrorf(f+".bond.lacp_rate", "%s.bond.lacp_rate %q is not a rate; use slow or fast", f, safeQuote(b.LACPRate))
			}
			if b.Mode != BondModeLACP {
				return FieldErrorf(f+".bond.lacp_rate", "%s.bond.lacp_rate applies only to mode 802.3ad, not %s", f, b.Mode)
			}
		}
		if len(b.Interfaces) == 0 {
			return FieldErrorf(f+".bond.interfaces", "%s.bond.interfaces is required: the names of the NICs in the bond", f)
		}
		if len(b.Interfaces) > MaxNetItems {
			return FieldErrorf(f+".bond.interfaces", "%s.bond.interfaces has %d entries, more than %d", f, len(b.Interfaces), MaxNetItems)
		}
	case it.VLAN != nil:
		if it.VLAN.ID < 1 || it.VLAN.ID > 4094 {
			return FieldErrorf(f+".vlan.id", "%s.vlan.id must be between 1 and 4094, got %d", f, it.VLAN.ID)
		}
		if it.VLAN.Interface == "" {
			return FieldErrorf(f+".vlan.interface", "%s.vlan.interface is required: the name of the NIC or bond the VLAN is on", f)
		}
	}
	return nil
}

// checkLinks checks what interface i refers to, now that every name is
// known: bond members are NICs in no other bond; a VLAN is on a NIC or
// bond that is not itself in a bond, with no MTU above its parent's.
// VLANs only on NICs and bonds, and bonds only of NICs, make cycles
// impossible.
func (n *Network) checkLinks(i int, byName map[string]int) error {
	it := &n.Interfaces[i]
	f := fmt.Sprintf("network.interfaces[%d]", i)
	switch {
	case it.Bond != nil:
		for k, m := range it.Bond.Interfaces {
			mf := fmt.Sprintf("%s.bond.interfaces[%d]", f, k)
			j, ok := byName[m]
			if !ok {
				return FieldErrorf(mf, "%s %q names no interface of network.interfaces", mf, safeQuote(m))
			}
			if !n.Interfaces[j].Physical() {
				return FieldErrorf(mf, "%s %q is a %s; a bond's members must be NICs (mac or port)", mf, m, n.Interfaces[j].kind())
			}
			if slices.Contains(it.Bond.Interfaces[:k], m) {
				return FieldErrorf(mf, "%s %q is listed twice", mf, m)
			}
			if o := n.bondOf(m); o != i {
				return FieldErrorf(mf, "%s %q is already a member of bond network.interfaces[%d] (%s); a NIC can be in one bond", mf, m, o, n.Interfaces[o].Name)
			}
		}
	case it.VLAN != nil:
		p := it.VLAN.Interface
		j, ok := byName[p]
		if !ok {
			return FieldErrorf(f+".vlan.interface", "%s.vlan.interface %q names no interface of network.interfaces", f, safeQuote(p))
		}
		parent := &n.Interfaces[j]
		if parent.VLAN != nil {
			return FieldErrorf(f+".vlan.interface", "%s.vlan.interface %q is a VLAN; a VLAN must be on a NIC or a bond (stacked VLANs are not supported)", f, p)
		}
		if b := n.bondOf(p); b >= 0 {
			return FieldErrorf(f+".vlan.interface", "%s.vlan.interface %q is a member of bond %s; put the VLAN on the bond", f, p, n.Interfaces[b].Name)
		}
		for k := range i {
			if o := n.Interfaces[k].VLAN; o != nil && o.Interface == p && o.ID == it.VLAN.ID {
				return FieldErrorf(f+".vlan.id", "%s.vlan.id %d on %s is also network.interfaces[%d] (%s)", f, it.VLAN.ID, p, k, n.Interfaces[k].Name)
			}
		}
		if it.MTU != 0 && parent.MTU != 0 && it.MTU > parent.MTU {
			return FieldErrorf(f+".mtu", "%s.mtu %d is larger than the MTU of its interface %s (%d)", f, it.MTU, p, parent.MTU)
		}
	}
	return nil
}

func (i *NetInterface) kind() string {
	switch {
	case i.Bond != nil:
		return "bond"
	case i.VLAN != nil:
		return "VLAN"
	}
	return "NIC"
}

// bondOf returns the index of the first bond that has name as a member,
// -1 if none.
func (n *Network) bondOf(name string) int {
	for i := range n.Interfaces {
		if b := n.Interfaces[i].Bond; b != nil && slices.Contains(b.Interfaces, name) {
			return i
		}
	}
	return -1
}

func (n *Network) checkAddresses(byName map[string]int) error {
	seen := map[netip.Addr]int{}
	dhcp := map[string]int{}   // interface + mode -> index
	gateways := map[bool]int{} // IPv4? -> index of the address with the default route
	for i := range n.Addresses {
		a := &n.Addresses[i]
		f := fmt.Sprintf("network.addresses[%d]", i)
		if a.Interface == "" {
			return FieldErrorf(f+".interface", "%s.interface is required: the name of the interface the address is on", f)
		}
		if _, ok := byName[a.Interface]; !ok {
			return FieldErrorf(f+".interface", "%s.interface %q names no interface of network.interfaces", f, safeQuote(a.Interface))
		}
		if b := n.bondOf(a.Interface); b >= 0 {
			return FieldErrorf(f+".interface", "%s.interface %q is a member of bond %s; put the address on the bond", f, a.Interface, n.Interfaces[b].Name)
		}
		kinds := 0
		for _, set := range []bool{a.Address != "", a.Pool != "", a.DHCP != ""} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			return FieldErrorf(f, "%s (on %s) must set exactly one of address, pool and dhcp (it sets %d)", f, a.Interface, kinds)
		}
		if err := checkDNS(f+".dns_servers", a.DNSServers); err != nil {
			return err
		}
		if len(a.Routes) > MaxNetItems {
			return FieldErrorf(f+".routes", "%s.routes has %d entries, more than %d", f, len(a.Routes), MaxNetItems)
		}
		switch {
		case a.DHCP != "":
			if !slices.Contains(DHCPModes, a.DHCP) {
				return FieldErrorf(f+".dhcp", "%s.dhcp %q is not a DHCP mode; use one of: %s", f, safeQuote(a.DHCP), strings.Join(DHCPModes, ", "))
			}
			// DHCP (or the router) supplies these, and cloud-init's
			// netplan output drops them from a DHCP interface, so
			// accepting them would promise what the guest never gets.
			if a.Gateway != "" {
				return FieldErrorf(f+".gateway", "%s.gateway cannot be set with dhcp: DHCP supplies the gateway", f)
			}
			if len(a.Routes) > 0 {
				return FieldErrorf(f+".routes", "%s.routes cannot be set with dhcp (cloud-init does not apply static routes to a DHCP interface); use a static address", f)
			}
			if len(a.DNSServers) > 0 {
				return FieldErrorf(f+".dns_servers", "%s.dns_servers cannot be set with dhcp: DHCP supplies them (network.dns_servers applies to the whole instance)", f)
			}
			key := a.Interface + "\x00" + a.DHCP
			if k, dup := dhcp[key]; dup {
				return FieldErrorf(f+".dhcp", "%s.dhcp %s on %s is also network.addresses[%d]", f, a.DHCP, a.Interface, k)
			}
			dhcp[key] = i
		case a.Pool != "":
			if err := checkPoolRef(f+".pool", a.Pool); err != nil {
				return err
			}
			if a.Gateway != "" {
				return FieldErrorf(f+".gateway", "%s.gateway cannot be set with pool: the pool supplies the gateway", f)
			}
			// The subnet is the pool's, unknown here: routes are checked
			// for syntax now and against the subnet once resolved.
			for k := range a.Routes {
				if _, _, err := checkRoute(fmt.Sprintf("%s.routes[%d]", f, k), a.Routes[k]); err != nil {
					return err
				}
			}
		default:
			p, err := checkHostPrefix(f+".address", a.Address)
			if err != nil {
				return err
			}
			if k, dup := seen[p.Addr()]; dup {
				return FieldErrorf(f+".address", "%s.address %s is also network.addresses[%d]", f, p.Addr(), k)
			}
			seen[p.Addr()] = i
			if a.Gateway != "" {
				if err := checkNextHop(f+".gateway", a.Gateway, p); err != nil {
					return err
				}
				if k, dup := gateways[p.Addr().Is4()]; dup {
					return FieldErrorf(f+".gateway", "%s.gateway: network.addresses[%d] already has the %s default gateway; an instance has one per address family", f, k, family(p.Addr()))
				}
				gateways[p.Addr().Is4()] = i
			}
			for k := range a.Routes {
				rf := fmt.Sprintf("%s.routes[%d]", f, k)
				dst, _, err := checkRoute(rf, a.Routes[k])
				if err != nil {
					return err
				}
				if dst.Addr().Is4() != p.Addr().Is4() {
					return FieldErrorf(rf+".destination", "%s.destination %s is %s but the address %s is %s", rf, dst, family(dst.Addr()), p, family(p.Addr()))
				}
				if err := checkNextHop(rf+".gateway", a.Routes[k].Gateway, p); err != nil {
					return err
				}
				if dst.Bits() == 0 {
					if k2, dup := gateways[p.Addr().Is4()]; dup {
						return FieldErrorf(rf+".destination", "%s.destination %s is a default route, and network.addresses[%d] already has the %s default gateway", rf, dst, k2, family(p.Addr()))
					}
					gateways[p.Addr().Is4()] = i
				}
				for k2 := range k {
					if a.Routes[k2].Destination == a.Routes[k].Destination {
						return FieldErrorf(rf+".destination", "%s.destination %s is also routes[%d]", rf, dst, k2)
					}
				}
			}
		}
	}
	return nil
}

// NormalizeMAC returns mac (any form net.ParseMAC reads) as six
// lower-case, colon-separated bytes, the form the agent reports.
func NormalizeMAC(mac string) (string, error) {
	hw, err := net.ParseMAC(strings.TrimSpace(mac))
	if err != nil {
		return "", err
	}
	if len(hw) != 6 {
		return "", fmt.Errorf("%d-byte hardware address, not an ethernet MAC", len(hw))
	}
	return hw.String(), nil
}

// checkHostPrefix parses s as an address with its prefix length and
// checks that the address is one a host can have in that subnet.
func checkHostPrefix(field, s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || p.Addr().Zone() != "" || p.Addr().Is4In6() {
		return netip.Prefix{}, FieldErrorf(field, "%s %q is not an address with its prefix length (e.g. 10.0.0.5/24 or 2001:db8::5/64)", field, safeQuote(s))
	}
	a := p.Addr()
	if a.IsUnspecified() || a.IsLoopback() || a.IsMulticast() {
		return netip.Prefix{}, FieldErrorf(field, "%s %s is not a host address (unspecified, loopback or multicast)", field, p)
	}
	host := p.Bits() < a.BitLen()-1 // /31 and /32 (/127, /128) have no network or broadcast address
	if host && a == p.Masked().Addr() {
		return netip.Prefix{}, FieldErrorf(field, "%s %s is the network address of %s, not a host's", field, p, p.Masked())
	}
	if host && a.Is4() && a == lastAddr(p) {
		return netip.Prefix{}, FieldErrorf(field, "%s %s is the broadcast address of %s, not a host's", field, p, p.Masked())
	}
	return p, nil
}

// checkNextHop checks that gw is an address inside subnet p, other than
// p's own address (and its network and broadcast addresses).
func checkNextHop(field, gw string, p netip.Prefix) error {
	g, err := netip.ParseAddr(gw)
	if err != nil || g.Zone() != "" || g.Is4In6() {
		return FieldErrorf(field, "%s %q is not an IP address", field, safeQuote(gw))
	}
	if g.Is4() != p.Addr().Is4() {
		return FieldErrorf(field, "%s %s is %s but the address %s is %s", field, g, family(g), p, family(p.Addr()))
	}
	if !p.Contains(g) {
		return FieldErrorf(field, "%s %s is not inside the address's subnet %s", field, g, p.Masked())
	}
	if g == p.Addr() {
		return FieldErrorf(field, "%s %s is the address itself", field, g)
	}
	host := p.Bits() < g.BitLen()-1
	if host && (g == p.Masked().Addr() || (g.Is4() && g == lastAddr(p))) {
		return FieldErrorf(field, "%s %s is the network or broadcast address of %s", field, g, p.Masked())
	}
	return nil
}

// checkRoute checks a route's syntax: a destination network in canonical
// form and a next hop of the same family.
func checkRoute(field string, r Route) (netip.Prefix, netip.Addr, error) {
	dst, err := netip.ParsePrefix(r.Destination)
	if err != nil || dst.Addr().Zone() != "" || dst.Addr().Is4In6() {
		return netip.Prefix{}, netip.Addr{}, FieldErrorf(field+".destination", "%s.destination %q is not a network in CIDR form (e.g. 192.168.0.0/16)", field, safeQuote(r.Destination))
	}
	if dst != dst.Masked() {
		return netip.Prefix{}, netip.Addr{}, FieldErrorf(field+".destination", "%s.destination %s has host bits set; did you mean %s?", field, dst, dst.Masked())
	}
	if r.Gateway == "" {
		return netip.Prefix{}, netip.Addr{}, FieldErrorf(field+".gateway", "%s.gateway is required", field)
	}
	g, err := netip.ParseAddr(r.Gateway)
	if err != nil || g.Zone() != "" || g.Is4In6() {
		return netip.Prefix{}, netip.Addr{}, FieldErrorf(field+".gateway", "%s.gateway %q is not an IP address", field, safeQuote(r.Gateway))
	}
	if g.Is4() != dst.Addr().Is4() {
		return netip.Prefix{}, netip.Addr{}, FieldErrorf(field+".gateway", "%s.gateway %s is %s but the destination %s is %s", field, g, family(g), dst, family(dst.Addr()))
	}
	return dst, g, nil
}

func checkDNS(field string, servers []string) error {
	if len(servers) > MaxDNSServers {
		return FieldErrorf(field, "%s has %d entries, more than %d", field, len(servers), MaxDNSServers)
	}
	for i, s := range servers {
		f := fmt.Sprintf("%s[%d]", field, i)
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" || a.Is4In6() || a.IsUnspecified() || a.IsMulticast() {
			return FieldErrorf(f, "%s %q is not a DNS server's IP address", f, safeQuote(s))
		}
		if slices.Contains(servers[:i], s) {
			return FieldErrorf(f, "%s %s is listed twice", f, s)
		}
	}
	return nil
}

var labelRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

// checkDomain checks a search domain: a DNS name of letter-digit-hyphen
// labels, at most 253 characters, with or without the final dot.
func checkDomain(field, d string) error {
	name := strings.TrimSuffix(d, ".")
	bad := name == "" || len(name) > 253
	for l := range strings.SplitSeq(name, ".") {
		if bad || !labelRE.MatchString(l) {
			bad = true
			break
		}
	}
	if bad {
		return FieldErrorf(field, "%s %q is not a DNS domain name (labels of letters, digits and hyphens, e.g. example.com)", field, safeQuote(d))
	}
	return nil
}

// checkPoolRef checks a reference to an IP pool: its name or its id, as
// every "id or name" lookup of the API takes.
func checkPoolRef(field, ref string) error {
	if _, err := uuid.Parse(ref); err == nil {
		return nil
	}
	if !nameRE.MatchString(ref) {
		return FieldErrorf(field, "%s %q is not an IP pool's name or id", field, safeQuote(ref))
	}
	return nil
}

// lastAddr is the last address of p's subnet (IPv4's broadcast address).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// safeQuote shortens v for an error message and makes it printable: a
// value that failed validation may be anything.
func safeQuote(v string) string {
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	return strings.ToValidUTF8(v, "\uFFFD")
}

// ValidateFor checks n against the node's inventory, the NICs its
// inspection found (api.AgentInventory.NICs): every NIC n names by MAC or
// by port must be one of them, and no NIC may be named twice (once by MAC,
// once by port). It runs Validate first, so it is the one check for
// create. An unknown MAC or port is an error naming it, and listing the
// NICs the node has.
func (n *Network) ValidateFor(nics []api.AgentNIC) error {
	if err := n.Validate(); err != nil {
		return err
	}
	byMAC := map[string]int{}
	byPort := map[string]int{}
	for k, nic := range nics {
		if mac, err := NormalizeMAC(nic.MAC); err == nil {
			byMAC[mac] = k
		}
		byPort[nic.Name] = k
	}
	claimed := map[int]int{} // inventory NIC -> interface
	for i := range n.Interfaces {
		it := &n.Interfaces[i]
		if !it.Physical() {
			continue
		}
		f := fmt.Sprintf("network.interfaces[%d]", i)
		if len(nics) == 0 {
			field := f + ".mac"
			if it.Port != "" {
				field = f + ".port"
			}
			return FieldErrorf(field, "%s (%s) names a NIC, but the node has no inventory of its NICs yet; inspect the node first", f, it.Name)
		}
		var k int
		var ok bool
		if it.MAC != "" {
			if k, ok = byMAC[it.MAC]; !ok {
				return FieldErrorf(f+".mac", "%s.mac %s is not a NIC of the node; its NICs are: %s", f, it.MAC, listNICs(nics))
			}
		} else if k, ok = byPort[it.Port]; !ok {
			return FieldErrorf(f+".port", "%s.port %s is not a NIC of the node; its NICs are: %s", f, it.Port, listNICs(nics))
		}
		if j, dup := claimed[k]; dup {
			return FieldErrorf(f, "%s (%s) is NIC %s (%s), which network.interfaces[%d] (%s) already configures", f, it.Name, nics[k].Name, nics[k].MAC, j, n.Interfaces[j].Name)
		}
		claimed[k] = i
	}
	return nil
}

func listNICs(nics []api.AgentNIC) string {
	s := make([]string, len(nics))
	for i, nic := range nics {
		s[i] = nic.Name + " (" + nic.MAC + ")"
	}
	return strings.Join(s, ", ")
}

// InstanceAddress is an address an instance's OS is given: a static
// address of its network, or one allocated from an IP pool for the
// network's address entry Index (network.addresses[Index]).
type InstanceAddress struct {
	Index     int    `json:"index"`
	Interface string `json:"interface"`
	// Address is the host address with its prefix length.
	Address string `json:"address"`
	Gateway string `json:"gateway,omitempty"`
	// Pool is the id of the pool it was allocated from ("" for a static
	// address), PoolName its name when allocated.
	Pool       string   `json:"pool,omitempty"`
	PoolName   string   `json:"pool_name,omitempty"`
	DNSServers []string `json:"dns_servers,omitempty"`
}

// StaticAddresses are the network's static addresses as InstanceAddresses
// (the pool entries are the allocator's).
func (n *Network) StaticAddresses() []InstanceAddress {
	var out []InstanceAddress
	for i, a := range n.Addresses {
		if a.Address != "" {
			out = append(out, InstanceAddress{Index: i, Interface: a.Interface, Address: a.Address, Gateway: a.Gateway})
		}
	}
	return out
}

// Resolved is n with each pool entry replaced by the address allocated for
// it (addrs): the network the config drive describes. An entry without
// its allocation stays as it is (the renderer refuses it).
func (n *Network) Resolved(addrs []InstanceAddress) Network {
	out := *n
	out.Addresses = append([]NetAddress(nil), n.Addresses...)
	for _, a := range addrs {
		if a.Pool == "" || a.Index < 0 || a.Index >= len(out.Addresses) || out.Addresses[a.Index].Pool == "" {
			continue
		}
		e := out.Addresses[a.Index]
		e.Pool, e.Address, e.Gateway = "", a.Address, a.Gateway
		if len(e.DNSServers) == 0 {
			e.DNSServers = a.DNSServers
		}
		out.Addresses[a.Index] = e
	}
	return out
}
