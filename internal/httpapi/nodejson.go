package httpapi

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// A page of 1,000 nodes is ~2.5 MB of JSON, and encoding/json spent a
// third of the list's time on it, reflecting over api.Node field by
// field. What follows writes the node types by hand, byte for byte what
// encoding/json writes (json.Encoder: HTML-safe, sorted map keys, a
// newline at the end): TestNodeJSONIsEncodingJSON holds the two equal on
// nodes with every field set, so a field added to api.Node and not here
// fails it.

// writeNodeList answers with a page of nodes.
func writeNodeList(w http.ResponseWriter, status int, l *api.NodeList) {
	writeAppended(w, status, func(b []byte) []byte { return appendNodeList(b, l) })
}

// writeNodeJSON answers with one node.
func writeNodeJSON(w http.ResponseWriter, status int, n *api.Node) {
	writeAppended(w, status, func(b []byte) []byte { return appendNode(b, n) })
}

// writeAppended answers as writeJSON with what add appends.
func writeAppended(w http.ResponseWriter, status int, add func([]byte) []byte) {
	buf := nodeBufs.Get().(*[]byte)
	b := add((*buf)[:0])
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	if cap(b) <= 8<<20 { // a huge page's buffer is not kept
		*buf = b
		nodeBufs.Put(buf)
	}
}

var nodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func appendNodeList(b []byte, l *api.NodeList) []byte {
	b = append(b, `{"items":`...)
	b = appendJSONArray(b, l.Items, func(b []byte, v *api.Node) []byte {
		b = appendNode(b, v)
		return b
	})
	if l.NextCursor != "" {
		b = append(b, `,"next_cursor":`...)
		b = appendJSONString(b, l.NextCursor)
	}
	return append(b, '}')
}

