// Package api holds the wire types of the controller's REST API v1: the
// JSON bodies the server (internal/httpapi) writes and the client
// (internal/apiclient) reads, and the enumerations of their values
// (enums.go). It has no logic; it is the contract.
//
// Routes (all under a bearer token except healthz/readyz/openapi.json):
//
//	GET    /v1/nodes                  ?provision_state=&maintenance=&fault=&resource_class=&include_deleting=&limit=&cursor=
//	POST   /v1/nodes                  NodeCreate → 201 Node            (admin)
//	GET    /v1/nodes/{id-or-name}     → Node, ETag
//	PATCH  /v1/nodes/{id-or-name}     NodePatch (JSON Merge Patch) → Node (admin; If-Match)
//	DELETE /v1/nodes/{id-or-name}     ?force=true → 202 Accepted      (admin; If-Match)
//	GET    /v1/nodes/{id}/events      → EventList
//	POST   /v1/nodes/{id}/power       PowerRequest (on|off|soft_off|reset) → 202 Accepted (admin)
//	GET    /v1/instances              ?limit=&cursor=  (members see their project)
//	POST   /v1/instances              InstanceCreate → 201 Instance
//	GET    /v1/instances/{id-or-name} → Instance, ETag
//	PATCH  /v1/instances/{id-or-name} InstanceUpdate (power_state) → Instance
//	DELETE /v1/instances/{id-or-name} → 202 Accepted
//	POST   /v1/instances/{id}/ready   (Bearer: the instance's ready token) → 204
//	GET    /v1/instances/{id}/config-drive/{key}/config-2.iso  (no auth: key) → ISO 9660
//	GET    /v1/tokens, POST /v1/tokens TokenCreate → 201 TokenCreated, DELETE /v1/tokens/{id}  (admin)
//	GET    /v1/quotas/{project}, PUT /v1/quotas/{project} Quota     (admin)
//	GET    /v1/jobs                   ?node_id=&state=&limit=           (admin)
//	GET    /healthz, /readyz, /metrics, /openapi.json
package api

import (
	"encoding/json"
	"time"
)

// BMC is a node's BMC as the API shows it: never with the password.
// SystemID is, for Redfish, the system's @odata.id as the BMC serves it
// once the controller asked the BMC (at enroll or when it verified the
// node), else as written (any spelling of RedfishSystemPath).
type BMC struct {
	Address     string `json:"address"`
	Username    string `json:"username"`
	Insecure    bool   `json:"insecure"`
	SystemID    string `json:"system_id,omitempty"`
	CipherSuite int    `json:"cipher_suite,omitempty"`
	// PasswordSet tells that a password is stored, without revealing it.
	PasswordSet bool `json:"password_set"`
}

// BMCInput is a BMC as a client writes it.
type BMCInput struct {
	Address     string `json:"address"`
	Username    string `json:"username"`
	Password    string `json:"password"`
	Insecure    bool   `json:"insecure,omitempty"`
	SystemID    string `json:"system_id,omitempty"`
	CipherSuite int    `json:"cipher_suite,omitempty"`
}

// Properties of a node's hardware; a member left out (or 0, "") is
// unknown. Written (NodeCreate), each member set is an operator's
// override, which inspection never changes; the others are filled by
// inspection.
type Properties struct {
	CPUs     int    `json:"cpus,omitempty"`
	MemoryMB int    `json:"memory_mb,omitempty"`
	LocalGB  int    `json:"local_gb,omitempty"`
	CPUArch  string `json:"cpu_arch,omitempty"`
}

// PropertiesPatch is the properties member of a NodePatch. A merge patch
// merges it into the node's overrides: a member set overrides that
// property, a member sent as null (nil here: this type sends all four)
// clears its override, which shows what inspection found at once.
type PropertiesPatch struct {
	CPUs     *int    `json:"cpus"`
	MemoryMB *int    `json:"memory_mb"`
	LocalGB  *int    `json:"local_gb"`
	CPUArch  *string `json:"cpu_arch"`
}

