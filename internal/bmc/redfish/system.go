package redfish

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// maxDoc bounds what we read of one Redfish document.
const maxDoc = 8 << 20

// shapeError: the document is JSON but not an object.
type shapeError struct{ what string }

func (e *shapeError) Error() string { return e.what }

// system is the part of a ComputerSystem the driver uses. It is decoded
// leniently rather than with schemas.ComputerSystem: gofish's typed decode
// fails as a whole on one mistyped field ("Count": "2", "PowerState": 1),
// and real BMCs send such things.
type system struct {
	Path        string
	PowerState  string
	ETag        string
	ResetTarget string
	ResetAction doc // the #ComputerSystem.Reset action, for its allowable values
	BootTarget  string
	BootEnabled string
	BootTargets []string // advertised, may be empty
	BootEnables []string // advertised, may be empty
	// BootMode is BootSourceOverrideMode ("UEFI", "Legacy"; "" when the
	// system does not have the property).
	BootMode string
	// unverified: a pending override read from a settings object that
	// does not show it (readOverride).
	unverified     bool
	SettingsTarget string
	ManagedBy      []string
	VirtualMedia   string
	Processors     string
	// Bios and SecureBoot are the links to those resources ("" none).
	Bios, SecureBoot string
	LogicalCPUs      int
	MemoryGiB        float64
	UUID, Serial     string
}

// getDoc GETs a Redfish document (one HTTP request) and decodes it as a
// JSON object.
func getDoc(api *gofish.APIClient, path string) (doc, http.Header, error) {
	resp, err := api.Get(path)
	defer schemas.DeferredCleanupHTTPResponse(resp)
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDoc))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, &shapeError{what: fmt.Sprintf("%s is not a JSON object", path)}
	}
	return doc(m), resp.Header, nil
}

func getSystem(api *gofish.APIClient, path string) (*system, error) {
	d, hdr, err := getDoc(api, path)
	if err != nil {
		if statusOf(err) == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %s", ErrSystemNotFound, path)
		}
		return nil, err
	}
	// Keep the path we asked for: some BMCs report a different @odata.id
	// (trailing slash, other case) and PATCH must go where GET went.
	s := &system{Path: path}
	s.ETag = hdr.Get("ETag")
	if s.ETag == "" {
		s.ETag = d.str("@odata.etag")
	}
	s.PowerState = d.str("PowerState")
	s.UUID = d.str("UUID")
	s.Serial = d.str("SerialNumber")

	s.ResetAction = d.obj("Actions").obj("#ComputerSystem.Reset")
	s.ResetTarget = relPath(s.ResetAction.str("target"))

	boot := d.obj("Boot")
	s.BootTarget = boot.str("BootSourceOverrideTarget")
	s.BootEnabled = boot.str("BootSourceOverrideEnabled")
	s.BootTargets = boot.strs("BootSourceOverrideTarget@Redfish.AllowableValues")
	s.BootEnables = boot.strs("BootSourceOverrideEnabled@Redfish.AllowableValues")
	s.BootMode = boot.str("BootSourceOverrideMode")
	s.SettingsTarget = d.obj("@Redfish.Settings").link("SettingsObject")

	for _, l := range d.obj("Links").arr("ManagedBy") {
		if p := linkOf(l); p != "" {
			s.ManagedBy = append(s.ManagedBy, p)
		}
	}
	s.VirtualMedia = d.link("VirtualMedia")
	s.Processors = d.link("Processors")
	s.Bios = d.link("Bios")
	s.SecureBoot = d.link("SecureBoot")

	ps := d.obj("ProcessorSummary")
	s.LogicalCPUs = ps.int("LogicalProcessorCount")
	s.MemoryGiB = d.obj("MemorySummary").num("TotalSystemMemoryGiB")
	return s, nil
}

// power maps a Redfish PowerState. Transitional states are unknown, not
// their destination: "PoweringOff" is not yet safe to treat as off.
func power(s string) bmc.PowerState {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on":
		return bmc.PowerOn
	case "off":
		return bmc.PowerOff
	default:
		return bmc.PowerUnknown
	}
}

// doc is a leniently read JSON object: lookups fall back to a
// case-insensitive match, and values of the wrong type read as zero (or
// are converted when that is unambiguous, like "2" for 2).
type doc map[string]any

func (d doc) get(key string) any {
	if d == nil {
		return nil
	}
	if v, ok := d[key]; ok {
		return v
	}
	for k, v := range d {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

func (d doc) obj(key string) doc {
	m, _ := d.get(key).(map[string]any)
	return doc(m)
}

func (d doc) arr(key string) []any {
	a, _ := d.get(key).([]any)
	return a
}

func (d doc) str(key string) string { return strOf(d.get(key)) }

// boolean reads a JSON boolean (or "true"/"false"); ok false when key
// holds neither.
func (d doc) boolean(key string) (v, ok bool) {
	switch x := d.get(key).(type) {
	case bool:
		return x, true
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(x))
		return b, err == nil
	}
	return false, false
}

func (d doc) num(key string) float64 {
	switch v := d.get(key).(type) {
	case float64:
		return v
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err == nil {
			return f
		}
	}
	return 0
}

func (d doc) int(key string) int {
	f := d.num(key)
	if f < 0 || f > math.MaxInt32 {
		return 0
	}
	return int(f)
}

func (d doc) strs(key string) []string {
	var out []string
	for _, v := range d.arr(key) {
		if s := strOf(v); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// link reads {"@odata.id": "..."} (or a bare string) under key.
func (d doc) link(key string) string { return linkOf(d.get(key)) }

func linkOf(v any) string {
	switch v := v.(type) {
	case string:
		return relPath(v)
	case map[string]any:
		if s := doc(v).str("@odata.id"); s != "" {
			return relPath(s)
		}
		return relPath(doc(v).str("href"))
	}
	return ""
}

// relPath turns an absolute link (some BMCs send them) into the path gofish
// expects; gofish prefixes every path with the endpoint.
func relPath(link string) string {
	link = strings.TrimSpace(link)
	if !strings.Contains(link, "://") {
		return link
	}
	u, err := url.Parse(link)
	if err != nil {
		return link
	}
	return u.RequestURI()
}

func strOf(v any) string {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// members returns the member links of a collection document.
func (d doc) members() []string {
	var out []string
	for _, m := range d.arr("Members") {
		if p := linkOf(m); p != "" {
			out = append(out, strings.TrimSuffix(p, "/"))
		}
	}
	return out
}
