package redfish

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/stmcginnis/gofish"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// BIOS settings and UEFI Secure Boot (issue 30): the system's Bios
// resource, its @Redfish.Settings object, the attribute registry it
// names, and the SecureBoot resource.
//
// They are read with doc, leniently, as the system is, not with gofish's
// schemas.Bios, AttributeRegistry and SecureBoot (v0.26.0): its registry
// decodes LowerBound and UpperBound as *uint64, so one negative bound
// fails the whole registry; Bios.UpdateBiosAttributes PATCHes the Bios
// itself when it has no @Redfish.Settings (real BMCs answer 405 there),
// and reads nothing back, so a value the BMC took and dropped goes
// unnoticed. Writes go through patchResource (If-Match, 412/428 retry).

var (
	_ bmc.BIOSSettings     = (*Client)(nil)
	_ bmc.SecureBootSetter = (*Client)(nil)
)

// biosDoc is the part of a Bios resource the driver uses.
type biosDoc struct {
	path     string
	attrs    doc
	registry string
	// settings is the @Redfish.Settings SettingsObject ("" none);
	// applyTimes its SupportedApplyTimes.
	settings   string
	applyTimes []string
}

// getBIOS reads the system and its Bios; a system without one is
// KindUnsupported.
func getBIOS(api *gofish.APIClient, sys, op string) (*biosDoc, error) {
	s, err := getSystem(api, sys)
	if err != nil {
		return nil, err
	}
	if s.Bios == "" {
		return nil, bmc.Errorf(bmc.KindUnsupported, op, "system %s has no Bios resource: the BMC offers no BIOS settings over Redfish", s.Path)
	}
	d, _, err := getDoc(api, s.Bios)
	if err != nil {
		if statusOf(err) == http.StatusNotFound {
			return nil, bmc.Errorf(bmc.KindUnsupported, op, "system %s links its Bios %s, which the BMC does not serve (404)", s.Path, s.Bios)
		}
		return nil, fmt.Errorf("reading the Bios %s: %w", s.Bios, reduce(err))
	}
	st := d.obj("@Redfish.Settings")
	return &biosDoc{
		path: s.Bios, attrs: d.obj("Attributes"), registry: d.str("AttributeRegistry"),
		settings: st.link("SettingsObject"), applyTimes: st.strs("SupportedApplyTimes"),
	}, nil
}

// settingsTargets are where the Bios's pending settings are: its
// SettingsObject; without one, <bios>/Settings (the DMTF's and most
// vendors' name) and then <bios>/SD (AMI MegaRAC, which Gigabyte serves
// without @Redfish.Settings: community.general#6433).
func (b *biosDoc) settingsTargets() []string {
	if b.settings != "" {
		return []string{b.settings}
	}
	base := strings.TrimSuffix(b.path, "/")
	return []string{base + "/Settings", base + "/SD"}
}

// pendingDoc is a settings object as read.
type pendingDoc struct {
	path  string
	etag  string
	attrs doc // nil when the object is not there (AMI: 404 while empty)
	found bool
}

// readSettings reads the first settings object there is; none found (a
// settings object that answers 404 while nothing is pending) is not an
// error.
func readSettings(api *gofish.APIClient, b *biosDoc) (pendingDoc, error) {
	targets := b.settingsTargets()
	for _, t := range targets {
		d, hdr, err := getDoc(api, t)
		if statusOf(err) == http.StatusNotFound || statusOf(err) == http.StatusMethodNotAllowed {
			continue
		}
		if err != nil {
			return pendingDoc{}, fmt.Errorf("reading the BIOS settings object %s: %w", t, reduce(err))
		}
		return pendingDoc{path: t, etag: etagOf(d, hdr), attrs: d.obj("Attributes"), found: true}, nil
	}
	return pendingDoc{path: targets[0]}, nil
}

func etagOf(d doc, hdr http.Header) string {
	if e := hdr.Get("ETag"); e != "" {
		return e
	}
	return d.str("@odata.etag")
}

