package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// RAID volumes and firmware versions as code (issue 30) on baremetal_node:
// their schema and plan-time checks (the controller's, repeated so a bad
// declaration fails the plan naming its attribute), the API's form of
// them, and what the state shows of them: what the BMC has, as the
// controller last read it, so a volume deleted at the console or a
// firmware flashed by another tool is drift in the plan.

// raidLevels are the levels a volume may have and the drives each needs
// at least (baremetal.RAIDLevels; RAID 10 needs an even number).
var raidLevels = map[string]int{"0": 1, "1": 2, "5": 3, "6": 4, "10": 4}

// The controller's other limits of volumes and firmware components.
const (
	maxVolumes          = 32
	maxVolumeDrives     = 64
	maxVolumeSizeGB     = 1 << 20 // baremetal.MaxLocalGB
	maxFirmware         = 32
	maxFirmwareLine     = 128
	maxFirmwareImageURL = 2048
	maxDriveIDBytes     = 255
)

var volumeAttrTypes = map[string]attr.Type{
	"name":        types.StringType,
	"raid_level":  types.StringType,
	"size_gb":     types.Int64Type,
	"drive_count": types.Int64Type,
	"media_type":  types.StringType,
	"drive_ids":   types.ListType{ElemType: types.StringType},
}

var volumeObjectType = types.ObjectType{AttrTypes: volumeAttrTypes}

var firmwareAttrTypes = map[string]attr.Type{
	"component": types.StringType,
	"version":   types.StringType,
	"image_url": types.StringType,
}

var firmwareObjectType = types.ObjectType{AttrTypes: firmwareAttrTypes}

const raidDesc = "Every logical (RAID) volume the node's storage controller is to have. The controller makes the declared " +
	"volumes that are missing and deletes the volumes the BMC has that are not declared, or not as declared (with " +
	"their data; `raid = []` deletes them all), in `configuring`, like `bios_settings`; the apply waits for it (unless `wait_for_available` is `false`). A " +
	"volume's drives are `drive_count` drives not in another volume, of `media_type` when set, the smallest first; or the " +
	"drives `drive_ids` names. The plan shows the volumes the BMC has as the controller last read them (every " +
	"`--settings-sync-interval`): when they are what is declared, the declaration; otherwise the volumes the BMC has, so a " +
	"volume deleted, changed or added at the console is drift, and the next apply puts the declared ones back. A volume " +
	"that cannot be made (too few free drives of the media type) fails the apply with the controller's reason, and " +
	"nothing changes. Unset, the volumes are not managed: removing `raid` changes nothing on the BMC. Redfish only."

const firmwareDesc = "Firmware components to keep at a version. When the BMC's firmware inventory shows another version of " +
	"`component`, the controller has the BMC fetch `image_url` and update it (Redfish `SimpleUpdate`, followed through its " +
	"task; a BIOS image is applied at the reset that follows), in `configuring`, and reads the version back. The plan shows " +
	"the version the BMC reports, so a component flashed by another tool is drift. An image the BMC refuses fails the " +
	"apply with the BMC's reason, the version stays as it was. Removing a component (or the whole list) stops managing " +
	"it: nothing is downgraded. Redfish only."

func raidAttribute() schema.ListNestedAttribute {
	return schema.ListNestedAttribute{
		MarkdownDescription: raidDesc,
		Optional:            true,
		Validators:          []validator.List{raidValidator{}},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				MarkdownDescription: "The volume's name on the storage controller (and in drift): a letter, then letters, digits, " +
					"`_`, `.` or `-`, at most 128. Unique in the node.",
				Required: true,
			},
			"raid_level": schema.StringAttribute{
				MarkdownDescription: "`0`, `1`, `5`, `6` or `10`: needs at least 1, 2, 3, 4 and 4 drives (RAID 10 an even number).",
				Required:            true,
			},
			"size_gb": schema.Int64Attribute{
				MarkdownDescription: "Size in GiB; unset or `0`: all the drives give. A volume within 1% of it fits.",
				Optional:            true,
			},
			"drive_count": schema.Int64Attribute{
				MarkdownDescription: "How many drives, not in another volume, of `media_type`, the smallest first. Either this or `drive_ids`.",
				Optional:            true,
			},
			"media_type": schema.StringAttribute{
				MarkdownDescription: "`ssd` or `hdd`: the kind of drives `drive_count` takes. Unset: any.",
				Optional:            true,
			},
			"drive_ids": schema.ListAttribute{
				MarkdownDescription: "The drives, by their Redfish `@odata.id` (as the BMC's storage lists them, e.g. " +
					"`/redfish/v1/Systems/1/Storage/RAID.1/Drives/Disk.0`). Either this or `drive_count`.",
				ElementType: types.StringType,
				Optional:    true,
			},
		}},
	}
}

