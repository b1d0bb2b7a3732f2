package jobs

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// Inventory values the domain would refuse are not copied into the node's
// properties: a node holding them could never be written again.
func TestFillPropertiesTakesOnlyValidInventory(t *testing.T) {
	var n baremetal.Node
	fillProperties(&n, &bmc.Inventory{CPUs: -1, MemoryMB: math.MaxInt32 + 1, CPUArch: "x86_64\x00"})
	if n.Properties != (baremetal.Properties{}) || n.Inspected != (baremetal.Properties{}) {
		t.Fatalf("invalid inventory copied: %+v (inspected %+v)", n.Properties, n.Inspected)
	}
	if err := n.Properties.Validate(); err != nil {
		t.Fatalf("properties after fill do not validate: %v", err)
	}
	fillProperties(&n, &bmc.Inventory{CPUs: 64, MemoryMB: 262144, CPUArch: "x86_64"})
	if want := (baremetal.Properties{CPUs: 64, MemoryMB: 262144, CPUArch: "x86_64"}); n.Properties != want || n.Inspected != want {
		t.Fatalf("valid inventory: %+v (inspected %+v), want %+v", n.Properties, n.Inspected, want)
	}
	// A BMC's summary fills only what no inspection found.
	fillProperties(&n, &bmc.Inventory{CPUs: 8, MemoryMB: 1024, CPUArch: "aarch64"})
	if n.Properties.CPUs != 64 || n.Properties.MemoryMB != 262144 || n.Properties.CPUArch != "x86_64" {
		t.Fatalf("a BMC inventory replaced inspected properties: %+v", n.Properties)
	}
}

// The deploy agent's inventory replaces what the BMC said, except where
// the operator set an override; the overridden value is remembered as
// inspected, and clearing the override shows it.
func TestFillFromAgentKeepsOverrides(t *testing.T) {
	var n baremetal.Node
	n.SetOverrides(baremetal.Properties{CPUs: 128})
	fillProperties(&n, &bmc.Inventory{CPUs: 32, MemoryMB: 65536, CPUArch: "x86_64"})
	fillFromAgent(&n, &api.AgentInventory{CPUs: 4, MemoryBytes: 7900 << 20, InstalledMemoryBytes: 8 << 30, Disks: []api.AgentDisk{
		{Name: "sr0", SizeBytes: 900 << 30, Removable: true}, {Name: "vda", SizeBytes: 64 << 30}, {Name: "vdb", SizeBytes: 32 << 30}}})
	if want := (baremetal.Properties{CPUs: 128, MemoryMB: 8192, LocalGB: 64, CPUArch: "x86_64"}); n.Properties != want {
		t.Fatalf("after the agent's inventory: %+v, want %+v", n.Properties, want)
	}
	if want := (baremetal.Properties{CPUs: 4, MemoryMB: 8192, LocalGB: 64, CPUArch: "x86_64"}); n.Inspected != want {
		t.Fatalf("inspected: %+v, want %+v", n.Inspected, want)
	}
	n.SetOverrides(baremetal.Properties{})
	if n.Properties != n.Inspected {
		t.Fatalf("override cleared: %+v, want the inspected %+v", n.Properties, n.Inspected)
	}
}

// Inspection records the memory installed (the SMBIOS memory devices the
// agent reads), as the BMC and operators count it, not the kernel's
// MemTotal; where the agent found no memory devices, the BMC's figure
// (or an earlier inspection's) stays, and MemTotal is taken only when
// nothing else is known. Measured on sushy-tools over a 1 GiB VM: the BMC
// says 1024, MemTotal 960 (954 on UEFI).
func TestFillFromAgentRecordsInstalledMemory(t *testing.T) {
	for _, tc := range []struct {
		name                string
		bmcMB               int // 0: the BMC reported none
		memTotal, installed int64
		want                int
	}{
		{"installed, as the BMC says", 1024, 960 << 20, 1 << 30, 1024},
		{"installed, more than the BMC says (a module added)", 1024, 1990 << 20, 2 << 30, 2048},
		{"installed, BMC silent", 0, 954 << 20, 1 << 30, 1024},
		{"no memory devices: the BMC's figure stays", 1024, 960 << 20, 0, 1024},
		{"no memory devices, BMC silent: MemTotal", 0, 960 << 20, 0, 960},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n baremetal.Node
			fillProperties(&n, &bmc.Inventory{CPUs: 1, MemoryMB: tc.bmcMB})
			fillFromAgent(&n, &api.AgentInventory{CPUs: 1, MemoryBytes: tc.memTotal, InstalledMemoryBytes: tc.installed})
			if n.Properties.MemoryMB != tc.want || n.Inspected.MemoryMB != tc.want {
				t.Errorf("memory_mb %d (inspected %d), want %d", n.Properties.MemoryMB, n.Inspected.MemoryMB, tc.want)
			}
		})
	}
	// A second inspection without memory devices keeps the first's.
	var n baremetal.Node
	fillFromAgent(&n, &api.AgentInventory{CPUs: 1, MemoryBytes: 960 << 20, InstalledMemoryBytes: 1 << 30})
	fillFromAgent(&n, &api.AgentInventory{CPUs: 1, MemoryBytes: 960 << 20})
	if n.Properties.MemoryMB != 1024 {
		t.Errorf("memory_mb %d after an inspection without memory devices, want the earlier 1024", n.Properties.MemoryMB)
	}
}