// biosText is an attribute's value as bmc.BIOSValues has it.
func biosText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// BIOSAttributes reads the attributes in effect: two requests.
func (cl *Client) BIOSAttributes(ctx context.Context) (bmc.BIOSValues, error) {
	const op = "read BIOS attributes"
	var out bmc.BIOSValues
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		b, err := getBIOS(api, sys, op)
		if err != nil {
			return err
		}
		out = make(bmc.BIOSValues, len(b.attrs))
		for k, v := range b.attrs {
			out[k] = biosText(v)
		}
		return nil
	})
	return out, err
}

// PendingBIOS reads the settings object's attributes that differ from
// those in effect (settings objects show only the pending ones, or every
// attribute: iLO, Lenovo).
func (cl *Client) PendingBIOS(ctx context.Context) (bmc.BIOSValues, error) {
	const op = "read pending BIOS settings"
	out := bmc.BIOSValues{}
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		b, err := getBIOS(api, sys, op)
		if err != nil {
			return err
		}
		p, err := readSettings(api, b)
		if err != nil {
			return err
		}
		for k, v := range p.attrs {
			if biosText(v) != biosText(b.attrs.get(k)) {
				out[k] = biosText(v)
			}
		}
		return nil
	})
	return out, err
}

// BIOSRegistry reads the attribute registry the Bios names, or nil when
// the BMC serves none (see findRegistry).
func (cl *Client) BIOSRegistry(ctx context.Context) (bmc.BIOSRegistry, error) {
	const op = "read BIOS attribute registry"
	var reg bmc.BIOSRegistry
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		b, err := getBIOS(api, sys, op)
		if err != nil {
			return err
		}
		reg, err = cl.c.registryOf(api, b.registry)
		return err
	})
	return reg, err
}

// registryOf finds and parses the registry named (once per name and
// BMC: conn.registries); nil when there is none (not cached: a BMC may
// start serving one).
func (c *conn) registryOf(api *gofish.APIClient, name string) (bmc.BIOSRegistry, error) {
	if name != "" {
		if r, ok := c.registries.Load(name); ok {
			return r.(bmc.BIOSRegistry), nil
		}
	}
	d, err := findRegistry(api, name)
	if err != nil || d == nil {
		return nil, err
	}
	reg := parseRegistry(d)
	if name != "" {
		c.registries.Store(name, reg)
	}
	return reg, nil
}

// maxRegistries bounds the registry files looked at.
const maxRegistries = 64

// findRegistry finds the AttributeRegistry document called name through
// the service's Registries collection: the MessageRegistryFile whose
// path ends in the name (the DMTF's convention), else one whose Id or
// Registry is the name, else (sushy-tools, whose registry file names
// another registry than its Bios does) a BIOS registry file whose
// Location holds a registry of that Id. Only the files named like a BIOS
// attribute registry are read, and only Locations on the BMC (Uri, not
// PublicationUri). nil when none is found: many BMCs serve none.
func findRegistry(api *gofish.APIClient, name string) (doc, error) {
	if name == "" {
		return nil, nil
	}
	root, _, err := getDoc(api, "/redfish/v1/")
	if err != nil {
		return nil, fmt.Errorf("reading the service root: %w", reduce(err))
	}
	coll := root.link("Registries")
	if coll == "" {
		return nil, nil
	}
	cd, _, err := getDoc(api, coll)
	if statusOf(err) == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the registries %s: %w", coll, reduce(err))
	}
	members := cd.members()
	if len(members) > maxRegistries {
		members = members[:maxRegistries]
	}
	exact := func(m string) bool { return strings.EqualFold(path.Base(m), name) }
	sort.SliceStable(members, func(i, j int) bool { return exact(members[i]) && !exact(members[j]) })
	for _, m := range members {
		if !exact(m) && !strings.HasPrefix(strings.ToLower(path.Base(m)), "biosattributeregistry") {
			continue
		}
		file, _, err := getDoc(api, m)
		if statusOf(err) == http.StatusNotFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the registry file %s: %w", m, reduce(err))
		}
		named := exact(m) || strings.EqualFold(file.str("Id"), name) || strings.EqualFold(file.str("Registry"), name)
		for _, loc := range registryLocations(file) {
			r, _, err := getDoc(api, loc)
			if statusOf(err) == http.StatusNotFound {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading the registry %s: %w", loc, reduce(err))
			}
			if (named || strings.EqualFold(r.str("Id"), name)) && r.obj("RegistryEntries") != nil {
				return r, nil
			}
		}
	}
	return nil, nil
}

