// Package netguard decides which addresses an HTTP fetch made on a user's
// behalf may reach, and enforces it: the controller's check of an image
// URL (internal/imagecheck) and the deploy agent's download of the image
// (internal/agent/disk). Without it, an image URL is a way to make the
// controller or the agent fetch what the user cannot: a cloud's metadata
// service (credentials), the controller's own API, services listening on
// its loopback.
//
// The guard judges the target, never just the connection: every request,
// each hop of a redirect included, has its host checked before it goes
// anywhere, by name (known metadata names) and by every address the name
// resolves to, whether the request then goes straight to the host or
// through a proxy (a proxy would otherwise fetch 169.254.169.254 for us).
// Going straight, the address actually dialed is checked again when the
// socket is made, before it connects, so a name that resolves elsewhere
// the second time (DNS rebinding) gains nothing.
//
// Denied, always: the known cloud metadata addresses and names (an
// operator can allow one only by naming its exact address), link-local
// addresses, and Policy.Deny. With Policy.DenyLocal (the controller):
// loopback and unspecified addresses too, and the controller's own
// listen addresses (Policy.Own), which nothing in Policy.Allow exempts.
// Policy.Allow exempts addresses from the other denials. The package
// imports only the standard library: the agent uses it too.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// MetadataAddrs are the cloud metadata and platform services: AWS, GCP,
// Azure, Oracle, OpenStack, DigitalOcean, Hetzner and others at
// 169.254.169.254; AWS over IPv6 (fd00:ec2::254), its ECS and EKS
// credential endpoints; Alibaba (100.100.100.200); Azure's WireServer
// (168.63.129.16); Oracle Cloud Classic (192.0.0.192); Tencent
// (169.254.0.23); OpenStack over IPv6 (fe80::a9fe:a9fe).
var MetadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("169.254.170.23"),
	netip.MustParseAddr("fd00:ec2::23"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
	netip.MustParseAddr("192.0.0.192"),
	netip.MustParseAddr("169.254.0.23"),
	netip.MustParseAddr("fe80::a9fe:a9fe"),
}

// MetadataNames are the names metadata services answer to (GCP's
// metadata.google.internal, metadata.goog and, through its search
// domain, metadata; AWS's instance-data; Tencent's; Equinix Metal's, on
// public addresses).
var MetadataNames = []string{
	"metadata.google.internal", "metadata.goog", "metadata",
	"instance-data", "instance-data.ec2.internal",
	"metadata.tencentyun.com",
	"metadata.platformequinix.com", "metadata.packet.net",
}

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Policy says which targets a fetch may reach. The zero Policy denies the
// metadata services and link-local addresses only (the deploy agent's:
// it fetches from the node's network, where loopback is itself).
type Policy struct {
	// Allow exempts addresses from the built-in denials (loopback,
	// link-local, unspecified); a metadata address only by a prefix of
	// its full length (169.254.169.254/32), never by a wider one.
	Allow []netip.Prefix
	// Deny denies addresses whatever else says.
	Deny []netip.Prefix
	// DenyLocal denies loopback and unspecified addresses and Own.
	DenyLocal bool
	// Own are the controller's listen addresses (its API): denied at
	// their port whatever Allow says. An unspecified address (0.0.0.0,
	// [::]) stands for every address of the host's interfaces.
	Own []netip.AddrPort
	// Resolver resolves host names; nil: net.DefaultResolver.
	Resolver Resolver
	// LocalAddrs lists the host's own addresses (for an unspecified Own);
	// nil: the interfaces' addresses.
	LocalAddrs func() []netip.Addr
}

// DeniedError is a refused target. Its message is for operators: it names
// the address and why (members should be told less; see imagecheck).
type DeniedError struct {
	Host   string     // as in the URL
	Addr   netip.Addr // the denied address (zero for a denied name)
	Reason string
}

func (e *DeniedError) Error() string {
	if !e.Addr.IsValid() || e.Host == e.Addr.String() {
		return fmt.Sprintf("%s is not allowed: %s", e.Host, e.Reason)
	}
	return fmt.Sprintf("%s (%s) is not allowed: %s", e.Host, e.Addr, e.Reason)
}

// IsDenied reports whether err is (or wraps) a DeniedError.
func IsDenied(err error) bool {
	var d *DeniedError
	return errors.As(err, &d)
}

