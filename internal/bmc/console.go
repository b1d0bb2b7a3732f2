package bmc

import (
	"context"
	"io"
)

// ConsoleOpener attaches to the machine's serial console: IPMI
// Serial-over-LAN, which IPMI BMCs and most Redfish BMCs (iDRAC, iLO,
// XCC, Supermicro, CIMC, OpenBMC) offer on UDP 623 beside their web
// service. A BMC has one SOL session at a time; opening one ends any
// other (a stale session of a crashed client keeps the payload active
// on real BMCs until their own timeout, and would lock the console out).
type ConsoleOpener interface {
	OpenConsole(ctx context.Context) (Console, error)
}

// Console is an open serial console. Read returns what the machine
// printed, as it arrives (raw bytes: terminal escapes and all); Write
// sends keystrokes. Read fails once the session broke (the BMC ended it,
// stopped answering, or another client took the console over); Close
// ends it on the BMC and unblocks Read.
type Console interface {
	io.ReadWriteCloser
}
