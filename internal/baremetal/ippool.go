package baremetal

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"
)

// IPPool is a subnet whose addresses the controller hands out to
// instances, one at a time, so that a configuration asks for "an address
// from pool X" instead of hard-coding one. Allocation is the store's
// (store.Queries.AllocateAddress): the lowest free address of the pool's
// allocatable addresses (Allocatable), atomically.
type IPPool struct {
	ID   string
	Name string
	// CIDR is the subnet, masked (no host bits): IPv4, or IPv6 of /64 or
	// longer (the host part must fit 64 bits; a /64 is what a LAN gets).
	CIDR netip.Prefix
	// Gateway is the subnet's router, inside CIDR; never allocated. The
	// zero Addr: none.
	Gateway netip.Addr
	// Ranges restrict allocation to these inclusive ranges, ordered and
	// disjoint, inside CIDR. None: the whole CIDR but, for IPv4, its
	// network and broadcast addresses (except /31 and /32, RFC 3021) and,
	// for IPv6, its subnet-router anycast address (the all-zero host,
	// RFC 4291). The gateway is left out of either.
	Ranges        []IPRange
	DNSServers    []string
	SearchDomains []string
	Description   string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Version       int64
}

// IPRange is an inclusive range of addresses.
type IPRange struct {
	Start, End netip.Addr
}

func (r IPRange) String() string {
	if r.Start == r.End {
		return r.Start.String()
	}
	return r.Start.String() + "-" + r.End.String()
}

// IPAllocation is an address of a pool held for an instance on a node.
// When the instance is deleted the address stays held by the node
// (InstanceID empty) until the node's cleanup is done, so that a machine
// still running the old instance's OS never shares an address with the
// next instance.
type IPAllocation struct {
	PoolID     string
	Address    netip.Addr
	InstanceID string // "": the instance is gone, its node still holds the address
	NodeID     string // "": allocated before the instance had a node
	CreatedAt  time.Time
}

// Limits of a pool's lists.
const (
	MaxPoolRanges        = 64
	MaxPoolDNSServers    = 8
	MaxPoolSearchDomains = 6 // what resolv.conf's "search" keeps (glibc before 2.26)
	MaxPoolDescription   = 1024
)

// ParseIPRange parses "a.b.c.d-e.f.g.h" or a single address.
func ParseIPRange(s string) (IPRange, error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		b = a
	}
	start, err := netip.ParseAddr(strings.TrimSpace(a))
	if err != nil {
		return IPRange{}, err
	}
	end, err := netip.ParseAddr(strings.TrimSpace(b))
	if err != nil {
		return IPRange{}, err
	}
	return IPRange{Start: start, End: end}, nil
}

// ParsePoolCIDR parses a pool's cidr, naming field in its error: a
// subnet, not an address in one ("10.0.0.5/24" is refused with the
// subnet it means).
func ParsePoolCIDR(field, s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, FieldErrorf(field, "%s %q is not a CIDR such as 10.0.0.0/24 or 2001:db8::/64", field, s)
	}
	if p.Addr().Zone() != "" {
		return netip.Prefix{}, FieldErrorf(field, "%s %q must not have a zone", field, s)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, FieldErrorf(field, "%s %q has host bits set; the subnet is %s", field, s, m)
	}
	return p, nil
}

// ParsePoolAddr parses an address of a pool (gateway, range ends, DNS
// servers), naming field in its error.
func ParsePoolAddr(field, s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, FieldErrorf(field, "%s %q is not an IP address", field, s)
	}
	return a, nil
}