// Node as returned by the API. Members see BMC as null.
type Node struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Driver        Driver `json:"driver"`
	BMC           *BMC   `json:"bmc"`
	ResourceClass string `json:"resource_class"`
	// Traits are the operator's; DerivedTraits those the controller
	// derives from inspection and the BMC (architecture, boot mode,
	// Secure Boot, disk kinds, NIC speeds), replaced by each inspection.
	// Placement matches both.
	Traits        []string `json:"traits"`
	DerivedTraits []string `json:"derived_traits"`
	// Owner is the project whose instances alone are placed on the node
	// ("" for any project; "another project" to a monitor token, which
	// sees every project's nodes).
	Owner string `json:"owner"`
	// BIOSSettings and SecureBoot are the hardware settings the operator
	// declares (admins only: {} and null for members); Hardware what the
	// controller last read of them from the BMC (null for members).
	BIOSSettings map[string]string `json:"bios_settings"`
	SecureBoot   *bool             `json:"secure_boot"`
	// RAID is every volume the node's storage is to have (null: the
	// volumes are not managed); Firmware the firmware components to keep
	// at a version ([] for none; null for members).
	RAID     *[]Volume     `json:"raid"`
	Firmware []Firmware    `json:"firmware"`
	Hardware *NodeHardware `json:"hardware"`
	// Health is the hardware's health as the BMC last reported it.
	Health     NodeHealth `json:"health"`
	Properties Properties `json:"properties"`
	// PropertyOverrides lists the properties the operator set (always
	// shown as set, never changed by inspection); the others show what
	// inspection found.
	PropertyOverrides []PropertyName `json:"property_overrides"`
	Maintenance       bool           `json:"maintenance"`
	MaintenanceReason string         `json:"maintenance_reason"`
	// CleanErase is the node's own erase mode for cleaning, "" when it
	// follows its resource class's or the controller's.
	CleanErase CleanErase `json:"clean_erase"`
	// InspectOnEnroll is the node's own choice of inspection after its
	// BMC is verified, null when it follows the controller's
	// --inspect-on-enroll.
	InspectOnEnroll *bool          `json:"inspect_on_enroll"`
	PowerState      PowerState     `json:"power_state"`
	ProvisionState  ProvisionState `json:"provision_state"`
	Fault           Fault          `json:"fault"`
	LastError       string         `json:"last_error"`
	FaultSince      *time.Time     `json:"fault_since"`
	// BMCFailures counts the controller's consecutive failed calls to the
	// BMC, 0 after a success and when the BMC settings change: with
	// fault bmc_auth_failed, how many times in a row the credentials
	// were refused.
	BMCFailures int    `json:"bmc_failures"`
	InstanceID  string `json:"instance_id"`
	// InspectedAt is when the node's inventory (GET
	// /v1/nodes/{id}/inventory) was last reported, null if never: a
	// client that holds that inventory knows without asking whether it
	// is still the latest.
	InspectedAt *time.Time `json:"inspected_at"`
	// Ports are the node's NICs as its last inspection found them, with
	// the switch port each is cabled to where the agent heard LLDP; []
	// before the first inspection. Everyone who reads the node sees them
	// (members write an instance's network by MAC); the rest of the
	// inventory, addresses included, is the admins'.
	Ports []NodePort `json:"ports"`
	// Agent is what the deploy agent booted on the node (deploying,
	// cleaning, inspecting) is doing and how far it is, null when none
	// is booted.
	Agent *AgentActivity `json:"agent"`
	// Flow is the controller's work in progress on the node (deploy,
	// cleanup, inspect, retire) and the step it is at, null when none.
	Flow      *NodeFlow `json:"flow"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Version   int64     `json:"version"`
}

// NodeHealth is a node's hardware health as its BMC last reported it
// (read every --health-interval, apart from the power sync). Critical is
// the hardware_critical fault.
type NodeHealth struct {
	// State is ok, warning, critical or unknown (never read, or the BMC
	// reports none).
	State string `json:"state"`
	// Reasons say what is not ok, worst first.
	Reasons []string `json:"reasons"`
	// HottestC is the highest temperature read, °C (0: none).
	HottestC   float64    `json:"hottest_c"`
	FansFailed int        `json:"fans_failed"`
	PSUsFailed int        `json:"psus_failed"`
	ReadAt     *time.Time `json:"read_at"`
}

// NodeHardware is what the controller last read from a node's BMC of
// the hardware settings the node declares.
type NodeHardware struct {
	// BIOS are the values in effect of the BIOS attributes the node
	// declares (an attribute the BMC does not report is absent).
	BIOS map[string]string `json:"bios"`
	// SecureBoot is the BMC's SecureBootEnable; null when not read or
	// the BMC has none.
	SecureBoot *bool `json:"secure_boot"`
	// ReadAt is when they were read; null: never.
	ReadAt *time.Time `json:"read_at"`
	// Lacks says what the BMC lacks of what hardware settings need
	// ("BIOS settings", "Secure Boot").
	Lacks []string `json:"lacks"`
	// Unmet lists the declared settings the BMC does not show ("
	// bios_settings.ProcVirtualization: want Enabled, is Disabled"): the
	// drift, or what is being applied.
	Unmet []string `json:"unmet"`
	// Waiting: the settings were asked for while the node was busy; they
	// are applied when it is free (after its cleanup).
	Waiting bool `json:"waiting"`
	// Volumes are the volumes the BMC reports (when the node declares
	// raid); Firmware the versions of the declared components.
	Volumes  []ObservedVolume  `json:"volumes"`
	Firmware map[string]string `json:"firmware"`
}

// Volume is a logical (RAID) volume a node declares.
type Volume struct {
	Name string `json:"name"`
	// RAIDLevel is 0, 1, 5, 6 or 10.
	RAIDLevel string `json:"raid_level"`
	// SizeGB 0: all the drives give.
	SizeGB int `json:"size_gb,omitempty"`
	// DriveCount drives not in another volume, of MediaType (ssd, hdd;
	// empty: any), the smallest first; or DriveIDs.
	DriveCount int      `json:"drive_count,omitempty"`
	MediaType  string   `json:"media_type,omitempty"`
	DriveIDs   []string `json:"drive_ids,omitempty"`
}

// ObservedVolume is a volume as the BMC reports it.
type ObservedVolume struct {
	Name      string   `json:"name"`
	RAIDLevel string   `json:"raid_level"`
	SizeGB    int      `json:"size_gb"`
	Drives    []string `json:"drives"`
}

// Firmware is a firmware component a node keeps at a version: the
// controller updates it from ImageURL (SimpleUpdate) when the BMC's
// inventory shows another.
type Firmware struct {
	Component string `json:"component"`
	Version   string `json:"version"`
	ImageURL  string `json:"image_url"`
}

// NodePort is one of a node's NICs as its last inspection found it.
type NodePort struct {
	// Name is the NIC's name in the deploy agent's kernel (eno1,
	// enp65s0f0): the installed OS may name it alike, but only the MAC
	// is sure.
	Name      string `json:"name"`
	MAC       string `json:"mac"`
	LinkUp    bool   `json:"link_up"`
	SpeedMbps int    `json:"speed_mbps"`
	// LLDP is the switch port the NIC is cabled to, as the switch
	// announced it; null when the agent heard no LLDP frame on it.
	LLDP *NodePortLLDP `json:"lldp"`
}

// NodePortLLDP is the switch port a NIC is cabled to, from LLDP.
type NodePortLLDP struct {
	SwitchChassisID       string `json:"switch_chassis_id"`
	SwitchSystemName      string `json:"switch_system_name"`
	SwitchPortID          string `json:"switch_port_id"`
	SwitchPortDescription string `json:"switch_port_description"`
	// VLANID is the port's untagged VLAN, 0 when the switch did not say.
	VLANID int `json:"vlan_id"`
}

// NodeFlow is a flow the controller runs on a node: a declared list of
// steps, the one it is at, and since when. A step that waits for the
// deploy agent shows the agent's progress in Node.agent.
type NodeFlow struct {
	// Name is the flow's: deploy, cleanup, inspect or retire (the kind
	// of the job that runs it).
	Name string `json:"name"`
	// Steps are the flow's steps in order, as this run of it declared
	// them (a cleanup with an erase has more than one without).
	Steps []string `json:"steps"`
	// Step is the current step, one of Steps, StepIndex its position
	// (0 first), and StepStartedAt when it started.
	Step          string    `json:"step"`
	StepIndex     int       `json:"step_index"`
	StepStartedAt time.Time `json:"step_started_at"`
}

// NodeCreate is the body of POST /v1/nodes.
type NodeCreate struct {
	Name              string     `json:"name"`
	Driver            Driver     `json:"driver"`
	BMC               BMCInput   `json:"bmc"`
	ResourceClass     string     `json:"resource_class,omitempty"`
	Properties        Properties `json:"properties,omitempty"`
	Maintenance       bool       `json:"maintenance,omitempty"`
	MaintenanceReason string     `json:"maintenance_reason,omitempty"`
	CleanErase        CleanErase `json:"clean_erase,omitempty"`
	InspectOnEnroll   *bool      `json:"inspect_on_enroll,omitempty"`
	Traits            []string   `json:"traits,omitempty"`
	Owner             string     `json:"owner,omitempty"`
	// BIOSSettings are BIOS attribute values by name, as text (integers
	// in decimal, booleans true or false); SecureBoot enables or disables
	// UEFI Secure Boot (null: left as it is). They are applied once the
	// node is verified, before it is scheduled.
	BIOSSettings map[string]string `json:"bios_settings,omitempty"`
	SecureBoot   *bool             `json:"secure_boot,omitempty"`
	// RAID declares every volume ([] deletes them all); Firmware the
	// components to keep at a version.
	RAID     *[]Volume  `json:"raid,omitempty"`
	Firmware []Firmware `json:"firmware,omitempty"`
}

// NodePatch is the body of PATCH /v1/nodes/{id}: a JSON Merge Patch of
// a node, where nil fields are left alone.
type NodePatch struct {
	Name              *string          `json:"name,omitempty"`
	Driver            *Driver          `json:"driver,omitempty"`
	BMC               *BMCPatch        `json:"bmc,omitempty"`
	ResourceClass     *string          `json:"resource_class,omitempty"`
	Properties        *PropertiesPatch `json:"properties,omitempty"`
	Maintenance       *bool            `json:"maintenance,omitempty"`
	MaintenanceReason *string          `json:"maintenance_reason,omitempty"`
	// CleanErase "" goes back to the resource class's or the
	// controller's erase mode.
	CleanErase *CleanErase `json:"clean_erase,omitempty"`
	// InspectOnEnroll with a nil Value sends null: the node follows the
	// controller's --inspect-on-enroll again.
	InspectOnEnroll *Nullable[bool] `json:"inspect_on_enroll,omitempty"`
	// Traits replaces the operator's traits ([] clears them); Owner ""
	// frees the node for every project.
	Traits *[]string `json:"traits,omitempty"`
	Owner  *string   `json:"owner,omitempty"`
	// BIOSSettings merges into the declared attributes (a null value
	// stops managing that attribute); SecureBoot null stops managing it.
	// A patch that names either applies the settings: now when the node
	// is free, else once it is.
	BIOSSettings map[string]*string `json:"bios_settings,omitempty"`
	SecureBoot   *Nullable[bool]    `json:"secure_boot,omitempty"`
	// RAID and Firmware replace the declared volumes and components
	// (null: stop managing them). Naming them applies them, as above.
	RAID     *Nullable[[]Volume]   `json:"raid,omitempty"`
	Firmware *Nullable[[]Firmware] `json:"firmware,omitempty"`
}

// Nullable is a merge patch member that can be sent as null, which
// removes (unsets) it: a nil *Nullable leaves the member out of the
// patch, Nullable{} sends null, Nullable{Value: &v} sends v.
type Nullable[T any] struct{ Value *T }

// MarshalJSON writes the value, or null.
func (n Nullable[T]) MarshalJSON() ([]byte, error) { return json.Marshal(n.Value) }

// UnmarshalJSON reads a value (a null member leaves the *Nullable nil).
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	var v *T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	n.Value = v
	return nil
}

// BMCPatch is the bmc member of a NodePatch.
type BMCPatch struct {
	Address     *string `json:"address,omitempty"`
	Username    *string `json:"username,omitempty"`
	Password    *string `json:"password,omitempty"`
	Insecure    *bool   `json:"insecure,omitempty"`
	SystemID    *string `json:"system_id,omitempty"`
	CipherSuite *int    `json:"cipher_suite,omitempty"`
}

// NodeList is a page of nodes.
type NodeList struct {
	Items      []Node `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// Event is one change to a node.