func appendNode(b []byte, n *api.Node) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, n.ID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, n.Name)
	b = append(b, `,"driver":`...)
	b = appendJSONString(b, string(n.Driver))
	b = append(b, `,"bmc":`...)
	if n.BMC == nil {
		b = append(b, "null"...)
	} else {
		m := n.BMC
		b = append(b, `{"address":`...)
		b = appendJSONString(b, m.Address)
		b = append(b, `,"username":`...)
		b = appendJSONString(b, m.Username)
		b = append(b, `,"insecure":`...)
		b = strconv.AppendBool(b, m.Insecure)
		if m.SystemID != "" {
			b = append(b, `,"system_id":`...)
			b = appendJSONString(b, m.SystemID)
		}
		if m.CipherSuite != 0 {
			b = append(b, `,"cipher_suite":`...)
			b = strconv.AppendInt(b, int64(m.CipherSuite), 10)
		}
		b = append(b, `,"password_set":`...)
		b = strconv.AppendBool(b, m.PasswordSet)
		b = append(b, '}')
	}
	b = append(b, `,"resource_class":`...)
	b = appendJSONString(b, n.ResourceClass)
	b = append(b, `,"traits":`...)
	b = appendJSONStrings(b, n.Traits)
	b = append(b, `,"derived_traits":`...)
	b = appendJSONStrings(b, n.DerivedTraits)
	b = append(b, `,"owner":`...)
	b = appendJSONString(b, n.Owner)
	b = append(b, `,"bios_settings":`...)
	b = appendJSONMap(b, n.BIOSSettings)
	b = append(b, `,"secure_boot":`...)
	b = appendJSONBoolPtr(b, n.SecureBoot)
	b = append(b, `,"raid":`...)
	b = appendJSONArray(b, derefVolumes(n.RAID), func(b []byte, v *api.Volume) []byte {
		b = append(b, `{"name":`...)
		b = appendJSONString(b, v.Name)
		b = append(b, `,"raid_level":`...)
		b = appendJSONString(b, v.RAIDLevel)
		if v.SizeGB != 0 {
			b = append(b, `,"size_gb":`...)
			b = strconv.AppendInt(b, int64(v.SizeGB), 10)
		}
		if v.DriveCount != 0 {
			b = append(b, `,"drive_count":`...)
			b = strconv.AppendInt(b, int64(v.DriveCount), 10)
		}
		if v.MediaType != "" {
			b = append(b, `,"media_type":`...)
			b = appendJSONString(b, v.MediaType)
		}
		if len(v.DriveIDs) != 0 {
			b = append(b, `,"drive_ids":`...)
			b = appendJSONStrings(b, v.DriveIDs)
		}
		b = append(b, '}')
		return b
	})
	b = append(b, `,"firmware":`...)
	b = appendJSONArray(b, n.Firmware, func(b []byte, f *api.Firmware) []byte {
		b = append(b, `{"component":`...)
		b = appendJSONString(b, f.Component)
		b = append(b, `,"version":`...)
		b = appendJSONString(b, f.Version)
		b = append(b, `,"image_url":`...)
		b = appendJSONString(b, f.ImageURL)
		b = append(b, '}')
		return b
	})
	b = append(b, `,"hardware":`...)
	if h := n.Hardware; h == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"bios":`...)
		b = appendJSONMap(b, h.BIOS)
		b = append(b, `,"secure_boot":`...)
		b = appendJSONBoolPtr(b, h.SecureBoot)
		b = append(b, `,"read_at":`...)
		b = appendJSONTimePtr(b, h.ReadAt)
		b = append(b, `,"lacks":`...)
		b = appendJSONStrings(b, h.Lacks)
		b = append(b, `,"unmet":`...)
		b = appendJSONStrings(b, h.Unmet)
		b = append(b, `,"waiting":`...)
		b = strconv.AppendBool(b, h.Waiting)
		b = append(b, `,"volumes":`...)
		b = appendJSONArray(b, h.Volumes, func(b []byte, v *api.ObservedVolume) []byte {
			b = append(b, `{"name":`...)
			b = appendJSONString(b, v.Name)
			b = append(b, `,"raid_level":`...)
			b = appendJSONString(b, v.RAIDLevel)
			b = append(b, `,"size_gb":`...)
			b = strconv.AppendInt(b, int64(v.SizeGB), 10)
			b = append(b, `,"drives":`...)
			b = appendJSONStrings(b, v.Drives)
			b = append(b, '}')
			return b
		})
		b = append(b, `,"firmware":`...)
		b = appendJSONMap(b, h.Firmware)
		b = append(b, '}')
	}
	b = append(b, `,"health":{"state":`...)
	b = appendJSONString(b, n.Health.State)
	b = append(b, `,"reasons":`...)
	b = appendJSONStrings(b, n.Health.Reasons)
	b = append(b, `,"hottest_c":`...)
	b = appendJSONFloat(b, n.Health.HottestC)
	b = append(b, `,"fans_failed":`...)
	b = strconv.AppendInt(b, int64(n.Health.FansFailed), 10)
	b = append(b, `,"psus_failed":`...)
	b = strconv.AppendInt(b, int64(n.Health.PSUsFailed), 10)
	b = append(b, `,"read_at":`...)
	b = appendJSONTimePtr(b, n.Health.ReadAt)
	b = append(b, `},"properties":{`...)
	p, comma := n.Properties, false
	field := func(name string) {
		if comma {
			b = append(b, ',')
		}
		comma = true
		b = append(b, name...)
	}
	if p.CPUs != 0 {
		field(`"cpus":`)
		b = strconv.AppendInt(b, int64(p.CPUs), 10)
	}
	if p.MemoryMB != 0 {
		field(`"memory_mb":`)
		b = strconv.AppendInt(b, int64(p.MemoryMB), 10)
	}
	if p.LocalGB != 0 {
		field(`"local_gb":`)
		b = strconv.AppendInt(b, int64(p.LocalGB), 10)
	}
	if p.CPUArch != "" {
		field(`"cpu_arch":`)
		b = appendJSONString(b, p.CPUArch)
	}
	b = append(b, `},"property_overrides":`...)
	b = appendJSONArray(b, n.PropertyOverrides, func(b []byte, o *api.PropertyName) []byte {
		b = appendJSONString(b, string(*o))
		return b
	})
	b = append(b, `,"maintenance":`...)
	b = strconv.AppendBool(b, n.Maintenance)
	b = append(b, `,"maintenance_reason":`...)
	b = appendJSONString(b, n.MaintenanceReason)
	b = append(b, `,"clean_erase":`...)
	b = appendJSONString(b, string(n.CleanErase))
	b = append(b, `,"inspect_on_enroll":`...)
	b = appendJSONBoolPtr(b, n.InspectOnEnroll)
	b = append(b, `,"power_state":`...)
	b = appendJSONString(b, string(n.PowerState))
	b = append(b, `,"provision_state":`...)
	b = appendJSONString(b, string(n.ProvisionState))
	b = append(b, `,"fault":`...)
	b = appendJSONString(b, string(n.Fault))
	b = append(b, `,"last_error":`...)
	b = appendJSONString(b, n.LastError)
	b = append(b, `,"fault_since":`...)
	b = appendJSONTimePtr(b, n.FaultSince)
	b = append(b, `,"bmc_failures":`...)
	b = strconv.AppendInt(b, int64(n.BMCFailures), 10)
	b = append(b, `,"instance_id":`...)
	b = appendJSONString(b, n.InstanceID)
	b = append(b, `,"inspected_at":`...)
	b = appendJSONTimePtr(b, n.InspectedAt)
	b = append(b, `,"ports":`...)
	b = appendJSONArray(b, n.Ports, func(b []byte, port *api.NodePort) []byte {
		b = append(b, `{"name":`...)
		b = appendJSONString(b, port.Name)
		b = append(b, `,"mac":`...)
		b = appendJSONString(b, port.MAC)
		b = append(b, `,"link_up":`...)
		b = strconv.AppendBool(b, port.LinkUp)
		b = append(b, `,"speed_mbps":`...)
		b = strconv.AppendInt(b, int64(port.SpeedMbps), 10)
		b = append(b, `,"lldp":`...)
		if l := port.LLDP; l == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, `{"switch_chassis_id":`...)
			b = appendJSONString(b, l.SwitchChassisID)
			b = append(b, `,"switch_system_name":`...)
			b = appendJSONString(b, l.SwitchSystemName)
			b = append(b, `,"switch_port_id":`...)
			b = appendJSONString(b, l.SwitchPortID)
			b = append(b, `,"switch_port_description":`...)
			b = appendJSONString(b, l.SwitchPortDescription)
			b = append(b, `,"vlan_id":`...)
			b = strconv.AppendInt(b, int64(l.VLANID), 10)
			b = append(b, '}')
		}
		b = append(b, '}')
		return b
	})
	b = append(b, `,"agent":`...)
	if a := n.Agent; a == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"purpose":`...)
		b = appendJSONString(b, string(a.Purpose))
		if a.Command != "" {
			b = append(b, `,"command":`...)
			b = appendJSONString(b, string(a.Command))
		}
		if a.State != "" {
			b = append(b, `,"state":`...)
			b = appendJSONString(b, string(a.State))
		}
		b = append(b, `,"progress":`...)
		b = strconv.AppendInt(b, int64(a.Progress), 10)
		b = append(b, `,"last_seen_at":`...)
		b = appendJSONTimePtr(b, a.LastSeenAt)
		b = append(b, '}')
	}
	b = append(b, `,"flow":`...)
	if f := n.Flow; f == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"name":`...)
		b = appendJSONString(b, f.Name)
		b = append(b, `,"steps":`...)
		b = appendJSONStrings(b, f.Steps)
		b = append(b, `,"step":`...)
		b = appendJSONString(b, f.Step)
		b = append(b, `,"step_index":`...)
		b = strconv.AppendInt(b, int64(f.StepIndex), 10)
		b = append(b, `,"step_started_at":`...)
		b = appendJSONTime(b, f.StepStartedAt)
		b = append(b, '}')
	}
	b = append(b, `,"created_at":`...)
	b = appendJSONTime(b, n.CreatedAt)
	b = append(b, `,"updated_at":`...)
	b = appendJSONTime(b, n.UpdatedAt)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, n.Version, 10)
	return append(b, '}')
}

func appendJSONBoolPtr(b []byte, v *bool) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendBool(b, *v)
}

func appendJSONTimePtr(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendJSONTime(b, *t)
}

// appendJSONTime writes t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds, trailing zeros dropped).
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

func appendJSONStrings(b []byte, ss []string) []byte {
	return appendJSONArray(b, ss, func(b []byte, s *string) []byte { return appendJSONString(b, *s) })
}

// appendJSONMap writes a map with its keys sorted, as encoding/json.
func appendJSONMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, m[k])
	}
	return append(b, '}')
}

// appendJSONFloat writes f as encoding/json writes a float64.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, "null"...) // encoding/json refuses them; health never has one
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s quoted as encoding/json does with HTML
// escaping (json.Encoder's default): <, > and & as \u003c..., control
// characters escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONArray writes s as encoding/json does (nil is null), each
// element by each.
func appendJSONArray[T any](b []byte, s []T, each func([]byte, *T) []byte) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, &s[i])
	}
	return append(b, ']')
}

// derefVolumes is the volumes p points to; nil for none (null).
func derefVolumes(p *[]api.Volume) []api.Volume {
	if p == nil {
		return nil
	}
	return *p
}
