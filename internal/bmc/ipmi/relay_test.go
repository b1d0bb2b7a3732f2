package ipmi

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// relay is a UDP forwarder put between the driver and ipmi_sim to inject
// what ipmi_sim cannot: a BMC that goes silent, one that ignores Open
// Session for suites it lacks, network latency, a BMC restart (switch the
// upstream to another simulator).
type relay struct {
	pc net.PacketConn

	mu       sync.Mutex
	upstream *net.UDPAddr
	clients  map[string]*net.UDPConn
	drop     func(pkt []byte) bool // client→BMC datagrams to swallow
	delay    time.Duration         // added before forwarding, each way

	openSessions atomic.Int64 // RMCP+ Open Session requests seen
	openSHA256   atomic.Int64 // ... of which proposing HMAC-SHA256 (suite 17)
}

func newRelay(t testing.TB, upstreamPort int) *relay {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{pc: pc, clients: map[string]*net.UDPConn{}}
	r.setUpstream(upstreamPort)
	go r.serve()
	t.Cleanup(r.close)
	return r
}

func (r *relay) address() string {
	return fmt.Sprintf("ipmi://127.0.0.1:%d", r.pc.LocalAddr().(*net.UDPAddr).Port)
}

func (r *relay) setUpstream(port int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.upstream = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
	for k, c := range r.clients {
		c.Close()
		delete(r.clients, k)
	}
}

func (r *relay) setDrop(f func([]byte) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop = f
}

func (r *relay) setDelay(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delay = d
}

func dropAll([]byte) bool { return true }

// isOpenSession reports an RMCP+ Open Session Request: RMCP header (4),
// auth type 0x06, payload type 0x10.
func isOpenSession(pkt []byte) bool {
	return len(pkt) > 29 && pkt[4] == 0x06 && pkt[5]&0x3f == 0x10
}

// proposesSHA256 reports an Open Session Request whose authentication
// payload (payload offset 8; algorithm at +4) is RAKP-HMAC-SHA256, the
// authentication of cipher suites 15 to 17.
func proposesSHA256(pkt []byte) bool {
	return isOpenSession(pkt) && pkt[16+8+4] == 0x03
}

func (r *relay) close() {
	r.pc.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.clients {
		c.Close()
	}
}

func (r *relay) serve() {
	buf := make([]byte, 4096)
	for {
		n, from, err := r.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		pkt := append([]byte(nil), buf[:n]...)
		if isOpenSession(pkt) {
			r.openSessions.Add(1)
			if proposesSHA256(pkt) {
				r.openSHA256.Add(1)
			}
		}
		r.mu.Lock()
		drop, delay := r.drop, r.delay
		up, ok := r.clients[from.String()]
		if !ok {
			up, err = net.DialUDP("udp", nil, r.upstream)
			if err == nil {
				r.clients[from.String()] = up
				go r.back(up, from)
			}
		}
		r.mu.Unlock()
		if err != nil || (drop != nil && drop(pkt)) {
			continue
		}
		if delay > 0 {
			time.AfterFunc(delay, func() { _, _ = up.Write(pkt) })
		} else {
			_, _ = up.Write(pkt)
		}
	}
}

// back copies the BMC's answers to the client.
func (r *relay) back(up *net.UDPConn, client net.Addr) {
	buf := make([]byte, 4096)
	for {
		n, err := up.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// ECONNREFUSED from a stopped upstream is not fatal for
			// the relay; a closed socket is.
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		pkt := append([]byte(nil), buf[:n]...)
		r.mu.Lock()
		delay := r.delay
		r.mu.Unlock()
		if delay > 0 {
			time.AfterFunc(delay, func() { _, _ = r.pc.WriteTo(pkt, client) })
		} else {
			_, _ = r.pc.WriteTo(pkt, client)
		}
	}
}