func firmwareAttribute() schema.ListNestedAttribute {
	return schema.ListNestedAttribute{
		MarkdownDescription: firmwareDesc,
		Optional:            true,
		Validators:          []validator.List{firmwareValidator{}},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"component": schema.StringAttribute{
				MarkdownDescription: "The entry of the BMC's firmware inventory, by its Id or Name (e.g. `BIOS`, `BMC`, `NIC.Integrated.1`).",
				Required:            true,
			},
			"version": schema.StringAttribute{
				MarkdownDescription: "The version to keep, as the BMC's inventory reports it; the controller checks it after the update.",
				Required:            true,
			},
			"image_url": schema.StringAttribute{
				MarkdownDescription: "An `http://` or `https://` URL of the image, which the BMC fetches itself.",
				Required:            true,
			},
		}},
	}
}

// raidValidator checks the volumes as the controller does
// (HardwareSettings.validateRAID), naming the attribute at fault.
type raidValidator struct{}

var _ validator.List = raidValidator{}

func (raidValidator) Description(context.Context) string {
	return fmt.Sprintf("at most %d volumes with unique names; raid_level 0, 1, 5, 6 or 10 with enough drives; drive_count or "+
		"drive_ids, one of them; media_type ssd or hdd", maxVolumes)
}

func (v raidValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (raidValidator) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	elems := req.ConfigValue.Elements()
	if len(elems) > maxVolumes {
		resp.Diagnostics.AddAttributeError(req.Path, "Too many RAID volumes",
			fmt.Sprintf("raid declares %d volumes; at most %d are allowed.", len(elems), maxVolumes))
	}
	names, ids := map[string]bool{}, map[string]bool{}
	for i, e := range elems {
		at := req.Path.AtListIndex(i)
		obj, ok := e.(types.Object)
		if !ok || obj.IsNull() || obj.IsUnknown() {
			if ok && obj.IsNull() {
				resp.Diagnostics.AddAttributeError(at, "Missing RAID volume", "A volume of raid is null.")
			}
			continue
		}
		a := obj.Attributes()
		name, _ := a["name"].(types.String)
		level, _ := a["raid_level"].(types.String)
		size, _ := a["size_gb"].(types.Int64)
		count, _ := a["drive_count"].(types.Int64)
		media, _ := a["media_type"].(types.String)
		driveIDs, _ := a["drive_ids"].(types.List)
		if known(name) {
			switch n := name.ValueString(); {
			case !biosNameRE.MatchString(n):
				resp.Diagnostics.AddAttributeError(at.AtName("name"), "Invalid volume name",
					fmt.Sprintf("Volume name %q must be a letter, then letters, digits, _ . or -, at most 128 characters.", n))
			case names[n]:
				resp.Diagnostics.AddAttributeError(at.AtName("name"), "Duplicate volume name",
					fmt.Sprintf("Volume name %q is declared twice in raid.", n))
			}
			names[name.ValueString()] = true
		}
		need, levelOK := raidLevels[level.ValueString()]
		if known(level) && !levelOK {
			resp.Diagnostics.AddAttributeError(at.AtName("raid_level"), "Invalid RAID level",
				fmt.Sprintf("raid_level %q must be one of 0, 1, 5, 6, 10.", level.ValueString()))
		}
		if known(size) && (size.ValueInt64() < 0 || size.ValueInt64() > maxVolumeSizeGB) {
			resp.Diagnostics.AddAttributeError(at.AtName("size_gb"), "Invalid volume size",
				fmt.Sprintf("size_gb must be between 0 (all the drives give) and %d, got %d.", maxVolumeSizeGB, size.ValueInt64()))
		}
		if known(media) && media.ValueString() != "ssd" && media.ValueString() != "hdd" {
			resp.Diagnostics.AddAttributeError(at.AtName("media_type"), "Invalid media type",
				fmt.Sprintf("media_type %q must be ssd or hdd (or unset: any).", media.ValueString()))
		}
		if count.IsUnknown() || driveIDs.IsUnknown() {
			continue
		}
		byCount, byIDs := count.ValueInt64() != 0, len(driveIDs.Elements()) > 0
		if byCount == byIDs {
			resp.Diagnostics.AddAttributeError(at.AtName("drive_count"), "Choose the volume's drives one way",
				fmt.Sprintf("Choose the drives of volume %s by drive_count (with media_type) or by drive_ids, one of them.", name.ValueString()))
			continue
		}
		for j, d := range driveIDs.Elements() {
			s, ok := d.(types.String)
			if !ok || s.IsUnknown() {
				continue
			}
			id := s.ValueString()
			switch why := badBIOSValue(id); {
			case s.IsNull() || id == "" || ids[id]:
				resp.Diagnostics.AddAttributeError(at.AtName("drive_ids").AtListIndex(j), "Invalid drive id",
					fmt.Sprintf("Drive %q is empty or in two volumes.", id))
			case why != "" || len(id) > maxDriveIDBytes:
				resp.Diagnostics.AddAttributeError(at.AtName("drive_ids").AtListIndex(j), "Invalid drive id",
					fmt.Sprintf("Drive id %q must be a single line of at most %d bytes.", id, maxDriveIDBytes))
			}
			ids[id] = true
		}
		n := count.ValueInt64() + int64(len(driveIDs.Elements()))
		if known(level) && levelOK && (count.ValueInt64() < 0 || n < int64(need) || level.ValueString() == "10" && n%2 != 0 || n > maxVolumeDrives) {
			even := ""
			if level.ValueString() == "10" {
				even = " (an even number)"
			}
			at := at.AtName("drive_count")
			if byIDs {
				at = req.Path.AtListIndex(i).AtName("drive_ids")
			}
			resp.Diagnostics.AddAttributeError(at, "Wrong number of drives",
				fmt.Sprintf("RAID %s needs at least %d drives%s, at most %d; volume %s has %d.", level.ValueString(), need, even,
					maxVolumeDrives, name.ValueString(), n))
		}
	}
}

