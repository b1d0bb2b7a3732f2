package agent

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// Collector reads the inventory (api.AgentInventory) from a sysfs and
// procfs; the roots are fields so tests can point them at a fake tree.
type Collector struct {
	Sys, Proc string
	// Addrs returns an interface's addresses (net.InterfaceByName in the
	// agent; tests stub it).
	Addrs func(name string) []string
	// CPUs counts the logical CPUs; nil means runtime.NumCPU, which is
	// the machine's own in the agent. A simulated machine (internal/bmc/sim)
	// runs the agent in a process that is not its kernel, so it says.
	CPUs func() int
	// LLDP holds the neighbour each NIC heard, by NIC name (DiscoverLLDP
	// before the first report of an inspection); nil: none.
	LLDP map[string]api.AgentLLDP
}

// DefaultCollector reads the running system.
func DefaultCollector() *Collector {
	return &Collector{Sys: "/sys", Proc: "/proc", Addrs: interfaceIPv4}
}

// Collect never fails: a field it cannot read stays empty, because a
// partial inventory still tells the operator more than none.
func (c *Collector) Collect() api.AgentInventory {
	cpus := runtime.NumCPU
	if c.CPUs != nil {
		cpus = c.CPUs
	}
	inv := api.AgentInventory{CPUs: cpus()}
	dmi := filepath.Join(c.Sys, "class/dmi/id")
	inv.System = api.AgentSystem{
		Vendor:  c.read(dmi, "sys_vendor"),
		Product: c.read(dmi, "product_name"),
		Serial:  c.read(dmi, "product_serial"),
		UUID:    c.read(dmi, "product_uuid"),
	}
	inv.System.BootMode, inv.System.SecureBoot = c.bootMode()
	inv.MemoryBytes = memTotal(filepath.Join(c.Proc, "meminfo"))
	inv.InstalledMemoryBytes = InstalledMemory(smbiosTable(c.Sys))
	inv.Disks = c.disks()
	inv.NICs = c.nics()
	return inv
}

func (c *Collector) read(parts ...string) string {
	b, err := os.ReadFile(filepath.Join(parts...))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// bootMode says how the machine booted the agent: "uefi" when the kernel
// has the firmware's EFI services, else "bios"; and whether UEFI Secure
// Boot is on (the SecureBoot variable of the EFI global namespace: four
// bytes of attributes, then 1 for on): false on BIOS and on firmware
// without the variable, nil when the variables cannot be read (efivarfs
// not mounted: its mount point is then empty), rather than a false "off".
func (c *Collector) bootMode() (string, *bool) {
	efi := filepath.Join(c.Sys, "firmware/efi")
	if _, err := os.Stat(efi); err != nil {
		off := false
		return api.BootModeBIOS, &off
	}
	vars := filepath.Join(efi, "efivars")
	if ents, err := os.ReadDir(vars); err != nil || len(ents) == 0 {
		return api.BootModeUEFI, nil
	}
	b, err := os.ReadFile(filepath.Join(vars, "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"))
	on := err == nil && len(b) == 5 && b[4] == 1
	return api.BootModeUEFI, &on
}

func (c *Collector) disks() []api.AgentDisk {
	root := filepath.Join(c.Sys, "block")
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	out := []api.AgentDisk{}
	for _, e := range ents {
		name := e.Name()
		dir := filepath.Join(root, name)
		// Only devices with hardware behind them: loop, ram, zram, dm
		// have no "device" link. CD drives are not deploy targets.
		if _, err := os.Stat(filepath.Join(dir, "device")); err != nil || strings.HasPrefix(name, "sr") {
			continue
		}
		sectors, _ := strconv.ParseInt(c.read(dir, "size"), 10, 64)
		d := api.AgentDisk{
			Name: name, // kernel name: sda, vda, nvme0n1
			Path: "/dev/" + name,
			// sysfs counts 512-byte sectors whatever the logical block size.
			SizeBytes:  sectors * 512,
			Model:      c.read(dir, "device/model"),
			Serial:     firstNonEmpty(c.read(dir, "device/serial"), c.read(dir, "serial")),
			WWN:        firstNonEmpty(c.read(dir, "wwid"), c.read(dir, "device/wwid")),
			Rotational: c.read(dir, "queue/rotational") == "1",
			Removable:  c.read(dir, "removable") == "1",
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (c *Collector) nics() []api.AgentNIC {
	root := filepath.Join(c.Sys, "class/net")
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	out := []api.AgentNIC{}
	for _, e := range ents {
		name := e.Name()
		dir := filepath.Join(root, name)
		// type 1 is ARPHRD_ETHER; "device" exists only for hardware
		// (not lo, bridges, tunnels).
		if c.read(dir, "type") != "1" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "device")); err != nil {
			continue
		}
		n := api.AgentNIC{Name: name, MAC: c.read(dir, "address"), LinkUp: c.read(dir, "operstate") == "up"}
		// The negotiated speed; the kernel gives -1 (or refuses the
		// read) when the link is down or the driver does not know it.
		if mbps, err := strconv.Atoi(c.read(dir, "speed")); err == nil && mbps > 0 {
			n.SpeedMbps = mbps
		}
		if c.Addrs != nil {
			n.IPv4 = c.Addrs(name)
		}
		if nb, ok := c.LLDP[name]; ok {
			n.LLDP = &nb
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func interfaceIPv4(name string) []string {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			out = append(out, ipn.String())
		}
	}
	return out
}

func memTotal(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
