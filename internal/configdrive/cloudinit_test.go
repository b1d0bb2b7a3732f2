package configdrive_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// These tests hand network_data.json as NetworkData renders it to
// cloud-init's own converter (cloud-init devel net-convert, the code
// cloud-init runs on first boot) and read what it would write to the
// guest: netplan YAML (Ubuntu) and /etc/network/interfaces (Debian).

// requireCloudInit finds cloud-init, failing the test in CI (.ci/run
// installs it) and skipping it elsewhere.
func requireCloudInit(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("cloud-init")
	if err != nil {
		msg := "cloud-init not found (Debian: apt-get install --no-install-recommends cloud-init)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// converted is cloud-init's rendering of one network_data.json.
type converted struct {
	netplan netplanDoc
	raw     string              // the netplan YAML
	eni     map[string][]string // "iface family method" -> its option lines
	eniText string
}

type netplanDoc struct {
	Network struct {
		Version   int                     `yaml:"version"`
		Ethernets map[string]netplanIface `yaml:"ethernets"`
		Bonds     map[string]netplanIface `yaml:"bonds"`
		VLANs     map[string]netplanIface `yaml:"vlans"`
	} `yaml:"network"`
}

type netplanIface struct {
	Match struct {
		MACAddress string `yaml:"macaddress"`
	} `yaml:"match"`
	MACAddress  string         `yaml:"macaddress"`
	SetName     string         `yaml:"set-name"`
	MTU         int            `yaml:"mtu"`
	DHCP4       bool           `yaml:"dhcp4"`
	DHCP6       bool           `yaml:"dhcp6"`
	AcceptRA    *bool          `yaml:"accept-ra"`
	Addresses   []string       `yaml:"addresses"`
	Routes      []netplanRoute `yaml:"routes"`
	Nameservers struct {
		Addresses []string `yaml:"addresses"`
		Search    []string `yaml:"search"`
	} `yaml:"nameservers"`
	Interfaces []string       `yaml:"interfaces"`
	Parameters map[string]any `yaml:"parameters"`
	ID         int            `yaml:"id"`
	Link       string         `yaml:"link"`
}

type netplanRoute struct {
	To  string `yaml:"to"`
	Via string `yaml:"via"`
}

// convert renders n for nics and runs cloud-init's converter on it, with
// the guest's NICs named as the inventory names them.
func convert(t *testing.T, n baremetal.Network, nics []api.AgentNIC) converted {
	t.Helper()
	ci := requireCloudInit(t)
	nd, err := configdrive.NetworkData(n, nics)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "network_data.json")
	if err := os.WriteFile(in, nd, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(kind string) string {
		out := filepath.Join(dir, kind)
		args := []string{"devel", "net-convert", "-p", in, "-k", "network_data.json", "-D", "debian", "-d", out, "-O", kind}
		// The guest's NICs: without -m the converter would look at this
		// machine's.
		for _, nic := range nics {
			mac, _ := baremetal.NormalizeMAC(nic.MAC)
			args = append(args, "-m", nic.Name+","+mac)
		}
		cmd := exec.CommandContext(t.Context(), ci, args...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cloud-init %s: %v\n%s\nnetwork_data.json: %s", strings.Join(args, " "), err, b, nd)
		}
		return out
	}
	var c converted
	np, err := os.ReadFile(filepath.Join(run("netplan"), "etc/netplan/50-cloud-init.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.raw = string(np)
	if err := yaml.Unmarshal(np, &c.netplan); err != nil {
		t.Fatalf("netplan YAML: %v\n%s", err, np)
	}
	if c.netplan.Network.Version != 2 {
		t.Fatalf("netplan version %d:\n%s", c.netplan.Network.Version, np)
	}
	eni, err := os.ReadFile(filepath.Join(run("eni"), "etc/network/interfaces.d/50-cloud-init"))
	if err != nil {
		t.Fatal(err)
	}
	c.eniText = string(eni)
	c.eni = parseENI(string(eni))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("network_data.json: %s\nnetplan:\n%s\neni:\n%s", nd, np, eni)
		}
	})
	return c
}

// parseENI splits /etc/network/interfaces into its iface stanzas, keyed
// "name family method", each with its option lines.
func parseENI(s string) map[string][]string {
	out := map[string][]string{}
	var cur string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
			continue
		case f[0] == "iface" && len(f) == 4:
			cur = strings.Join(f[1:], " ")
			out[cur] = []string{}
		case f[0] == "auto" || f[0] == "iface":
			cur = ""
		case cur != "" && line != strings.TrimLeft(line, " \t"):
			out[cur] = append(out[cur], strings.Join(f, " "))
		}
	}
	return out
}

