package baremetal

import (
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/deployspec"
)

// Text checks. PostgreSQL's text type cannot hold NUL or invalid UTF-8
// (SQLite stores both), so every string the API stores is checked here,
// before either store sees it: both stores then give the same answer.

// ValidateLine checks a single-line text field (a reason, a user name, a
// label): valid UTF-8 without control characters, at most max bytes
// (max <= 0: no limit). The message never echoes the value, which may be
// a credential.
func ValidateLine(field, s string, max int) error {
	return checkText(field, s, max, false)
}

// ValidateText checks free text (user data, metadata values), where
// newlines, tabs and other control characters are fine: valid UTF-8
// without NUL, at most max bytes (max <= 0: no limit).
func ValidateText(field, s string, max int) error {
	return checkText(field, s, max, true)
}

func checkText(field, s string, max int, multiline bool) error {
	if max > 0 && len(s) > max {
		return FieldErrorf(field, "%s must be at most %d bytes, got %d", field, max, len(s))
	}
	if why := badText(s, multiline); why != "" {
		return FieldErrorf(field, "%s %s", field, why)
	}
	return nil
}

// badText says what makes s unfit for storage as text, or "".
func badText(s string, multiline bool) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"): // a real U+FFFD is three bytes
			return fmt.Sprintf("is not valid UTF-8 (at byte %d)", i)
		case r == 0:
			return fmt.Sprintf("must not contain NUL characters (found one at byte %d)", i)
		case !multiline && unicode.IsControl(r):
			return fmt.Sprintf("must not contain control characters (found %U at byte %d)", r, i)
		}
	}
	return ""
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidateName checks a node or instance name: a DNS label (lowercase
// letters, digits, hyphens, at most 63 characters) that is not a UUID, so
// that "id or name" lookups are never ambiguous.
func ValidateName(field, name string) error {
	if name == "" {
		return FieldErrorf(field, "%s is required", field)
	}
	if !nameRE.MatchString(name) {
		return FieldErrorf(field, "%s %q must be a DNS label: 1-63 lowercase letters, digits or hyphens, starting and ending with a letter or digit", field, name)
	}
	if _, err := uuid.Parse(name); err == nil {
		return FieldErrorf(field, "%s %q must not be a UUID (it would be confused with an id)", field, name)
	}
	return nil
}

// ValidateProject checks a project name: the same DNS label as names, so
// that a project is safe in a URL path (/v1/quotas/{project}) and in logs.
// A UUID is fine here: projects are never looked up "by id or name".
func ValidateProject(field, project string) error {
	if project == "" {
		return FieldErrorf(field, "%s is required", field)
	}
	if !nameRE.MatchString(project) {
		return FieldErrorf(field, "%s %q must be a DNS label: 1-63 lowercase letters, digits or hyphens, starting and ending with a letter or digit", field, project)
	}
	return nil
}

// Integer ranges. They are what is physically sensible, and each fits the
// PostgreSQL integer (int32) column it is stored in; SQLite would store
// more, so without these bounds the two stores would answer differently.
const (
	MaxCPUs     = 65536
	MaxMemoryMB = math.MaxInt32 // 2 PiB
	MaxLocalGB  = math.MaxInt32 // 2 EiB
	// MaxQuotaInstances bounds a project's instance quota (-1: unlimited).
	MaxQuotaInstances = math.MaxInt32
)

var classRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidateResourceClass checks a resource class name.
func ValidateResourceClass(field, rc string) error {
	if rc == "" {
		return FieldErrorf(field, "%s is required", field)
	}
	if !classRE.MatchString(rc) {
		return FieldErrorf(field, "%s %q must be 1-63 letters, digits, '.', '_' or '-'", field, rc)
	}
	return nil
}

// Validate checks every operator-settable field of a node. It never
// mentions the password's value.
func (n *Node) Validate() error {
	if err := ValidateName("name", n.Name); err != nil {
		return err
	}
	if !slices.Contains(Drivers, n.Driver) {
		return FieldErrorf("driver", "driver %q is not supported; use one of: redfish, ipmi", n.Driver)
	}
	if err := n.BMC.validate(n.Driver); err != nil {
		return err
	}
	if err := ValidateResourceClass("resource_class", n.ResourceClass); err != nil {
		return err
	}
	if err := n.Properties.Validate(); err != nil {
		return err
	}
	var err error
	if n.Traits, err = ValidateTraits("traits", n.Traits); err != nil {
		return err
	}
	if n.Owner != "" {
		if err := ValidateProject("owner", n.Owner); err != nil {
			return err
		}
	}
	if err := n.Settings.Validate(); err != nil {
		return err
	}
	if n.CleanErase != CleanEraseDefault && !slices.Contains(CleanErases, n.CleanErase) {
		return FieldErrorf("clean_erase", "clean_erase %q is not an erase mode; use metadata, full or off (or leave it empty for the resource class's or the controller's)", n.CleanErase)
	}
	if n.Maintenance && strings.TrimSpace(n.MaintenanceReason) == "" {
		return FieldErrorf("maintenance_reason", "maintenance_reason is required when maintenance is true")
	}
	if !n.Maintenance && n.MaintenanceReason != "" {
		return FieldErrorf("maintenance_reason", "maintenance_reason may only be set when maintenance is true")
	}
	return ValidateLine("maintenance_reason", n.MaintenanceReason, 1024)
}

// Validate checks a node's hardware properties (0 means unknown).
func (p Properties) Validate() error {
	for _, f := range []struct {
		name   string
		v, max int
	}{{"properties.cpus", p.CPUs, MaxCPUs}, {"properties.memory_mb", p.MemoryMB, MaxMemoryMB}, {"properties.local_gb", p.LocalGB, MaxLocalGB}} {
		if f.v < 0 || f.v > f.max {
			return FieldErrorf(f.name, "%s must be between 0 and %d, got %d", f.name, f.max, f.v)
		}
	}
	return ValidateLine("properties.cpu_arch", p.CPUArch, 32)
}

func (b *BMC) validate(driver Driver) error {
	if b.Address == "" {
		return FieldErrorf("bmc.address", "bmc.address is required")
	}
	if err := ValidateLine("bmc.address", b.Address, 2048); err != nil {
		return err
	}
	u, err := url.Parse(b.Address)
	if err != nil || u.Host == "" {
		return FieldErrorf("bmc.address", "bmc.address %q is not a URL with a host (e.g. https://10.0.0.5 or ipmi://10.0.0.5:623)", redactURL(b.Address))
	}
	if u.User != nil {
		return FieldErrorf("bmc.address", "bmc.address must not contain credentials; use bmc.username and bmc.password")
	}
	switch driver {
	case DriverRedfish:
		if u.Scheme != "https" && u.Scheme != "http" {
			return FieldErrorf("bmc.address", "bmc.address scheme %q does not fit driver redfish; use https:// (or http://)", u.Scheme)
		}
		if err := ValidateLine("bmc.system_id", b.SystemID, 256); err != nil {
			return err
		}
		if err := b.validateSystemID(); err != nil {
			return err
		}
		if b.CipherSuite != 0 {
			return FieldErrorf("bmc.cipher_suite", "bmc.cipher_suite applies only to driver ipmi")
		}
	case DriverIPMI:
		if u.Scheme != "ipmi" {
			return FieldErrorf("bmc.address", "bmc.address scheme %q does not fit driver ipmi; use ipmi://host[:port]", u.Scheme)
		}
		if b.SystemID != "" {
			return FieldErrorf("bmc.system_id", "bmc.system_id applies only to driver redfish")
		}
		if b.CipherSuite < 0 || b.CipherSuite > 17 {
			return FieldErrorf("bmc.cipher_suite", "bmc.cipher_suite must be between 0 (automatic) and 17, got %d", b.CipherSuite)
		}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return FieldErrorf("bmc.address", "bmc.address port %q is not between 1 and 65535", p)
		}
	}
	if host := u.Hostname(); host == "" || strings.ContainsAny(host, " /") {
		return FieldErrorf("bmc.address", "bmc.address has an invalid host")
	} else if ip := net.ParseIP(host); ip == nil && len(host) > 253 {
		return FieldErrorf("bmc.address", "bmc.address host is too long")
	}
	// Every valid node has an endpoint key: the store's uniqueness of
	// physical servers rests on it.
	if _, err := BMCKey(driver, *b); err != nil {
		return err
	}
	if b.Username == "" {
		return FieldErrorf("bmc.username", "bmc.username is required")
	}
	if err := ValidateLine("bmc.username", b.Username, 64); err != nil {
		return err
	}
	if b.Password == "" {
		return FieldErrorf("bmc.password", "bmc.password is required")
	}
	return ValidateText("bmc.password", b.Password, 256)
}

