// Package redfish is the Redfish BMC driver, built on gofish.
//
// An Opener caches one gofish APIClient per BMC and credentials (address,
// username, password hash, TLS mode): one keep-alive connection pool of at
// most Options.MaxConcurrentRequests connections (default 2: BMC web
// servers take few), one session, and the system path when the endpoint
// names none. Open does no I/O; the first call logs in. So in steady state
// a power read is exactly one HTTP request, the GET of the ComputerSystem.
//
// Authentication: the service root is read once per BMC; when it links a
// SessionService the driver logs in with a session (X-Auth-Token) at the
// session collection the root names (iDRAC's is /redfish/v1/Sessions) and
// otherwise falls back to basic auth: when creating a session answers
// 404/405/501, when the BMC's session slots are full (SessionLimitExceeded,
// iDRAC's RAC0218), or when it creates a session without a token. A cached
// session refused with 401 is replaced once (at most once a second per
// BMC) and the call retried; the old session is deleted in the background,
// since BMCs have few session slots; Close logs out.
//
// Every request has an http.Client timeout (Options.Timeout) and carries
// the caller's context, whose deadline wins when shorter: gofish sets
// neither. TLS certificates are verified unless the endpoint is Insecure.
//
// Nothing a BMC accepts is trusted before it shows (the vendor dialects
// this copes with are in the simulator's quirks, internal/bmc/sim):
//
//   - PATCHes carry If-Match with the ETag the resource was read with; a
//     412 (stale: iLO's ETags change with power) or 428 (required: Lenovo
//     XCC) gets a fresh read and one more try.
//   - Actions answered 202 with a task monitor are followed to the task's
//     end (write.go), so a reset has landed when SetPower returns.
//   - The allowed ResetTypes come inline, from the action's ActionInfo
//     (OpenBMC, AMI) or both, with values written together split apart
//     (a Supermicro X12's "GracefulShutdownGracefulRestart").
//   - A boot override carries the system's BootSourceOverrideMode where it
//     has one (a BMC that falls back to its default mode would boot the
//     machine in the wrong one), and is read back: sent again once, then
//     an error saying what the BMC shows. A one-time override that reads
//     back as continuous counts (sushy-tools, libvirt).
//   - Virtual media (media.go) are found under the System or its Manager,
//     inserted by action (with the TransferProtocolType and TransferMethod
//     it lists, without Inserted/WriteProtected where those are refused) or
//     by PATCH (slots without actions), and read back until the slot shows
//     the image (a BMC may rewrite the URL or show only its file name, or
//     show it seconds later: Options.MediaSettle): sent once more, then
//     KindRefused naming the slot and what it shows. Ejects likewise. A
//     VirtualMedia collection without slots is no virtual media.
//   - CPUs are hardware threads, summed over the Processors collection
//     (absent sockets and accelerators skipped): ProcessorSummary.Count is
//     sockets on most BMCs and cores on some. Zeros are unknowns. The
//     collection is read with its members inline ($expand=. or *, one
//     level) where the service root advertises ExpandQuery; members left
//     as links are read one by one, and a BMC that answers the query
//     with an HTTP error (and the plain read without) is not asked again.
//   - BIOS attributes (bios.go) are written to the Bios's @Redfish.Settings
//     object, wherever the BMC puts it (iLO bios/settings, Lenovo
//     Bios/Pending, Supermicro Bios/SD); without the link, Bios/Settings
//     and then AMI's Bios/SD. With @Redfish.SettingsApplyTime OnReset where
//     the Bios lists it (iDRAC applies nothing at a reset without it).
//     Text values take the registry's JSON type (registry found through
//     /redfish/v1/Registries, also where its file names another: sushy-
//     tools), else the current value's. Values already pending or in
//     effect are not sent again, and what was sent is read back (pending,
//     or in effect: sushy-tools applies at once): a value dropped is
//     KindRefused naming it, as is a 400. SecureBootEnable likewise.
//   - RAID volumes (storage.go) are created by POST to a Storage's Volumes
//     collection (RAIDType, Links.Drives, with OperationApplyTime Immediate
//     where the collection lists it) and deleted by DELETE; a 202 is a task
//     the caller follows (TaskStatus, task.go: one read of the monitor per
//     call), any other 2xx is read back: a volume missing, or made with
//     another RAID type, drives or size (sushy-tools ignores RAIDType and
//     the drives), is KindRefused, as is a 400 (naming the properties the
//     BMC's messages relate to).
//   - Health (health.go) is the worst of the system's and its chassis'
//     Status (Health, HealthRollup) and of their sensors, read through
//     ThermalSubsystem/PowerSubsystem and the chassis' Sensors where
//     linked, else Thermal/Power; an Absent PSU counts as failed only
//     when a redundancy group names it. EventLog follows LogServices
//     from the system, then its managers (iDRAC's Sel), and pages
//     through the entries in either order, numeric ids zero-padded.
//   - Firmware (firmware.go) is the FirmwareInventory entries whose
//     RelatedItem is the client's system or its Manager (a multi-system
//     service lists all), or, without an inventory (sushy-tools), the
//     System's BiosVersion. SimpleUpdate POSTs the action the
//     UpdateService names, with TransferProtocol only when the BMC lists
//     the image URI's scheme, and returns the task monitor (none for 200
//     or 204); a 400 is KindRefused naming ImageURI, Targets or
//     TransferProtocol, no UpdateService or action KindUnsupported.
//
// Errors are *bmc.Error: dial, timeout, TLS, reset, EOF and context
// deadlines are KindUnreachable; 401/403 KindAuth; 404/405/501 and Redfish
// "not supported" messages KindUnsupported; a change accepted and not
// shown (twice) KindRefused, as are BIOS values and Secure Boot the BMC
// refuses (400) or drops; other statuses (5xx, 4xx) and unreadable
// answers KindBMCError, with the Redfish message. Messages are built from
// the status and a few short Redfish messages (a body that is no Redfish
// error gives a 200-byte excerpt), and are scrubbed, before they are cut,
// of the password, the Basic credentials and the session token in every
// encoding (package redact). Image URLs in messages are shortened to host
// and file name (they carry keys).
//
// ComputerSystems and virtual media slots are decoded leniently
// (case-insensitive keys, numbers sent as strings, nulls, missing fields)
// because real BMCs send such documents and gofish's typed decoding
// rejects a whole resource for one mistyped field.
//
// Virtual media slots: boot images go to the first CD/DVD slot. A config
// drive goes to a USB stick slot, else a floppy slot, else another CD
// slot: never the boot CD, never a slot holding an image the controller
// did not insert (Options.OwnsMedia: an operator's driver disk in an XCC's
// floppy). EjectMedia empties the boot CD and the controller's own images.
package redfish