// registryLocations are a registry file's Uris on the BMC, English first.
func registryLocations(file doc) []string {
	var en, other []string
	for _, l := range file.arr("Location") {
		m, _ := l.(map[string]any)
		ld := doc(m)
		u := relPath(ld.str("Uri"))
		if u == "" || strings.Contains(u, "://") {
			continue
		}
		if strings.HasPrefix(strings.ToLower(ld.str("Language")), "en") {
			en = append(en, u)
		} else {
			other = append(other, u)
		}
	}
	return append(en, other...)
}

// parseRegistry reads RegistryEntries.Attributes.
func parseRegistry(r doc) bmc.BIOSRegistry {
	out := bmc.BIOSRegistry{}
	for _, e := range r.obj("RegistryEntries").arr("Attributes") {
		m, _ := e.(map[string]any)
		a := doc(m)
		name := a.str("AttributeName")
		if name == "" {
			continue
		}
		attr := bmc.BIOSAttribute{Name: name, Type: attrType(a.str("Type")), MaxLength: a.int("MaxLength")}
		for _, v := range a.arr("Value") {
			vm, _ := v.(map[string]any)
			if n := doc(vm).str("ValueName"); n != "" {
				attr.Values = append(attr.Values, n)
			}
		}
		// Immutable attributes "shall not be modified" either (the
		// AttributeRegistry schema).
		ro, _ := a.boolean("ReadOnly")
		im, _ := a.boolean("Immutable")
		attr.ReadOnly = ro || im
		attr.LowerBound = bound(a, "LowerBound")
		attr.UpperBound = bound(a, "UpperBound")
		out[name] = attr
	}
	return out
}

func bound(a doc, key string) *int64 {
	switch v := a.get(key).(type) {
	case float64:
		n := int64(v)
		return &n
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			return &n
		}
	}
	return nil
}

func attrType(t string) bmc.BIOSAttributeType {
	for _, k := range []bmc.BIOSAttributeType{bmc.BIOSEnumeration, bmc.BIOSString, bmc.BIOSInteger, bmc.BIOSBoolean, bmc.BIOSPassword} {
		if strings.EqualFold(t, string(k)) {
			return k
		}
	}
	return bmc.BIOSAttributeType(t)
}

