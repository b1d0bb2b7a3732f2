package configdrive_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

var testNICs = []api.AgentNIC{
	{Name: "eno1", MAC: "52:54:00:aa:00:01"},
	{Name: "eno2", MAC: "52:54:00:aa:00:02"},
	{Name: "eno3", MAC: "52:54:00:AA:00:03"}, // the inventory's MACs are normalized too
}

// bondedVLAN is two NICs (one by port, one by MAC) in an 802.3ad bond
// with a tagged VLAN carrying static IPv4 (gateway, a route, its own DNS)
// and IPv6, with instance-wide DNS and search domains.
func bondedVLAN() baremetal.Network {
	return baremetal.Network{
		Interfaces: []baremetal.NetInterface{
			{Name: "nic0", Port: "eno1", MTU: 9000},
			{Name: "nic1", MAC: "52-54-00-AA-00-02", MTU: 9000},
			{Name: "bond0", MTU: 9000, Bond: &baremetal.Bond{Interfaces: []string{"nic0", "nic1"}, Mode: baremetal.BondModeLACP,
				MIIMon: 100, XmitHashPolicy: "layer3+4", LACPRate: "fast"}},
			{Name: "tenant", MTU: 1500, VLAN: &baremetal.VLAN{Interface: "bond0", ID: 100}},
		},
		Addresses: []baremetal.NetAddress{
			{Interface: "tenant", Address: "10.0.0.5/24", Gateway: "10.0.0.1",
				Routes:     []baremetal.Route{{Destination: "192.168.0.0/16", Gateway: "10.0.0.254"}},
				DNSServers: []string{"10.0.0.2", "10.0.0.3"}},
			{Interface: "tenant", Address: "2001:db8:0:1::5/64", Gateway: "2001:db8:0:1::1",
				Routes: []baremetal.Route{{Destination: "2001:db8:100::/48", Gateway: "2001:db8:0:1::fe"}}},
		},
		DNSServers:    []string{"1.1.1.1"},
		SearchDomains: []string{"example.com", "corp.example.com"},
	}
}

func TestNetworkDataRenders(t *testing.T) {
	n := bondedVLAN()
	before, _ := json.Marshal(n)
	b, err := configdrive.NetworkData(n, testNICs)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(n); !bytes.Equal(before, after) {
		t.Errorf("NetworkData changed its argument:\n%s\n%s", before, after)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"links": []any{
			map[string]any{"id": "nic0", "type": "phy", "ethernet_mac_address": "52:54:00:aa:00:01", "mtu": 9000.0},
			map[string]any{"id": "nic1", "type": "phy", "ethernet_mac_address": "52:54:00:aa:00:02", "mtu": 9000.0},
			map[string]any{"id": "bond0", "type": "bond", "ethernet_mac_address": "52:54:00:aa:00:01", "mtu": 9000.0,
				"bond_links": []any{"nic0", "nic1"}, "bond_mode": "802.3ad", "bond_miimon": 100.0,
				"bond_xmit_hash_policy": "layer3+4", "bond_lacp_rate": "fast"},
			map[string]any{"id": "tenant", "type": "vlan", "mtu": 1500.0, "vlan_link": "bond0", "vlan_id": 100.0, "vlan_mac_address": "52:54:00:aa:00:01"},
		},
		"networks": []any{
			map[string]any{"id": "network0", "type": "ipv4", "link": "tenant", "ip_address": "10.0.0.5", "netmask": "255.255.255.0",
				"routes": []any{
					map[string]any{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "10.0.0.1"},
					map[string]any{"network": "192.168.0.0", "netmask": "255.255.0.0", "gateway": "10.0.0.254"},
				},
				"services":        []any{map[string]any{"type": "dns", "address": "10.0.0.2"}, map[string]any{"type": "dns", "address": "10.0.0.3"}},
				"dns_nameservers": []any{"10.0.0.2", "10.0.0.3"},
				"dns_search":      []any{"example.com", "corp.example.com"}},
			map[string]any{"id": "network1", "type": "ipv6", "link": "tenant", "ip_address": "2001:db8:0:1::5", "netmask": "ffff:ffff:ffff:ffff::",
				"routes": []any{
					map[string]any{"network": "::", "netmask": "::", "gateway": "2001:db8:0:1::1"},
					map[string]any{"network": "2001:db8:100::", "netmask": "ffff:ffff:ffff::", "gateway": "2001:db8:0:1::fe"},
				},
				// No servers of its own: the instance's apply.
				"dns_nameservers": []any{"1.1.1.1"},
				"dns_search":      []any{"example.com", "corp.example.com"}},
		},
		"services": []any{map[string]any{"type": "dns", "address": "1.1.1.1"}},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("network_data.json:\n%s\nwant\n%s", g, w)
	}
}

