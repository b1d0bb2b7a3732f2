package ipmi

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// DefaultPort is the RMCP port a BMC listens on when the address names none.
const DefaultPort = 623

// target is a parsed ipmi:// address.
type target struct {
	host string // bare host name or IP, no brackets
	port int
}

// key identifies one BMC: sessions and learned cipher suites are per key.
func (t target) key() string { return net.JoinHostPort(strings.ToLower(t.host), strconv.Itoa(t.port)) }

// dialHost is the host as go-ipmi needs it: it builds "host:port" with
// Sprintf, so an IPv6 literal must carry its brackets.
func (t target) dialHost() string {
	if strings.Contains(t.host, ":") {
		return "[" + t.host + "]"
	}
	return t.host
}

// parseAddress accepts ipmi://host[:port] and nothing else. Its errors
// never repeat the address verbatim: an address may carry credentials
// (ipmi://user:secret@host) and errors end up in logs and API responses.
func parseAddress(addr string) (target, error) {
	const want = "want ipmi://host[:port]"
	if strings.TrimSpace(addr) == "" {
		return target{}, fmt.Errorf("empty BMC address (%s)", want)
	}
	u, err := url.Parse(addr)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return target{}, fmt.Errorf("invalid BMC address: %v (%s)", ue.Err, want)
		}
		return target{}, fmt.Errorf("invalid BMC address (%s)", want)
	}
	switch {
	case u.Scheme == "":
		return target{}, fmt.Errorf("BMC address has no scheme (%s)", want)
	case u.Scheme != "ipmi":
		return target{}, fmt.Errorf("BMC address scheme %q is not supported by the IPMI driver (%s)", u.Scheme, want)
	case u.User != nil:
		return target{}, fmt.Errorf("BMC address must not contain credentials; set username and password instead (%s)", want)
	case u.Opaque != "":
		return target{}, fmt.Errorf("invalid BMC address (%s)", want)
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return target{}, fmt.Errorf("BMC address must not have a path, query or fragment (%s)", want)
	}
	host := u.Hostname()
	if host == "" {
		return target{}, fmt.Errorf("BMC address has no host (%s)", want)
	}
	port := DefaultPort
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return target{}, fmt.Errorf("BMC address port %q is not a number between 1 and 65535", p)
		}
		port = n
	} else if strings.HasSuffix(u.Host, ":") {
		return target{}, fmt.Errorf("BMC address has an empty port (%s)", want)
	}
	return target{host: host, port: port}, nil
}