// firmwareValidator checks the components as the controller does
// (HardwareSettings.validateFirmware), naming the attribute at fault.
type firmwareValidator struct{}

var _ validator.List = firmwareValidator{}

func (firmwareValidator) Description(context.Context) string {
	return fmt.Sprintf("at most %d components, each once, with a version and an http(s) image_url", maxFirmware)
}

func (v firmwareValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (firmwareValidator) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	elems := req.ConfigValue.Elements()
	if len(elems) > maxFirmware {
		resp.Diagnostics.AddAttributeError(req.Path, "Too many firmware components",
			fmt.Sprintf("firmware declares %d components; at most %d are allowed.", len(elems), maxFirmware))
	}
	seen := map[string]bool{}
	for i, e := range elems {
		at := req.Path.AtListIndex(i)
		obj, ok := e.(types.Object)
		if !ok || obj.IsNull() || obj.IsUnknown() {
			if ok && obj.IsNull() {
				resp.Diagnostics.AddAttributeError(at, "Missing firmware component", "A component of firmware is null.")
			}
			continue
		}
		a := obj.Attributes()
		line := func(name string, max int, check func(string) string) {
			s, _ := a[name].(types.String)
			if !known(s) {
				return
			}
			why := badBIOSValue(s.ValueString())
			if why == "" && len(s.ValueString()) > max {
				why = fmt.Sprintf("holds %d bytes; at most %d are allowed", len(s.ValueString()), max)
			}
			if why == "" {
				why = check(s.ValueString())
			}
			if why != "" {
				resp.Diagnostics.AddAttributeError(at.AtName(name), "Invalid firmware "+strings.ReplaceAll(name, "_", " "),
					fmt.Sprintf("The %s of firmware[%d] %s.", name, i, why))
			}
		}
		line("component", maxFirmwareLine, func(c string) string {
			defer func() { seen[c] = true }()
			if c == "" || seen[c] {
				return fmt.Sprintf("%q is empty or declared twice", c)
			}
			return ""
		})
		line("version", maxFirmwareLine, func(v string) string {
			if v == "" {
				return "is required: the controller verifies it after the update"
			}
			return ""
		})
		line("image_url", maxFirmwareImageURL, func(u string) string {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				return "must be an http:// or https:// URL the BMC can fetch"
			}
			return ""
		})
	}
}

// known reports whether v is neither null nor unknown.
func known(v attr.Value) bool { return !v.IsNull() && !v.IsUnknown() }

// volumesFrom is the API's form of raid (nil when null or unknown).
func volumesFrom(l types.List) *[]api.Volume {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	vols := make([]api.Volume, 0, len(l.Elements()))
	for _, e := range l.Elements() {
		vols = append(vols, volumeFrom(e))
	}
	return &vols
}

func volumeFrom(e attr.Value) api.Volume {
	obj, _ := e.(types.Object)
	a := obj.Attributes()
	str := func(k string) string { s, _ := a[k].(types.String); return s.ValueString() }
	num := func(k string) int { n, _ := a[k].(types.Int64); return int(n.ValueInt64()) }
	v := api.Volume{Name: str("name"), RAIDLevel: str("raid_level"), SizeGB: num("size_gb"), DriveCount: num("drive_count"),
		MediaType: str("media_type")}
	if ids, ok := a["drive_ids"].(types.List); ok {
		v.DriveIDs = listStrings(ids)
	}
	return v
}

