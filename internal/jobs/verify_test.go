package jobs

import (
	"math"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// Inventory values the domain would refuse are not copied into the node's
// properties: a node holding them could never be written again.
func TestFillPropertiesTakesOnlyValidInventory(t *testing.T) {
	var p baremetal.Properties
	fillProperties(&p, &bmc.Inventory{CPUs: -1, MemoryMB: math.MaxInt32 + 1, CPUArch: "x86_64\x00"})
	if p != (baremetal.Properties{}) {
		t.Fatalf("invalid inventory copied: %+v", p)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("properties after fill do not validate: %v", err)
	}
	fillProperties(&p, &bmc.Inventory{CPUs: 64, MemoryMB: 262144, CPUArch: "x86_64"})
	if want := (baremetal.Properties{CPUs: 64, MemoryMB: 262144, CPUArch: "x86_64"}); p != want {
		t.Fatalf("valid inventory: %+v, want %+v", p, want)
	}
	// An operator's values win.
	fillProperties(&p, &bmc.Inventory{CPUs: 8, MemoryMB: 1024, CPUArch: "aarch64"})
	if p.CPUs != 64 || p.MemoryMB != 262144 || p.CPUArch != "x86_64" {
		t.Fatalf("inventory overwrote set properties: %+v", p)
	}
}
