// Package sim is a simulated fleet of Redfish BMCs: one real HTTP(S) server
// hosting N computer systems, each with its own Manager and virtual media
// slots (by default a CD and a USB stick; Options.MediaSlots), that
// unmodified Redfish clients (gofish, curl, the redfish driver) talk to.
//
// It exists for tests, demos and benchmarks, so every system can be made to
// misbehave on demand with a Fault:
//
//	down  the connection is closed without an answer (reset/EOF)
//	hang  no answer until the client gives up or the fleet closes
//	slow  the answer comes after Options.SlowDelay
//	error HTTP 500 with a Redfish extended error body
//	auth  HTTP 401, whatever the credentials
//	flap  successive requests alternate between down and healthy
//
// A flapping system answers its healthy turns with "Connection: close", so
// the next request comes on a fresh connection: Go (like most HTTP stacks)
// silently retries an idempotent request that fails on a reused keep-alive
// connection, which would otherwise hide every failing turn.
//
// A fault applies to every request under /redfish/v1/Systems/<id> and under
// the system's Manager /redfish/v1/Managers/<id>; the service root, the
// SessionService and the collections stay healthy, like a shared front end
// in front of individual BMCs.
//
// Authentication accepts HTTP basic auth or an X-Auth-Token from
// POST /redfish/v1/SessionService/Sessions (unless Options.NoSessionService).
//
// A small unauthenticated control API on the same server drives demos:
//
//	GET  /sim/systems                      all systems (id, power, fault, ...)
//	GET  /sim/systems/{id}                 one system (with its machine, if any)
//	POST /sim/systems/{id}/fault           {"fault":"hang"}   ("" or "none" clears)
//	POST /sim/systems/{id}/power           {"power":"On"}     (or "Off")
//	POST /sim/systems/{id}/ignore-power    {"ignore":true}
//	POST /sim/systems/{id}/os              {"enabled":false}  the simulated OS never calls back
//	POST /sim/systems/{id}/bios            {"Attributes":{"ProcVirtualization":"Disabled"}}
//	                                       BIOS attributes changed in effect at once, as
//	                                       at the console (drift); checked like a PATCH
//	POST /sim/systems/{id}/secure-boot     {"enabled":true}   Secure Boot in effect at once
//	POST /sim/systems/{id}/firmware        {"component":"BIOS","version":"2.0.0"}
//	                                       a firmware version in effect at once, as
//	                                       flashed out of band (drift)
//	GET  /sim/systems/{id}/storage         the RAID controller: drives, volumes, staged jobs
//	POST /sim/systems/{id}/volumes         {"name":"os","raid_type":"RAID1","drives":["Disk0","Disk1"]}
//	                                       a volume made at once, as in the controller's setup
//	                                       utility (drift); checked like a POST of Volumes
//	DELETE /sim/systems/{id}/volumes/{vid} a volume deleted at once
//	POST /sim/systems/{id}/sensors         {"kind":"fan","name":"Fan3","reading":0}
//	                                       a sensor changed (kind temperature, fan or
//	                                       psu; reading °C, RPM or volts; "health";
//	                                       "absent":true pulls a PSU)
//	POST /sim/systems/{id}/health          {"health":"OK","rollup":"Critical"}
//	                                       the system's Status.Health, a forced rollup
//	POST /sim/systems/{id}/log             {"severity":"Critical","message":"..."}
//	                                       an event log entry (answers its id)
//	POST /sim/fault                        {"fault":"down"}   every system
//
// Virtual media: inserting into a slot that holds an image answers 409
// (eject first). Slots other than CDs fetch the image at insert time, as
// iDRAC and sushy-tools do (Options.FetchCDMedia: CDs too), with a 10 s
// timeout and no TLS verification; an image that cannot be fetched fails
// the insert with 400 and a Redfish message naming the failure. Boot CD
// images are not fetched, so tests can use made-up image URLs.
//
// The simulated OS: when a system's power comes on (a change from off, or a
// ForceRestart/PowerCycle, once Options.PowerDelay has passed) and a slot
// holds a fetched config drive (internal/configdrive) with a ready URL, the
// system waits Options.OSBootDelay and POSTs that URL with
// "Authorization: Bearer <token>" and an empty body, as the drive's
// vendor-data script would, retrying connection errors and 5xx every second
// (30 tries) and stopping at 2xx or 4xx. Once per power-on; powering off,
// SetOS(id, false) and Close cancel it. OS and the control API report the
// outcome (ready_calls, last_status).
//
// Dialects: Options.Dialect = DialectSushy imitates sushy-tools (OpenStack's
// Redfish emulator) where it differs from the standard: the boot override
// always reads back Continuous, clearing it needs a target, VirtualMedia
// lives under the system, InsertMedia fetches every image and answers 500
// when it cannot (see DialectSushy). The vendor dialects (VendorDialects:
// idrac9, ilo5, xcc, x10, x12, cimc, ami, openbmc, intel) are fixtures
// written from the vendors' public documentation and captures of their
// Redfish trees: each is a set of Quirks (ids such as System.Embedded.1 or
// Self, ids with a trailing slash, sessions at /redfish/v1/Sessions and a
// session limit, ETags that PATCH must send, reset types only through
// ActionInfo or run together, Legacy boot mode, media under the System,
// PATCH-only slots, transfer parameters, an insert that shows late or
// never, an empty media collection, an operator's media in a slot, a
// ProcessorSummary that counts sockets or cores, an inventory of zeros
// while off). The standard dialect advertises $expand and honors it on
// the Processors collection (Quirks.Expand: or ignores or refuses it). Options.Tweak changes single quirks, e.g. TaskMonitor
// (actions answered 202 with a task monitor) or InsertIgnored. Systems
// and virtual media slots have an ETag (header and @odata.etag) that
// changes with them.
//
// BIOS settings and Secure Boot (bios.go): every system has a Bios
// (<system>/Bios: Attributes, AttributeRegistry, @Redfish.Settings with
// SupportedApplyTimes OnReset) whose settings object (<bios>/Settings)
// takes a PATCH of {"Attributes":{...}}, checked against the attribute
// registry (served under /redfish/v1/Registries: a MessageRegistryFile
// whose Location is the AttributeRegistry) as a whole: an unknown
// attribute, a wrong JSON type, a value outside the enumeration or the
// bounds, a string too long or a read-only attribute fail it with 400
// and one Base message per fault naming the attribute. Accepted values
// are pending (GET of the settings object shows them) until the next
// reset or power-on from off applies them and empties the settings
// object; PATCH of the Bios itself is 405. The BootMode attribute is the
// system's boot mode (Uefi is UEFI, Bios is Legacy). <system>/SecureBoot
// has SecureBootEnable (PATCH; enabling needs UEFI boot mode, else 400),
// and SecureBootCurrentBoot, which follows it at the next boot.
// Dialects differ (BIOSQuirks): iDRAC applies pending values only when
// they were written with @Redfish.SettingsApplyTime and refuses another
// PATCH until then, iLO's settings object is bios/settings and shows
// every attribute, Lenovo's Bios/Pending, Supermicro's Bios/SD (no
// Attributes while nothing is pending), AMI's Bios/SD unlinked, 404 while
// nothing is pending and PATCHed only with If-Match; sushy-tools serves
// BIOS, applies a PATCH at once unchecked, and its registry file names
// another registry. BIOSQuirks.NoRegistry, None, NoSecureBoot and Drops
// (values accepted and silently left out) are for tests. Fleet.BIOS,
// SetBIOSAttribute, SecureBoot and SetSecureBoot reach them from Go.
//
// Firmware updates (update.go): /redfish/v1/UpdateService has a
// FirmwareInventory (per system: BIOS, the BMC, an integrated NIC that
// is not Updateable; RelatedItem names the Bios, Manager or System each
// belongs to) and the SimpleUpdate action (TransferProtocol HTTP, HTTPS;
// ActionInfo). SimpleUpdate {ImageURI, Targets?, TransferProtocol?} is
// checked (400 naming ImageURI, TransferProtocol or Targets) and runs as
// a task: the image is fetched like virtual media, and one that cannot
// be fetched, is no firmware image or says fail= fails the task with a
// message naming the URL. The image is a text file the sim defines:
//
//	component=BIOS     (BIOS, BMC or NIC.Integrated.1)
//	version=2.1.0
//	fail=reason        (optional: the BMC refuses to apply it)
//
// A new BMC version is in effect at once and its Manager answers 503 for
// a moment (UpdateQuirks.BMCRestart); a new BIOS version is staged and
// applies at the next reset or power-on (the ComputerSystem's and the
// Bios's BiosVersion follow). Without Targets the image applies to every
// system. Dialects (UpdateQuirks): iDRAC ignores Targets, names entries
// Installed-<id>-<version> and keeps a BIOS update's task Pending until
// the reset; iLO ignores Targets and answers 200 without a task to an
// image it cannot process, which it never flashes; sushy-tools has no
// FirmwareInventory, wants Targets (Systems), fetches nothing, bumps the
// BIOS's minor version at once and answers 204. Fleet.Firmware and
// SetFirmwareVersion reach the versions from Go; the state file does not
// keep them (every restart of the fleet starts at 1.0.0-sim).
//
// RAID (storage.go): every system links a Storage collection with one
// controller (SupportedRAIDTypes RAID0, 1, 5, 6, 10), four drives (two
// 960 GB SATA SSDs, two 4 TB SAS HDDs, under <ctrl>/Drives) and a Volumes
// collection: POST creates a volume from RAIDType (or VolumeType) and
// Links.Drives (or Drives), CapacityBytes optional, checked as a whole
// (RAID type listed, drives known and free, a count the level takes, no
// mixed media, a capacity the drives give: else 400 naming the
// property); DELETE removes one. At once (201 with the volume's Location,
// 204), or through a task with Quirks.TaskMonitor. Dialects differ
// (StorageQuirks): iDRAC names things RAID.Integrated.1-1, Disk.Bay.N:...
// and Disk.Virtual.N:..., answers every create and delete with a job
// (202), advertises @Redfish.OperationApplyTimeSupport Immediate and
// OnReset, and runs an OnReset job at the next reset; sushy-tools has one
// drive, stores Name, VolumeType and CapacityBytes unchecked and takes no
// DELETE. StorageQuirks.None and CreateIgnored (acknowledged, nothing
// made) are for tests. Fleet.Storage, Volumes, CreateVolumeOOB and
// DeleteVolumeOOB reach them from Go.
//
// Hardware health (health.go): every system links a Chassis
// (/redfish/v1/Chassis/<system id>) with temperatures, fans and a
// redundant pair of power supplies, through Thermal and Power or through
// ThermalSubsystem, PowerSubsystem and Sensors, and an event log
// (LogServices, entries inline). The system's and the chassis' Status
// carry Health and HealthRollup, worst of their sensors. Dialects differ
// (HealthQuirks): iDRAC serves both sensor forms and its log as the
// Manager's Sel, newest first, 50 a page; OpenBMC only the new forms and
// Systems/system/LogServices/EventLog. Fleet.SetSensor, SetHealth and
// AddLogEntry break them from Go.
//
// VM-backed systems (Options.VM, `controller sim --qemu-vm`): each system
// is a real qemu virtual machine (TCG, no KVM; user-mode networking, so
// the guest reaches the host's 127.0.0.1 at 10.0.2.2; a raw disk file
// <VMOptions.Dir>/<id>/disk.img that tests can read; the serial console
// in serial.log). Instead of the simulated power state and OS:
//
//	On, ForceOn          start qemu (a new process: the boot order and media of that moment)
//	ForceOff             QMP quit
//	GracefulShutdown     QMP system_powerdown (ACPI power button: the guest decides)
//	ForceRestart, PowerCycle, GracefulRestart
//	                     QMP system_reset; qemu runs with -no-reboot, so every reset,
//	                     the guest's own included, ends the process and the next boot
//	                     starts at once with the boot order of that moment
//	Nmi                  QMP inject-nmi
//
// PowerState is what qemu reports: Off without a process, PoweringOn until
// QMP answers, On while it runs (and through a reset), PoweringOff from a
// shutdown until the process has ended. Options.PowerDelay does not apply:
// the delays are real. Virtual media are fetched whole at insert (every
// slot, http and https; an unfetchable image fails the insert as it does on
// the other systems) into the system's directory, and every slot is an IDE
// CD-ROM drive of the VM (at most four): QMP blockdev-change-medium and
// eject change it while the VM runs. The boot override sets the VM's boot
// order (bootindex) at its next start: Cd, Pxe (the NIC's iPXE) or Hdd
// first, then the rest in the default order disk, CD, network; a Once
// override is used up by the boot it applies to, as real BMCs clear it.
// BootSourceOverrideMode picks the firmware: Legacy (SeaBIOS, the default)
// or UEFI (OVMF, when installed). The Redfish document reports the VM's
// real CPUs and memory, and the guest's DMI serial and UUID are the
// system's. Fault injection works as on any system: it breaks the BMC,
// not the VM.
//
// Simulated machines (Options.Machine, `controller sim --machines`): each
// system without a VM gets simulated hardware (MachineOptions: CPUs,
// memory, sparse disk files under <Dir>/<id>/, NICs with stable MACs, the
// system's UUID and serial as its DMI identity, the boot mode of
// BootSourceOverrideMode) that boots what the BMC is told to boot, in
// milliseconds. Power on or a restart boots the override's device (a
// Once override is used up, as real BMCs clear it), else the first
// bootable of disk, CD, network:
//
//	cd       the first CD slot's image, fetched from its URL at boot (an
//	         unfetchable one boots nothing). An agent ISO is booted as its
//	         firmware would: the El Torito entry of the boot mode (a
//	         BIOS-only ISO does not boot on UEFI), the isolinux or GRUB
//	         config naming the kernel, its initramfs and command line, the
//	         kernel checked to be a bzImage, the initramfs unpacked as the
//	         kernel does (concatenated gzip, zstd or plain cpio archives),
//	         /init a static x86-64 executable. The agent's own code
//	         (internal/agent: Loop, Runner, Collector, HTTPController)
//	         then runs in this process with the configuration of the
//	         initramfs's /etc/baremetal/agent.json and the command line,
//	         the initramfs's trust store, and a sysfs, procfs and /dev
//	         built from the description, so its inventory is the
//	         machine's and its disk commands write the disk files with the
//	         agent's disk package. A broken agent ISO logs why and boots
//	         nothing. Any other image boots the simulated OS.
//	disk     a disk with a partition table boots the simulated OS, which
//	         takes its config drive from a config-2 partition of the disks
//	         (as cloud-init finds it; an image deploy's), else from the
//	         virtual media.
//	network  the iPXE script at the netboot URL (MachineOptions.NetbootURL,
//	         SetNetbootURL): chain, kernel, initrd, boot, echo and exit,
//	         ${uuid} and ${mac} (the first NIC's) expanded; an agent
//	         kernel and initramfs boot the agent as from a CD, exit goes
//	         on with disk and CD.
//
// Power off (ForceOff, GracefulShutdown, SetPower), a restart and Close
// stop the running boot at once: its context is cancelled and the disks'
// device nodes go first, so nothing of a lost boot (not even the agent's
// scrub of a failed write) touches a disk afterwards; the next boot starts
// once the last has returned. poweroff_after_heartbeat powers the machine
// off through the sim, never the host. Machine, Disk and MachineConsole
// (the machine's console.log: what it booted, the agent's log) tell tests
// what happened; the control API shows it under "machine". Not emulated:
// the kernel and /init of the ISO are never run (any bzImage and static
// executable do), no drivers, DHCP or network identity (the agent reaches
// the controller from this host), no other OS than the simulated one, no
// Secure Boot, no disk controller errors, caches or speeds, no firmware
// fallback from a failed override to the boot order.
//
// Lookups are map based and per-system state has its own lock, so one process
// serves 10,000 systems; only the Systems and Managers collections (and
// GET /sim/systems) are O(N).
package sim
