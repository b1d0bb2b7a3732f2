package lldp

import (
	"context"
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The raw socket end to end: a frame sent on one end of a veth pair is
// heard by Open and Listen on the other. It needs root (CAP_NET_ADMIN to
// make the pair, CAP_NET_RAW for the sockets), as CI has; elsewhere it is
// skipped, as it cannot run. It works in a network namespace of its own,
// so the host's interfaces are never touched.
func TestOpenHearsAFrameOverVeth(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN, CAP_NET_RAW) for a veth pair and raw sockets; CI runs as root")
	}
	type result struct {
		got map[string]string
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The namespace is this thread's: it is never unlocked, so the
		// runtime ends the thread with the goroutine rather than reuse it
		// in the wrong namespace.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- result{err: err}
			return
		}
		got, err := vethExchange()
		done <- result{got, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.got["lldp1"] != "leaf-9/swp9/42" {
		t.Errorf("heard %v; want lldp1's neighbour leaf-9/swp9/42", r.got)
	}
}

func vethExchange() (map[string]string, error) {
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "lldp0"}, PeerName: "lldp1"}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, err
	}
	for _, name := range []string{"lldp0", "lldp1"} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return nil, err
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return nil, err
		}
	}
	src, err := Open("lldp1")
	if err != nil {
		return nil, err
	}
	// The switch's side: a raw socket on the other end sends the frame
	// once the listener is open.
	sender, err := net.InterfaceByName("lldp0")
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	f := Announcement{ChassisMAC: sender.HardwareAddr, PortName: "swp9", SystemName: "leaf-9", VLANID: 42}.Frame(sender.HardwareAddr)
	to := &unix.SockaddrLinklayer{Ifindex: sender.Index, Halen: 6, Protocol: htons(EtherType)}
	copy(to.Addr[:], NearestBridge)
	// A few sends, in case the pair's carrier is not up at the first.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			_ = unix.Sendto(fd, f, 0, to)
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	var failure error
	heard := Listen(context.Background(), map[string]Source{"lldp1": src}, 10*time.Second, func(_ string, err error) { failure = err })
	if failure != nil {
		return nil, failure
	}
	out := map[string]string{}
	for nic, n := range heard {
		out[nic] = n.SystemName + "/" + n.PortID + "/" + strconv.Itoa(n.VLANID)
	}
	return out, nil
}