func (c converted) eniHas(t *testing.T, stanza string, opts ...string) {
	t.Helper()
	got, ok := c.eni[stanza]
	if !ok {
		t.Errorf("eni: no stanza %q:\n%s", stanza, c.eniText)
		return
	}
	for _, o := range opts {
		if !slices.Contains(got, o) {
			t.Errorf("eni: stanza %q has no %q: %q", stanza, o, got)
		}
	}
}

// onlyBond is the one bond cloud-init made (it names bonds itself).
func (c converted) onlyBond(t *testing.T) (string, netplanIface) {
	t.Helper()
	if len(c.netplan.Network.Bonds) != 1 {
		t.Fatalf("netplan: %d bonds, want 1:\n%s", len(c.netplan.Network.Bonds), c.raw)
	}
	for name, b := range c.netplan.Network.Bonds {
		return name, b
	}
	panic("unreachable")
}

func TestCloudInitBondVLANStatic(t *testing.T) {
	c := convert(t, bondedVLAN(), testNICs)
	np := c.netplan.Network

	for name, mac := range map[string]string{"eno1": "52:54:00:aa:00:01", "eno2": "52:54:00:aa:00:02"} {
		e, ok := np.Ethernets[name]
		if !ok || e.Match.MACAddress != mac || e.MTU != 9000 || len(e.Addresses) != 0 {
			t.Errorf("netplan ethernet %s: %+v (ok %v), want matched by %s, MTU 9000, no address", name, e, ok, mac)
		}
	}
	bondName, bond := c.onlyBond(t)
	if !slices.Equal(bond.Interfaces, []string{"eno1", "eno2"}) || bond.MTU != 9000 || bond.MACAddress != "52:54:00:aa:00:01" {
		t.Errorf("netplan bond %s: %+v", bondName, bond)
	}
	for k, v := range map[string]any{"mode": "802.3ad", "mii-monitor-interval": 100, "transmit-hash-policy": "layer3+4", "lacp-rate": "fast"} {
		if bond.Parameters[k] != v {
			t.Errorf("netplan bond parameter %s = %v, want %v (%v)", k, bond.Parameters[k], v, bond.Parameters)
		}
	}

	vlanName := bondName + ".100"
	v, ok := np.VLANs[vlanName]
	if !ok {
		t.Fatalf("netplan: no VLAN %s:\n%s", vlanName, c.raw)
	}
	if v.ID != 100 || v.Link != bondName || v.MTU != 1500 {
		t.Errorf("netplan VLAN %s: id %d link %s mtu %d, want 100 on %s, 1500", vlanName, v.ID, v.Link, v.MTU, bondName)
	}
	if !slices.Equal(v.Addresses, []string{"10.0.0.5/24", "2001:db8:0:1::5/64"}) {
		t.Errorf("netplan VLAN addresses %q", v.Addresses)
	}
	for _, r := range []netplanRoute{{"0.0.0.0/0", "10.0.0.1"}, {"192.168.0.0/16", "10.0.0.254"}, {"::/0", "2001:db8:0:1::1"}, {"2001:db8:100::/48", "2001:db8:0:1::fe"}} {
		if !slices.Contains(v.Routes, r) {
			t.Errorf("netplan VLAN routes %+v lack %+v", v.Routes, r)
		}
	}
	// The address's own servers first, then the instance's (cloud-init
	// gathers an interface's servers from its subnets).
	if !slices.Equal(v.Nameservers.Addresses, []string{"10.0.0.2", "10.0.0.3", "1.1.1.1"}) {
		t.Errorf("netplan VLAN nameservers %q", v.Nameservers.Addresses)
	}
	if !slices.Contains(v.Nameservers.Search, "example.com") || !slices.Contains(v.Nameservers.Search, "corp.example.com") {
		t.Errorf("netplan VLAN search %q", v.Nameservers.Search)
	}

	c.eniHas(t, "eno1 inet manual", "bond-master "+bondName, "mtu 9000")
	c.eniHas(t, "eno2 inet manual", "bond-master "+bondName, "mtu 9000")
	c.eniHas(t, bondName+" inet manual", "bond_mode 802.3ad", "bond_miimon 100", "bond_xmit_hash_policy layer3+4", "bond_lacp_rate fast",
		"hwaddress 52:54:00:aa:00:01", "mtu 9000")
	c.eniHas(t, vlanName+" inet static", "address 10.0.0.5/24", "vlan-raw-device "+bondName, "vlan_id 100", "mtu 1500",
		"dns-nameservers 10.0.0.2 10.0.0.3", "dns-search example.com corp.example.com",
		"post-up route add default gw 10.0.0.1 || true", "post-up route add -net 192.168.0.0/16 gw 10.0.0.254 || true")
	c.eniHas(t, vlanName+" inet6 static", "address 2001:db8:0:1::5/64",
		"post-up route add -A inet6 default gw 2001:db8:0:1::1 || true", "post-up route add -A inet6 2001:db8:100::/48 gw 2001:db8:0:1::fe || true")
	// The instance-wide servers, for resolvconf.
	c.eniHas(t, "lo inet loopback", "dns-nameservers 1.1.1.1")
}

