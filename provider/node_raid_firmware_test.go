package provider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// vol is an element of raid as a configuration writes it: size_gb,
// drive_count, media_type and drive_ids null when zero.
func vol(name, level string, size, count int, media string, ids ...string) attr.Value {
	var diags diag.Diagnostics
	v := volumeValue(api.Volume{Name: name, RAIDLevel: level, SizeGB: size, DriveCount: count, MediaType: media, DriveIDs: ids}, nil, &diags)
	if diags.HasError() {
		panic(diags)
	}
	return v
}

func volList(elems ...attr.Value) types.List {
	if elems == nil {
		elems = []attr.Value{}
	}
	return types.ListValueMust(volumeObjectType, elems)
}

func fw(component, version, url string) attr.Value {
	return types.ObjectValueMust(firmwareAttrTypes, map[string]attr.Value{
		"component": types.StringValue(component), "version": types.StringValue(version), "image_url": types.StringValue(url)})
}

func fwList(elems ...attr.Value) types.List {
	if elems == nil {
		elems = []attr.Value{}
	}
	return types.ListValueMust(firmwareObjectType, elems)
}

// validateList runs v on l and returns each error as "path: detail".
func validateList(v validator.List, root string, l types.List) []string {
	var resp validator.ListResponse
	v.ValidateList(context.Background(), validator.ListRequest{Path: path.Root(root), ConfigValue: l}, &resp)
	var out []string
	for _, d := range resp.Diagnostics.Errors() {
		p := ""
		if wp, ok := d.(interface{ Path() path.Path }); ok {
			p = wp.Path().String()
		}
		out = append(out, p+": "+d.Detail())
	}
	return out
}

func TestRAIDValidator(t *testing.T) {
	cases := []struct {
		name string
		raid types.List
		want string // the path and a part of the detail of the one error, or "" for none
	}{
		{"two volumes", volList(vol("os", "1", 0, 2, "ssd"), vol("data", "0", 1000, 2, "hdd")), ""},
		{"none", volList(), ""},
		{"by ids", volList(vol("os", "1", 0, 0, "", "Disk0", "Disk1")), ""},
		{"level", volList(vol("os", "4", 0, 2, "")), `raid[0].raid_level: raid_level "4" must be one of 0, 1, 5, 6, 10`},
		{"too few", volList(vol("os", "5", 0, 2, "")), "raid[0].drive_count: RAID 5 needs at least 3 drives, at most 64; volume os has 2"},
		{"raid10 odd", volList(vol("a", "0", 0, 1, ""), vol("big", "10", 0, 5, "")), "raid[1].drive_count: RAID 10 needs at least 4 drives (an even number)"},
		{"too few ids", volList(vol("os", "1", 0, 0, "", "Disk0")), "raid[0].drive_ids: RAID 1 needs at least 2 drives"},
		{"neither", volList(vol("os", "1", 0, 0, "ssd")), "raid[0].drive_count: Choose the drives of volume os by drive_count"},
		{"both", volList(vol("os", "1", 0, 2, "", "Disk0", "Disk1")), "raid[0].drive_count: Choose the drives of volume os"},
		{"twice", volList(vol("os", "1", 0, 2, ""), vol("os", "0", 0, 1, "")), `raid[1].name: Volume name "os" is declared twice`},
		{"bad name", volList(vol("1os", "1", 0, 2, "")), `raid[0].name: Volume name "1os" must be a letter`},
		{"media", volList(vol("os", "1", 0, 2, "nvme")), `raid[0].media_type: media_type "nvme" must be ssd or hdd`},
		{"size", volList(vol("os", "1", -1, 2, "")), "raid[0].size_gb: size_gb must be between 0"},
		{"drive in two", volList(vol("a", "1", 0, 0, "", "D0", "D1"), vol("b", "1", 0, 0, "", "D1", "D2")), `raid[1].drive_ids[0]: Drive "D1" is empty or in two volumes`},
	}
	for _, c := range cases {
		got := validateList(raidValidator{}, "raid", c.raid)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: %q", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: %q, want one error with %q", c.name, got, c.want)
		}
	}
}

