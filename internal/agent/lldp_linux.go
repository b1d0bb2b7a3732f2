package agent

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/lldp"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// linkUpGrace is how long a NIC the agent had to bring up itself may take
// to get its carrier (autonegotiation takes a few seconds) before it
// counts as cabled to nothing.
const linkUpGrace = 5 * time.Second

// DiscoverLLDP listens for wait on every hardware NIC with a link for
// the LLDP frame of the switch port it is cabled to (lldp.Listen: a NIC
// stops at its first) and returns the neighbours heard by NIC name. A NIC
// without carrier is skipped, so unplugged ports cost nothing; one whose
// socket cannot be opened is logged and skipped.
func DiscoverLLDP(ctx context.Context, logger *slog.Logger, wait time.Duration) map[string]api.AgentLLDP {
	var raised []string
	for _, l := range ethernetLinks(logger) {
		// BringUpNetwork's DHCP brings every NIC up; one it gave up on
		// early (another's lease came first) may still be down.
		if l.Attrs().Flags&net.FlagUp == 0 {
			if err := netlink.LinkSetUp(l); err != nil {
				logger.Warn("LLDP: bring up link", "interface", l.Attrs().Name, "error", err)
				continue
			}
			raised = append(raised, l.Attrs().Name)
		}
	}
	if len(raised) > 0 {
		waitForCarrier(ctx, raised)
	}
	sources := map[string]lldp.Source{}
	var skipped []string
	for _, l := range ethernetLinks(logger) {
		name := l.Attrs().Name
		if !hasCarrier(name) {
			skipped = append(skipped, name)
			continue
		}
		src, err := lldp.Open(name)
		if err != nil {
			logger.Warn("LLDP: cannot listen", "interface", name, "error", err)
			continue
		}
		sources[name] = src
	}
	if len(sources) == 0 {
		logger.Info("LLDP: no NIC with a link to listen on", "no_carrier", skipped)
		return nil
	}
	logger.Info("LLDP: listening for the switches' announcements", "interfaces", len(sources), "wait", wait, "no_carrier", skipped)
	start := time.Now()
	heard := lldp.Listen(ctx, sources, wait, func(nic string, err error) {
		logger.Warn("LLDP: listening failed", "interface", nic, "error", err)
	})
	for nic, n := range heard {
		logger.Info("LLDP neighbour", "interface", nic, "switch", n.SystemName, "chassis_id", n.ChassisID, "port_id", n.PortID, "vlan", n.VLANID)
	}
	logger.Info("LLDP: done", "heard", len(heard), "of", len(sources), "took", time.Since(start).Round(time.Millisecond))
	return heard
}

// hasCarrier reads the link's carrier (1: cabled and negotiated); the
// kernel refuses the read for a link that is administratively down.
func hasCarrier(name string) bool {
	b, err := os.ReadFile(filepath.Join("/sys/class/net", name, "carrier"))
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

func waitForCarrier(ctx context.Context, names []string) {
	deadline := time.Now().Add(linkUpGrace)
	for time.Now().Before(deadline) {
		all := true
		for _, n := range names {
			all = all && hasCarrier(n)
		}
		if all {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}
