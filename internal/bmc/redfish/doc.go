// Package redfish is the Redfish BMC driver, built on gofish.
//
// An Opener caches one gofish APIClient per BMC and credentials (address,
// username, password hash, TLS mode): one keep-alive connection pool, one
// session, and the system path when the endpoint names none. Open does no
// I/O; the first call logs in. So in steady state a power read is exactly
// one HTTP request, the GET of the ComputerSystem.
//
// Authentication: the service root is read once per BMC; when it links a
// SessionService the driver logs in with a session (X-Auth-Token) and
// otherwise, or when creating a session answers 404/405/501, it falls back
// to basic auth. A cached session refused with 401 is replaced once (at
// most once a second per BMC) and the call retried; the old session is
// deleted in the background, since BMCs have few session slots.
//
// Every request has an http.Client timeout (Options.Timeout) and carries
// the caller's context, whose deadline wins when shorter: gofish sets
// neither. TLS certificates are verified unless the endpoint is Insecure.
//
// Errors are *bmc.Error: dial, timeout, TLS, reset, EOF and context
// deadlines are KindUnreachable; 401/403 KindAuth; 404/405/501 and Redfish
// "not supported" messages KindUnsupported; other statuses (5xx, 4xx) and
// unreadable answers KindBMCError, with the Redfish message. Messages are
// built from the status and a few short Redfish messages (a body that is
// no Redfish error gives a 200-byte excerpt), and are scrubbed, before
// they are cut, of the password, the Basic credentials and the session
// token in every encoding (package redact).
//
// ComputerSystems are decoded leniently (case-insensitive keys, numbers
// sent as strings, nulls, missing fields) because real BMCs send such
// documents and gofish's typed decoding rejects a whole resource for one
// mistyped field. Managers and VirtualMedia use gofish's types, which also
// carry its InsertMedia/EjectMedia-or-PATCH fallbacks.
//
// Virtual media: boot images go to the first CD/DVD slot. A config drive
// goes to a USB stick slot, else a floppy slot, else another CD slot, and
// to the boot CD only while it is empty (a PXE deploy); slots that
// advertise no MediaTypes are judged by Id and Name ("usb", "removable",
// "floppy", "cd"), slots without Inserted by Image. So call InsertMedia
// before InsertConfigDrive: on a one-slot BMC the boot image would evict a
// config drive that got there first. EjectMedia empties every slot.
package redfish
