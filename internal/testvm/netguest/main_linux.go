// Command netguest is the init (PID 1) of the VM that proves a config
// drive's network_data.json configures a machine: it mounts the config-2
// CD, reads openstack/latest/network_data.json, applies its static IPv4
// networks to the NICs they name by MAC (address, MTU, routes; the simple
// case of what cloud-init does), then reports what the kernel now has
// (read back over netlink, not echoed from the file) to the URL given as
// netguest.report= on the kernel command line, and powers off.
//
// Built by internal/configdrive's VM test as the initramfs's /init
// (static, CGO_ENABLED=0), next to the kernel modules for virtio NICs and
// IDE CDs.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/kmod"
)

// Report is what the guest sends: the interface it configured and the
// state the kernel shows for it.
type Report struct {
	Interface string            `json:"interface"`
	MAC       string            `json:"mac"`
	MTU       int               `json:"mtu"`
	Addresses []string          `json:"addresses"`
	Gateway   string            `json:"gateway"`
	Routes    []string          `json:"routes"` // "dst via gw", default route excluded
	Links     map[string]string `json:"links"`  // every NIC: name -> MAC
	Error     string            `json:"error,omitempty"`
}

const mnt = "/mnt/config"

func main() {
	rep, err := run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "netguest: %v\n", err)
		rep.Error = err.Error()
	}
	if url := cmdlineValue("netguest.report"); url != "" {
		if err := send(url, rep); err != nil {
			fmt.Fprintf(os.Stderr, "netguest: report: %v\n", err)
		}
	}
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	select {} // PID 1 must not exit
}

func run() (Report, error) {
	var rep Report
	for _, m := range [][3]string{{"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"}, {"devtmpfs", "/dev", "devtmpfs"}} {
		if err := os.MkdirAll(m[1], 0o755); err != nil {
			return rep, err
		}
		if err := unix.Mount(m[0], m[1], m[2], 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return rep, fmt.Errorf("mount %s: %w", m[1], err)
		}
	}
	if fd, err := unix.Open("/dev/console", unix.O_RDWR|unix.O_NOCTTY, 0); err == nil {
		for i := range 3 {
			_ = unix.Dup2(fd, i)
		}
	}
	if err := loadModules(); err != nil {
		return rep, err
	}
	if err := mountConfigDrive(30 * time.Second); err != nil {
		return rep, err
	}
	raw, err := os.ReadFile(filepath.Join(mnt, "openstack/latest/network_data.json"))
	if err != nil {
		return rep, err
	}
	fmt.Printf("netguest: network_data.json: %s\n", raw)
	return apply(raw)
}

func cmdlineValue(key string) string {
	b, _ := os.ReadFile("/proc/cmdline")
	for f := range strings.FieldsSeq(string(b)) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

func loadModules() error {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return err
	}
	dir := filepath.Join("/lib/modules", unix.ByteSliceToString(u.Release[:]))
	f, err := os.Open(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return err
	}
	deps, err := kmod.ParseDeps(f)
	f.Close()
	if err != nil {
		return err
	}
	order, err := deps.Order(deps.Files())
	if err != nil {
		return err
	}
	for _, m := range order {
		if err := kmod.Load(filepath.Join(dir, m)); err != nil {
			return err
		}
	}
	return nil
}

