package baremetal

import (
	"slices"
	"strings"
	"testing"
)

func TestValidateTraits(t *testing.T) {
	got, err := ValidateTraits("traits", []string{"rack:r12", "CUSTOM_GPU_A100", "rack:r12", "a=b/c.d+e-f"})
	if err != nil || !slices.Equal(got, []string{"CUSTOM_GPU_A100", "a=b/c.d+e-f", "rack:r12"}) {
		t.Fatalf("ValidateTraits = %q, %v", got, err)
	}
	for _, bad := range [][]string{{""}, {"a,b"}, {"has space"}, {"tab\t"}, {"é"}, {strings.Repeat("x", 256)}} {
		_, err := ValidateTraits("traits", bad)
		if !IsCode(err, CodeInvalid) || !strings.HasPrefix(ErrorField(err), "traits[0]") {
			t.Errorf("ValidateTraits(%q) = %v (field %q), want invalid on traits[0]", bad, err, ErrorField(err))
		}
	}
	many := make([]string, MaxTraits+1)
	for i := range many {
		many[i] = "T" + strings.Repeat("x", i)
	}
	if _, err := ValidateTraits("traits", many); ErrorField(err) != "traits" {
		t.Errorf("%d traits: %v", len(many), err)
	}
}

func TestRequirementsValidate(t *testing.T) {
	for _, tc := range []struct {
		r     Requirements
		field string
	}{
		{Requirements{RequiredTraits: []string{"A"}, ForbiddenTraits: []string{"A"}}, "forbidden_traits"},
		{Requirements{MinCPUs: -1}, "min_cpus"},
		{Requirements{MinMemoryMB: -5}, "min_memory_mb"},
		{Requirements{MinDiskGB: -5}, "min_disk_gb"},
		{Requirements{CPUArch: "x86 64"}, "cpu_arch"},
		{Requirements{RequiredTraits: []string{"bad trait"}}, "required_traits[0]"},
	} {
		if err := tc.r.Validate(); ErrorField(err) != tc.field {
			t.Errorf("%+v: %v (field %q), want field %q", tc.r, err, ErrorField(err), tc.field)
		}
	}
	ok := Requirements{RequiredTraits: []string{"B", "A"}, MinCPUs: 4, CPUArch: "aarch64"}
	if err := ok.Validate(); err != nil || !slices.Equal(ok.RequiredTraits, []string{"A", "B"}) {
		t.Fatalf("valid requirements: %v, traits %q", err, ok.RequiredTraits)
	}
}

func TestPlacementUnmet(t *testing.T) {
	n := &Node{ResourceClass: "gpu", Traits: []string{"CUSTOM_GPU_A100"}, DerivedTraits: []string{"HW_ARCH_X86_64"},
		Owner: "team-a", Properties: Properties{CPUs: 32, MemoryMB: 65536, CPUArch: "x86_64"}}
	p := Placement{ResourceClass: "cpu", Project: "team-b", Requirements: Requirements{
		RequiredTraits: []string{"CUSTOM_GPU", "CUSTOM_GPU_A100"}, ForbiddenTraits: []string{"HW_ARCH_X86_64"},
		MinCPUs: 64, MinMemoryMB: 65536, MinDiskGB: 1, CPUArch: "AARCH64"}}
	var kinds []string
	for _, u := range p.Unmet(n) {
		kinds = append(kinds, u.Kind+"="+u.Value)
	}
	want := []string{"resource_class=cpu", "owner=", "required_trait=CUSTOM_GPU", "forbidden_trait=HW_ARCH_X86_64",
		"min_cpus=64", "min_disk_gb=1", "cpu_arch=AARCH64"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("unmet %q, want %q", kinds, want)
	}
	fits := Placement{ResourceClass: "gpu", Project: "team-a", Requirements: Requirements{
		RequiredTraits: []string{"CUSTOM_GPU_A100", "HW_ARCH_X86_64"}, MinMemoryMB: 65536, CPUArch: "X86_64"}}
	if u := fits.Unmet(n); len(u) != 0 {
		t.Fatalf("a node that fits fails %+v", u)
	}
}

func TestBestFitLess(t *testing.T) {
	node := func(id, owner string, mem, cpus, disk int) *Node {
		return &Node{ID: id, Owner: owner, Properties: Properties{MemoryMB: mem, CPUs: cpus, LocalGB: disk}}
	}
	ordered := []*Node{
		node("o", "team", 999999, 9, 9), // the project's own first, however big
		node("b", "", 1024, 64, 10),
		node("a", "", 2048, 8, 10),
		node("c", "", 2048, 16, 5),
		node("d", "", 2048, 16, 6),
		node("e", "", 2048, 16, 6),
		node("u", "", 0, 1, 1), // unknown memory last
	}
	for i := range ordered {
		for j := range ordered {
			if got := BestFitLess(ordered[i], ordered[j]); got != (i < j) {
				t.Errorf("BestFitLess(%s, %s) = %v", ordered[i].ID, ordered[j].ID, got)
			}
		}
	}
}

func TestDerivedTraits(t *testing.T) {
	for arch, want := range map[string]string{"x86_64": "HW_ARCH_X86_64", "amd64": "HW_ARCH_X86_64", "aarch64": "HW_ARCH_AARCH64",
		"arm64": "HW_ARCH_AARCH64", "ppc64le": "HW_ARCH_PPC64LE", "": ""} {
		if got := ArchTrait(arch); got != want {
			t.Errorf("ArchTrait(%q) = %q, want %q", arch, got, want)
		}
	}
	for mbps, want := range map[int]string{25000: "HW_NIC_SPEED_25G", 1000: "HW_NIC_SPEED_1G", 100: "HW_NIC_SPEED_100M", 2500: "HW_NIC_SPEED_2500M", 0: ""} {
		if got := NICSpeedTrait(mbps); got != want {
			t.Errorf("NICSpeedTrait(%d) = %q, want %q", mbps, got, want)
		}
	}
	n := &Node{Traits: []string{"STORAGE_DISK_SSD"}, DerivedTraits: []string{"STORAGE_DISK_HDD", "BOOT_MODE_BIOS"}}
	if !n.ReplaceDerivedTraits([]string{TraitDiskPrefix}, []string{"STORAGE_DISK_NVME", "STORAGE_DISK_NVME", "bad trait"}) ||
		!slices.Equal(n.DerivedTraits, []string{"BOOT_MODE_BIOS", "STORAGE_DISK_NVME"}) {
		t.Fatalf("derived %q", n.DerivedTraits)
	}
	if n.ReplaceDerivedTraits([]string{TraitDiskPrefix}, []string{"STORAGE_DISK_NVME"}) {
		t.Error("the same traits again reported a change")
	}
	// The operator's traits are never the controller's to change.
	if !slices.Equal(n.Traits, []string{"STORAGE_DISK_SSD"}) {
		t.Errorf("operator traits %q", n.Traits)
	}
	n.SetOverrides(Properties{CPUArch: "arm64"})
	if !n.HasTrait("HW_ARCH_AARCH64") {
		t.Errorf("cpu_arch override: derived %q", n.DerivedTraits)
	}
	n.SetOverrides(Properties{})
	if slices.ContainsFunc(n.DerivedTraits, func(s string) bool { return strings.HasPrefix(s, TraitArchPrefix) }) {
		t.Errorf("cpu_arch unknown again: derived %q", n.DerivedTraits)
	}
}
