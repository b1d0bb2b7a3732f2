package service

import (
	"fmt"
	"slices"
	"strings"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/safetext"
)

// checkHeartbeat checks every field of an agent's heartbeat as the API
// checks its own fields, so that both stores answer alike (PostgreSQL
// refuses NUL in text, SQLite stores it) and nothing unbounded reaches
// an event or a log line: identifiers (versions, ids, names, paths,
// addresses) must be valid one-line text of at most api.MaxAgentText
// bytes, numbers in range, enumerations one of their values, lists at
// most api.MaxAgentItems long. Any failure is a 400 naming the field.
//
// Text that quotes the outside world (a command's message, which quotes
// an image server's answers; the machine's firmware strings) may hold
// anything its source sent, so it is not refused for its characters but
// kept as safetext.Line makes it, control characters escaped; it is only
// bounded. hb is changed in place.
func checkHeartbeat(hb *api.AgentHeartbeat) error {
	if err := ident("agent_version", hb.AgentVersion); err != nil {
		return err
	}
	if err := ident("boot_id", hb.BootID); err != nil {
		return err
	}
	if hb.UptimeSeconds < 0 {
		return baremetal.FieldErrorf("uptime_seconds", "uptime_seconds must not be negative, got %g", hb.UptimeSeconds)
	}
	if inv := hb.Inventory; inv != nil {
		if err := checkInventory(inv); err != nil {
			return err
		}
	}
	if st := hb.Command; st != nil {
		if err := ident("command.id", st.ID); err != nil {
			return err
		}
		if !slices.Contains(api.AgentCommandStates(), string(st.State)) {
			return baremetal.FieldErrorf("command.state", "command.state %q is not one of %s", clipValue(string(st.State)), strings.Join(api.AgentCommandStates(), ", "))
		}
		if st.Progress < 0 || st.Progress > 100 {
			return baremetal.FieldErrorf("command.progress", "command.progress must be a percentage from 0 to 100, got %d", st.Progress)
		}
		if err := quoted("command.message", &st.Message, api.MaxAgentMessage); err != nil {
			return err
		}
		if err := ident("command.disk", st.Disk); err != nil {
			return err
		}
		if err := count("command.erased", len(st.Erased)); err != nil {
			return err
		}
		for i := range st.Erased {
			e, at := &st.Erased[i], fmt.Sprintf("command.erased[%d].", i)
			if err := idents(at, "path", e.Path, "method", e.Method); err != nil {
				return err
			}
			if e.SizeBytes < 0 || e.VerifiedBytes < 0 || e.SampledBlocks < 0 {
				return baremetal.FieldErrorf(at+"verified_bytes", "%ssize_bytes, verified_bytes and sampled_blocks must not be negative", at)
			}
		}
	}
	return nil
}

func checkInventory(inv *api.AgentInventory) error {
	sys := &inv.System
	for _, f := range []struct {
		name string
		v    *string
	}{{"inventory.system.vendor", &sys.Vendor}, {"inventory.system.product", &sys.Product}, {"inventory.system.serial", &sys.Serial}} {
		if err := quoted(f.name, f.v, api.MaxAgentText); err != nil {
			return err
		}
	}
	if err := ident("inventory.system.uuid", sys.UUID); err != nil {
		return err
	}
	if sys.BootMode != "" && !slices.Contains(api.BootModes(), sys.BootMode) {
		return baremetal.FieldErrorf("inventory.system.boot_mode", "inventory.system.boot_mode %q is not one of %s", clipValue(sys.BootMode), strings.Join(api.BootModes(), ", "))
	}
	if inv.CPUs < 0 || inv.CPUs > baremetal.MaxCPUs {
		return baremetal.FieldErrorf("inventory.cpus", "inventory.cpus must be between 0 and %d, got %d", baremetal.MaxCPUs, inv.CPUs)
	}
	if inv.MemoryBytes < 0 {
		return baremetal.FieldErrorf("inventory.memory_bytes", "inventory.memory_bytes must not be negative, got %d", inv.MemoryBytes)
	}
	if inv.InstalledMemoryBytes < 0 {
		return baremetal.FieldErrorf("inventory.installed_memory_bytes", "inventory.installed_memory_bytes must not be negative, got %d", inv.InstalledMemoryBytes)
	}
	if err := count("inventory.disks", len(inv.Disks)); err != nil {
		return err
	}
	for i := range inv.Disks {
		d, at := &inv.Disks[i], fmt.Sprintf("inventory.disks[%d].", i)
		if err := idents(at, "name", d.Name, "path", d.Path); err != nil {
			return err
		}
		if d.SizeBytes < 0 {
			return baremetal.FieldErrorf(at+"size_bytes", "%ssize_bytes must not be negative, got %d", at, d.SizeBytes)
		}
		for _, f := range []struct {
			name string
			v    *string
		}{{"model", &d.Model}, {"serial", &d.Serial}, {"wwn", &d.WWN}} {
			if err := quoted(at+f.name, f.v, api.MaxAgentText); err != nil {
				return err
			}
		}
	}
	if err := count("inventory.nics", len(inv.NICs)); err != nil {
		return err
	}
	for i := range inv.NICs {
		n, at := &inv.NICs[i], fmt.Sprintf("inventory.nics[%d].", i)
		if err := idents(at, "name", n.Name, "mac", n.MAC); err != nil {
			return err
		}
		if n.SpeedMbps < 0 {
			return baremetal.FieldErrorf(at+"speed_mbps", "%sspeed_mbps must not be negative, got %d", at, n.SpeedMbps)
		}
		if err := count(at+"ipv4", len(n.IPv4)); err != nil {
			return err
		}
		for j, a := range n.IPv4 {
			if err := ident(fmt.Sprintf("%sipv4[%d]", at, j), a); err != nil {
				return err
			}
		}
		if l := n.LLDP; l != nil {
			// What a switch announced: its text is the outside world's.
			for _, f := range []struct {
				name string
				v    *string
			}{{"chassis_id", &l.ChassisID}, {"system_name", &l.SystemName}, {"port_id", &l.PortID},
				{"port_description", &l.PortDescription}, {"mgmt_address", &l.MgmtAddress}} {
				if err := quoted(at+"lldp."+f.name, f.v, api.MaxAgentText); err != nil {
					return err
				}
			}
			if l.VLANID < 0 || l.VLANID > 4094 {
				return baremetal.FieldErrorf(at+"lldp.vlan_id", "%slldp.vlan_id must be between 0 (none) and 4094, got %d", at, l.VLANID)
			}
		}
	}
	return nil
}

// ident checks an identifier the agent makes itself: one line of text,
// at most api.MaxAgentText bytes.
func ident(field, s string) error { return baremetal.ValidateLine(field, s, api.MaxAgentText) }

// idents checks the identifiers of one list item: name, value pairs.
func idents(at string, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := ident(at+pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// quoted bounds text that quotes the outside world and escapes its
// control characters.
func quoted(field string, s *string, max int) error {
	if len(*s) > max {
		return baremetal.FieldErrorf(field, "%s must be at most %d bytes, got %d", field, max, len(*s))
	}
	*s = safetext.Line(*s)
	return nil
}

func count(field string, n int) error {
	if n > api.MaxAgentItems {
		return baremetal.FieldErrorf(field, "%s has %d items; at most %d are allowed", field, n, api.MaxAgentItems)
	}
	return nil
}

// clipValue shortens a refused value quoted in a message.
func clipValue(s string) string { return safetext.Clip(safetext.Line(s), 40) }
