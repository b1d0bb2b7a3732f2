package agent

import (
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/safetext"
)

// boundReport makes a heartbeat what the controller accepts (it refuses
// a report beyond api.MaxAgentText, api.MaxAgentMessage or
// api.MaxAgentItems, or with control characters in a name): every string
// but the command's id and state (the controller's own) is made safe text
// (safetext.Line: an image server's reason phrase quoted in a failed
// command's message, or a firmware string, may carry terminal escapes)
// and cut to its bound, and each list to MaxAgentItems. A report the
// controller refused would leave the agent lost, its work undone.
func boundReport(hb *api.AgentHeartbeat) {
	text := func(s *string, max int) { *s = safetext.Clip(safetext.Line(*s), max) }
	short := func(ss ...*string) {
		for _, s := range ss {
			text(s, api.MaxAgentText)
		}
	}
	short(&hb.AgentVersion, &hb.BootID)
	if inv := hb.Inventory; inv != nil {
		s := &inv.System
		short(&s.Vendor, &s.Product, &s.Serial, &s.UUID)
		if len(inv.Disks) > api.MaxAgentItems {
			inv.Disks = inv.Disks[:api.MaxAgentItems]
		}
		for i := range inv.Disks {
			d := &inv.Disks[i]
			short(&d.Name, &d.Path, &d.Model, &d.Serial, &d.WWN)
		}
		if len(inv.NICs) > api.MaxAgentItems {
			inv.NICs = inv.NICs[:api.MaxAgentItems]
		}
		for i := range inv.NICs {
			n := &inv.NICs[i]
			short(&n.Name, &n.MAC)
			if len(n.IPv4) > api.MaxAgentItems {
				n.IPv4 = n.IPv4[:api.MaxAgentItems]
			}
			for j := range n.IPv4 {
				short(&n.IPv4[j])
			}
			if l := n.LLDP; l != nil {
				// A switch's names are the outside world's text.
				short(&l.ChassisID, &l.SystemName, &l.PortID, &l.PortDescription, &l.MgmtAddress)
				if l.VLANID < 0 || l.VLANID > 4094 {
					l.VLANID = 0
				}
			}
		}
	}
	if st := hb.Command; st != nil {
		text(&st.Message, api.MaxAgentMessage)
		short(&st.Disk)
	}
}
