package baremetal

import (
	"net"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// A node that boots the deploy agent from the network (no virtual media)
// is recognised, when its firmware asks the controller for its iPXE
// script, by what iPXE can tell of it: ${uuid}, the SMBIOS system UUID,
// and ${mac}, the booting NIC's MAC. NetbootIDs are those identities in
// one canonical form, "uuid:<lowercase 8-4-4-4-12>" and
// "mac:<lowercase aa:bb:cc:dd:ee:ff>".

// NetbootMAC is the netboot id of a NIC's MAC address ("" if it is not
// a 6-byte MAC).
func NetbootMAC(mac string) string {
	hw, err := net.ParseMAC(strings.TrimSpace(mac))
	if err != nil || len(hw) != 6 {
		return ""
	}
	return "mac:" + hw.String()
}

// NetbootUUID is the netboot id of a system UUID as iPXE prints it (""
// if it is not a UUID, or is all zeros or all ones: firmware that has no
// UUID reports one of those, and many machines would share it).
func NetbootUUID(s string) string {
	u, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil || u == uuid.Nil || u == uuid.Max {
		return ""
	}
	return "uuid:" + u.String()
}

// NetbootUUIDs are the netboot ids a system UUID read from a BMC may
// match: BMCs disagree on the byte order of the 16 bytes (SMBIOS 2.6+
// stores the first three fields little-endian, and IPMI's Get System
// GUID answers in its own order, which vendors implement differently),
// so the UUID as given, with those three fields swapped, and with all 16
// bytes reversed are all accepted. A wrong order cannot name another
// machine in practice: UUIDs differ in every byte.
func NetbootUUIDs(s string) []string {
	u, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil || u == uuid.Nil || u == uuid.Max {
		return nil
	}
	swapped := u
	swapped[0], swapped[1], swapped[2], swapped[3] = u[3], u[2], u[1], u[0]
	swapped[4], swapped[5] = u[5], u[4]
	swapped[6], swapped[7] = u[7], u[6]
	var reversed uuid.UUID
	for i := range u {
		reversed[i] = u[15-i]
	}
	out := []string{"uuid:" + u.String()}
	for _, v := range []uuid.UUID{swapped, reversed} {
		if id := "uuid:" + v.String(); !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// ValidNetbootID reports whether id is in a NetbootIDs form.
func ValidNetbootID(id string) bool {
	kind, v, ok := strings.Cut(id, ":")
	switch {
	case !ok:
		return false
	case kind == "mac":
		return NetbootMAC(v) == id
	case kind == "uuid":
		return NetbootUUID(v) == id
	}
	return false
}

// InventoryIDs are the netboot ids a machine presents of itself (the
// deploy agent's inventory): its system UUID as the kernel reads it from
// SMBIOS and its NICs' MACs, those that are well formed.
func InventoryIDs(systemUUID string, macs ...string) []string {
	var out []string
	if id := NetbootUUID(systemUUID); id != "" {
		out = append(out, id)
	}
	for _, m := range macs {
		if id := NetbootMAC(m); id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