func TestFirmwareValidator(t *testing.T) {
	const url = "https://images.example.com/bios.bin"
	cases := []struct {
		name string
		fw   types.List
		want string
	}{
		{"fine", fwList(fw("BIOS", "2.1.0", url), fw("BMC", "7.0", "http://10.0.0.1/bmc.bin")), ""},
		{"twice", fwList(fw("BIOS", "2.1.0", url), fw("BIOS", "2.2.0", url)), `firmware[1].component: The component of firmware[1] "BIOS" is empty or declared twice`},
		{"no version", fwList(fw("BIOS", "", url)), "firmware[0].version: The version of firmware[0] is required"},
		{"not http", fwList(fw("BIOS", "2.1.0", "ftp://x/bios.bin")), "firmware[0].image_url: The image_url of firmware[0] must be an http:// or https:// URL"},
		{"two lines", fwList(fw("BIOS", "2.1\n", url)), "firmware[0].version: The version of firmware[0] must be a single line"},
	}
	for _, c := range cases {
		got := validateList(firmwareValidator{}, "firmware", c.fw)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: %q", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: %q, want one error with %q", c.name, got, c.want)
		}
	}
}

// TestRAIDFirmwareState: what the state shows of raid and firmware is
// the declaration while the BMC has it (as the configuration wrote it),
// and what the BMC has otherwise, so that the plan shows the difference.
func TestRAIDFirmwareState(t *testing.T) {
	declared := []api.Volume{
		{Name: "os", RAIDLevel: "1", DriveCount: 2, MediaType: "ssd"},
		{Name: "data", RAIDLevel: "0", SizeGB: 1000, DriveCount: 2, MediaType: "hdd"},
	}
	config := volList(vol("os", "1", 0, 2, "ssd"), vol("data", "0", 1000, 2, "hdd"))
	// size_gb = 0 written out: kept so, not made null.
	zero := types.ObjectValueMust(volumeAttrTypes, map[string]attr.Value{
		"name": types.StringValue("os"), "raid_level": types.StringValue("1"), "size_gb": types.Int64Value(0),
		"drive_count": types.Int64Value(2), "media_type": types.StringValue("ssd"), "drive_ids": types.ListNull(types.StringType)})
	zeroConfig := volList(zero, vol("data", "0", 1000, 2, "hdd"))
	fws := []api.Firmware{{Component: "BIOS", Version: "2.1.0", ImageURL: "http://x/b.bin"}}
	read := time.Now()
	observed := []api.ObservedVolume{
		{Name: "os", RAIDLevel: "1", SizeGB: 447, Drives: []string{"d0", "d1"}},
		{Name: "data", RAIDLevel: "0", SizeGB: 1003, Drives: []string{"d2", "d3"}},
	}
	cases := []struct {
		name      string
		node      api.Node
		prior     types.List
		wantRAID  types.List
		wantFirmw types.List
	}{
		{"not managed", api.Node{}, types.ListNull(volumeObjectType), types.ListNull(volumeObjectType), types.ListNull(firmwareObjectType)},
		{"met", api.Node{RAID: &declared, Firmware: fws, ProvisionState: api.StateAvailable,
			Hardware: &api.NodeHardware{ReadAt: &read, Volumes: observed, Firmware: map[string]string{"BIOS": "2.1.0"}}},
			zeroConfig, zeroConfig, fwList(fw("BIOS", "2.1.0", "http://x/b.bin"))},
		{"imported", api.Node{RAID: &declared, ProvisionState: api.StateAvailable, Hardware: &api.NodeHardware{ReadAt: &read, Volumes: observed}},
			types.ListNull(volumeObjectType), config, types.ListNull(firmwareObjectType)},
		{"no volumes", api.Node{RAID: &[]api.Volume{}, ProvisionState: api.StateAvailable, Hardware: &api.NodeHardware{ReadAt: &read}},
			volList(), volList(), types.ListNull(firmwareObjectType)},
		{"deleted at the console", api.Node{RAID: &declared, Firmware: fws, ProvisionState: api.StateAvailable,
			Hardware: &api.NodeHardware{ReadAt: &read, Volumes: observed[:1], Firmware: map[string]string{"BIOS": "1.0.0"},
				Unmet: []string{"raid.data: want RAID 0 of 1000 GiB, is missing", "firmware.BIOS: want 2.1.0, is 1.0.0"}}},
			config, volList(vol("os", "1", 0, 2, "ssd")), fwList(fw("BIOS", "1.0.0", "http://x/b.bin"))},
		{"changed and added at the console", api.Node{RAID: &declared, ProvisionState: api.StateAvailable,
			Hardware: &api.NodeHardware{ReadAt: &read, Volumes: []api.ObservedVolume{
				{Name: "os", RAIDLevel: "1", SizeGB: 447, Drives: []string{"d0", "d1"}},
				{Name: "data", RAIDLevel: "1", SizeGB: 500, Drives: []string{"d2", "d3"}},
				{Name: "scratch", RAIDLevel: "0", SizeGB: 100, Drives: []string{"d4"}},
			}, Unmet: []string{"raid.data: want RAID 0 of 1000 GiB, is RAID 1 of 500 GiB on 2 drives", "raid.scratch: not declared, is RAID 0 of 100 GiB"}}},
			config, volList(vol("os", "1", 0, 2, "ssd"), vol("data", "1", 500, 2, "hdd"), vol("scratch", "0", 100, 1, "")), types.ListNull(firmwareObjectType)},
		{"configuring", api.Node{RAID: &declared, Firmware: fws, ProvisionState: api.StateConfiguring,
			Hardware: &api.NodeHardware{ReadAt: &read, Firmware: map[string]string{"BIOS": "1.0.0"},
				Unmet: []string{"raid.os: want RAID 1, is missing", "raid.data: want RAID 0 of 1000 GiB, is missing"}}},
			config, config, fwList(fw("BIOS", "2.1.0", "http://x/b.bin"))},
		{"not read yet", api.Node{RAID: &declared, ProvisionState: api.StateAvailable, Hardware: &api.NodeHardware{Unmet: []string{"raid: volumes not read"}}},
			config, config, types.ListNull(firmwareObjectType)},
	}
	for _, c := range cases {
		m := nodeResourceModel{RAID: c.prior, Firmware: types.ListNull(firmwareObjectType), BIOSSettings: types.MapNull(types.StringType)}
		if diags := m.setSettingsFromAPI(&c.node); diags.HasError() {
			t.Fatalf("%s: %v", c.name, diags)
		}
		if !m.RAID.Equal(c.wantRAID) {
			t.Errorf("%s: raid %s\nwant %s", c.name, m.RAID, c.wantRAID)
		}
		if !m.Firmware.Equal(c.wantFirmw) {
			t.Errorf("%s: firmware %s\nwant %s", c.name, m.Firmware, c.wantFirmw)
		}
	}
}

