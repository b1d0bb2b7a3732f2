package baremetal

import (
	"slices"
	"testing"
)

// An operator's property overrides win over inspection, inspection never
// overwrites them, and clearing one shows what inspection found at once
// (or nothing, for a property never inspected).
func TestPropertyOverrides(t *testing.T) {
	var n Node
	n.SetOverrides(Properties{CPUs: 128, LocalGB: 500})
	if want := (Properties{CPUs: 128, LocalGB: 500}); n.Properties != want {
		t.Fatalf("after the operator's overrides: %+v, want %+v", n.Properties, want)
	}
	if got := n.Overrides.Names(); !slices.Equal(got, []PropertyName{PropertyCPUs, PropertyLocalGB}) {
		t.Fatalf("overrides %q", got)
	}

	n.RecordInspection(Properties{CPUs: 32, MemoryMB: 65536, LocalGB: 0, CPUArch: "x86_64"}, false)
	if want := (Properties{CPUs: 128, MemoryMB: 65536, LocalGB: 500, CPUArch: "x86_64"}); n.Properties != want {
		t.Fatalf("after an inspection: %+v, want %+v (overrides kept)", n.Properties, want)
	}
	if got := n.OperatorProperties(); got != (Properties{CPUs: 128, LocalGB: 500}) {
		t.Fatalf("operator's properties %+v", got)
	}

	// onlyUnknown fills what no inspection found, nothing else.
	n.RecordInspection(Properties{CPUs: 8, MemoryMB: 1024, CPUArch: "aarch64"}, true)
	if n.Inspected != (Properties{CPUs: 32, MemoryMB: 65536, CPUArch: "x86_64"}) {
		t.Fatalf("a fill of unknowns replaced inspected values: %+v", n.Inspected)
	}

	// Clearing cpus brings back the inspected 32; local_gb was never
	// inspected and becomes unknown; a new override of memory wins.
	n.SetOverrides(Properties{MemoryMB: 4096})
	if want := (Properties{CPUs: 32, MemoryMB: 4096, CPUArch: "x86_64"}); n.Properties != want {
		t.Fatalf("after clearing cpus and local_gb: %+v, want %+v", n.Properties, want)
	}
	if got := n.Overrides.Names(); !slices.Equal(got, []PropertyName{PropertyMemoryMB}) {
		t.Fatalf("overrides %q", got)
	}
	n.RecordInspection(Properties{CPUs: 16, MemoryMB: 2048, LocalGB: 40}, false)
	if want := (Properties{CPUs: 16, MemoryMB: 4096, LocalGB: 40, CPUArch: "x86_64"}); n.Properties != want {
		t.Fatalf("after a second inspection: %+v, want %+v", n.Properties, want)
	}
	n.SetOverrides(Properties{})
	if n.Properties != n.Inspected || len(n.Overrides.Names()) != 0 {
		t.Fatalf("no overrides: %+v (%q), want the inspected %+v", n.Properties, n.Overrides.Names(), n.Inspected)
	}
}