type Event struct {
	ID      int64     `json:"id"`
	NodeID  string    `json:"node_id"`
	Time    time.Time `json:"time"`
	Actor   string    `json:"actor"`
	Type    string    `json:"type"`
	Field   string    `json:"field,omitempty"`
	Old     string    `json:"old,omitempty"`
	New     string    `json:"new,omitempty"`
	Message string    `json:"message"`
}

// EventList is a page of events, oldest first.
type EventList struct {
	Items      []Event `json:"items"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// Image an instance boots.
type Image struct {
	URL      string `json:"url"`
	Checksum string `json:"checksum,omitempty"`
}

// Instance as returned by the API.
type Instance struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Project       string `json:"project"`
	NodeID        string `json:"node_id"`
	ResourceClass string `json:"resource_class"`
	// Requirements are what placed the instance beyond its class (the
	// zero value when none were asked).
	Requirements Requirements      `json:"requirements"`
	Image        Image             `json:"image"`
	UserData     string            `json:"user_data"`
	Metadata     map[string]string `json:"metadata"`
	State        InstanceState     `json:"state"`
	// PowerState is the desired power state ("" = none); ObservedPowerState
	// is the node's.
	PowerState         PowerState `json:"power_state"`
	ObservedPowerState PowerState `json:"observed_power_state"`
	LastError          string     `json:"last_error"`
	// Ready is true once the booted OS called POST /v1/instances/{id}/ready.
	Ready bool `json:"ready"`
	// DeployTimeout ("" = none) is how long the deploy waits for that
	// callback after power-on; BootedAt is when power-on was observed.
	DeployTimeout string     `json:"deploy_timeout,omitempty"`
	BootedAt      *time.Time `json:"booted_at,omitempty"`
	// DeployMethod is how the image reached the node; RootDevice the
	// hints that chose the disk an image deploy wrote.
	DeployMethod DeployMethod      `json:"deploy_method"`
	RootDevice   map[string]string `json:"root_device,omitempty"`
	// Rebuilds counts the rebuilds in place (POST .../rebuild): 0 until
	// the first.
	Rebuilds int `json:"rebuilds"`
	// Network is the OS's network configuration, as given (nil: none).
	Network *Network `json:"network,omitempty"`
	// Addresses are the addresses the network gives the OS: its static
	// ones and those allocated from IP pools.
	Addresses []InstanceAddress `json:"addresses"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	Version   int64             `json:"version"`
}

