package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/u-root/u-root/pkg/dhclient"
	"github.com/vishvananda/netlink"
)

// BringUpNetwork brings up lo and every ethernet NIC and configures the
// first DHCPv4 lease any of them gets. It retries with backoff until one
// does: a switch port still in STP listening, or a DHCP server that
// answers late, must not leave the node stranded.
func BringUpNetwork(ctx context.Context, logger *slog.Logger) {
	if lo, err := netlink.LinkByName("lo"); err == nil {
		if err := netlink.LinkSetUp(lo); err != nil {
			logger.Warn("bring up lo", "error", err)
		}
	}
	backoff := 2 * time.Second
	for attempt := 1; ; attempt++ {
		nics := ethernetLinks(logger)
		if len(nics) == 0 {
			logger.Warn("no ethernet interface yet (driver missing or still probing)", "retry_in", backoff)
		} else if dhcp(ctx, logger, nics) {
			return
		} else {
			logger.Warn("no DHCPv4 lease on any interface", "attempt", attempt, "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// ethernetLinks lists hardware ethernet interfaces. Drivers probe
// asynchronously after their module loads, so it waits a little for the
// first one to appear.
func ethernetLinks(logger *slog.Logger) []netlink.Link {
	deadline := time.Now().Add(5 * time.Second)
	for {
		links, err := netlink.LinkList()
		if err != nil {
			logger.Warn("list network links", "error", err)
		}
		var out []netlink.Link
		for _, l := range links {
			name := l.Attrs().Name
			if l.Type() != "device" || len(l.Attrs().HardwareAddr) != 6 {
				continue
			}
			if _, err := os.Stat(filepath.Join("/sys/class/net", name, "device")); err != nil {
				continue
			}
			out = append(out, l)
		}
		if len(out) > 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func dhcp(ctx context.Context, logger *slog.Logger, nics []netlink.Link) bool {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	names := make([]string, len(nics))
	for i, l := range nics {
		names[i] = l.Attrs().Name
	}
	logger.Info("DHCPv4", "interfaces", names)
	results := dhclient.SendRequests(ctx, nics, true, false, dhclient.Config{
		Timeout: 6 * time.Second,
		Retries: 3,
		Modifiers4: []dhcpv4.Modifier{
			dhcpv4.WithOption(dhcpv4.OptClassIdentifier("baremetal-agent")),
		},
	}, 15*time.Second)
	for r := range results {
		if r.Err != nil {
			logger.Warn("DHCPv4 failed", "interface", r.Interface.Attrs().Name, "error", r.Err)
			continue
		}
		if err := r.Lease.Configure(); err != nil {
			logger.Warn("configure DHCPv4 lease", "interface", r.Interface.Attrs().Name, "error", err)
			continue
		}
		logger.Info("network up", "interface", r.Interface.Attrs().Name, "lease", r.Lease.String())
		// First lease wins: the other requests are cancelled; the channel
		// is buffered, so their goroutines finish without a reader.
		return true
	}
	return false
}