// firmwareFrom is the API's form of firmware (nil when null or unknown).
func firmwareFrom(l types.List) []api.Firmware {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	out := make([]api.Firmware, 0, len(l.Elements()))
	for _, e := range l.Elements() {
		obj, _ := e.(types.Object)
		a := obj.Attributes()
		str := func(k string) string { s, _ := a[k].(types.String); return s.ValueString() }
		out = append(out, api.Firmware{Component: str("component"), Version: str("version"), ImageURL: str("image_url")})
	}
	return out
}

func listStrings(l types.List) []string {
	if l.IsNull() || l.IsUnknown() || len(l.Elements()) == 0 {
		return nil
	}
	out := make([]string, 0, len(l.Elements()))
	for _, e := range l.Elements() {
		s, _ := e.(types.String)
		out = append(out, s.ValueString())
	}
	return out
}

func sameVolume(a, b api.Volume) bool {
	return a.Name == b.Name && a.RAIDLevel == b.RAIDLevel && a.SizeGB == b.SizeGB && a.DriveCount == b.DriveCount &&
		a.MediaType == b.MediaType && slices.Equal(a.DriveIDs, b.DriveIDs)
}

// raidChanged reports whether plan's raid asks the controller for other
// volumes than state's (which holds what the BMC has, so drift differs
// too): null and [] differ (not managed, no volumes); an unknown plan is
// a change.
func raidChanged(plan, state types.List) bool {
	if plan.IsUnknown() {
		return true
	}
	p, s := volumesFrom(plan), volumesFrom(state)
	if p == nil || s == nil {
		return (p == nil) != (s == nil)
	}
	return !slices.EqualFunc(*p, *s, sameVolume)
}

// firmwareChanged is raidChanged of firmware, where null and [] are the
// same: no component managed.
func firmwareChanged(plan, state types.List) bool {
	return plan.IsUnknown() || !slices.Equal(firmwareFrom(plan), firmwareFrom(state))
}

// volumeValue is v as an element of raid; prior, when it is the same
// volume, is kept as it is (so size_gb = 0 and an unset size_gb stay as
// the configuration wrote them).
func volumeValue(v api.Volume, prior map[string]attr.Value, diags *diag.Diagnostics) attr.Value {
	if p, ok := prior[v.Name]; ok && sameVolume(volumeFrom(p), v) {
		return p
	}
	int64OrNull := func(n int) types.Int64 {
		if n == 0 {
			return types.Int64Null()
		}
		return types.Int64Value(int64(n))
	}
	ids := types.ListNull(types.StringType)
	if len(v.DriveIDs) > 0 {
		elems := make([]attr.Value, len(v.DriveIDs))
		for i, id := range v.DriveIDs {
			elems[i] = types.StringValue(id)
		}
		var d diag.Diagnostics
		ids, d = types.ListValue(types.StringType, elems)
		diags.Append(d...)
	}
	obj, d := types.ObjectValue(volumeAttrTypes, map[string]attr.Value{
		"name":        types.StringValue(v.Name),
		"raid_level":  types.StringValue(v.RAIDLevel),
		"size_gb":     int64OrNull(v.SizeGB),
		"drive_count": int64OrNull(v.DriveCount),
		"media_type":  stringOrNull(v.MediaType),
		"drive_ids":   ids,
	})
	diags.Append(d...)
	return obj
}

// observedVolumes is what the state shows of raid when the BMC's volumes
// are not the declared ones (hw.Unmet names a volume): each declared
// volume the BMC has, as declared where the BMC agrees (media_type, which
// it does not report; the size when it fits) and as the BMC has it
// otherwise (level, size, drives), then the volumes the BMC has that are
// not declared. A declared volume that is missing is left out. The plan
// then differs from the configuration by what differs on the BMC.
func observedVolumes(declared []api.Volume, observed []api.ObservedVolume) []api.Volume {
	var out []api.Volume
	for _, v := range declared {
		i := slices.IndexFunc(observed, func(o api.ObservedVolume) bool { return o.Name == v.Name })
		if i < 0 {
			continue
		}
		o := observed[i]
		is := v
		is.RAIDLevel = o.RAIDLevel
		if v.SizeGB > 0 && (o.SizeGB < v.SizeGB*99/100 || o.SizeGB > v.SizeGB*101/100+1) {
			is.SizeGB = o.SizeGB
		}
		switch {
		case len(o.Drives) == 0: // a BMC that lists no drives of its volumes
		case len(v.DriveIDs) > 0:
			if !slices.Equal(slices.Sorted(slices.Values(o.Drives)), slices.Sorted(slices.Values(v.DriveIDs))) {
				is.DriveIDs = slices.Clone(o.Drives)
			}
		default:
			is.DriveCount = len(o.Drives)
		}
		out = append(out, is)
	}
	for _, o := range observed {
		if !slices.ContainsFunc(declared, func(v api.Volume) bool { return v.Name == o.Name }) {
			out = append(out, api.Volume{Name: o.Name, RAIDLevel: o.RAIDLevel, SizeGB: o.SizeGB, DriveCount: len(o.Drives)})
		}
	}
	return out
}