// InstanceRebuild is the body of POST /v1/instances/{id}/rebuild: the
// image and user data to rebuild with (absent: the instance's own, so an
// empty body reinstalls what it has). The instance keeps its id, node and
// everything else; user data "" removes it.
type InstanceRebuild struct {
	Image    *Image  `json:"image,omitempty"`
	UserData *string `json:"user_data,omitempty"`
	// Network replaces the network ({} removes it); absent keeps it.
	Network *Network `json:"network,omitempty"`
}

// RebuildPath is where an instance is rebuilt in place.
func RebuildPath(instanceID string) string { return "/v1/instances/" + instanceID + "/rebuild" }

// InstanceCreate is the body of POST /v1/instances. Exactly one of
// ResourceClass and NodeID. Project defaults to the token's project; an
// admin must name one.
type InstanceCreate struct {
	Name          string `json:"name"`
	Project       string `json:"project,omitempty"`
	ResourceClass string `json:"resource_class,omitempty"`
	NodeID        string `json:"node_id,omitempty"`
	// Requirements narrow placement by class to the nodes that meet
	// them (and without a class, place among every node); with node_id the
	// pinned node must meet them.
	Requirements *Requirements     `json:"requirements,omitempty"`
	Image        Image             `json:"image"`
	UserData     string            `json:"user_data,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	PowerState   PowerState        `json:"power_state,omitempty"`
	// DeployTimeout (a Go duration, e.g. "30m") makes the deploy wait for
	// the booted OS to call POST /v1/instances/{id}/ready with the ready
	// token from its config drive; without the call within this time after
	// power-on, the deploy fails with a deploy_timeout fault.
	DeployTimeout string `json:"deploy_timeout,omitempty"`
	// DeployMethod: "image" writes the image to the node's root disk with
	// the deploy agent, "live" has the BMC boot it from virtual media
	// (DocDeployMethod says it all).
	DeployMethod DeployMethod `json:"deploy_method,omitempty"`
	// RootDevice hints choose the disk an image deploy writes; none: the
	// smallest fixed disk of at least RootDiskMinGiB (DocRootDevice).
	RootDevice map[string]string `json:"root_device,omitempty"`
	// Network configures the OS's network (DocNetwork).
	Network *Network `json:"network,omitempty"`
}

// ReadyPath is the readiness callback of an instance.
func ReadyPath(instanceID string) string { return "/v1/instances/" + instanceID + "/ready" }

// ConfigDrivePath is where the BMC fetches an instance's config drive;
// key is the capability that authorizes the fetch. It ends in ".iso"
// because some BMCs judge an image by its name.
func ConfigDrivePath(instanceID, key string) string {
	return "/v1/instances/" + instanceID + "/config-drive/" + key + "/" + configDriveFile
}

// configDriveFile is the config drive's file name in its URL.
const configDriveFile = "config-2.iso"

// InstanceUpdate is the body of PATCH /v1/instances/{id}.
type InstanceUpdate struct {
	PowerState *PowerState        `json:"power_state,omitempty"` // "" clears the wish
	Metadata   *map[string]string `json:"metadata,omitempty"`
}

// InstanceList is a page of instances.
type InstanceList struct {
	Items      []Instance `json:"items"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// Accepted is the body of a 202: the durable job that will finish the work.
type Accepted struct {
	JobID   int64  `json:"job_id"`
	Message string `json:"message"`
}

// PowerRequest is the body of POST /v1/nodes/{id}/power.
type PowerRequest struct {
	Target PowerAction `json:"target"` // one of PowerActions
}

// TokenCreate is the body of POST /v1/tokens.
type TokenCreate struct {
	Name      string     `json:"name,omitempty"`
	Role      Role       `json:"role"`
	Project   string     `json:"project,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Token as listed (never with its secret).
type Token struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Role      Role       `json:"role"`
	Project   string     `json:"project,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

// TokenCreated is returned once, at creation: Secret is never shown again.
type TokenCreated struct {
	Token
	Secret string `json:"secret"`
}

// TokenList is a page of tokens.
type TokenList struct {
	Items      []Token `json:"items"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// Quota of a project; Instances -1 means unlimited.
type Quota struct {
	Project   string `json:"project"`
	Instances int    `json:"instances"`
	Used      int    `json:"used"`
}

// Job is a durable job as the jobs API shows it. MaxAttempts is how many
// attempts it has before it is discarded, 0 (left out) for the kinds
// that retry until they succeed (verify, cleanup, retire, inspect).
type Job struct {
	ID          int64      `json:"id"`
	Kind        string     `json:"kind"`
	State       string     `json:"state"`
	NodeID      string     `json:"node_id,omitempty"`
	Attempt     int        `json:"attempt"`
	MaxAttempts int        `json:"max_attempts,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	ScheduledAt time.Time  `json:"scheduled_at"`
	CreatedAt   time.Time  `json:"created_at"`
	FinalizedAt *time.Time `json:"finalized_at,omitempty"`
}

// JobList is a list of jobs.
type JobList struct {
	Items []Job `json:"items"`
}

// Problem is an RFC 9457 problem document (application/problem+json).
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// Code is the stable machine-readable code (also the last path element
	// of Type); Field is the JSON path of the offending attribute, if any.
	Code     ProblemCode `json:"code"`
	Field    string      `json:"field,omitempty"`
	Instance string      `json:"instance,omitempty"`
	// Capacity comes with no_capacity: why the nodes that were
	// considered cannot take the instance.
	Capacity *Capacity `json:"capacity,omitempty"`
}

// Capacity counts, by reason, the nodes a no_capacity answer considered
// (every node of the resource class, or the pinned node). Each node is
// counted under one reason, the first that applies in this order; the
// problem's detail says the same in words.
type Capacity struct {
	// Nodes is how many nodes were considered.
	Nodes int `json:"nodes"`
	// Maintenance: an operator took the node out of service.
	Maintenance int `json:"maintenance"`
	// Fault: the controller cannot work the node's BMC (Node.Fault);
	// the fault clears by itself once the BMC behaves.
	Fault int `json:"fault"`
	// UnsuitableDriver: available and healthy, but its driver cannot
	// attach the config drive a live deploy of the instance needs (no
	// virtual media; an image deploy writes it to disk on any node).
	UnsuitableDriver int `json:"unsuitable_driver"`
	// Busy: the node hosts an instance (deploying, active or
	// deploy_failed).
	Busy int `json:"busy"`
	// Cleaning, Enroll, Deleting and Inspecting count the nodes in those
	// provision states (inspecting: the deploy agent reports the node's
	// hardware, and the node is available again after).
	Cleaning   int `json:"cleaning"`
	Enroll     int `json:"enroll"`
	Deleting   int `json:"deleting"`
	Inspecting int `json:"inspecting"`
	// Configuring: the node's hardware settings are being applied; it is
	// available again after.
	Configuring int `json:"configuring"`
	// Pending counts the nodes, among those above, that will be able to
	// take the instance without anyone acting: being cleaned (a fault
	// left by the failed deploy clears when the cleanup succeeds), or
	// being verified or inspected without trouble. Waiting and trying
	// again can help only when it is not 0.
	Pending int `json:"pending"`
	// Unsuited counts the nodes whose hardware, traits or owner fail the
	// instance's requirements, whatever their state (no wait helps); they
	// are counted under no reason above. Unmet says, per requirement, how
	// many nodes fail it (a node failing several is counted under each),
	// the requirement most nodes fail first.
	Unsuited int                `json:"unsuited"`
	Unmet    []UnmetRequirement `json:"unmet"`
	// Available counts the nodes that could take the instance now (0 in
	// a no_capacity answer).
	Available int `json:"available"`
}

// UnmetRequirement is how many nodes fail one requirement: Requirement
// is resource_class, owner, required_trait, forbidden_trait, min_cpus,
// min_memory_mb, min_disk_gb or cpu_arch; Value the class, trait,
// minimum or architecture asked (empty for owner: which projects own the
// nodes is not said).
type UnmetRequirement struct {
	Requirement string `json:"requirement"`
	Value       string `json:"value"`
	Nodes       int    `json:"nodes"`
	// Message says it in words: "31 nodes lack trait CUSTOM_GPU_A100".
	Message string `json:"message"`
}

// Requirements are what an instance asks of its node beyond the resource
// class: every required trait and no forbidden one (set by the operator
// or derived by the controller), at least the minimum hardware (a
// property never inspected meets no minimum), the architecture. Of the
// nodes that meet them, the smallest is chosen (best fit).
type Requirements struct {
	RequiredTraits  []string `json:"required_traits,omitempty"`
	ForbiddenTraits []string `json:"forbidden_traits,omitempty"`
	MinCPUs         int      `json:"min_cpus,omitempty"`
	MinMemoryMB     int      `json:"min_memory_mb,omitempty"`
	MinDiskGB       int      `json:"min_disk_gb,omitempty"`
	CPUArch         string   `json:"cpu_arch,omitempty"`
}

// CapacityReport answers GET /v1/capacity: how many instances of a shape
// (resource class and requirements) could be placed now for a project.
type CapacityReport struct {
	Project       string       `json:"project"`
	ResourceClass string       `json:"resource_class"`
	Requirements  Requirements `json:"requirements"`
	// Placeable is how many such instances the project could create now:
	// the nodes that could take one (Capacity.Available; each takes one
	// instance), within what the project's quota leaves (QuotaRemaining,
	// null when unlimited).
	Placeable      int  `json:"placeable"`
	QuotaRemaining *int `json:"quota_remaining"`
	// Capacity counts the nodes considered, by reason, as a no_capacity
	// answer does; Message says the same in words.
	Capacity Capacity `json:"capacity"`
	Message  string   `json:"message"`
}

// ProblemTypeBase prefixes every problem Type.
const ProblemTypeBase = "https://baremetal-tf.github.io/problems/"

// ProblemContentType is the media type of error responses.
const ProblemContentType = "application/problem+json"