var searchDomainRE = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.?$`)

// Validate checks every field of a pool an admin sets, naming the field
// as the API spells it (ranges[1].start, dns_servers[0]).
func (p *IPPool) Validate() error {
	if err := ValidateName("name", p.Name); err != nil {
		return err
	}
	if err := ValidateLine("description", p.Description, MaxPoolDescription); err != nil {
		return err
	}
	if !p.CIDR.IsValid() {
		return FieldErrorf("cidr", "cidr is required (e.g. 10.0.0.0/24 or 2001:db8::/64)")
	}
	if p.CIDR.Addr().Zone() != "" || p.CIDR.Masked() != p.CIDR {
		return FieldErrorf("cidr", "cidr %s has host bits set; the subnet is %s", p.CIDR, p.CIDR.Masked())
	}
	if p.CIDR.Addr().Is4In6() {
		return FieldErrorf("cidr", "cidr %s is an IPv4-mapped IPv6 subnet; give the IPv4 subnet", p.CIDR)
	}
	if p.CIDR.Addr().Is6() && p.CIDR.Bits() < 64 {
		return FieldErrorf("cidr", "cidr %s is larger than a /64; an IPv6 pool is a /64 or smaller", p.CIDR)
	}
	if p.Gateway.IsValid() {
		if err := p.checkInside("gateway", p.Gateway); err != nil {
			return err
		}
		if p.reserved(p.Gateway) {
			return FieldErrorf("gateway", "gateway %s is the %s of %s", p.Gateway, p.reservedName(p.Gateway), p.CIDR)
		}
	}
	if len(p.Ranges) > MaxPoolRanges {
		return FieldErrorf("ranges", "ranges has %d ranges; at most %d are allowed", len(p.Ranges), MaxPoolRanges)
	}
	for i, r := range p.Ranges {
		f := fmt.Sprintf("ranges[%d]", i)
		if err := p.checkInside(f+".start", r.Start); err != nil {
			return err
		}
		if err := p.checkInside(f+".end", r.End); err != nil {
			return err
		}
		if r.End.Less(r.Start) {
			return FieldErrorf(f+".end", "%s.end %s is before its start %s", f, r.End, r.Start)
		}
		for _, a := range []netip.Addr{r.Start, r.End} {
			if p.reserved(a) {
				return FieldErrorf(f, "%s %s holds %s, the %s of %s, which is never allocated", f, r, a, p.reservedName(a), p.CIDR)
			}
		}
		if i > 0 && !p.Ranges[i-1].End.Less(r.Start) {
			return FieldErrorf(f+".start", "%s %s must start after the end of ranges[%d] %s: ranges are ordered and do not overlap",
				f, r, i-1, p.Ranges[i-1])
		}
	}
	if len(p.Allocatable()) == 0 {
		return FieldErrorf("ranges", "pool %s has no allocatable address: the ranges hold only the gateway %s", p.CIDR, p.Gateway)
	}
	if len(p.DNSServers) > MaxPoolDNSServers {
		return FieldErrorf("dns_servers", "dns_servers has %d servers; at most %d are allowed", len(p.DNSServers), MaxPoolDNSServers)
	}
	for i, s := range p.DNSServers {
		f := fmt.Sprintf("dns_servers[%d]", i)
		a, err := ParsePoolAddr(f, s)
		if err != nil {
			return err
		}
		if a.String() != s {
			return FieldErrorf(f, "%s %q is not in canonical form; write %s", f, s, a)
		}
	}
	if len(p.SearchDomains) > MaxPoolSearchDomains {
		return FieldErrorf("search_domains", "search_domains has %d domains; at most %d are allowed", len(p.SearchDomains), MaxPoolSearchDomains)
	}
	for i, d := range p.SearchDomains {
		f := fmt.Sprintf("search_domains[%d]", i)
		if len(d) > 253 || !searchDomainRE.MatchString(d) {
			return FieldErrorf(f, "%s %q is not a DNS domain name", f, d)
		}
	}
	return nil
}

func (p *IPPool) checkInside(field string, a netip.Addr) error {
	if !a.IsValid() {
		return FieldErrorf(field, "%s is required", field)
	}
	if a.Zone() != "" || !p.CIDR.Contains(a) {
		return FieldErrorf(field, "%s %s is not inside cidr %s", field, a, p.CIDR)
	}
	return nil
}

// reserved reports whether a is an address of the subnet itself, never
// a host's: IPv4's network and broadcast addresses (but on a /31 or /32,
// which have none) and IPv6's subnet-router anycast address.
func (p *IPPool) reserved(a netip.Addr) bool { return p.reservedName(a) != "" }

func (p *IPPool) reservedName(a netip.Addr) string {
	off := p.Offset(a)
	switch {
	case p.CIDR.Addr().Is4() && p.CIDR.Bits() >= 31:
		return ""
	case off == 0 && p.CIDR.Addr().Is4():
		return "network address"
	case off == 0:
		return "subnet-router anycast address"
	case p.CIDR.Addr().Is4() && off == p.LastOffset():
		return "broadcast address"
	}
	return ""
}

// Offset is a's distance from the start of the pool's subnet (a must be
// inside it). It fits 64 bits: IPv6 pools are /64 or smaller.
func (p *IPPool) Offset(a netip.Addr) uint64 {
	return low64(a) - low64(p.CIDR.Addr())
}

// AddrAt is the address at offset off of the pool's subnet.
func (p *IPPool) AddrAt(off uint64) netip.Addr {
	base := p.CIDR.Addr()
	if base.Is4() {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(low64(base)+off))
		return netip.AddrFrom4(b)
	}
	b := base.As16()
	binary.BigEndian.PutUint64(b[8:], low64(base)+off)
	return netip.AddrFrom16(b)
}

// LastOffset is the offset of the subnet's last address.
func (p *IPPool) LastOffset() uint64 {
	host := p.CIDR.Addr().BitLen() - p.CIDR.Bits()
	if host >= 64 {
		return ^uint64(0)
	}
	return 1<<host - 1
}

func low64(a netip.Addr) uint64 {
	if a.Is4() {
		b := a.As4()
		return uint64(binary.BigEndian.Uint32(b[:]))
	}
	b := a.As16()
	return binary.BigEndian.Uint64(b[8:])
}

// OffsetSpan is an inclusive range of offsets of a pool's subnet.
type OffsetSpan struct{ Lo, Hi uint64 }

// Allocatable is the offsets the pool hands out, in order: its ranges
// (or its whole subnet but the addresses Ranges says), without the
// gateway. Empty only for a pool whose ranges hold nothing but the
// gateway (Validate refuses it).
func (p *IPPool) Allocatable() []OffsetSpan {
	var spans []OffsetSpan
	if len(p.Ranges) == 0 {
		lo, hi := uint64(0), p.LastOffset()
		if p.CIDR.Addr().Is6() || p.CIDR.Bits() < 31 {
			lo++ // network (IPv4) or subnet-router anycast (IPv6) address
			if p.CIDR.Addr().Is4() {
				hi-- // broadcast
			}
		}
		spans = []OffsetSpan{{lo, hi}}
	} else {
		for _, r := range p.Ranges {
			spans = append(spans, OffsetSpan{p.Offset(r.Start), p.Offset(r.End)})
		}
	}
	if !p.Gateway.IsValid() || !p.CIDR.Contains(p.Gateway) {
		return spans
	}
	gw := p.Offset(p.Gateway)
	var out []OffsetSpan
	for _, s := range spans {
		switch {
		case gw < s.Lo || gw > s.Hi:
			out = append(out, s)
		default:
			if gw > s.Lo {
				out = append(out, OffsetSpan{s.Lo, gw - 1})
			}
			if gw < s.Hi {
				out = append(out, OffsetSpan{gw + 1, s.Hi})
			}
		}
	}
	return out
}

// Allocates reports whether a is one of the addresses the pool hands out.
func (p *IPPool) Allocates(a netip.Addr) bool {
	if !p.CIDR.Contains(a) || a.Zone() != "" {
		return false
	}
	off := p.Offset(a)
	for _, s := range p.Allocatable() {
		if off >= s.Lo && off <= s.Hi {
			return true
		}
	}
	return false
}

// Size is how many addresses the pool hands out; it saturates at the
// largest uint64 (a whole /64).
func (p *IPPool) Size() uint64 {
	var n uint64
	for _, s := range p.Allocatable() {
		d := s.Hi - s.Lo + 1
		if d == 0 || n+d < n { // a whole /64, or the sum overflowed
			return ^uint64(0)
		}
		n += d
	}
	return n
}

// Resolve returns na, an address that asks for one from this pool, as
// the instance's config drive needs it: addr (allocated from the pool)
// with the pool's prefix length, the pool's gateway and, unless na names
// its own, its DNS servers; Pool cleared.
func (p *IPPool) Resolve(na NetAddress, addr netip.Addr) NetAddress {
	na.Pool = ""
	na.Address = netip.PrefixFrom(addr, p.CIDR.Bits()).String()
	na.Gateway = ""
	if p.Gateway.IsValid() {
		na.Gateway = p.Gateway.String()
	}
	if len(na.DNSServers) == 0 && len(p.DNSServers) > 0 {
		na.DNSServers = append([]string(nil), p.DNSServers...)
	}
	return na
}