// Traits derived from the BMC at verify and from the agent at inspection:
// each inspection replaces the families it reports on (disks, NIC
// speeds, boot mode and Secure Boot where the agent could tell) and
// keeps the others; the operator's traits are never touched.
func TestDerivedTraitsFollowInspection(t *testing.T) {
	n := baremetal.Node{Traits: []string{"CUSTOM_MINE"}}
	fillProperties(&n, &bmc.Inventory{CPUs: 32, MemoryMB: 65536, CPUArch: "x86_64", BootMode: "bios"})
	if want := []string{"BOOT_MODE_BIOS", "HW_ARCH_X86_64"}; !slices.Equal(n.DerivedTraits, want) {
		t.Fatalf("after verify: %q, want %q", n.DerivedTraits, want)
	}
	on := true
	inv := &api.AgentInventory{CPUs: 4, InstalledMemoryBytes: 8 << 30,
		System: api.AgentSystem{BootMode: "uefi", SecureBoot: &on},
		Disks: []api.AgentDisk{{Name: "sr0", Removable: true, Rotational: true}, {Name: "nvme0n1", SizeBytes: 1 << 40},
			{Name: "sda", SizeBytes: 4 << 40, Rotational: true}},
		NICs: []api.AgentNIC{{Name: "eno1", LinkUp: true, SpeedMbps: 25000}, {Name: "eno2", LinkUp: false, SpeedMbps: 100000},
			{Name: "eno3", LinkUp: true, SpeedMbps: 1000}}}
	fillFromAgent(&n, inv)
	want := []string{"BOOT_MODE_UEFI", "COMPUTE_SECURITY_UEFI_SECURE_BOOT", "HW_ARCH_X86_64", "HW_NIC_SPEED_1G",
		"HW_NIC_SPEED_25G", "STORAGE_DISK_HDD", "STORAGE_DISK_NVME", "STORAGE_DISK_SSD"}
	if !slices.Equal(n.DerivedTraits, want) {
		t.Fatalf("after inspection: %q, want %q", n.DerivedTraits, want)
	}
	// Re-inspected after the hardware changed: SATA SSDs only, no link up,
	// and an agent that could not read the UEFI variables.
	inv = &api.AgentInventory{CPUs: 4, System: api.AgentSystem{BootMode: "uefi"}, Disks: []api.AgentDisk{{Name: "sda", SizeBytes: 1 << 40}}}
	fillFromAgent(&n, inv)
	want = []string{"BOOT_MODE_UEFI", "COMPUTE_SECURITY_UEFI_SECURE_BOOT", "HW_ARCH_X86_64", "STORAGE_DISK_SSD"}
	if !slices.Equal(n.DerivedTraits, want) {
		t.Fatalf("after re-inspection: %q, want %q", n.DerivedTraits, want)
	}
	// Booted in BIOS mode: no Secure Boot to speak of.
	fillFromAgent(&n, &api.AgentInventory{System: api.AgentSystem{BootMode: "bios"}})
	if slices.Contains(n.DerivedTraits, baremetal.TraitSecureBoot) || !slices.Contains(n.DerivedTraits, "BOOT_MODE_BIOS") {
		t.Fatalf("after a BIOS boot: %q", n.DerivedTraits)
	}
	if !slices.Equal(n.Traits, []string{"CUSTOM_MINE"}) {
		t.Fatalf("operator traits changed: %q", n.Traits)
	}
}

// A deploy on a node that declares RAID volumes writes the first declared
// volume the BMC reports (by its size), unless the instance says where.
func TestRootHintsDefaultToTheFirstVolume(t *testing.T) {
	raid := []baremetal.VolumeSettings{{Name: "os", RAIDLevel: "1", DriveCount: 2}, {Name: "data", RAIDLevel: "0", DriveCount: 2}}
	n := &baremetal.Node{Settings: baremetal.HardwareSettings{RAID: &raid}, Observed: baremetal.HardwareObserved{Volumes: []baremetal.ObservedVolume{
		{Name: "data", RAIDLevel: "0", SizeGB: 7450, Drives: []string{"a", "b"}}, {Name: "os", RAIDLevel: "1", SizeGB: 893, Drives: []string{"c", "d"}}}}}
	if got := rootHints(n, &baremetal.Instance{}); got["size_gb"] != "893" || len(got) != 1 {
		t.Fatalf("hints %v, want size_gb 893 (the os volume)", got)
	}
	own := map[string]string{"serial": "S1"}
	if got := rootHints(n, &baremetal.Instance{RootDevice: own}); got["serial"] != "S1" || len(got) != 1 {
		t.Fatalf("the instance's own hints: %v", got)
	}
	n.Observed.Volumes = n.Observed.Volumes[:1] // os not reported: the next declared volume that is
	if got := rootHints(n, &baremetal.Instance{}); got["size_gb"] != "7450" {
		t.Fatalf("only data made: %v, want data's size", got)
	}
	if got := rootHints(&baremetal.Node{}, &baremetal.Instance{}); got != nil {
		t.Fatalf("no RAID declared: %v", got)
	}
}

// A BMC's task message quoting a firmware image URL does not carry the
// URL's credentials (user info, query) into last_error and events.
func TestFirmwareImageURLRedacted(t *testing.T) {
	url := "https://fw-user:pa55@fw.example/bios.bin?X-Amz-Signature=s3cret&X-Amz-Credential=AKIA"
	n := &baremetal.Node{Settings: baremetal.HardwareSettings{Firmware: []baremetal.FirmwareSettings{{Component: "BIOS", Version: "2", ImageURL: url}}}}
	for _, msg := range []string{"the image at " + url + " could not be fetched", "fetch bios.bin?X-Amz-Signature=s3cret&X-Amz-Credential=AKIA: 403"} {
		got := redactImages(n, msg)
		for _, secret := range []string{"pa55", "s3cret", "AKIA"} {
			if strings.Contains(got, secret) {
				t.Errorf("%q still holds %s: %q", msg, secret, got)
			}
		}
	}
}
