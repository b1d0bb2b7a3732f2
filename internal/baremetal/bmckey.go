package baremetal

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// One physical server is one node. Two nodes on the same BMC endpoint would
// let a member deploy, through the second one, onto a machine that another
// project's instance already runs on. The store therefore keeps a unique
// key per node, BMCKey, derived from the BMC settings by the rules below.
//
// What the key treats as the same endpoint:
//   - scheme and host in any case; an IP literal in any spelling (IPv6
//     compressed or not, IPv4-mapped IPv6 as the IPv4 address); a host name
//     with or without its trailing dot. An IPv6 zone (fe80::1%eth0) is part
//     of the host: the same link-local address on two links is two machines.
//   - the port written or left to its default (https 443, http 80, ipmi 623).
//   - Redfish over http or https: the drivers reach the same listener, so
//     the scheme is not part of the key, and ports 80 and 443 count as one
//     endpoint (the BMC's web server, http://h and https://h). Any other
//     port is its own endpoint: emulators serve several BMCs on one host.
//   - the path, query and fragment of the address are ignored: the drivers
//     dial scheme://host:port and build every path themselves.
//   - Redfish system_id is part of the key, in any spelling of one system
//     (api.RedfishSystemKey: a bare id, a full URL, a path without
//     /redfish/v1, trailing slashes): one BMC may manage several systems,
//     each its own node. An empty system_id ("the only system") is its
//     own value here: which system it is, only the BMC can say. The
//     controller asks it at enroll and stores the system's @odata.id as
//     the BMC serves it, which then keys the node; until it has, a node
//     without system_id and any other node on the same BMC (BMCEndpointKey)
//     are refused as one machine (see the service's enroll).
//   - a Redfish node and an IPMI node on the same host are not detected:
//     they are different endpoints (protocol and port), and the key
//     cannot know they belong to one machine.

// Default BMC ports, by scheme, made explicit by NormalizeBMCAddress.
const (
	DefaultHTTPSPort = 443
	DefaultHTTPPort  = 80
	DefaultIPMIPort  = 623
)

var defaultPort = map[string]int{"https": DefaultHTTPSPort, "http": DefaultHTTPPort, "ipmi": DefaultIPMIPort}

// bmcEndpoint is what a driver dials: scheme, canonical host, port.
type bmcEndpoint struct {
	scheme string
	host   string // lower-case name or canonical IP (zone kept), no brackets
	port   int
}

// NormalizeBMCAddress returns address in canonical form, scheme://host:port:
// lower-case scheme and host, canonical IP literal, explicit port; path,
// query and fragment dropped (the drivers ignore them). Applying it twice
// gives the same result. Errors are invalid-input errors on bmc.address
// that never repeat credentials.
func NormalizeBMCAddress(driver Driver, address string) (string, error) {
	ep, err := parseBMCEndpoint(driver, address)
	if err != nil {
		return "", err
	}
	u := url.URL{Scheme: ep.scheme, Host: net.JoinHostPort(ep.host, strconv.Itoa(ep.port))}
	return u.String(), nil
}

// BMCKey identifies the physical endpoint of a node's BMC settings (see the
// rules above): "redfish://host:port/system/path" or "ipmi://host:port".
// The key never holds credentials. It is not a URL to dial: an IPv6 zone
// appears unescaped.
func BMCKey(driver Driver, b BMC) (string, error) {
	key, err := BMCEndpointKey(driver, b.Address)
	if err != nil || driver != DriverRedfish {
		return key, err
	}
	return key + systemKey(b.SystemID), nil
}

// BMCEndpointKey is the key of the BMC endpoint alone: for IPMI the same
// as BMCKey, for Redfish BMCKey without the system. The BMCKey of every
// node on that BMC is it, or it followed by "/" and the system path.
func BMCEndpointKey(driver Driver, address string) (string, error) {
	ep, err := parseBMCEndpoint(driver, address)
	if err != nil {
		return "", err
	}
	switch driver {
	case DriverRedfish:
		port := ep.port
		if port == DefaultHTTPPort {
			port = DefaultHTTPSPort // http://h and https://h: one web server
		}
		return "redfish://" + net.JoinHostPort(ep.host, strconv.Itoa(port)), nil
	default: // DriverIPMI; parseBMCEndpoint rejected any other driver
		return "ipmi://" + net.JoinHostPort(ep.host, strconv.Itoa(ep.port)), nil
	}
}

