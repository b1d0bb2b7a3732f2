package lldp

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// closeRecorder is a Source that says whether it was closed, and
// fails its reads with err when that is set.
type closeRecorder struct {
	Source
	err    error
	mu     sync.Mutex
	closed bool
}

func newScripted(frames ...[]byte) *closeRecorder { return &closeRecorder{Source: Replay(frames...)} }

func (s *closeRecorder) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	return s.Source.Read(p)
}

func (s *closeRecorder) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.Source.Close()
}

func (s *closeRecorder) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

var swMAC = net.HardwareAddr{0x52, 0x54, 0, 0x5e, 0, 1}

func announce(port string) []byte {
	return Announcement{ChassisMAC: swMAC, PortName: port, SystemName: "leaf-1", VLANID: 20}.Frame(swMAC)
}

// Each NIC stops at its first neighbour: with every NIC answered, Listen
// returns long before its wait. Frames that are not LLDP, or are broken,
// are skipped on the way.
func TestListenStopsPerNICAtItsNeighbour(t *testing.T) {
	broken := announce("x")[:20]
	ipv4 := append(append([]byte{}, announce("y")[:12]...), 0x08, 0x00, 0x45)
	eth0, eth1 := newScripted(ipv4, broken, announce("swp1")), newScripted(announce("swp2"))
	start := time.Now()
	got := Listen(t.Context(), map[string]Source{"eth0": eth0, "eth1": eth1}, time.Minute, func(nic string, err error) {
		t.Errorf("%s failed: %v", nic, err)
	})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Listen took %s with every NIC answered; want it to stop early", took)
	}
	want := map[string]api.AgentLLDP{
		"eth0": {ChassisID: swMAC.String(), PortID: "swp1", SystemName: "leaf-1", VLANID: 20},
		"eth1": {ChassisID: swMAC.String(), PortID: "swp2", SystemName: "leaf-1", VLANID: 20},
	}
	if len(got) != 2 || got["eth0"] != want["eth0"] || got["eth1"] != want["eth1"] {
		t.Errorf("Listen: %+v, want %+v", got, want)
	}
	if !eth0.isClosed() || !eth1.isClosed() {
		t.Error("a source was left open")
	}
}

// A NIC whose switch says nothing (LLDP off) costs the wait and no more;
// a NIC that fails is reported and does not hold up the others.
func TestListenBoundedByWait(t *testing.T) {
	silent := newScripted()
	broken := newScripted()
	broken.err = errors.New("network is down")
	var failures []string
	var mu sync.Mutex
	start := time.Now()
	got := Listen(t.Context(), map[string]Source{"eth0": newScripted(announce("swp1")), "eth1": silent, "eth2": broken},
		300*time.Millisecond, func(nic string, err error) {
			mu.Lock()
			defer mu.Unlock()
			failures = append(failures, nic+": "+err.Error())
		})
	took := time.Since(start)
	if took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("Listen took %s; want about the 300ms wait", took)
	}
	if len(got) != 1 || got["eth0"].PortID != "swp1" {
		t.Errorf("Listen: %+v, want eth0's neighbour only", got)
	}
	if len(failures) != 1 || failures[0] != "eth2: network is down" {
		t.Errorf("failures %q, want eth2's", failures)
	}
	if !silent.isClosed() || !broken.isClosed() {
		t.Error("a source was left open")
	}
}

// The agent stopping (its context) ends the listening at once.
func TestListenEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	got := Listen(ctx, map[string]Source{"eth0": newScripted()}, time.Hour, nil)
	if took := time.Since(start); took > 5*time.Second || len(got) != 0 {
		t.Errorf("Listen: %v after %s; want nothing, soon after the cancel", got, took)
	}
}

func TestListenWithoutSources(t *testing.T) {
	if got := Listen(t.Context(), nil, time.Hour, nil); len(got) != 0 {
		t.Errorf("Listen: %v", got)
	}
}