// raidUnmet reports whether unmet says the BMC's volumes are not the
// declared ones ("raid.data: want RAID 5, is missing"); "raid: volumes
// not read" is not that.
func raidUnmet(unmet []string) bool {
	return slices.ContainsFunc(unmet, func(u string) bool { return strings.HasPrefix(u, "raid.") })
}

// setRAIDFirmwareFromAPI sets raid and firmware from n, with what the BMC
// has (hw: nil while the controller applies them or waits to, when the
// declaration shows), keeping the prior representation of elements that
// are the same.
func (m *nodeResourceModel) setRAIDFirmwareFromAPI(n *api.Node, hw *api.NodeHardware) diag.Diagnostics {
	var diags diag.Diagnostics
	prior := map[string]attr.Value{}
	if known(m.RAID) {
		for _, e := range m.RAID.Elements() {
			prior[volumeFrom(e).Name] = e
		}
	}
	if n.RAID == nil {
		m.RAID = types.ListNull(volumeObjectType)
	} else {
		vols := *n.RAID
		if hw != nil && hw.ReadAt != nil && raidUnmet(hw.Unmet) {
			vols = observedVolumes(vols, hw.Volumes)
		}
		elems := make([]attr.Value, len(vols))
		for i, v := range vols {
			elems[i] = volumeValue(v, prior, &diags)
		}
		var d diag.Diagnostics
		m.RAID, d = types.ListValue(volumeObjectType, elems)
		diags.Append(d...)
	}
	if len(n.Firmware) == 0 && (!known(m.Firmware) || len(m.Firmware.Elements()) != 0) {
		// firmware = [] stays as written; none declared is null.
		m.Firmware = types.ListNull(firmwareObjectType)
		return diags
	}
	elems := make([]attr.Value, len(n.Firmware))
	for i, fw := range n.Firmware {
		if hw != nil {
			if is, ok := hw.Firmware[fw.Component]; ok {
				fw.Version = is
			}
		}
		obj, d := types.ObjectValue(firmwareAttrTypes, map[string]attr.Value{
			"component": types.StringValue(fw.Component),
			"version":   types.StringValue(fw.Version),
			"image_url": types.StringValue(fw.ImageURL),
		})
		diags.Append(d...)
		elems[i] = obj
	}
	var d diag.Diagnostics
	m.Firmware, d = types.ListValue(firmwareObjectType, elems)
	diags.Append(d...)
	return diags
}

// raidFirmwareErrorPath is the attribute a refusal of the controller's
// names, if it names raid or firmware: the declared volume or component
// it names first (volume big, firmware BIOS), else the whole list.
func raidFirmwareErrorPath(msg string, plan *nodeResourceModel) (path.Path, bool) {
	best, at := -1, path.Empty()
	find := func(root, word string, names []string) {
		for i, name := range names {
			if j := strings.Index(msg, word+" "+name); j >= 0 && (best < 0 || j < best) &&
				(j+len(word)+1+len(name) == len(msg) || !isBIOSNameChar(msg[j+len(word)+1+len(name)])) {
				best, at = j, path.Root(root).AtListIndex(i)
			}
		}
	}
	var volumes, components []string
	if vols := volumesFrom(plan.RAID); vols != nil {
		for _, v := range *vols {
			volumes = append(volumes, v.Name)
		}
	}
	for _, fw := range firmwareFrom(plan.Firmware) {
		components = append(components, fw.Component)
	}
	find("raid", "volume", volumes)
	find("firmware", "firmware", components)
	if best >= 0 {
		return at, true
	}
	switch {
	case volumes != nil && (strings.Contains(msg, "volume") || strings.Contains(msg, "raid") || strings.Contains(msg, "RAID")):
		return path.Root("raid"), true
	case components != nil && strings.Contains(msg, "firmware"):
		return path.Root("firmware"), true
	}
	return path.Empty(), false
}
