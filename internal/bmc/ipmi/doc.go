// Package ipmi is the IPMI 2.0 (RMCP+, "lanplus") BMC driver, built on
// github.com/bougou/go-ipmi. Addresses are ipmi://host[:port], port 623 by
// default.
//
//	o := ipmi.NewOpener(ipmi.Options{Logger: log})
//	defer o.Close()
//	c, err := o.Open(ctx, bmc.Endpoint{Address: "ipmi://10.0.0.5", Username: "admin", Password: pw})
//	state, err := c.PowerState(ctx)
//
// Operations: chassis power state (Get Chassis Status); power on, off
// (power down), soft_off (soft shutdown) and reset (hard reset, or power
// up when the chassis is off) with Chassis Control; the boot override
// (Set System Boot Options, boot flags: pxe, cd, disk, none; next boot or
// persistent). IPMI has no standard virtual media: InsertMedia and
// EjectMedia fail with KindUnsupported. There is no InventoryGetter: what
// IPMI reports cheaply (a GUID) is not the inventory.
//
// # Sessions
//
// The Opener keeps one RMCP+ session per BMC address and reuses it, one
// call at a time (IPMI sessions are stateful: sequence numbers, keys, one
// request in flight). A call that gets no IPMI answer on a reused session
// drops it and retries once on a new one, so a BMC that restarted (and
// forgot its sessions) costs one call 3 × perTry (1.5 s at most), not an
// error. Sessions idle for Options.IdleTimeout are closed (a BMC has few
// session slots, shared with every other tool) and Close closes them all.
// A call with other credentials for the same address replaces the session
// (clients of one BMC are expected to share its credentials).
//
// Measured against ipmi_sim (BenchmarkPowerState, 2-core machine): on
// loopback, a Get Chassis Status costs the same either way (about 4 ms,
// nearly all of it ipmi_sim forking its chassis_control script; a request
// it answers itself takes 0.1 ms). With 2 ms of round trip, a BMC on a
// LAN, a reused session takes 5.5 ms and a session per call 22 ms: a
// session costs six more round trips (Get Channel Authentication
// Capabilities, Open Session, RAKP 1 and 3, Set Session Privilege Level,
// Close Session) and its key-exchange work on the BMC, whose CPU is small.
// Hence reuse.
//
// # Cipher suites
//
// Endpoint.CipherSuite, when set, is the only suite used. Otherwise the
// driver tries Options.CipherSuites (default 17, 3, 8) and remembers per
// BMC address the one that worked, so later sessions go straight to it.
// Every attempt names its suite, which makes go-ipmi skip "Get Channel
// Cipher Suites" (a BMC that ignores it, like ipmi_sim, costs 4 s of
// retries per connection). A suite counts as refused when the BMC says so
// in its Open Session Response, or says nothing to Open Session after
// answering Get Channel Authentication Capabilities. No answer to that
// first request, or a credentials failure, ends the search at once.
//
// # Deadlines
//
// Every call is bounded by its context and by Options.Timeout (10 s),
// connecting included. go-ipmi honours the context for each exchange;
// its per-try timeout and retries are derived from the budget (see
// perTry), so a silent BMC is declared unreachable after 3 × perTry.
//
// # Hardware health
//
// Health reads the sensors of the SDR repository (full and compact
// sensor records): threshold sensors against the thresholds they crossed,
// power supply sensors by their states (health.go). The sensor list and
// each sensor's thresholds are read once per BMC and kept on its
// connection state, across sessions, for 10 minutes or until Get SDR
// Repository Info says the repository changed; a Health call then costs
// one exchange for that info and one Get Sensor Reading per sensor (a BMC
// with 200 sensors: ~200 exchanges, under a second on a LAN). The first
// read of a large repository (Get SDR plus Get Sensor Thresholds per
// sensor) is bounded by the call's deadline like any call. EventLog walks
// the SEL with Get SEL Entry from the record after the one last seen.
//
// # Errors
//
// Errors are *bmc.Error: no answer, timeouts, refused or unroutable
// datagrams are KindUnreachable; a wrong password (RAKP code mismatch),
// an unknown user or a refused role are KindAuth, as is the completion
// code "insufficient privilege"; other completion codes and RMCP+
// statuses (out of sessions, for one) are KindBMCError; a command or
// cipher suite the BMC lacks is KindUnsupported, as is a malformed
// address. Messages never contain the password, and addresses with
// credentials in them are refused without being repeated.
//
// # go-ipmi v0.9.1 quirks handled here
//
//   - Connect joins the errors of its cipher-suite loop with %v, so their
//     types are lost: RMCP+ statuses and RAKP failures are recognised by
//     the text those types print.
//   - An Open Session Response that refuses a session (tag and status
//     only) fails to unpack before its status is read; a socket wrapper
//     passed through WithUDPProxy reads the status off the wire.
//   - A session's keep-alive (every 30 s) may race a call for the
//     request sequence number; the call then sees a timeout and the
//     reconnect above absorbs it.
//   - GetSELEntry asks Get SEL Info before every entry, and GetSDRs reads
//     every sensor while walking the repository: the SEL and SDR walks
//     here exchange the bare requests instead.
//   - The host:port is built with Sprintf, so IPv6 literals are passed in
//     brackets.
package ipmi
