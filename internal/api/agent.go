package api

import (
	"net/url"
	"strings"
	"time"
)

// The deploy agent's protocol (pull model): the agent, booted on a node by
// the controller, POSTs an AgentHeartbeat to AgentHeartbeatPath with its
// per-boot token as the bearer token; the AgentReply may carry the one
// command the agent is to run. The agent reports on that command (by id)
// in every later heartbeat until it has reported the command finished and
// the controller has stopped handing it out. The controller never needs a
// route to the node.
//
//	POST /v1/agent/heartbeat   (Bearer: per-boot agent token) AgentHeartbeat → 200 AgentReply
//	401                        token unknown or its session over: the agent retries with backoff
//	403                        the report is refused: its inventory does not present the node's
//	                           identity (system UUID, NIC MACs), or the boot's reports come from
//	                           another address (the first report taken binds the session to its
//	                           source address); no command is handed out
//	anything else / no answer  retried with backoff
//
// Every heartbeat carries the inventory (Inventory), whose system UUID
// and NIC MACs are how the controller knows the agent runs on the node.

// AgentHeartbeatPath is where the agent reports.
const AgentHeartbeatPath = "/v1/agent/heartbeat"

// AgentHeartbeat is what the agent reports, every few seconds.
type AgentHeartbeat struct {
	AgentVersion string `json:"agent_version"`
	// BootID is the kernel's random id of this boot: a new value means the
	// node rebooted under the agent.
	BootID        string          `json:"boot_id,omitempty"`
	UptimeSeconds float64         `json:"uptime_seconds"`
	Inventory     *AgentInventory `json:"inventory,omitempty"`
	// Command reports on the command last handed out, if any.
	Command *AgentCommandStatus `json:"command,omitempty"`
}

// Bounds of what an agent reports: the controller refuses a heartbeat
// beyond them (400, naming the field), and the agent keeps within them.
const (
	// MaxAgentText bounds each string of a report but the message, in
	// bytes: a version, a boot id, a disk's model or serial, a NIC name.
	MaxAgentText = 256
	// MaxAgentMessage bounds a command's message, in bytes.
	MaxAgentMessage = 8 << 10
	// MaxAgentItems bounds each list: disks, NICs, a NIC's addresses.
	MaxAgentItems = 1024
)

// AgentReply is the controller's answer to a heartbeat.
type AgentReply struct {
	// NextHeartbeatSeconds asks for the next heartbeat after this long;
	// 0 keeps the agent's default.
	NextHeartbeatSeconds int `json:"next_heartbeat_seconds,omitempty"`
	// Command is the work to do. The same command (same ID) is handed out
	// until the agent reports it finished; an agent already running it
	// carries on, one that has finished it reports the outcome again.
	Command *AgentCommand `json:"command,omitempty"`
}

// AgentCommandKind is what an agent command does.
type AgentCommandKind string

const (
	// AgentWriteImage writes Image to the root disk chosen by
	// RootDeviceHints (when none, the smallest non-removable disk of at
	// least 4 GiB, as Ironic chooses), verifying
	// its checksum while streaming, then appends ConfigDriveURL's ISO when
	// given.
	AgentWriteImage AgentCommandKind = "write_image"
	// AgentErase erases every non-removable disk: Erase "metadata" wipes
	// partition tables and filesystem signatures at both ends of the disk,
	// "full" erases every byte (an NVMe drive formats itself; other disks
	// are zeroed).
	AgentErase AgentCommandKind = "erase"
)

// AgentCommandKinds lists every agent command kind.
func AgentCommandKinds() []string { return []string{string(AgentWriteImage), string(AgentErase)} }

// AgentEraseMethods lists erase's methods.
func AgentEraseMethods() []string { return []string{"metadata", "full"} }

// AgentPurpose is why the controller booted the deploy agent on a node.
type AgentPurpose string

const (
	AgentPurposeInspect AgentPurpose = "inspect" // report the hardware
	AgentPurposeDeploy  AgentPurpose = "deploy"  // write an instance's image
	AgentPurposeClean   AgentPurpose = "clean"   // erase the disks between tenants
)

// AgentPurposes lists every purpose.
func AgentPurposes() []string {
	return []string{string(AgentPurposeInspect), string(AgentPurposeDeploy), string(AgentPurposeClean)}
}

// AgentActivity is what the deploy agent booted on a node is doing
// (Node.Agent, read-only; null when no agent boot is under way): why it
// was booted, the command it was handed and its last report on it. It
// changes with every report of the agent, without changing the node's
// version.
type AgentActivity struct {
	Purpose AgentPurpose `json:"purpose"`
	// Command is the kind of the command handed out; "" while none is
	// (an inspection, or before the deploy or cleanup hands it out).
	Command AgentCommandKind `json:"command,omitempty"`
	// State is the agent's last report on Command; "" before the first.
	State AgentCommandState `json:"state,omitempty"`
	// Progress is the command's percentage (0–100) as last reported.
	Progress int `json:"progress"`
	// LastSeenAt is the agent's last heartbeat; null while it boots.
	LastSeenAt *time.Time `json:"last_seen_at"`
}