func TestNodePatchRAIDFirmware(t *testing.T) {
	model := func(raid, firmware types.List) *nodeResourceModel {
		return &nodeResourceModel{nodeModel: nodeModel{Name: types.StringValue("n1"), Properties: types.ObjectNull(propertiesAttrTypes),
			PropertyOverrides: types.SetNull(types.StringType)}, BMC: &nodeBMCModel{},
			BIOSSettings: types.MapNull(types.StringType), RAID: raid, Firmware: firmware}
	}
	null, noFW := types.ListNull(volumeObjectType), types.ListNull(firmwareObjectType)
	two := volList(vol("os", "1", 0, 2, "ssd"), vol("data", "0", 1000, 2, "hdd"))
	zero := types.ObjectValueMust(volumeAttrTypes, map[string]attr.Value{
		"name": types.StringValue("os"), "raid_level": types.StringValue("1"), "size_gb": types.Int64Value(0),
		"drive_count": types.Int64Value(2), "media_type": types.StringValue("ssd"), "drive_ids": types.ListNull(types.StringType)})
	bios := fwList(fw("BIOS", "2.1.0", "http://x/b.bin"))
	cases := []struct {
		name        string
		plan, state *nodeResourceModel
		want        string
	}{
		{"unmanaged", model(null, noFW), model(null, noFW), `{}`},
		{"as the BMC has them", model(two, bios), model(two, bios), `{}`},
		{"size_gb 0 is no size", model(volList(zero), noFW), model(volList(vol("os", "1", 0, 2, "ssd")), noFW), `{}`},
		{"firmware [] is none", model(null, fwList()), model(null, noFW), `{}`},
		{"declared", model(two, noFW), model(null, noFW),
			`{"raid":[{"name":"os","raid_level":"1","drive_count":2,"media_type":"ssd"},{"name":"data","raid_level":"0","size_gb":1000,"drive_count":2,"media_type":"hdd"}]}`},
		{"drift: a volume missing", model(two, noFW), model(volList(vol("os", "1", 0, 2, "ssd")), noFW),
			`{"raid":[{"name":"os","raid_level":"1","drive_count":2,"media_type":"ssd"},{"name":"data","raid_level":"0","size_gb":1000,"drive_count":2,"media_type":"hdd"}]}`},
		{"no volumes", model(volList(), noFW), model(two, noFW), `{"raid":[]}`},
		{"no longer managed", model(null, noFW), model(two, bios), `{"raid":null,"firmware":null}`},
		{"firmware drift", model(null, bios), model(null, fwList(fw("BIOS", "1.0.0", "http://x/b.bin"))),
			`{"firmware":[{"component":"BIOS","version":"2.1.0","image_url":"http://x/b.bin"}]}`},
	}
	for _, c := range cases {
		p, changed := nodePatch(c.plan, c.state)
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want || changed != (c.want != `{}`) {
			t.Errorf("%s: sent %s (changed %v), want %s", c.name, b, changed, c.want)
		}
	}
}

