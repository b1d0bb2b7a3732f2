package api

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// A Redfish node's bmc.system_id names one system of its BMC. Operators
// and BMCs spell the same system in several ways, and the API treats every
// spelling below as that system: the server keys the node by it (one
// machine, one node), the driver requests it, and the provider keeps the
// operator's spelling when the controller answers with the BMC's. This is
// the one place those spellings are read.
//
//   - the path: /redfish/v1/Systems/1
//   - with trailing slashes, as iLO writes every @odata.id: /redfish/v1/Systems/1/
//   - without the service root: /Systems/1 or Systems/1
//   - a bare id: 1, System.Embedded.1 (iDRAC), Self (AMI)
//   - the full URL: https://bmc.example/redfish/v1/Systems/1 (its host is
//     the BMC's, which the server checks against bmc.address)
//   - "redfish", "v1" and "Systems" in any case (the service root is
//     fixed by the standard; some firmware wrote "systems")
//
// The id itself keeps its case: Redfish ids are case-sensitive, and
// Systems/A and Systems/a are two systems.

// RedfishSystemsPath is the collection every Redfish system is a member of.
const RedfishSystemsPath = "/redfish/v1/Systems"

// ErrSystemIDSpelling is wrapped by RedfishSystemPath's errors.
var ErrSystemIDSpelling = errors.New("not a Redfish system")

// RedfishSystemPath returns the path to request for system id (any
// spelling above): the path part only, without trailing slashes, the
// service root added where it was left out, the id's case kept. "" (the
// BMC's only system) stays "".
func RedfishSystemPath(id string) (string, error) {
	p, _, err := redfishSystem(id)
	return p, err
}

// RedfishSystemKey is RedfishSystemPath with the service root in its
// standard case: two spellings of one system have the same key. "" stays
// "".
func RedfishSystemKey(id string) (string, error) {
	_, k, err := redfishSystem(id)
	return k, err
}

// SameRedfishSystem reports whether a and b name the same system of one
// BMC. Two empty ids are the same (the BMC's only system); an empty id
// and a set one are not (only the BMC can tell), nor is a spelling that
// is no Redfish system path to anything but itself.
func SameRedfishSystem(a, b string) bool {
	if a == b {
		return true
	}
	ka, erra := RedfishSystemKey(a)
	kb, errb := RedfishSystemKey(b)
	return erra == nil && errb == nil && ka == kb
}

// redfishSystem returns the path and the key of id.
func redfishSystem(id string) (string, string, error) {
	s := strings.TrimSpace(id)
	if s == "" {
		return "", "", nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: %q %s; want a system path such as /redfish/v1/Systems/1, a bare id such as 1, or the system's URL",
			ErrSystemIDSpelling, withoutUserinfo(id), why)
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (!strings.EqualFold(u.Scheme, "https") && !strings.EqualFold(u.Scheme, "http")) {
			return "", "", bad("is not an http(s) URL with a host")
		}
		if u.User != nil {
			return "", "", fmt.Errorf("%w: the system_id URL must not contain credentials", ErrSystemIDSpelling)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return "", "", bad("has a query or a fragment")
		}
		s = u.EscapedPath()
	} else if strings.ContainsAny(s, "?#") {
		return "", "", bad("has a query or a fragment")
	}
	if !strings.Contains(s, "/") {
		// A bare id: escaped as the path segment it becomes.
		s = RedfishSystemsPath + "/" + url.PathEscape(s)
	}
	segs := strings.Split(strings.Trim(path.Clean("/"+s), "/"), "/")
	if len(segs) == 2 && strings.EqualFold(segs[0], "Systems") {
		segs = append([]string{"redfish", "v1"}, segs...)
	}
	if len(segs) != 4 || !strings.EqualFold(segs[0], "redfish") || !strings.EqualFold(segs[1], "v1") ||
		!strings.EqualFold(segs[2], "Systems") || segs[3] == "" || segs[3] == "." || segs[3] == ".." {
		return "", "", bad("is not a member of " + RedfishSystemsPath)
	}
	// One escaping for the id, however it came: System%2E1 is System.1.
	raw, err := url.PathUnescape(segs[3])
	if err != nil {
		return "", "", bad("has an invalid escape")
	}
	sys := url.PathEscape(raw)
	return "/" + strings.Join(segs[:3], "/") + "/" + sys, RedfishSystemsPath + "/" + sys, nil
}

// withoutUserinfo hides the user:password@ of a URL-like s: the error
// about a spelling must not repeat a credential pasted into it.
func withoutUserinfo(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		return s[:i+3] + "[redacted]@" + rest[at+1:]
	}
	return s
}