// RedactURL returns a URL fit for logs and events: no userinfo, no query
// or fragment (presigned image URLs carry tokens there).
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return redactURL(s)
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// redactURL drops userinfo so an error never echoes credentials.
// validateSystemID accepts every spelling of a Redfish system (see
// api.RedfishSystemPath). A full URL must be on the BMC of bmc.address:
// one on another host names another BMC's system.
func (b *BMC) validateSystemID() error {
	if _, err := api.RedfishSystemPath(b.SystemID); err != nil {
		return FieldErrorf("bmc.system_id", "bmc.system_id %s", strings.TrimPrefix(err.Error(), api.ErrSystemIDSpelling.Error()+": "))
	}
	if !strings.Contains(b.SystemID, "://") {
		return nil
	}
	sys, err := BMCEndpointKey(DriverRedfish, strings.TrimSpace(b.SystemID))
	if err != nil {
		return FieldErrorf("bmc.system_id", "bmc.system_id %q is not a URL with a valid host", redactURL(b.SystemID))
	}
	if addr, err := BMCEndpointKey(DriverRedfish, b.Address); err == nil && addr != sys {
		return FieldErrorf("bmc.system_id", "bmc.system_id %q is on another BMC than bmc.address %q; give the system's path (e.g. /redfish/v1/Systems/1)",
			redactURL(b.SystemID), redactURL(b.Address))
	}
	return nil
}

