package lldp

import (
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// frame decodes hex written as switches' frames are shown in a packet
// dump: spaces and newlines for the reader, one TLV a line.
func frame(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Frames built by hand after IEEE 802.1AB-2016 clause 8 (TLV header:
// 7 bits of type, 9 of length), shaped as the named vendors send them.
var (
	// An Arista-like leaf: chassis ID a MAC, port ID the interface name,
	// system description and capabilities (skipped), an IPv4 management
	// address, the 802.1 port VLAN, an 802.3 MAC/PHY TLV (skipped), then
	// the End TLV and the padding to the minimum frame size.
	aristaFrame = `
		0180c200000e 444ca8123457 88cc
		0207 04 444ca8123456
		040a 05 45746865726e657437
		0602 0078
		080a 64622d303720657468 30
		0a0a 6c6561662d7231322d61
		0c0a 41726973746120454f53
		0e04 0014 0014
		100c 05 01 0a000002 02 00000001 00
		fe06 0080c2 01 0064
		fe09 00120f 01 03 6c03 001e
		0000
		000000000000`
	// A Juniper-like access switch: the port ID locally assigned (the
	// SNMP ifIndex), the interface name in the port description, an IPv6
	// management address before the IPv4 one (IPv4 is kept).
	juniperFrame = `
		0180c200000e 3c8ab0000102 88cc
		0207 04 3c8ab0000100
		0404 07 353233
		0602 0078
		0809 67652d302f302f3132
		0a09 6578343330302d7233
		1018 11 02 20010db8000000000000000000000001 02 00000001 00
		100c 05 01 c0a80a05 02 00000001 00
		0000`
	// A Cisco-like switch behind a VLAN tag the NIC left in: chassis ID
	// a network address (IPv4), port ID the interface name, no port
	// VLAN.
	ciscoFrame = `
		0180c200000e 00082f1a2b3c 8100 0064 88cc
		0206 05 01 0a141e28
		0409 05 4769312f302f3234
		0602 00b4
		0a0a 636f72652d7377312d30
		0000`
)

func TestParseFrameOfVendors(t *testing.T) {
	for name, c := range map[string]struct {
		frame string
		want  api.AgentLLDP
	}{
		"arista": {aristaFrame, api.AgentLLDP{ChassisID: "44:4c:a8:12:34:56", PortID: "Ethernet7",
			PortDescription: "db-07 eth0", SystemName: "leaf-r12-a", VLANID: 100, MgmtAddress: "10.0.0.2"}},
		"juniper": {juniperFrame, api.AgentLLDP{ChassisID: "3c:8a:b0:00:01:00", PortID: "523",
			PortDescription: "ge-0/0/12", SystemName: "ex4300-r3", MgmtAddress: "192.168.10.5"}},
		"cisco": {ciscoFrame, api.AgentLLDP{ChassisID: "10.20.30.40", PortID: "Gi1/0/24", SystemName: "core-sw1-0"}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseFrame(frame(t, c.frame))
			if err != nil {
				t.Fatalf("ParseFrame: %v", err)
			}
			if got != c.want {
				t.Errorf("ParseFrame:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// Every subtype of the chassis and port IDs is rendered as its kind
// says; an unknown one, or text that is not printable, as hex.
func TestIDSubtypes(t *testing.T) {
	for _, c := range []struct {
		subtype byte
		id      []byte
		want    string
	}{
		{ChassisComponent, []byte("chassis-1"), "chassis-1"},
		{ChassisInterfaceAlias, []byte("alias"), "alias"},
		{ChassisPortComponent, []byte("slot 3"), "slot 3"},
		{ChassisMAC, []byte{0, 0, 0x5e, 0, 0x53, 1}, "00:00:5e:00:53:01"},
		{ChassisNetworkAddr, append([]byte{2}, netip.MustParseAddr("2001:db8::7").AsSlice()...), "2001:db8::7"},
		{ChassisNetworkAddr, []byte{3, 1, 2}, "03:01:02"}, // an address family not IP: hex
		{ChassisInterfaceName, []byte("swp7"), "swp7"},
		{ChassisLocal, []byte("local\x00"), "local"},
		{0, []byte{1, 2}, "01:02"},                                 // reserved
		{9, []byte{0xca, 0xfe}, "ca:fe"},                           // reserved
		{ChassisLocal, []byte{0x1b, '[', '2', 'J'}, "1b:5b:32:4a"}, // an escape sequence is not a name
	} {
		if got := chassisID(c.subtype, c.id); got != c.want {
			t.Errorf("chassis ID subtype %d %x: %q, want %q", c.subtype, c.id, got, c.want)
		}
	}
	// The port's subtypes differ from the chassis's from 3 on.
	for _, c := range []struct {
		subtype byte
		id      []byte
		want    string
	}{
		{PortInterfaceAlias, []byte("uplink"), "uplink"},
		{PortComponent, []byte("card 2"), "card 2"},
		{PortMAC, []byte{0, 0, 0x5e, 0, 0x53, 1}, "00:00:5e:00:53:01"},
		{PortMAC, []byte{0, 0, 0x5e}, "00:00:5e"},
		{PortNetworkAddr, []byte{1, 192, 0, 2, 9}, "192.0.2.9"},
		{PortNetworkAddr, []byte{1, 192, 0}, "01:c0:00"}, // truncated address: hex
		{PortInterfaceName, []byte("Ethernet1/7"), "Ethernet1/7"},
		{PortAgentCircuitID, []byte("circuit-9"), "circuit-9"},
		{PortLocal, []byte("17"), "17"},
		{PortLocal, []byte{0xff, 0xfe}, "ff:fe"}, // not UTF-8
	} {
		if got := portID(c.subtype, c.id); got != c.want {
			t.Errorf("port ID subtype %d %x: %q, want %q", c.subtype, c.id, got, c.want)
		}
	}
}

func TestParseRefusesWhatIsNotANeighbour(t *testing.T) {
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	good := Announcement{ChassisMAC: mac, PortName: "p1"}.Frame(mac)
	for name, c := range map[string]struct {
		frame []byte
		want  string
	}{
		"empty":            {nil, "shorter than an Ethernet header"},
		"other address":    {append(append([]byte{0x01, 0x80, 0xc2, 0, 0, 0x03}, good[6:12]...), good[12:]...), "sent to 01:80:c2:00:00:03"},
		"other ethertype":  {append(append([]byte{}, good[:12]...), append([]byte{0x08, 0x00}, good[14:]...)...), "EtherType 0x0800"},
		"truncated tag":    {append(append([]byte{}, good[:12]...), 0x81, 0x00, 0x00), "truncated VLAN tag"},
		"cut in a header":  {append(append([]byte{}, good[:14]...), 0x02), "truncated TLV header"},
		"cut in a value":   {good[:20], "runs past the frame's end"},
		"shutdown":         {frame(t, "0180c200000e 020000000001 88cc 0207 04 020000000001 0403 05 7031 0602 0000 0000"), "TTL 0"},
		"no chassis":       {frame(t, "0180c200000e 020000000001 88cc 0403 05 7031 0602 0078 0000"), "no chassis ID"},
		"no port":          {frame(t, "0180c200000e 020000000001 88cc 0207 04 020000000001 0602 0078 0000"), "no port ID"},
		"no TTL":           {frame(t, "0180c200000e 020000000001 88cc 0207 04 020000000001 0403 05 7031 0000"), "no TTL"},
		"empty chassis ID": {frame(t, "0180c200000e 020000000001 88cc 0201 04 0403 05 7031 0602 0078 0000"), "chassis ID TLV: 1 bytes"},
		"short TTL":        {frame(t, "0180c200000e 020000000001 88cc 0207 04 020000000001 0403 05 7031 0601 00 0000"), "TTL TLV: 1 bytes"},
	} {
		_, err := ParseFrame(c.frame)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
	if _, err := ParseFrame(good); err != nil {
		t.Fatalf("the good frame: %v", err)
	}
	if _, err := ParseFrame(good[:14]); err == nil {
		t.Error("a frame without TLVs parsed")
	}
	_, err := ParseFrame(append(append([]byte{}, good[:12]...), 0x86, 0xdd))
	if !errors.Is(err, ErrNotLLDP) {
		t.Errorf("an IPv6 frame: %v, want ErrNotLLDP", err)
	}
}

// Optional TLVs in a bad shape are skipped, not fatal: the mandatory ones
// still name the port.
func TestParseSkipsBadOptionalTLVs(t *testing.T) {
	got, err := ParseFrame(frame(t, `0180c200000e 020000000001 88cc
		0207 04 020000000001  0403 05 7031  0602 0078
		1003 09 01 0a
		1002 01 01
		fe06 0080c2 01 0fff
		fe03 0080c2
		fe06 00120f 01 0064
		0000`))
	want := api.AgentLLDP{ChassisID: "02:00:00:00:00:01", PortID: "p1"}
	if err != nil || got != want {
		t.Errorf("ParseFrame: %+v, %v; want %+v", got, err, want)
	}
}

func TestAnnouncementRoundTrip(t *testing.T) {
	a := Announcement{ChassisMAC: net.HardwareAddr{0x52, 0x54, 0, 0xaa, 0xbb, 0xcc}, PortName: "swp12",
		PortDescription: "rack 4 node 12", SystemName: "leaf-4", VLANID: 4094, MgmtAddress: netip.MustParseAddr("2001:db8::4")}
	got, err := ParseFrame(a.Frame(net.HardwareAddr{0x52, 0x54, 0, 0xaa, 0xbb, 0xcd}))
	want := api.AgentLLDP{ChassisID: "52:54:00:aa:bb:cc", PortID: "swp12", PortDescription: "rack 4 node 12",
		SystemName: "leaf-4", VLANID: 4094, MgmtAddress: "2001:db8::4"}
	if err != nil || got != want {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, want)
	}
	long := strings.Repeat("x", 300)
	got, err = ParseFrame(Announcement{ChassisMAC: a.ChassisMAC, PortName: long, SystemName: long}.Frame(a.ChassisMAC))
	if err != nil || len(got.PortID) != 255 || len(got.SystemName) != 255 {
		t.Errorf("long names: %d, %d bytes, %v; want cut to 255", len(got.PortID), len(got.SystemName), err)
	}
}

// Whatever the bytes, the parser answers: no panic, no endless loop, and
// a neighbour only with both IDs.
func FuzzParseFrame(f *testing.F) {
	for _, s := range []string{aristaFrame, juniperFrame, ciscoFrame} {
		f.Add(frame(f, s))
	}
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	f.Add(Announcement{ChassisMAC: mac, PortName: "p", VLANID: 5, MgmtAddress: netip.MustParseAddr("192.0.2.1")}.Frame(mac))
	f.Add([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e, 0, 0, 0, 0, 0, 0, 0x88, 0xcc, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseFrame(b)
		if err == nil && (n.ChassisID == "" || n.PortID == "") {
			t.Errorf("parsed %+v without a chassis or port ID", n)
		}
		if n.VLANID < 0 || n.VLANID > 4094 {
			t.Errorf("VLAN %d out of range", n.VLANID)
		}
	})
}