// CheckHost checks a URL's host and port (the port the request goes to,
// for Own): its name, then every address it resolves to. A resolution
// error is returned as it is (a *net.DNSError).
func (p *Policy) CheckHost(ctx context.Context, host string, port uint16) error {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	for _, m := range MetadataNames {
		if name == m {
			return &DeniedError{Host: host, Reason: "a cloud metadata service's name"}
		}
	}
	if a, err := netip.ParseAddr(name); err == nil {
		return p.CheckAddr(host, a, port)
	}
	if numeric(name) {
		// 2852039166, 0xa9fea9fe, 0251.0376.0251.0376: addresses that some
		// resolvers and proxies read as 169.254.169.254 and others
		// look up as names; no real host name ends in a number.
		return &DeniedError{Host: host, Reason: "a numeric host that is not an IP address in its usual notation"}
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	for _, a := range addrs {
		if err := p.CheckAddr(host, a, port); err != nil {
			return err
		}
	}
	return nil
}

// numeric reports whether name's last label is a number (decimal, octal
// or 0x hex): an IP address in a notation netip does not read.
func numeric(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if last == "" {
		return false
	}
	if h, ok := strings.CutPrefix(last, "0x"); ok {
		_, err := strconv.ParseUint(h, 16, 64)
		return err == nil || h == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// CheckAddr checks one address of host (port as for CheckHost).
func (p *Policy) CheckAddr(host string, a netip.Addr, port uint16) error {
	if why := p.denied(a, port); why != "" {
		return &DeniedError{Host: host, Addr: a, Reason: why}
	}
	return nil
}

// nat64 is the well-known NAT64 prefix: 64:ff9b::a9fe:a9fe reaches
// 169.254.169.254 through a NAT64 gateway.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// denied says why a is refused, "" when it is not.
func (p *Policy) denied(a netip.Addr, port uint16) string {
	a = a.WithZone("").Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		v4 := netip.AddrFrom4([4]byte(b[12:]))
		if why := p.denied(v4, port); why != "" {
			return why + " (through NAT64)"
		}
	}
	for _, d := range p.Deny {
		if d.Contains(a) {
			return "in the denied range " + d.String()
		}
	}
	if p.DenyLocal && p.own(a, port) {
		return "the controller's own API address"
	}
	for _, m := range MetadataAddrs {
		if a == m {
			for _, al := range p.Allow {
				if al.Bits() == a.BitLen() && al.Contains(a) {
					return ""
				}
			}
			return "a cloud metadata service's address"
		}
	}
	for _, al := range p.Allow {
		if al.Contains(a) {
			return ""
		}
	}
	switch {
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "a link-local address"
	case p.DenyLocal && a.IsLoopback():
		return "a loopback address"
	case p.DenyLocal && a.IsUnspecified():
		return "an unspecified address (this host)"
	}
	return ""
}

// own reports whether a:port is one of Own.
func (p *Policy) own(a netip.Addr, port uint16) bool {
	for _, o := range p.Own {
		if o.Port() != port {
			continue
		}
		oa := o.Addr().WithZone("").Unmap()
		if oa == a {
			return true
		}
		if oa.IsUnspecified() && (a.IsLoopback() || a.IsUnspecified() || p.isLocal(a)) {
			return true
		}
	}
	return false
}

func (p *Policy) isLocal(a netip.Addr) bool {
	var addrs []netip.Addr
	if p.LocalAddrs != nil {
		addrs = p.LocalAddrs()
	} else {
		ifs, _ := net.InterfaceAddrs()
		for _, ia := range ifs {
			if pn, ok := ia.(*net.IPNet); ok {
				if x, ok := netip.AddrFromSlice(pn.IP); ok {
					addrs = append(addrs, x.Unmap())
				}
			}
		}
	}
	for _, x := range addrs {
		if x.WithZone("") == a {
			return true
		}
	}
	return false
}

// viaProxyKey marks a request's context: its connection goes to a proxy,
// whose address is the operator's (the target was checked before).
type viaProxyKey struct{}

// Guard makes t enforce p: every request's target is checked before t
// sends it (each redirect hop is a request of its own), and d, which t
// must dial with, checks the address of each direct connection before it
// connects. It returns the RoundTripper to use in t's place.
func (p *Policy) Guard(t *http.Transport, d *net.Dialer) http.RoundTripper {
	inner := d.ControlContext
	control := d.Control
	d.Control = nil
	d.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
		if via, _ := ctx.Value(viaProxyKey{}).(bool); !via {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("netguard: dial address %q: %w", address, err)
			}
			if err := p.CheckAddr(ap.Addr().String(), ap.Addr(), ap.Port()); err != nil {
				return err
			}
		}
		switch {
		case inner != nil:
			return inner(ctx, network, address, c)
		case control != nil:
			return control(network, address, c)
		}
		return nil
	}
	t.DialContext = d.DialContext
	return &guarded{p: p, t: t}
}

type guarded struct {
	p *Policy
	t *http.Transport
}

func (g *guarded) RoundTrip(req *http.Request) (*http.Response, error) {
	port, err := portOf(req)
	if err != nil {
		return nil, err
	}
	if err := g.p.CheckHost(req.Context(), req.URL.Hostname(), port); err != nil {
		return nil, err
	}
	via := false
	if g.t.Proxy != nil {
		u, err := g.t.Proxy(req)
		if err != nil {
			return nil, err
		}
		via = u != nil
	}
	return g.t.RoundTrip(req.WithContext(context.WithValue(req.Context(), viaProxyKey{}, via)))
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach t.
func (g *guarded) CloseIdleConnections() { g.t.CloseIdleConnections() }

func portOf(req *http.Request) (uint16, error) {
	if s := req.URL.Port(); s != "" {
		n, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("netguard: port %q: %w", s, err)
		}
		return uint16(n), nil
	}
	if req.URL.Scheme == "https" {
		return 443, nil
	}
	return 80, nil
}

// ParsePrefixes reads a comma-separated list of CIDR prefixes (a bare
// address is its own /32 or /128), as the --image-url-allow and
// --image-url-deny flags take them; flag names the flag in errors.
func ParsePrefixes(flag, v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if a, err := netip.ParseAddr(f); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		pf, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%s %q: want CIDR prefixes separated by commas, e.g. 10.0.0.0/8,2001:db8::/32", flag, f)
		}
		if pf.Addr().Is4In6() && pf.Bits() >= 96 {
			pf = netip.PrefixFrom(pf.Addr().Unmap(), pf.Bits()-96)
		}
		out = append(out, pf.Masked())
	}
	return out, nil
}