func TestNetworkDataDHCP(t *testing.T) {
	n := baremetal.Network{
		Interfaces: []baremetal.NetInterface{{Name: "eth0", MAC: "52:54:00:aa:00:03"}},
		Addresses: []baremetal.NetAddress{{Interface: "eth0", DHCP: baremetal.DHCPv4}, {Interface: "eth0", DHCP: baremetal.DHCPv6},
			{Interface: "eth0", DHCP: baremetal.DHCPv6SLAAC}},
	}
	b, err := configdrive.NetworkData(n, nil) // by MAC: no inventory needed
	if err != nil {
		t.Fatal(err)
	}
	want := `{"links":[{"id":"eth0","type":"phy","ethernet_mac_address":"52:54:00:aa:00:03"}],` +
		`"networks":[{"id":"network0","type":"ipv4_dhcp","link":"eth0"},{"id":"network1","type":"ipv6_dhcp","link":"eth0"},{"id":"network2","type":"ipv6_slaac","link":"eth0"}],` +
		`"services":[]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestNetworkDataEmpty(t *testing.T) {
	b, err := configdrive.NetworkData(baremetal.Network{}, testNICs)
	if err != nil || b != nil {
		t.Fatalf("an empty network: %q, %v; want no file", b, err)
	}
}

func TestNetworkDataErrors(t *testing.T) {
	cases := []struct {
		name, want string
		field      string
		nics       []api.AgentNIC
		mut        func(*baremetal.Network)
	}{
		{"unresolved pool", `network.addresses[0] still names pool "tenant-a"`, "", testNICs, func(n *baremetal.Network) {
			n.Addresses[0] = baremetal.NetAddress{Interface: "tenant", Pool: "tenant-a"}
		}},
		{"unknown port", "network.interfaces[0].port eno9: not a NIC in the node's inventory", "network.interfaces[0].port", testNICs, func(n *baremetal.Network) {
			n.Interfaces[0].Port = "eno9"
		}},
		{"port without inventory", "no inventory", "network.interfaces[0].port", nil, func(*baremetal.Network) {}},
		{"invalid", "vlan.id must be between 1 and 4094", "network.interfaces[3].vlan.id", testNICs, func(n *baremetal.Network) { n.Interfaces[3].VLAN.ID = 0 }},
	}
	for _, c := range cases {
		n := bondedVLAN()
		c.mut(&n)
		b, err := configdrive.NetworkData(n, c.nics)
		if err == nil || !strings.Contains(err.Error(), c.want) || baremetal.ErrorField(err) != c.field {
			t.Errorf("%s: %q, %v (field %q); want an error saying %q (field %q)", c.name, b, err, baremetal.ErrorField(err), c.want, c.field)
		}
	}
}

// The file rides in the drive beside meta_data.json and reads back as
// it went in; the agent writes these same bytes as the disk's config
// drive partition (image deploys), and the BMC mounts them as a CD (live
// deploys).
func TestBuildCarriesNetworkData(t *testing.T) {
	nd, err := configdrive.NetworkData(bondedVLAN(), testNICs)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := configdrive.Build(&buf, configdrive.Drive{UUID: "u-1", Name: "web-1", Hostname: "web-1", NetworkData: nd}); err != nil {
		t.Fatal(err)
	}
	files := filesOf(t, buf.Bytes())
	if !bytes.Equal(files[configdrive.NetworkDataPath], nd) {
		t.Fatalf("%s is %q, want %q (files %v)", configdrive.NetworkDataPath, files[configdrive.NetworkDataPath], nd, keys(files))
	}
	if _, ok := files[configdrive.MetaDataPath]; !ok {
		t.Fatal("no meta_data.json beside it")
	}
	d, err := configdrive.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil || !bytes.Equal(d.NetworkData, nd) {
		t.Fatalf("Parse: %v, network data %q", err, d.NetworkData)
	}

	// No network: no file, and nothing read back.
	buf.Reset()
	if err := configdrive.Build(&buf, configdrive.Drive{UUID: "u-2"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := filesOf(t, buf.Bytes())[configdrive.NetworkDataPath]; ok {
		t.Fatal("network_data.json without a network")
	}
	if d, err := configdrive.Parse(bytes.NewReader(buf.Bytes())); err != nil || d.NetworkData != nil {
		t.Fatalf("Parse: %v, network data %q", err, d.NetworkData)
	}

	if err := configdrive.Build(&bytes.Buffer{}, configdrive.Drive{UUID: "u-3", NetworkData: []byte("{links")}); err == nil {
		t.Fatal("Build took network data that is not JSON")
	}
}
