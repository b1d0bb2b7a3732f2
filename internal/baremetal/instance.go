package baremetal

import "time"

// InstanceState is the user-visible state of an instance.
type InstanceState string

const (
	InstanceDeploying InstanceState = "deploying"
	InstanceActive    InstanceState = "active"
	InstanceError     InstanceState = "error"
)

// InstanceStates lists every instance state.
var InstanceStates = []InstanceState{InstanceDeploying, InstanceActive, InstanceError}

// DeployMethod is how an instance's image reaches its node.
type DeployMethod string

const (
	// DeployImage: the deploy agent writes the image to the node's root
	// disk (verifying its checksum) and the node boots from disk.
	DeployImage DeployMethod = "image"
	// DeployLive: the BMC boots the image itself from virtual media (an
	// ISO), or the node boots from the network; the disks are not touched.
	DeployLive DeployMethod = "live"
)

// DeployMethods lists every deploy method.
var DeployMethods = []DeployMethod{DeployImage, DeployLive}

// RootDeviceHints are the keys of an instance's root_device hints.
var RootDeviceHints = []string{"size_gb", "serial", "wwn", "model", "vendor", "name"}

// Image is what an instance boots.
type Image struct {
	URL      string `json:"url"`
	Checksum string `json:"checksum,omitempty"`
}

// Instance is a user's workload placed on one node.
type Instance struct {
	ID            string
	Name          string
	Project       string
	NodeID        string
	ResourceClass string
	// Requirements are what the node must offer beyond the resource
	// class (traits, minimum hardware, architecture): placement picks the
	// smallest node that meets them.
	Requirements Requirements
	Image        Image
	UserData     string
	Metadata     map[string]string
	State        InstanceState
	// PowerState is the desired power state ("" = no preference).
	PowerState PowerState
	LastError  string
	// ReadyTokenHash authenticates the booted OS's readiness callback
	// (hex SHA-256 of ReadyToken). ReadyToken itself is kept too (sealed
	// at rest by the store, as BMC passwords are) because the config
	// drive the BMC fetches must carry it in the clear. Never shown.
	ReadyTokenHash string
	ReadyToken     string
	Ready          bool
	// DeployTimeout, when not zero, makes the deploy wait for the booted
	// OS's readiness callback: the instance stays deploying until it
	// comes, and fails with a deploy_timeout fault if it has not come
	// DeployTimeout after power-on was observed (BootedAt).
	DeployTimeout time.Duration
	// DeployMethod is how the image reaches the node; RootDevice holds
	// the hints that choose the disk an image deploy writes (every hint
	// given must match; none: the largest fixed disk).
	DeployMethod DeployMethod
	RootDevice   map[string]string
	BootedAt     *time.Time
	// Rebuilds counts the rebuilds in place (StartRebuild): 0 for the
	// first deploy. It tells a rebuild's deploy from the first one (a
	// rebuild that fails on its image keeps the node) and names the agent
	// commands of each.
	Rebuilds int
	// Network is the OS's network configuration (nil: none, the image's
	// own, usually DHCP), written to the config drive as
	// network_data.json.
	Network *Network
	// Addresses are the addresses the network gives the OS: its static
	// ones and those allocated from IP pools (which the pools' allocations
	// hold until the instance is deleted and its node cleaned).
	Addresses []InstanceAddress
	CreatedAt time.Time
	UpdatedAt time.Time
	Version   int64
}

// NeedsConfigDrive reports whether the instance has something only a
// config drive can deliver: user data, or the ready token for a
// readiness callback it waits for.
func (i *Instance) NeedsConfigDrive() bool {
	return i.UserData != "" || i.DeployTimeout > 0 || i.HasNetwork()
}

// HasNetwork reports whether the instance configures its OS's network.
func (i *Instance) HasNetwork() bool {
	return i.Network != nil && len(i.Network.Interfaces) > 0
}

// NeedsMediaDrive reports whether the instance's config drive must reach
// its node as virtual media: a live deploy (the BMC boots the image) that
// needs one. An image deploy's agent writes the drive to the disk as a
// partition, whatever the BMC, and boots by network where the BMC has no
// virtual media.
func (i *Instance) NeedsMediaDrive() bool {
	return i.NeedsConfigDrive() && i.DeployMethod != DeployImage
}

// CanCarryConfigDrive reports whether n can deliver the config drive
// inst needs, if any: on any node for an image deploy, as virtual media
// for a live one, which only Redfish BMCs have (IPMI has none). Whether a
// given BMC has a free slot is only known when the deploy tries.
func (n *Node) CanCarryConfigDrive(inst *Instance) bool {
	return !inst.NeedsMediaDrive() || n.Driver == DriverRedfish
}

// Role is what a token may do.
type Role string

const (
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
	// RoleMonitor is read-only, for monitoring systems: it may list the
	// nodes (as a member sees them, fleet-wide) and scrape the per-node
	// metrics, and nothing else. It has no project.
	RoleMonitor Role = "monitor"
)

// Roles lists every role.
var Roles = []Role{RoleAdmin, RoleMember, RoleMonitor}

// Token is an API credential. Only the hash of its secret is stored.
type Token struct {
	ID        string
	Name      string
	Role      Role
	Project   string // members only
	Hash      string // hex SHA-256 of the secret
	ExpiresAt *time.Time
	CreatedAt time.Time
}

// Expired reports whether the token is past its expiry at now.
func (t *Token) Expired(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

// Quota limits a project's instances. Limit < 0 means unlimited.
type Quota struct {
	Project   string
	Instances int
}
