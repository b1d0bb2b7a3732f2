//go:build !linux

package lldp

import (
	"errors"
	"fmt"
)

// Open is Linux's only: the agent runs Linux; elsewhere the package
// builds (the controller binary builds everywhere) and says so.
func Open(ifname string) (Source, error) {
	return nil, fmt.Errorf("lldp on %s: %w: raw sockets are Linux's (AF_PACKET)", ifname, errors.ErrUnsupported)
}