func TestCloudInitActiveBackup(t *testing.T) {
	n := baremetal.Network{
		Interfaces: []baremetal.NetInterface{
			{Name: "a", MAC: "52:54:00:aa:00:02"},
			{Name: "b", Port: "eno3"},
			{Name: "bond0", Bond: &baremetal.Bond{Interfaces: []string{"b", "a"}, Mode: baremetal.BondModeActiveBackup, MIIMon: 250}},
		},
		Addresses:  []baremetal.NetAddress{{Interface: "bond0", Address: "192.168.10.5/24", Gateway: "192.168.10.1"}},
		DNSServers: []string{"9.9.9.9", "149.112.112.112"},
	}
	c := convert(t, n, testNICs)
	name, b := c.onlyBond(t)
	if !slices.Equal(b.Interfaces, []string{"eno2", "eno3"}) || b.Parameters["mode"] != "active-backup" || b.Parameters["mii-monitor-interval"] != 250 {
		t.Errorf("netplan bond %s: %+v", name, b)
	}
	// The bond takes its first member's MAC (b, eno3).
	if b.MACAddress != "52:54:00:aa:00:03" {
		t.Errorf("netplan bond MAC %s", b.MACAddress)
	}
	if _, ok := b.Parameters["lacp-rate"]; ok {
		t.Errorf("lacp-rate on an active-backup bond: %+v", b.Parameters)
	}
	if !slices.Equal(b.Addresses, []string{"192.168.10.5/24"}) || !slices.Contains(b.Routes, netplanRoute{"0.0.0.0/0", "192.168.10.1"}) {
		t.Errorf("netplan bond addresses %q routes %+v", b.Addresses, b.Routes)
	}
	// Instance-wide servers reach the interface.
	if !slices.Equal(b.Nameservers.Addresses, []string{"9.9.9.9", "149.112.112.112"}) {
		t.Errorf("netplan bond nameservers %q", b.Nameservers.Addresses)
	}
	c.eniHas(t, name+" inet static", "bond_mode active-backup", "bond_miimon 250", "address 192.168.10.5/24",
		"dns-nameservers 9.9.9.9 149.112.112.112", "post-up route add default gw 192.168.10.1 || true")
	c.eniHas(t, "eno2 inet manual", "bond-master "+name)
	c.eniHas(t, "eno3 inet manual", "bond-master "+name)
}

