package baremetal

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHardwareSettingsValidate(t *testing.T) {
	vols := func(v ...VolumeSettings) *[]VolumeSettings { return &v }
	for _, tc := range []struct {
		h     HardwareSettings
		field string
	}{
		{HardwareSettings{BIOS: map[string]string{"1x": "a"}}, "bios_settings"},
		{HardwareSettings{BIOS: map[string]string{"A": strings.Repeat("x", 1025)}}, "bios_settings.A"},
		{HardwareSettings{RAID: vols(VolumeSettings{Name: "os", RAIDLevel: "3", DriveCount: 2})}, "raid[0].raid_level"},
		{HardwareSettings{RAID: vols(VolumeSettings{Name: "os", RAIDLevel: "1", DriveCount: 1})}, "raid[0].drive_count"},
		{HardwareSettings{RAID: vols(VolumeSettings{Name: "os", RAIDLevel: "10", DriveCount: 5})}, "raid[0].drive_count"},
		{HardwareSettings{RAID: vols(VolumeSettings{Name: "os", RAIDLevel: "1"})}, "raid[0].drive_count"},
		{HardwareSettings{RAID: vols(VolumeSettings{Name: "os", RAIDLevel: "1", DriveCount: 2, DriveIDs: []string{"a", "b"}})}, "raid[0].drive_count"},
		{HardwareSettings{RAID: vols(VolumeSettings{Name: "os", RAIDLevel: "0", DriveCount: 1, MediaType: "tape"})}, "raid[0].media_type"},
		{HardwareSettings{RAID: vols(VolumeSettings{Name: "os", RAIDLevel: "0", DriveCount: 1}, VolumeSettings{Name: "os", RAIDLevel: "0", DriveCount: 1})}, "raid[1].name"},
		{HardwareSettings{RAID: vols(VolumeSettings{Name: "a", RAIDLevel: "1", DriveIDs: []string{"d1", "d2"}}, VolumeSettings{Name: "b", RAIDLevel: "1", DriveIDs: []string{"d2", "d3"}})}, "raid[1].drive_ids[0]"},
		{HardwareSettings{RAID: vols(VolumeSettings{Name: "os", RAIDLevel: "0", DriveCount: 1, SizeGB: -1})}, "raid[0].size_gb"},
		{HardwareSettings{Firmware: []FirmwareSettings{{Component: "BIOS", Version: "2", ImageURL: "ftp://x"}}}, "firmware[0].image_url"},
		{HardwareSettings{Firmware: []FirmwareSettings{{Component: "BIOS", ImageURL: "https://x"}}}, "firmware[0].version"},
		{HardwareSettings{Firmware: []FirmwareSettings{{Component: "BIOS", Version: "2", ImageURL: "https://x"}, {Component: "BIOS", Version: "3", ImageURL: "https://y"}}}, "firmware[1].component"},
	} {
		if err := tc.h.Validate(); ErrorField(err) != tc.field {
			t.Errorf("%+v: %v (field %q), want field %q", tc.h, err, ErrorField(err), tc.field)
		}
	}
	ok := HardwareSettings{BIOS: map[string]string{"ProcVirtualization": "Enabled"},
		RAID:     vols(VolumeSettings{Name: "os", RAIDLevel: "1", DriveCount: 2, MediaType: "ssd"}, VolumeSettings{Name: "data", RAIDLevel: "10", DriveCount: 4}),
		Firmware: []FirmwareSettings{{Component: "BIOS", Version: "2.1.0", ImageURL: "https://fw.example/bios.bin"}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid settings: %v", err)
	}
	if (HardwareSettings{RAID: vols()}).IsZero() {
		t.Error("raid = [] (delete every volume) is a setting, not none")
	}
}

func TestValidateAgainstRegistry(t *testing.T) {
	lo, hi := int64(1), int64(4)
	reg := BIOSRegistry{"ProcVirtualization": {Type: "Enumeration", Values: []string{"Enabled", "Disabled"}},
		"NumaNodesPerSocket": {Type: "Integer", LowerBound: &lo, UpperBound: &hi}, "MemTest": {Type: "Boolean"},
		"AssetTag": {Type: "String", MaxLength: 4}, "BiosVersion": {Type: "String", ReadOnly: true}}
	for v, want := range map[string]string{
		"ProcVirtualization=Maybe": "takes one of Enabled, Disabled",
		"NumaNodesPerSocket=9":     "between 1 and 4",
		"NumaNodesPerSocket=x":     "is an integer",
		"NumaNodesPerSocket=02":    "write 2, not \"02\"",
		"MemTest=yes":              "true or false",
		"AssetTag=toolong":         "at most 4 characters",
		"BiosVersion=2":            "read-only",
		"procvirtualization=x":     "did you mean ProcVirtualization?",
	} {
		k, val, _ := strings.Cut(v, "=")
		err := HardwareSettings{BIOS: map[string]string{k: val}}.ValidateAgainst(reg, nil)
		if ErrorField(err) != "bios_settings."+k || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it on bios_settings.%s saying %q", v, err, k, want)
		}
	}
	if err := (HardwareSettings{BIOS: map[string]string{"Nope": "x"}}).ValidateAgainst(nil, map[string]string{"Yes": "1"}); ErrorField(err) != "bios_settings.Nope" {
		t.Errorf("without a registry, a name the BMC does not report: %v", err)
	}
}

func TestHardwareUnmet(t *testing.T) {
	on, off := true, false
	now := time.Now()
	h := HardwareSettings{BIOS: map[string]string{"A": "1", "B": "2"}, SecureBoot: &on,
		RAID:     &[]VolumeSettings{{Name: "os", RAIDLevel: "1", DriveCount: 2, SizeGB: 100}, {Name: "data", RAIDLevel: "5", DriveCount: 3}},
		Firmware: []FirmwareSettings{{Component: "BIOS", Version: "2.1.0", ImageURL: "https://x"}}}
	o := HardwareObserved{BIOS: map[string]string{"A": "1", "B": "3"}, SecureBoot: &off, ReadAt: &now,
		Volumes:  []ObservedVolume{{Name: "os", RAIDLevel: "1", SizeGB: 100, Drives: []string{"d1", "d2"}}, {Name: "old", RAIDLevel: "0", SizeGB: 50}},
		Firmware: map[string]string{"BIOS": "1.0.0"}}
	want := []string{"bios_settings.B: want 2, is 3", "secure_boot: want true, is false", "raid.data: want RAID 5, is missing",
		"raid.old: not declared, is RAID 0 of 50 GiB", "firmware.BIOS: want 2.1.0, is 1.0.0"}
	if got := h.Unmet(o); !slices.Equal(got, want) {
		t.Fatalf("unmet:\n%q\nwant\n%q", got, want)
	}
	o = HardwareObserved{BIOS: map[string]string{"A": "1", "B": "2"}, SecureBoot: &on, ReadAt: &now,
		Volumes:  []ObservedVolume{{Name: "os", RAIDLevel: "1", SizeGB: 99, Drives: []string{"d1", "d2"}}, {Name: "data", RAIDLevel: "5", SizeGB: 1800, Drives: []string{"a", "b", "c"}}},
		Firmware: map[string]string{"BIOS": "2.1.0"}}
	if got := h.Unmet(o); len(got) != 0 {
		t.Fatalf("met settings: unmet %q", got)
	}
}