func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	if i := strings.Index(s, "@"); i >= 0 {
		return "…" + s[i+1:]
	}
	return s
}

// MaxImageURL bounds image.url (bytes), as bmc.address is bounded: the
// URL goes to BMCs, whose own limits are lower still.
const MaxImageURL = 2048

// MaxUserData bounds user_data (bytes).
const MaxUserData = 64 << 10

// Bounds of an instance's deploy_timeout: how long the booted OS has to
// call back. Under a minute no real OS boots; over a day is a mistake.
const (
	MinDeployTimeout = time.Minute
	MaxDeployTimeout = 24 * time.Hour
)

// Validate checks an instance's user-settable fields.
func (i *Instance) Validate() error {
	if err := ValidateName("name", i.Name); err != nil {
		return err
	}
	if i.ResourceClass != "" && i.NodeID != "" {
		return FieldErrorf("resource_class", "resource_class and node_id are exclusive: place the instance by class (and requirements) or pin it to a node")
	}
	if i.ResourceClass == "" && i.NodeID == "" && i.Requirements.IsZero() {
		return FieldErrorf("resource_class", "one of resource_class, node_id or requirements (required_traits, min_cpus, ...) is required")
	}
	if err := i.Requirements.Validate(); err != nil {
		return err
	}
	if i.ResourceClass != "" {
		if err := ValidateResourceClass("resource_class", i.ResourceClass); err != nil {
			return err
		}
	}
	// node_id is an id or a name, looked up as given.
	if err := ValidateLine("node_id", i.NodeID, 63); err != nil {
		return err
	}
	if err := i.ValidateRebuildable(); err != nil {
		return err
	}
	if i.DeployTimeout != 0 && (i.DeployTimeout < MinDeployTimeout || i.DeployTimeout > MaxDeployTimeout) {
		return FieldErrorf("deploy_timeout", "deploy_timeout %s must be between %s and %s (or unset: do not wait for the readiness callback)",
			i.DeployTimeout, MinDeployTimeout, MaxDeployTimeout)
	}
	switch i.DeployMethod {
	case DeployImage, DeployLive, "": // "": not chosen yet (the service picks)
	default:
		return FieldErrorf("deploy_method", "deploy_method %q must be image (write the image to disk) or live (boot it from virtual media)", i.DeployMethod)
	}
	for k, v := range i.RootDevice {
		if !slices.Contains(RootDeviceHints, k) {
			return FieldErrorf("root_device", "root_device hint %q is not one of %s", k, strings.Join(RootDeviceHints, ", "))
		}
		if err := ValidateLine("root_device."+k, v, 255); err != nil {
			return err
		}
		if v == "" {
			return FieldErrorf("root_device."+k, "root_device hint %s is empty", k)
		}
		if k == "size_gb" {
			if _, err := deployspec.ParseSizeHint(v); err != nil {
				return FieldErrorf(deployspec.SizeHintField, "%v", err)
			}
		}
	}
	if len(i.RootDevice) > 0 && i.DeployMethod != DeployImage {
		return FieldErrorf("root_device", "root_device chooses the disk an image deploy writes; deploy_method %s writes no disk", i.DeployMethod)
	}
	if err := ValidateProject("project", i.Project); err != nil {
		return err
	}
	return i.ValidateMutable()
}