// AgentCommand is one piece of disk work for the agent.
type AgentCommand struct {
	ID   string           `json:"id"`
	Kind AgentCommandKind `json:"kind"`
	// Image is write_image's image.
	Image *Image `json:"image,omitempty"`
	// RootDeviceHints select write_image's disk; every hint given must
	// match (size_gb: "100" or ">= 100"; serial; wwn; model; vendor; name).
	RootDeviceHints map[string]string `json:"root_device_hints,omitempty"`
	// ConfigDriveURL, when set, is an ISO 9660 config drive the agent
	// appends at the end of the root disk after writing the image.
	ConfigDriveURL string `json:"config_drive_url,omitempty"`
	// Erase is erase's method: "metadata" or "full".
	Erase string `json:"erase,omitempty"`
}

// AgentCommandState is where a command stands, as the agent reports it.
type AgentCommandState string

const (
	AgentCommandRunning   AgentCommandState = "running"
	AgentCommandSucceeded AgentCommandState = "succeeded"
	AgentCommandFailed    AgentCommandState = "failed"
)

// AgentCommandStates lists every command state.
func AgentCommandStates() []string {
	return []string{string(AgentCommandRunning), string(AgentCommandSucceeded), string(AgentCommandFailed)}
}

// AgentCommandStatus is the agent's report on a command.
type AgentCommandStatus struct {
	ID    string            `json:"id"`
	State AgentCommandState `json:"state"`
	// Progress is a percentage (0–100) while running.
	Progress int `json:"progress,omitempty"`
	// Message says what was done (succeeded) or what went wrong (failed),
	// never with credentials of the image URL.
	Message string `json:"message,omitempty"`
	// Input is true when a failure is the user's input (image unreachable,
	// checksum mismatch, not a disk image, no disk matches the hints), not
	// the machine: the instance fails and the node stays healthy.
	Input bool `json:"input,omitempty"`
	// Disk is the device written (write_image), e.g. /dev/vda.
	Disk string `json:"disk,omitempty"`
	// Erased says, for a succeeded erase, what was done to each disk and
	// read back afterwards. The controller counts an erase only with it:
	// a succeeded erase without it is refused (the node is not clean).
	Erased []AgentErasedDisk `json:"erased,omitempty"`
}

// AgentErasedDisk is what an erase did to one disk and read back.
type AgentErasedDisk struct {
	// Path is the device, e.g. /dev/sda.
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
	// Method is "metadata", or how a full erase erased the disk (e.g.
	// "NVMe format, cryptographic erase", "discarded, then zeroed").
	Method string `json:"method"`
	// VerifiedBytes is how many bytes the agent read back as zeros after
	// erasing, past the page cache: the metadata regions (AgentEraseRegion
	// at both ends of the disk and of each partition) and, after a full
	// erase, the sampled blocks.
	VerifiedBytes int64 `json:"verified_bytes"`
	// SampledBlocks is how many blocks at random offsets across the whole
	// disk a full erase read back as zeros (0 after a metadata erase).
	SampledBlocks int `json:"sampled_blocks,omitempty"`
}

// AgentEraseRegion is how much an erase zeroes and reads back at each
// end of a disk (and a metadata erase at each end of every partition).
const AgentEraseRegion = 8 << 20

// AgentInventory is the hardware the agent sees.
type AgentInventory struct {
	System AgentSystem `json:"system"`
	CPUs   int         `json:"cpus"`
	// MemoryBytes is the memory the agent's kernel can use (MemTotal):
	// less than installed, by what the firmware and the kernel keep.
	MemoryBytes int64 `json:"memory_bytes"`
	// InstalledMemoryBytes is the memory installed, the sum of the memory
	// devices (DIMMs) the firmware's SMBIOS tables list, as a BMC counts
	// it; 0 when the tables list none. Inspection records it as the
	// node's memory_mb.
	InstalledMemoryBytes int64       `json:"installed_memory_bytes,omitempty"`
	Disks                []AgentDisk `json:"disks"`
	NICs                 []AgentNIC  `json:"nics"`
}

// AgentSystem is the machine's DMI identity (empty where the firmware
// gives none).
type AgentSystem struct {
	Vendor  string `json:"vendor,omitempty"`
	Product string `json:"product,omitempty"`
	Serial  string `json:"serial,omitempty"`
	UUID    string `json:"uuid,omitempty"`
	// BootMode is how the firmware booted the agent: BootModeUEFI or
	// BootModeBIOS ("" from agents before it was reported).
	BootMode string `json:"boot_mode,omitempty"`
	// SecureBoot: UEFI Secure Boot is on; nil when the agent could not
	// tell (the UEFI variables could not be read; false on BIOS).
	SecureBoot *bool `json:"secure_boot,omitempty"`
}

// The boot modes an agent reports.
const (
	BootModeUEFI = "uefi"
	BootModeBIOS = "bios"
)

// BootModes lists them.
func BootModes() []string { return []string{BootModeUEFI, BootModeBIOS} }

