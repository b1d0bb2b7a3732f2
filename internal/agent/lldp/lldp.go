// Package lldp finds the switch port each NIC is cabled to: it listens for
// the LLDP frames (IEEE 802.1AB) switches send every 30 seconds by default,
// on every NIC at once, and parses the neighbour they announce.
//
// Frames come from the network, so the parser trusts nothing: a truncated
// or malformed TLV ends the parse with an error, never a panic (its fuzz
// test feeds it arbitrary bytes). The sources of frames are an interface
// (Source) so that the listener runs on a raw socket in the agent (Open,
// AF_PACKET on Linux), on an in-memory switch in the simulator, and on
// scripted frames in tests.
package lldp

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"unicode/utf8"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// EtherType is LLDP's.
const EtherType = 0x88cc

// NearestBridge is the group address LLDP frames are sent to on a link.
// Bridges never forward it, so a frame to it comes from the switch port
// the NIC is cabled to, not from beyond it (the other LLDP addresses,
// nearest non-TPMR and customer bridge, may cross bridges: not the port
// the NIC is on, so frames to them are not taken).
var NearestBridge = net.HardwareAddr{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}

// TLV types (IEEE 802.1AB-2016 table 8-1).
const (
	tlvEnd         = 0
	tlvChassisID   = 1
	tlvPortID      = 2
	tlvTTL         = 3
	tlvPortDesc    = 4
	tlvSystemName  = 5
	tlvMgmtAddress = 8
	tlvOrgSpecific = 127
)

// Chassis ID subtypes (table 8-2).
const (
	ChassisComponent      = 1
	ChassisInterfaceAlias = 2
	ChassisPortComponent  = 3
	ChassisMAC            = 4
	ChassisNetworkAddr    = 5
	ChassisInterfaceName  = 6
	ChassisLocal          = 7
)

// Port ID subtypes (table 8-3).
const (
	PortInterfaceAlias = 1
	PortComponent      = 2
	PortMAC            = 3
	PortNetworkAddr    = 4
	PortInterfaceName  = 5
	PortAgentCircuitID = 6
	PortLocal          = 7
)

// IANA address families, as the network address subtypes and the
// management address TLV carry them.
const (
	familyIPv4 = 1
	familyIPv6 = 2
)

// oui8021 is IEEE 802.1's organizationally unique identifier; its
// subtype 1 is the Port VLAN ID.
var oui8021 = [3]byte{0x00, 0x80, 0xc2}

const subtypePortVLAN = 1

// ErrNotLLDP is returned for a frame that is not an LLDP frame to the
// nearest bridge address.
var ErrNotLLDP = errors.New("not an LLDP frame to the nearest-bridge address")

// ErrShutdown is returned for a shutdown LLDPDU (TTL 0): the switch port
// says its earlier announcement no longer holds.
var ErrShutdown = errors.New("shutdown LLDPDU (TTL 0)")

// ParseFrame parses an Ethernet frame (destination, source, an optional
// 802.1Q tag, the EtherType, then the LLDPDU) into the neighbour it
// announces.
func ParseFrame(frame []byte) (api.AgentLLDP, error) {
	if len(frame) < 14 {
		return api.AgentLLDP{}, fmt.Errorf("%w: %d bytes, shorter than an Ethernet header", ErrNotLLDP, len(frame))
	}
	if !bytes.Equal(frame[:6], NearestBridge) {
		return api.AgentLLDP{}, fmt.Errorf("%w: sent to %s", ErrNotLLDP, net.HardwareAddr(frame[:6]))
	}
	off := 12
	etype := binary.BigEndian.Uint16(frame[off:])
	if etype == 0x8100 || etype == 0x88a8 { // a VLAN tag the NIC left in
		if len(frame) < 18 {
			return api.AgentLLDP{}, fmt.Errorf("%w: truncated VLAN tag", ErrNotLLDP)
		}
		off += 4
		etype = binary.BigEndian.Uint16(frame[off:])
	}
	if etype != EtherType {
		return api.AgentLLDP{}, fmt.Errorf("%w: EtherType %#04x", ErrNotLLDP, etype)
	}
	return ParseLLDPDU(frame[off+2:])
}