func TestRAIDFirmwareErrorPath(t *testing.T) {
	plan := &nodeResourceModel{BIOSSettings: types.MapNull(types.StringType), SecureBoot: types.BoolNull(),
		RAID:     volList(vol("os", "1", 0, 2, "ssd"), vol("big", "5", 0, 3, "ssd")),
		Firmware: fwList(fw("BMC", "7.0", "http://x/bmc.bin"), fw("BIOS", "2.1.0", "http://x/b.bin"))}
	for msg, want := range map[string]path.Path{
		"hardware settings: volume big cannot be made: 2 free SSD drives, not 3":       path.Root("raid").AtListIndex(1),
		"hardware settings: failed to update firmware BIOS: signature check failed":    path.Root("firmware").AtListIndex(1),
		"hardware settings: the BMC refused to create the RAID volume":                 path.Root("raid"),
		"hardware settings: the firmware update task did not end":                      path.Root("firmware"),
		"hardware settings: the BMC did not answer":                                    path.Root("raid"),
		"hardware settings: failed to update firmware BIOSX: a component not declared": path.Root("firmware"),
	} {
		if got := settingsErrorPath(msg, plan); !got.Equal(want) {
			t.Errorf("%q: %s, want %s", msg, got, want)
		}
	}
}

func TestFieldPathOfListElements(t *testing.T) {
	for field, want := range map[string]path.Path{
		"raid[1].drive_count":         path.Root("raid").AtListIndex(1).AtName("drive_count"),
		"raid[0].drive_ids[2]":        path.Root("raid").AtListIndex(0).AtName("drive_ids"),
		"firmware[0].image_url":       path.Root("firmware").AtListIndex(0).AtName("image_url"),
		"raid":                        path.Root("raid"),
		"bios_settings.ProcTurboMode": path.Root("bios_settings").AtMapKey("ProcTurboMode"),
	} {
		if got, ok := fieldPath(field, nodeAttrs); !ok || !got.Equal(want) {
			t.Errorf("%s: %s (%v), want %s", field, got, ok, want)
		}
	}
}