// ValidateRebuildable checks the fields a rebuild in place may change:
// the image, the user data and the network (on its own: ValidateFor
// checks it against the node's inventory).
func (i *Instance) ValidateRebuildable() error {
	if i.Image.URL == "" {
		return FieldErrorf("image.url", "image.url is required")
	}
	if err := ValidateLine("image.url", i.Image.URL, MaxImageURL); err != nil {
		return err
	}
	u, err := url.Parse(i.Image.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return FieldErrorf("image.url", "image.url %q must be an http:// or https:// URL", redactURL(i.Image.URL))
	}
	if i.Image.Checksum != "" {
		// The agent's own parser: what it would refuse after a boot is
		// refused here.
		if _, err := deployspec.ParseChecksum(i.Image.Checksum); err != nil {
			return FieldErrorf(deployspec.ChecksumField, "%v", err)
		}
	}
	if len(i.UserData) > MaxUserData {
		return FieldErrorf("user_data", "user_data is %d bytes; at most %d are allowed", len(i.UserData), MaxUserData)
	}
	if err := ValidateText("user_data", i.UserData, 0); err != nil {
		return err
	}
	if i.Network != nil {
		if err := i.Network.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// ValidateMutable checks the fields that may change after creation.
func (i *Instance) ValidateMutable() error {
	if len(i.Metadata) > 64 {
		return FieldErrorf("metadata", "metadata has %d keys; at most 64 are allowed", len(i.Metadata))
	}
	for _, k := range slices.Sorted(maps.Keys(i.Metadata)) { // the same error every time
		if k == "" || len(k) > 255 {
			return FieldErrorf("metadata", "metadata keys must be 1-255 characters")
		}
		if why := badText(k, false); why != "" {
			return FieldErrorf("metadata", "metadata key %q %s", k, why)
		}
		if len(i.Metadata[k]) > 4096 {
			return FieldErrorf("metadata."+k, "metadata value of %q is longer than 4096 characters", k)
		}
		if err := ValidateText("metadata."+k, i.Metadata[k], 0); err != nil {
			return err
		}
	}
	switch i.PowerState {
	case "", PowerOn, PowerOff:
	default:
		return FieldErrorf("power_state", "power_state %q must be \"on\" or \"off\"", i.PowerState)
	}
	return nil
}

// Describe is a short human description of a node for messages.
func (n *Node) Describe() string { return fmt.Sprintf("node %s (%s)", n.Name, n.ID) }

// Validate checks a quota as an admin sets it.
func (q *Quota) Validate() error {
	if err := ValidateProject("project", q.Project); err != nil {
		return err
	}
	if q.Instances < -1 || q.Instances > MaxQuotaInstances {
		return FieldErrorf("instances", "instances must be -1 (unlimited) or a count from 0 to %d, got %d", MaxQuotaInstances, q.Instances)
	}
	return nil
}
