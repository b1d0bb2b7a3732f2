package ipmi

import (
	"context"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/ipmi/ipmisim"
)

// The driver reuses one session per BMC. These benchmarks measure that
// choice against a session per call, on ipmi_sim:
//
//	go test -run '^$' -bench . ./internal/bmc/ipmi/
func BenchmarkPowerState(b *testing.B) {
	sim := ipmisim.Start(b)
	b.Run("loopback", func(b *testing.B) {
		benchPowerState(b, bmc.Endpoint{Address: sim.Address(), Username: sim.Username, Password: sim.Password})
	})
	// A BMC on a LAN answers in about a millisecond, more under load;
	// the relay adds 1 ms each way.
	r := newRelay(b, sim.Port)
	r.setDelay(time.Millisecond)
	b.Run("rtt_2ms", func(b *testing.B) {
		benchPowerState(b, bmc.Endpoint{Address: r.address(), Username: sim.Username, Password: sim.Password})
	})
}

func benchPowerState(b *testing.B, ep bmc.Endpoint) {
	ctx := context.Background()

	b.Run("reused_session", func(b *testing.B) {
		o := NewOpener(Options{})
		defer o.Close()
		cl, err := o.Open(ctx, ep)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cl.PowerState(ctx); err != nil { // connect outside the loop
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := cl.PowerState(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})

	// What a driver without a session cache pays: connect (Get Channel
	// Auth Capabilities, Open Session, RAKP 1 and 3, Set Session
	// Privilege), one request, Close Session. Cipher suite pinned, so no
	// probing is included.
	b.Run("session_per_call", func(b *testing.B) {
		o := NewOpener(Options{})
		defer o.Close()
		t, err := parseAddress(ep.Address)
		if err != nil {
			b.Fatal(err)
		}
		cr := creds{user: ep.Username, pass: ep.Password, suite: 3}
		for b.Loop() {
			ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
			s, err := o.connect(ctx, t, cr)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.cli.GetChassisStatus(ctx); err != nil {
				b.Fatal(err)
			}
			s.close(closeTimeout)
			cancel()
		}
	})

	// The cost of ipmi_sim itself: it forks the chassis_control shell
	// script for every Get Chassis Status. A request it answers without
	// the script (Get Device ID) shows the protocol cost alone.
	b.Run("reused_session_get_device_id", func(b *testing.B) {
		o := NewOpener(Options{})
		defer o.Close()
		t, _ := parseAddress(ep.Address)
		s, err := o.connect(ctx, t, creds{user: ep.Username, pass: ep.Password, suite: 3})
		if err != nil {
			b.Fatal(err)
		}
		defer s.close(closeTimeout)
		for b.Loop() {
			if _, err := s.cli.GetDeviceID(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
