package baremetal

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func pool(cidr, gw string, ranges ...string) *IPPool {
	p := &IPPool{Name: "lan", CIDR: netip.MustParsePrefix(cidr)}
	if gw != "" {
		p.Gateway = netip.MustParseAddr(gw)
	}
	for _, r := range ranges {
		rg, err := ParseIPRange(r)
		if err != nil {
			panic(err)
		}
		p.Ranges = append(p.Ranges, rg)
	}
	return p
}

func TestIPPoolValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     *IPPool
		field string // "" = valid
		msg   string
	}{
		{"v4 whole", pool("10.0.0.0/24", "10.0.0.1"), "", ""},
		{"v4 ranges around the gateway", pool("10.0.0.0/24", "10.0.0.1", "10.0.0.1-10.0.0.100", "10.0.0.200-10.0.0.254"), "", ""},
		{"v6", pool("2001:db8::/64", "2001:db8::1", "2001:db8::100-2001:db8::1ff"), "", ""},
		{"v4 /31", pool("10.0.0.0/31", ""), "", ""},
		{"v4 /32", pool("10.0.0.7/32", ""), "", ""},
		{"no cidr", &IPPool{Name: "lan"}, "cidr", "required"},
		{"host bits", pool("10.0.0.5/24", ""), "cidr", "the subnet is 10.0.0.0/24"},
		{"v6 too big", pool("2001:db8::/48", ""), "cidr", "/64 or smaller"},
		{"4in6", pool("::ffff:10.0.0.0/120", ""), "cidr", "IPv4-mapped"},
		{"gateway outside", pool("10.0.0.0/24", "10.0.1.1"), "gateway", "not inside cidr 10.0.0.0/24"},
		{"gateway other family", pool("10.0.0.0/24", "2001:db8::1"), "gateway", "not inside"},
		{"gateway network", pool("10.0.0.0/24", "10.0.0.0"), "gateway", "network address"},
		{"gateway broadcast", pool("10.0.0.0/24", "10.0.0.255"), "gateway", "broadcast address"},
		{"range outside", pool("10.0.0.0/24", "", "10.0.0.10-10.0.1.10"), "ranges[0].end", "not inside"},
		{"range backwards", pool("10.0.0.0/24", "", "10.0.0.20-10.0.0.10"), "ranges[0].end", "before its start"},
		{"range overlap", pool("10.0.0.0/24", "", "10.0.0.10-10.0.0.20", "10.0.0.20-10.0.0.30"), "ranges[1].start", "do not overlap"},
		{"range unordered", pool("10.0.0.0/24", "", "10.0.0.50-10.0.0.60", "10.0.0.10-10.0.0.20"), "ranges[1].start", "ordered"},
		{"range holds broadcast", pool("10.0.0.0/24", "", "10.0.0.200-10.0.0.255"), "ranges[0]", "broadcast address"},
		{"range holds network", pool("10.0.0.0/24", "", "10.0.0.0-10.0.0.9"), "ranges[0]", "network address"},
		{"only the gateway", pool("10.0.0.0/24", "10.0.0.1", "10.0.0.1"), "ranges", "no allocatable address"},
		{"bad name", &IPPool{Name: "Bad_Name", CIDR: netip.MustParsePrefix("10.0.0.0/24")}, "name", "DNS label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("valid pool refused: %v", err)
				}
				return
			}
			if !IsCode(err, CodeInvalid) || ErrorField(err) != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v; want invalid on %s saying %q", err, tc.field, tc.msg)
			}
		})
	}

	p := pool("10.0.0.0/24", "")
	p.DNSServers = []string{"10.0.0.53", "nope"}
	if err := p.Validate(); ErrorField(err) != "dns_servers[1]" {
		t.Errorf("bad DNS server: %v", err)
	}
	p.DNSServers = []string{"2001:DB8::53"}
	if err := p.Validate(); ErrorField(err) != "dns_servers[0]" || !strings.Contains(err.Error(), "2001:db8::53") {
		t.Errorf("non-canonical DNS server: %v", err)
	}
	p.DNSServers = nil
	p.SearchDomains = []string{"example.com", "bad domain"}
	if err := p.Validate(); ErrorField(err) != "search_domains[1]" {
		t.Errorf("bad search domain: %v", err)
	}
}

func TestIPPoolAllocatable(t *testing.T) {
	for _, tc := range []struct {
		p    *IPPool
		want []string
		size uint64
	}{
		{pool("10.0.0.0/24", "10.0.0.1"), []string{"10.0.0.2-10.0.0.254"}, 253},
		{pool("10.0.0.0/24", ""), []string{"10.0.0.1-10.0.0.254"}, 254},
		{pool("10.0.0.0/24", "10.0.0.50", "10.0.0.10-10.0.0.100"), []string{"10.0.0.10-10.0.0.49", "10.0.0.51-10.0.0.100"}, 90},
		{pool("10.0.0.0/31", ""), []string{"10.0.0.0-10.0.0.1"}, 2},
		{pool("10.0.0.0/30", "10.0.0.1"), []string{"10.0.0.2"}, 1},
		{pool("2001:db8::/64", "2001:db8::1"), []string{"2001:db8::2-2001:db8::ffff:ffff:ffff:ffff"}, 1<<64 - 2},
		{pool("2001:db8::/120", "", "2001:db8::10-2001:db8::1f"), []string{"2001:db8::10-2001:db8::1f"}, 16},
	} {
		var got []string
		for _, s := range tc.p.Allocatable() {
			got = append(got, IPRange{tc.p.AddrAt(s.Lo), tc.p.AddrAt(s.Hi)}.String())
		}
		if !reflect.DeepEqual(got, tc.want) || tc.p.Size() != tc.size {
			t.Errorf("%s gw %s ranges %v: allocatable %v (%d); want %v (%d)", tc.p.CIDR, tc.p.Gateway, tc.p.Ranges, got, tc.p.Size(), tc.want, tc.size)
		}
		if tc.p.Allocates(tc.p.Gateway) {
			t.Errorf("%s allocates its gateway", tc.p.CIDR)
		}
	}
	full := pool("2001:db8::/64", "")
	if full.Size() != 1<<64-1 {
		t.Errorf("a /64 without gateway: size %d", full.Size())
	}
}

func TestIPPoolResolve(t *testing.T) {
	p := pool("10.0.0.0/24", "10.0.0.1")
	p.DNSServers = []string{"10.0.0.53"}
	got := p.Resolve(NetAddress{Interface: "bond0", Pool: "lan"}, netip.MustParseAddr("10.0.0.7"))
	want := NetAddress{Interface: "bond0", Address: "10.0.0.7/24", Gateway: "10.0.0.1", DNSServers: []string{"10.0.0.53"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resolved %+v; want %+v", got, want)
	}
	own := p.Resolve(NetAddress{Interface: "eth0", Pool: "lan", DNSServers: []string{"1.1.1.1"}}, netip.MustParseAddr("10.0.0.8"))
	if !reflect.DeepEqual(own.DNSServers, []string{"1.1.1.1"}) || own.Pool != "" {
		t.Errorf("an address's own DNS servers: %+v", own)
	}
	v6 := pool("2001:db8::/64", "").Resolve(NetAddress{Pool: "v6"}, netip.MustParseAddr("2001:db8::2"))
	if v6.Address != "2001:db8::2/64" || v6.Gateway != "" {
		t.Errorf("IPv6 without gateway: %+v", v6)
	}
}