func TestCloudInitStaticIPv6(t *testing.T) {
	n := baremetal.Network{
		Interfaces: []baremetal.NetInterface{{Name: "uplink", Port: "eno1"}},
		Addresses: []baremetal.NetAddress{{Interface: "uplink", Address: "2001:db8:0:2::10/64", Gateway: "2001:db8:0:2::1",
			Routes: []baremetal.Route{{Destination: "2001:db8:200::/40", Gateway: "2001:db8:0:2::2"}}, DNSServers: []string{"2001:4860:4860::8888"}}},
		SearchDomains: []string{"v6.example"},
	}
	c := convert(t, n, testNICs)
	e, ok := c.netplan.Network.Ethernets["eno1"]
	if !ok || e.Match.MACAddress != "52:54:00:aa:00:01" {
		t.Fatalf("netplan: eno1 %+v (ok %v)", e, ok)
	}
	if !slices.Equal(e.Addresses, []string{"2001:db8:0:2::10/64"}) || e.DHCP4 || e.DHCP6 || e.AcceptRA == nil || *e.AcceptRA {
		t.Errorf("netplan eno1: addresses %q dhcp4 %v dhcp6 %v accept-ra %v", e.Addresses, e.DHCP4, e.DHCP6, e.AcceptRA)
	}
	for _, r := range []netplanRoute{{"::/0", "2001:db8:0:2::1"}, {"2001:db8:200::/40", "2001:db8:0:2::2"}} {
		if !slices.Contains(e.Routes, r) {
			t.Errorf("netplan eno1 routes %+v lack %+v", e.Routes, r)
		}
	}
	if !slices.Equal(e.Nameservers.Addresses, []string{"2001:4860:4860::8888"}) || !slices.Equal(e.Nameservers.Search, []string{"v6.example"}) {
		t.Errorf("netplan eno1 nameservers %+v", e.Nameservers)
	}
	c.eniHas(t, "eno1 inet6 static", "address 2001:db8:0:2::10/64", "dns-nameservers 2001:4860:4860::8888", "dns-search v6.example",
		"post-up route add -A inet6 default gw 2001:db8:0:2::1 || true")
}

func TestCloudInitDHCPAndMTU(t *testing.T) {
	n := baremetal.Network{
		Interfaces: []baremetal.NetInterface{
			{Name: "dhcp", Port: "eno1", MTU: 9000},
			{Name: "v6", MAC: "52:54:00:aa:00:02", MTU: 1400},
		},
		Addresses: []baremetal.NetAddress{
			{Interface: "dhcp", DHCP: baremetal.DHCPv4},
			{Interface: "v6", DHCP: baremetal.DHCPv6SLAAC},
		},
	}
	c := convert(t, n, testNICs)
	e := c.netplan.Network.Ethernets["eno1"]
	if !e.DHCP4 || e.MTU != 9000 || e.Match.MACAddress != "52:54:00:aa:00:01" || len(e.Addresses) != 0 {
		t.Errorf("netplan eno1: %+v", e)
	}
	e = c.netplan.Network.Ethernets["eno2"]
	if e.DHCP4 || !e.DHCP6 || e.MTU != 1400 {
		t.Errorf("netplan eno2 (SLAAC): %+v", e)
	}
	if len(c.netplan.Network.Bonds)+len(c.netplan.Network.VLANs) != 0 {
		t.Errorf("netplan: bonds or VLANs from none:\n%s", c.raw)
	}
	c.eniHas(t, "eno1 inet dhcp", "mtu 9000")
	c.eniHas(t, "eno2 inet6 auto", "mtu 1400")
}
