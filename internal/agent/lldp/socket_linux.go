package lldp

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Open opens a raw AF_PACKET socket on the NIC named ifname that receives
// its LLDP frames: bound to the NIC and to LLDP's EtherType, and joined
// to the nearest-bridge group address, which many NICs filter out
// otherwise (a membership, unlike promiscuous mode, changes nothing for
// other traffic and ends with the socket). It needs CAP_NET_RAW, which
// the agent, as init, has.
func Open(ifname string) (Source, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("lldp on %s: %w", ifname, err)
	}
	proto := htons(EtherType)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, int(proto))
	if err != nil {
		return nil, fmt.Errorf("lldp on %s: raw socket: %w", ifname, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifc.Index}); err != nil {
		_ = unix.Close(fd) // the error being returned says more
		return nil, fmt.Errorf("lldp on %s: bind: %w", ifname, err)
	}
	mreq := &unix.PacketMreq{Ifindex: int32(ifc.Index), Type: unix.PACKET_MR_MULTICAST, Alen: 6}
	copy(mreq.Address[:], NearestBridge)
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, mreq); err != nil {
		_ = unix.Close(fd) // the error being returned says more
		return nil, fmt.Errorf("lldp on %s: join %s: %w", ifname, NearestBridge, err)
	}
	// Non-blocking, so that os.File reads through the runtime's poller
	// and honours read deadlines.
	return os.NewFile(uintptr(fd), "lldp:"+ifname), nil
}

// htons is v in network byte order, as AF_PACKET takes a protocol.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