// systemKey is the system part of a Redfish key: api.RedfishSystemKey,
// which always starts with "/" (so it cannot be mistaken for part of the
// port). A system_id it cannot read (Validate refuses those; only rows
// older than the rule hold one) keys as it is written, trailing slashes
// removed, so such a node still claims its endpoint.
func systemKey(id string) string {
	if k, err := api.RedfishSystemKey(id); err == nil {
		return k
	}
	id = strings.TrimRight(strings.TrimSpace(id), "/")
	if id != "" && !strings.HasPrefix(id, "/") {
		id = "/" + id
	}
	return id
}

// SameSystemID reports whether two system_id spellings name the same
// system of one BMC (api.SameRedfishSystem).
func SameSystemID(a, b string) bool { return api.SameRedfishSystem(a, b) }

func parseBMCEndpoint(driver Driver, address string) (bmcEndpoint, error) {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return bmcEndpoint{}, FieldErrorf("bmc.address", "bmc.address %q is not a URL with a host (e.g. https://10.0.0.5 or ipmi://10.0.0.5:623)", redactURL(address))
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case driver == DriverRedfish && (scheme == "https" || scheme == "http"):
	case driver == DriverIPMI && scheme == "ipmi":
	case driver != DriverRedfish && driver != DriverIPMI:
		return bmcEndpoint{}, FieldErrorf("driver", "driver %q is not supported; use one of: redfish, ipmi", driver)
	default:
		return bmcEndpoint{}, FieldErrorf("bmc.address", "bmc.address scheme %q does not fit driver %s", scheme, driver)
	}
	port := defaultPort[scheme]
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return bmcEndpoint{}, FieldErrorf("bmc.address", "bmc.address port %q is not between 1 and 65535", p)
		}
		port = n
	}
	host, err := normalizeHost(u.Hostname())
	if err != nil {
		return bmcEndpoint{}, err
	}
	return bmcEndpoint{scheme: scheme, host: host, port: port}, nil
}

// normalizeHost accepts an IP literal or a DNS name of ASCII letters,
// digits, '-' and '_' labels. Anything else (spaces, percent-escaped bytes,
// non-ASCII) could not be compared reliably, and no resolver would find it.
func normalizeHost(h string) (string, error) {
	if h == "" {
		return "", FieldErrorf("bmc.address", "bmc.address has no host")
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Is4In6() {
			ip = ip.Unmap() // ::ffff:10.0.0.5 is 10.0.0.5
		}
		if z := ip.Zone(); z != "" && !validZone(z) {
			return "", FieldErrorf("bmc.address", "bmc.address has an invalid IPv6 zone %q", z)
		}
		return ip.String(), nil
	}
	name := strings.TrimSuffix(strings.ToLower(h), ".")
	if len(name) > 253 {
		return "", FieldErrorf("bmc.address", "bmc.address host is too long")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", FieldErrorf("bmc.address", "bmc.address host %q is not a valid host name or IP address", h)
		}
		if strings.Trim(l, hostChars) != "" {
			return "", FieldErrorf("bmc.address", "bmc.address host %q is not a valid host name or IP address", h)
		}
	}
	// A name whose last label is all digits is no DNS name: it is a
	// mistyped IPv4 address (10.0.0.05, 10.0.5), which resolvers read in
	// surprising ways (octal, short forms).
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" {
		return "", FieldErrorf("bmc.address", "bmc.address host %q is not a valid IPv4 address (no leading zeros, four parts)", h)
	}
	return name, nil
}

const hostChars = "abcdefghijklmnopqrstuvwxyz0123456789-_"

// validZone accepts interface names and numbers (eth0, br-lan.100, 3).
func validZone(z string) bool {
	return strings.Trim(z, hostChars+"ABCDEFGHIJKLMNOPQRSTUVWXYZ.") == ""
}