// ParseLLDPDU parses an LLDPDU, the TLVs after the EtherType. The
// mandatory Chassis ID, Port ID and TTL must be there; the optional TLVs
// this package reads (port description, system name, management address,
// the 802.1 port VLAN) are taken when present and well formed, and any
// other TLV is skipped. A TLV that runs past the end of the data, or a
// mandatory TLV in the wrong shape, is an error.
func ParseLLDPDU(b []byte) (api.AgentLLDP, error) {
	var (
		out                   api.AgentLLDP
		haveChassis, havePort bool
		haveTTL               bool
		mgmtV4, mgmtOther     string
	)
	for len(b) > 0 {
		if len(b) < 2 {
			return api.AgentLLDP{}, errors.New("truncated TLV header")
		}
		hdr := binary.BigEndian.Uint16(b)
		typ, n := int(hdr>>9), int(hdr&0x1ff)
		if len(b) < 2+n {
			return api.AgentLLDP{}, fmt.Errorf("TLV type %d: length %d runs past the frame's end (%d bytes left)", typ, n, len(b)-2)
		}
		v := b[2 : 2+n]
		b = b[2+n:]
		switch typ {
		case tlvEnd:
			b = nil // padding may follow
		case tlvChassisID:
			if len(v) < 2 {
				return api.AgentLLDP{}, fmt.Errorf("chassis ID TLV: %d bytes, want a subtype and an ID", len(v))
			}
			out.ChassisID, haveChassis = chassisID(v[0], v[1:]), true
		case tlvPortID:
			if len(v) < 2 {
				return api.AgentLLDP{}, fmt.Errorf("port ID TLV: %d bytes, want a subtype and an ID", len(v))
			}
			out.PortID, havePort = portID(v[0], v[1:]), true
		case tlvTTL:
			if len(v) < 2 {
				return api.AgentLLDP{}, fmt.Errorf("TTL TLV: %d bytes, want 2", len(v))
			}
			if binary.BigEndian.Uint16(v) == 0 {
				return api.AgentLLDP{}, ErrShutdown
			}
			haveTTL = true
		case tlvPortDesc:
			out.PortDescription = text(v)
		case tlvSystemName:
			out.SystemName = text(v)
		case tlvMgmtAddress:
			if a, v4, ok := mgmtAddress(v); ok {
				if v4 && mgmtV4 == "" {
					mgmtV4 = a
				} else if !v4 && mgmtOther == "" {
					mgmtOther = a
				}
			}
		case tlvOrgSpecific:
			if len(v) >= 6 && [3]byte(v[:3]) == oui8021 && v[3] == subtypePortVLAN {
				out.VLANID = int(binary.BigEndian.Uint16(v[4:6]))
				if out.VLANID > 4094 { // 4095 is reserved, 0 is none
					out.VLANID = 0
				}
			}
		}
	}
	switch {
	case !haveChassis:
		return api.AgentLLDP{}, errors.New("no chassis ID TLV")
	case !havePort:
		return api.AgentLLDP{}, errors.New("no port ID TLV")
	case !haveTTL:
		return api.AgentLLDP{}, errors.New("no TTL TLV")
	}
	if mgmtV4 != "" {
		out.MgmtAddress = mgmtV4
	} else {
		out.MgmtAddress = mgmtOther
	}
	return out, nil
}

func chassisID(subtype byte, id []byte) string {
	switch subtype {
	case ChassisMAC:
		return macOrHex(id)
	case ChassisNetworkAddr:
		return networkAddress(id)
	case ChassisComponent, ChassisInterfaceAlias, ChassisPortComponent, ChassisInterfaceName, ChassisLocal:
		return textOrHex(id)
	}
	return hexString(id)
}

func portID(subtype byte, id []byte) string {
	switch subtype {
	case PortMAC:
		return macOrHex(id)
	case PortNetworkAddr:
		return networkAddress(id)
	case PortInterfaceAlias, PortComponent, PortInterfaceName, PortAgentCircuitID, PortLocal:
		return textOrHex(id)
	}
	return hexString(id)
}

// mgmtAddress reads a management address TLV: the address string's
// length (the family byte and the address), the family, the address;
// the interface numbering and OID after it are not needed.
func mgmtAddress(v []byte) (addr string, v4, ok bool) {
	if len(v) < 2 {
		return "", false, false
	}
	n := int(v[0])
	if n < 2 || len(v) < 1+n {
		return "", false, false
	}
	a, ok := ipOf(v[1], v[2:1+n])
	if !ok {
		return "", false, false
	}
	return a.String(), a.Is4(), true
}

// networkAddress renders an ID of the network address subtype: an IANA
// address family, then the address.
func networkAddress(id []byte) string {
	if len(id) >= 1 {
		if a, ok := ipOf(id[0], id[1:]); ok {
			return a.String()
		}
	}
	return hexString(id)
}

func ipOf(family byte, b []byte) (netip.Addr, bool) {
	switch {
	case family == familyIPv4 && len(b) == 4:
		return netip.AddrFrom4([4]byte(b)), true
	case family == familyIPv6 && len(b) == 16:
		return netip.AddrFrom16([16]byte(b)), true
	}
	return netip.Addr{}, false
}

func macOrHex(b []byte) string {
	if len(b) == 6 {
		return net.HardwareAddr(b).String()
	}
	return hexString(b)
}

// textOrHex keeps a name a switch sent as text (trailing NULs, which
// some switches send, cut), and shows anything that is not printable
// UTF-8 as hex rather than guess at it.
func textOrHex(b []byte) string {
	s := strings.TrimRight(string(b), "\x00")
	if s != "" && utf8.ValidString(s) && printable(s) {
		return s
	}
	return hexString(b)
}

// text is a free-text TLV (descriptions, names): kept, but invalid
// UTF-8 replaced and trailing NULs cut. Control characters are the
// report's to escape (internal/agent's boundReport and the controller).
func text(b []byte) string {
	return strings.ToValidUTF8(strings.TrimRight(string(b), "\x00"), "\uFFFD")
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

func hexString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	h := hex.EncodeToString(b)
	var sb strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(h[i : i+2])
	}
	return sb.String()
}