// biosJSON converts a text value to the JSON type the BMC uses: the
// registry's type (checked against its values, bounds, length and
// read-only flag), else the type of the value in effect.
func biosJSON(name, text string, reg bmc.BIOSRegistry, current doc) (any, error) {
	if a, ok := reg[name]; ok {
		switch {
		case a.ReadOnly:
			return nil, fmt.Errorf("%s is read-only", name)
		case a.Type == bmc.BIOSEnumeration:
			if len(a.Values) > 0 && !slices.Contains(a.Values, text) {
				return nil, fmt.Errorf("%s=%q is not one of %s", name, text, strings.Join(a.Values, ", "))
			}
			return text, nil
		case a.Type == bmc.BIOSString || a.Type == bmc.BIOSPassword:
			if a.MaxLength > 0 && len(text) > a.MaxLength {
				return nil, fmt.Errorf("%s is %d characters long, more than the %d it takes", name, len(text), a.MaxLength)
			}
			return text, nil
		case a.Type == bmc.BIOSInteger:
			n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s=%q is not an integer", name, text)
			}
			if (a.LowerBound != nil && n < *a.LowerBound) || (a.UpperBound != nil && n > *a.UpperBound) {
				return nil, fmt.Errorf("%s=%d is out of its bounds %s", name, n, bounds(a))
			}
			return n, nil
		case a.Type == bmc.BIOSBoolean:
			v, err := strconv.ParseBool(strings.TrimSpace(text))
			if err != nil {
				return nil, fmt.Errorf("%s=%q is not true or false", name, text)
			}
			return v, nil
		}
	} else if reg != nil {
		return nil, fmt.Errorf("%s is not in the BMC's attribute registry", name)
	}
	cur, ok := current[name]
	if !ok {
		return nil, fmt.Errorf("%s is not an attribute of this BIOS", name)
	}
	switch cur.(type) {
	case float64:
		if n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64); err == nil {
			return n, nil
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not a number, as the BIOS's value is", name, text)
		}
		return f, nil
	case bool:
		v, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not true or false, as the BIOS's value is", name, text)
		}
		return v, nil
	case string, nil:
		return text, nil
	}
	return nil, fmt.Errorf("%s holds a %s value; only text, numbers and booleans can be set", name, jsonKind(cur))
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func bounds(a bmc.BIOSAttribute) string {
	lo, hi := "-∞", "∞"
	if a.LowerBound != nil {
		lo = strconv.FormatInt(*a.LowerBound, 10)
	}
	if a.UpperBound != nil {
		hi = strconv.FormatInt(*a.UpperBound, 10)
	}
	return lo + ".." + hi
}

