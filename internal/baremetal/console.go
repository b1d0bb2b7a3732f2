package baremetal

import "time"

// ConsoleLog is what a node's serial console printed while the controller
// recorded it: the last lines, cleaned (no terminal escapes, no
// credentials), at most ConsoleLogMax bytes; and the controller process
// recording it now, if any (Holder, until LeaseUntil).
type ConsoleLog struct {
	NodeID     string
	Log        string
	Holder     string
	LeaseUntil *time.Time
	UpdatedAt  time.Time
}

// ConsoleLogMax bounds a node's console log: the last 64 KiB, some
// hundreds of lines, which is what explains a failed boot.
const ConsoleLogMax = 64 << 10

// Recording reports whether a controller process records the console now.
func (c *ConsoleLog) Recording(now time.Time) bool {
	return c.Holder != "" && c.LeaseUntil != nil && c.LeaseUntil.After(now)
}