// AgentDisk is a block device backed by hardware.
type AgentDisk struct {
	Name       string `json:"name"`
	Path       string `json:"path"`
	SizeBytes  int64  `json:"size_bytes"`
	Model      string `json:"model,omitempty"`
	Serial     string `json:"serial,omitempty"`
	WWN        string `json:"wwn,omitempty"`
	Rotational bool   `json:"rotational"`
	Removable  bool   `json:"removable"`
}

// AgentNIC is an ethernet interface backed by hardware.
type AgentNIC struct {
	Name   string `json:"name"`
	MAC    string `json:"mac"`
	LinkUp bool   `json:"link_up"`
	// SpeedMbps is the link's negotiated speed; 0 when down or unknown.
	SpeedMbps int      `json:"speed_mbps,omitempty"`
	IPv4      []string `json:"ipv4,omitempty"`
	// LLDP is what the switch port the NIC is cabled to announced by
	// LLDP (IEEE 802.1AB) while the agent listened during inspection; nil
	// when no frame came (link down, LLDP off on the switch, not an
	// inspection, or an agent from before LLDP).
	LLDP *AgentLLDP `json:"lldp,omitempty"`
}

// AgentLLDP is the LLDP neighbour one NIC heard: the switch and its port.
// Identifiers are rendered as text by their subtype: a MAC address as
// aa:bb:cc:dd:ee:ff, a network address as an IP address, names as sent,
// anything else as colon-separated hex.
type AgentLLDP struct {
	// ChassisID identifies the switch (often its base MAC address).
	ChassisID string `json:"chassis_id"`
	// SystemName is the switch's host name, if it sent one.
	SystemName string `json:"system_name,omitempty"`
	// PortID identifies the switch's port (often its name, Ethernet1/7).
	PortID string `json:"port_id"`
	// PortDescription is the port's description as configured on the
	// switch, if it sent one.
	PortDescription string `json:"port_description,omitempty"`
	// VLANID is the port's untagged VLAN (IEEE 802.1 Port VLAN ID), 0
	// when the switch did not say.
	VLANID int `json:"vlan_id,omitempty"`
	// MgmtAddress is the switch's management address (IPv4 preferred).
	MgmtAddress string `json:"mgmt_address,omitempty"`
}

// The files of one boot of the agent, under AgentBootDir: the ISO a BMC
// boots from virtual media, and the kernel and initramfs iPXE loads on a
// network boot.
const (
	AgentISOFile    = "agent.iso"
	AgentKernelFile = "vmlinuz"
	AgentInitrdFile = "initrd"
)

// AgentBootFiles lists the files of one agent boot.
func AgentBootFiles() []string { return []string{AgentISOFile, AgentKernelFile, AgentInitrdFile} }

// AgentBootPath is where a BMC fetches the agent ISO for one boot of the
// agent on a node; key is the capability that authorizes the fetch (it
// changes every boot).
func AgentBootPath(nodeID, key string) string {
	return "/v1/agent/boot/" + nodeID + "/" + key + "/" + AgentISOFile
}

// IsControllerMedia reports whether image, a virtual media image as a BMC
// shows it, is one the controller inserts: an agent ISO or a config drive,
// whichever host and port it was reached at (a BMC may show only the file
// name). The Redfish driver ejects such images and leaves the others (an
// operator's) alone.
func IsControllerMedia(image string) bool {
	u, err := url.Parse(strings.TrimSpace(image))
	if err != nil {
		return false
	}
	p := u.Path
	switch {
	case strings.HasPrefix(p, "/v1/agent/boot/"):
		return true
	case strings.HasPrefix(p, "/v1/instances/") && strings.Contains(p, "/config-drive/"):
		return true
	case !strings.Contains(p, "/"):
		return p == AgentISOFile || p == configDriveFile
	}
	return false
}

// AgentNetbootPath is the iPXE script URL for the provisioning network's
// DHCP (the boot filename handed to iPXE): it boots the agent on a node
// the controller is booting from the network, and otherwise leaves the
// machine to boot from its next device.
const AgentNetbootPath = "/v1/agent/netboot"

// NodeConsoleLog is what a node's serial console printed while the
// controller recorded it (GET /v1/nodes/{id}/console/log): the last
// lines, at most 64 KiB, cleaned of terminal escapes, credentials hidden.
type NodeConsoleLog struct {
	NodeID string `json:"node_id"`
	// Recording is whether a controller records the console now.
	Recording bool `json:"recording"`
	// UpdatedAt is when the log last grew (RFC 3339).
	UpdatedAt string `json:"updated_at"`
	Log       string `json:"log"`
}

// NodeInventory is a node's hardware as the agent last reported it
// (GET /v1/nodes/{id}/inventory).
type NodeInventory struct {
	NodeID      string         `json:"node_id"`
	InspectedAt string         `json:"inspected_at"`
	Inventory   AgentInventory `json:"inventory"`
}

// InspectAccepted is the answer to POST /v1/nodes/{id}/inspect.
type InspectAccepted struct {
	JobID   int64  `json:"job_id"`
	Message string `json:"message"`
}
