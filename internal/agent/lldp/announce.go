package lldp

import (
	"encoding/binary"
	"net"
	"net/netip"
)

// Announcement is what a switch port says about itself: the frame
// builder of the simulator's switches (internal/bmc/sim), which the
// simulated agent's listener hears as the agent hears a real switch.
type Announcement struct {
	// ChassisMAC identifies the switch (chassis ID subtype MAC address).
	ChassisMAC net.HardwareAddr
	// PortName identifies the port (port ID subtype interface name).
	PortName        string
	PortDescription string // optional
	SystemName      string // optional
	VLANID          int    // optional, 1–4094
	MgmtAddress     netip.Addr
	// TTL is how long the announcement holds, in seconds; 0 means 120
	// (four times the default transmit interval, as switches send).
	TTL uint16
}

// Frame is the announcement as an Ethernet frame from src (the switch
// port's MAC) to the nearest-bridge address.
func (a Announcement) Frame(src net.HardwareAddr) []byte {
	b := make([]byte, 0, 128)
	b = append(b, NearestBridge...)
	b = append(b, src...)
	b = binary.BigEndian.AppendUint16(b, EtherType)
	b = appendTLV(b, tlvChassisID, append([]byte{ChassisMAC}, a.ChassisMAC...))
	b = appendTLV(b, tlvPortID, append([]byte{PortInterfaceName}, clip(a.PortName)...))
	ttl := a.TTL
	if ttl == 0 {
		ttl = 120
	}
	b = appendTLV(b, tlvTTL, binary.BigEndian.AppendUint16(nil, ttl))
	if a.PortDescription != "" {
		b = appendTLV(b, tlvPortDesc, clip(a.PortDescription))
	}
	if a.SystemName != "" {
		b = appendTLV(b, tlvSystemName, clip(a.SystemName))
	}
	if a.MgmtAddress.IsValid() {
		family, addr := byte(familyIPv4), a.MgmtAddress.AsSlice()
		if a.MgmtAddress.Is6() {
			family = familyIPv6
		}
		v := []byte{byte(1 + len(addr)), family}
		v = append(v, addr...)
		// Interface numbering unknown (1), interface 0, no OID.
		v = append(v, 1, 0, 0, 0, 0, 0)
		b = appendTLV(b, tlvMgmtAddress, v)
	}
	if a.VLANID > 0 {
		v := append(oui8021[:], subtypePortVLAN)
		b = appendTLV(b, tlvOrgSpecific, binary.BigEndian.AppendUint16(v, uint16(a.VLANID)))
	}
	return appendTLV(b, tlvEnd, nil)
}

func appendTLV(b []byte, typ int, v []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(typ)<<9|uint16(len(v)))
	return append(b, v...)
}

// clip bounds a string TLV to the standard's 255 bytes.
func clip(s string) []byte {
	if len(s) > 255 {
		s = s[:255]
	}
	return []byte(s)
}