// mountConfigDrive mounts the block device whose ISO 9660 volume label is
// config-2 (as cloud-init finds it by label), waiting for the CD driver
// to probe.
func mountConfigDrive(wait time.Duration) error {
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for {
		devs, _ := os.ReadDir("/sys/class/block")
		for _, d := range devs {
			dev := "/dev/" + d.Name()
			if isoLabel(dev) != "config-2" {
				continue
			}
			return unix.Mount(dev, mnt, "iso9660", unix.MS_RDONLY, "")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no config-2 drive among %d block devices after %s", len(devs), wait)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// isoLabel is the volume identifier of an ISO 9660 primary volume
// descriptor (sector 16), "" if dev holds none.
func isoLabel(dev string) string {
	f, err := os.Open(dev)
	if err != nil {
		return ""
	}
	defer f.Close()
	pvd := make([]byte, 2048)
	if _, err := f.ReadAt(pvd, 16*2048); err != nil || pvd[0] != 1 || string(pvd[1:6]) != "CD001" {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(string(pvd[40:72])))
}

type networkData struct {
	Links []struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		MAC  string `json:"ethernet_mac_address"`
		MTU  int    `json:"mtu"`
	} `json:"links"`
	Networks []struct {
		Type      string `json:"type"`
		Link      string `json:"link"`
		IPAddress string `json:"ip_address"`
		Netmask   string `json:"netmask"`
		Routes    []struct {
			Network string `json:"network"`
			Netmask string `json:"netmask"`
			Gateway string `json:"gateway"`
		} `json:"routes"`
	} `json:"networks"`
}

// apply configures the first static IPv4 network on the NIC its link
// names by MAC, and reports that NIC.
func apply(raw []byte) (Report, error) {
	rep := Report{Links: map[string]string{}}
	var nd networkData
	if err := json.Unmarshal(raw, &nd); err != nil {
		return rep, fmt.Errorf("network_data.json: %w", err)
	}
	links, err := nics(10 * time.Second)
	if err != nil {
		return rep, err
	}
	for _, l := range links {
		rep.Links[l.Attrs().Name] = l.Attrs().HardwareAddr.String()
	}
	for _, nw := range nd.Networks {
		if nw.Type != "ipv4" {
			continue
		}
		var mac string
		var mtu int
		for _, l := range nd.Links {
			if l.ID == nw.Link && l.Type == "phy" {
				mac, mtu = strings.ToLower(l.MAC), l.MTU
			}
		}
		if mac == "" {
			return rep, fmt.Errorf("network on link %q: not a phy link with a MAC", nw.Link)
		}
		var link netlink.Link
		for _, l := range links {
			if l.Attrs().HardwareAddr.String() == mac {
				link = l
			}
		}
		if link == nil {
			return rep, fmt.Errorf("no NIC has MAC %s (NICs: %v)", mac, rep.Links)
		}
		if mtu > 0 {
			if err := netlink.LinkSetMTU(link, mtu); err != nil {
				return rep, fmt.Errorf("MTU %d: %w", mtu, err)
			}
		}
		if err := netlink.LinkSetUp(link); err != nil {
			return rep, err
		}
		ipn := &net.IPNet{IP: net.ParseIP(nw.IPAddress).To4(), Mask: net.IPMask(net.ParseIP(nw.Netmask).To4())}
		if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: ipn}); err != nil {
			return rep, fmt.Errorf("address %s: %w", ipn, err)
		}
		for _, r := range nw.Routes {
			dst := &net.IPNet{IP: net.ParseIP(r.Network).To4(), Mask: net.IPMask(net.ParseIP(r.Netmask).To4())}
			route := &netlink.Route{LinkIndex: link.Attrs().Index, Gw: net.ParseIP(r.Gateway)}
			if ones, _ := dst.Mask.Size(); ones > 0 {
				route.Dst = dst
			}
			if err := netlink.RouteAdd(route); err != nil {
				return rep, fmt.Errorf("route %s via %s: %w", dst, r.Gateway, err)
			}
		}
		return readBack(rep, link.Attrs().Name)
	}
	return rep, errors.New("no static IPv4 network in network_data.json")
}

// nics lists the ethernet NICs, waiting for the driver to probe them.
func nics(wait time.Duration) ([]netlink.Link, error) {
	deadline := time.Now().Add(wait)
	for {
		all, err := netlink.LinkList()
		if err != nil {
			return nil, err
		}
		var out []netlink.Link
		for _, l := range all {
			if l.Type() == "device" && len(l.Attrs().HardwareAddr) == 6 {
				out = append(out, l)
			}
		}
		if len(out) >= 2 || time.Now().After(deadline) {
			return out, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readBack is the kernel's view of the configured NIC.
func readBack(rep Report, name string) (Report, error) {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return rep, err
	}
	rep.Interface, rep.MAC, rep.MTU = name, link.Attrs().HardwareAddr.String(), link.Attrs().MTU
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return rep, err
	}
	for _, a := range addrs {
		rep.Addresses = append(rep.Addresses, a.IPNet.String())
	}
	routes, err := netlink.RouteList(link, netlink.FAMILY_V4)
	if err != nil {
		return rep, err
	}
	for _, r := range routes {
		switch {
		case r.Gw == nil:
			continue // the subnet's own route
		case r.Dst == nil || r.Dst.IP.IsUnspecified():
			rep.Gateway = r.Gw.String()
		default:
			rep.Routes = append(rep.Routes, r.Dst.String()+" via "+r.Gw.String())
		}
	}
	return rep, nil
}

// send POSTs the report, retrying while the link and ARP settle.
func send(url string, rep Report) error {
	body, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &http.Client{Timeout: 5 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}