// showValues lists values as name=value, sorted.
func showValues(vs map[string]any) string {
	parts := make([]string, 0, len(vs))
	for k, v := range vs {
		parts = append(parts, k+"="+biosText(v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// SetBIOS writes the values to the settings object, to apply at the next
// reset (with @Redfish.SettingsApplyTime OnReset where the Bios lists
// it: iDRAC applies nothing at a reset without it), and reads them back.
// Values already in effect, or already pending, are not sent again: a
// retry sends nothing twice (iDRAC refuses a second PATCH while its job
// is scheduled). A value the BMC accepted and does not show (pending or
// in effect) fails the call with KindRefused naming it; a 400 is
// KindRefused naming the attributes the BMC's messages name. needsReset
// is false when every value is in effect (a BMC that applies at once,
// sushy-tools).
func (cl *Client) SetBIOS(ctx context.Context, values bmc.BIOSValues) (bool, error) {
	const op = "write BIOS settings"
	if len(values) == 0 {
		return false, nil
	}
	needsReset := false
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		b, err := getBIOS(api, sys, op)
		if err != nil {
			return err
		}
		reg, err := cl.c.registryOf(api, b.registry)
		if err != nil {
			return err
		}
		want := make(map[string]any, len(values))
		var bad []string
		for name, text := range values {
			v, err := biosJSON(name, text, reg, b.attrs)
			if err != nil {
				bad = append(bad, err.Error())
				continue
			}
			want[name] = v
		}
		if len(bad) > 0 {
			sort.Strings(bad)
			return &bmc.Error{Kind: bmc.KindRefused, Op: op, Err: fmt.Errorf("BIOS of %s: %s", b.path, strings.Join(bad, "; "))}
		}
		p, err := readSettings(api, b)
		if err != nil {
			return err
		}
		send := map[string]any{}
		for name, v := range want {
			// What the next boot will have: the pending value, else the
			// one in effect.
			next, pending := p.attrs[name]
			if !pending {
				next = b.attrs.get(name)
			}
			if biosText(next) != biosText(v) {
				send[name] = v
			}
		}
		if len(send) > 0 {
			where, err := cl.patchBIOS(ctx, api, b, p, send)
			if err != nil {
				return err
			}
			if err := verifyBIOS(api, sys, b, where, send); err != nil {
				return err
			}
		}
		now, err := getBIOS(api, sys, op)
		if err != nil {
			return err
		}
		for name, v := range want {
			if biosText(now.attrs.get(name)) != biosText(v) {
				needsReset = true
			}
		}
		return nil
	})
	return needsReset, err
}

// patchBIOS PATCHes send to the settings object (the next target when a
// guessed one answers 404 or 405) and returns where it went.
func (cl *Client) patchBIOS(ctx context.Context, api *gofish.APIClient, b *biosDoc, p pendingDoc, send map[string]any) (string, error) {
	const op = "write BIOS settings"
	payload := map[string]any{"Attributes": send}
	if containsFold(b.applyTimes, "OnReset") {
		payload["@Redfish.SettingsApplyTime"] = map[string]any{"ApplyTime": "OnReset"}
	}
	targets := b.settingsTargets()
	if p.found {
		// The one that answered first.
		targets = append([]string{p.path}, slices.DeleteFunc(targets, func(t string) bool { return t == p.path })...)
	}
	var err error
	for i, t := range targets {
		etag := ""
		if p.found && p.path == t {
			etag = p.etag
		}
		err = patchResource(ctx, api, t, payload, etag, func() (string, error) {
			d, hdr, err := getDoc(api, t)
			if statusOf(err) == http.StatusNotFound {
				return "", nil // AMI's SD, while nothing is pending: "*"
			}
			if err != nil {
				return "", err
			}
			return etagOf(d, hdr), nil
		})
		if err == nil {
			return t, nil
		}
		st := statusOf(err)
		if (st == http.StatusNotFound || st == http.StatusMethodNotAllowed) && i < len(targets)-1 {
			continue
		}
		switch {
		case st == http.StatusBadRequest:
			return "", refusedBIOS(err, send, t, cl.c.redactor())
		case (st == http.StatusNotFound || st == http.StatusMethodNotAllowed) && b.settings == "":
			return "", bmc.Errorf(bmc.KindUnsupported, op, "the Bios %s has no @Redfish.Settings object and neither %s takes a PATCH (%v)",
				b.path, strings.Join(b.settingsTargets(), " nor "), reduce(err))
		}
		return "", fmt.Errorf("writing %s to %s: %w", showValues(send), t, reduce(err))
	}
	return "", err
}

// refusedBIOS is the error of a 400 to a PATCH of BIOS attributes: the
// attributes the BMC's messages name (else all sent), what was sent,
// and the BMC's messages.
func refusedBIOS(err error, sent map[string]any, target string, secrets *redact.Secrets) error {
	he, _ := asHTTPError(err, secrets)
	msg := he.Error()
	var named []string
	for name := range sent {
		if strings.Contains(msg, name) {
			named = append(named, name)
		}
	}
	sort.Strings(named)
	what := "the values"
	if len(named) > 0 {
		what = strings.Join(named, ", ")
	}
	return &bmc.Error{Kind: bmc.KindRefused, Op: "write BIOS settings",
		Err: fmt.Errorf("the BMC refused %s (sent %s to %s): %w", what, showValues(sent), target, he)}
}

// verifyBIOS reads back what was written to where: each value must show
// in the settings object (pending) or in the Bios (applied at once).
func verifyBIOS(api *gofish.APIClient, sys string, b *biosDoc, where string, sent map[string]any) error {
	const op = "write BIOS settings"
	var pending doc
	d, _, err := getDoc(api, where)
	switch {
	case statusOf(err) == http.StatusNotFound:
		// Nothing pending there at all.
	case err != nil:
		return fmt.Errorf("reading the BIOS settings back from %s: %w", where, reduce(err))
	default:
		pending = d.obj("Attributes")
	}
	now, err := getBIOS(api, sys, op)
	if err != nil {
		return err
	}
	var dropped []string
	for name, v := range sent {
		got, ok := pending[name]
		if biosText(now.attrs.get(name)) == biosText(v) || (ok && biosText(got) == biosText(v)) {
			continue
		}
		shows := "nothing pending"
		if ok {
			shows = "pending " + biosText(got)
		}
		dropped = append(dropped, fmt.Sprintf("%s=%s (shows %s, in effect %s)", name, biosText(v), shows, biosText(now.attrs.get(name))))
	}
	if len(dropped) > 0 {
		sort.Strings(dropped)
		return &bmc.Error{Kind: bmc.KindRefused, Op: op, Err: fmt.Errorf("%w: %s took %s", errNotApplied, where, strings.Join(dropped, ", "))}
	}
	return nil
}

// ---- Secure Boot ----

// secureBootDoc reads the system's SecureBoot resource.
func secureBootDoc(api *gofish.APIClient, sys, op string) (string, doc, string, error) {
	s, err := getSystem(api, sys)
	if err != nil {
		return "", nil, "", err
	}
	if s.SecureBoot == "" {
		return "", nil, "", bmc.Errorf(bmc.KindUnsupported, op, "system %s has no SecureBoot resource: the BMC offers no UEFI Secure Boot setting over Redfish", s.Path)
	}
	d, hdr, err := getDoc(api, s.SecureBoot)
	if err != nil {
		if statusOf(err) == http.StatusNotFound {
			return "", nil, "", bmc.Errorf(bmc.KindUnsupported, op, "system %s links its SecureBoot %s, which the BMC does not serve (404)", s.Path, s.SecureBoot)
		}
		return "", nil, "", fmt.Errorf("reading %s: %w", s.SecureBoot, reduce(err))
	}
	return s.SecureBoot, d, etagOf(d, hdr), nil
}

func secureBootState(where string, d doc, op string) (bmc.SecureBootState, error) {
	on, ok := d.boolean("SecureBootEnable")
	if !ok {
		return bmc.SecureBootState{}, bmc.Errorf(bmc.KindBMCError, op, "%s has no SecureBootEnable", where)
	}
	st := bmc.SecureBootState{Enabled: on}
	switch strings.ToLower(d.str("SecureBootCurrentBoot")) {
	case "enabled":
		t := true
		st.Current = &t
	case "disabled":
		f := false
		st.Current = &f
	}
	return st, nil
}

// SecureBoot reads SecureBootEnable and SecureBootCurrentBoot.
func (cl *Client) SecureBoot(ctx context.Context) (bmc.SecureBootState, error) {
	const op = "read Secure Boot"
	var st bmc.SecureBootState
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		where, d, _, err := secureBootDoc(api, sys, op)
		if err != nil {
			return err
		}
		st, err = secureBootState(where, d, op)
		return err
	})
	return st, err
}

