package agent

import "strings"

// The kernel writes its messages to every console of its command line
// (console=tty0 console=ttyS0,115200n8), but a process's output reaches
// only /dev/console, the last of them. The agent logs to /dev/console
// and copies its log to the other consoles, so that serial-over-LAN and
// the BMC's KVM screen both show what it does.

// ActiveConsolesPath lists the kernel's consoles, /dev/console's last.
const ActiveConsolesPath = "/sys/class/tty/console/active"

// OtherConsoles are the device paths of the consoles in active (the
// content of ActiveConsolesPath: "tty0 ttyS0") other than the last, which
// is /dev/console itself.
func OtherConsoles(active string) []string {
	names := strings.Fields(active)
	if len(names) < 2 {
		return nil
	}
	var out []string
	for _, n := range names[:len(names)-1] {
		if n == "" || strings.ContainsAny(n, "/\\") || n == "." || n == ".." {
			continue
		}
		out = append(out, "/dev/"+n)
	}
	return out
}