// SetSecureBoot PATCHes SecureBootEnable (nothing when it is set already)
// and reads it back. A reset is needed while the running boot is not
// as asked (or the BMC does not say).
func (cl *Client) SetSecureBoot(ctx context.Context, enable bool) (bool, error) {
	const op = "set Secure Boot"
	needsReset := false
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		where, d, etag, err := secureBootDoc(api, sys, op)
		if err != nil {
			return err
		}
		st, err := secureBootState(where, d, op)
		if err != nil {
			return err
		}
		if st.Enabled != enable {
			err := patchResource(ctx, api, where, map[string]any{"SecureBootEnable": enable}, etag, func() (string, error) {
				d, hdr, err := getDoc(api, where)
				if err != nil {
					return "", err
				}
				return etagOf(d, hdr), nil
			})
			if statusOf(err) == http.StatusBadRequest {
				he, _ := asHTTPError(err, cl.c.redactor())
				return &bmc.Error{Kind: bmc.KindRefused, Op: op, Err: fmt.Errorf("the BMC refused SecureBootEnable=%v at %s: %w", enable, where, he)}
			}
			if err != nil {
				return fmt.Errorf("writing SecureBootEnable=%v to %s: %w", enable, where, reduce(err))
			}
			if _, d, _, err = secureBootDoc(api, sys, op); err != nil {
				return err
			}
			if st, err = secureBootState(where, d, op); err != nil {
				return err
			}
			if st.Enabled != enable {
				return &bmc.Error{Kind: bmc.KindRefused, Op: op, Err: fmt.Errorf("%w: %s was sent SecureBootEnable=%v and shows %v", errNotApplied, where, enable, st.Enabled)}
			}
		}
		needsReset = st.Current == nil || *st.Current != enable
		return nil
	})
	return needsReset, err
}
