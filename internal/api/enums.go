package api

// The API's enumerations, declared once. The server (internal/httpapi)
// writes and accepts these values, the client, the provider and the CLI
// validate and switch on them, and openapi.json lists them: a test in
// internal/httpapi keeps the document, these lists and the domain's
// values in step. Each list function returns a new slice, in the order
// the values are best shown to people.

// ProvisionState is where a node is in its life cycle.
type ProvisionState string

const (
	StateEnroll       ProvisionState = "enroll"
	StateAvailable    ProvisionState = "available"
	StateDeploying    ProvisionState = "deploying"
	StateActive       ProvisionState = "active"
	StateDeployFailed ProvisionState = "deploy_failed"
	StateCleaning     ProvisionState = "cleaning"
	StateDeleting     ProvisionState = "deleting"
	StateInspecting   ProvisionState = "inspecting"
	StateConfiguring  ProvisionState = "configuring"
)

// ProvisionStates lists every provision state.
func ProvisionStates() []string {
	return []string{string(StateEnroll), string(StateAvailable), string(StateDeploying), string(StateActive),
		string(StateDeployFailed), string(StateCleaning), string(StateDeleting), string(StateInspecting), string(StateConfiguring)}
}

// Fault is the controller's record of BMC trouble on a node; FaultNone
// means healthy.
type Fault string

const (
	FaultNone           Fault = ""
	FaultBMCUnreachable Fault = "bmc_unreachable"
	FaultBMCAuthFailed  Fault = "bmc_auth_failed"
	FaultBMCError       Fault = "bmc_error"
	FaultBMCRefused     Fault = "bmc_refused"
	FaultPowerMismatch  Fault = "power_mismatch"
	FaultDeployTimeout  Fault = "deploy_timeout"
	FaultCleanFailed    Fault = "clean_failed"
	FaultAgentLost      Fault = "agent_lost"
	// FaultDuplicate: the node's BMC settings reach another node's
	// machine (last_error names it); it stays in enroll and acts on
	// nothing.
	FaultDuplicate Fault = "duplicate"
	// FaultHardwareCritical: the BMC reports the hardware's health
	// critical (Node.Health says why); out of scheduling until it reports
	// it better.
	FaultHardwareCritical Fault = "hardware_critical"
)

// Faults lists every fault a node can carry (FaultNone is not one).
func Faults() []string {
	return []string{string(FaultBMCUnreachable), string(FaultBMCAuthFailed), string(FaultBMCError), string(FaultBMCRefused),
		string(FaultPowerMismatch), string(FaultDeployTimeout), string(FaultCleanFailed), string(FaultAgentLost), string(FaultDuplicate),
		string(FaultHardwareCritical)}
}

// The ?fault= filter of GET /v1/nodes takes a fault, or one of these.
const (
	FaultFilterAny  = "any"  // faulted nodes, whatever the fault
	FaultFilterNone = "none" // healthy nodes
)

// FaultFilters lists the values of the ?fault= filter.
func FaultFilters() []string { return append([]string{FaultFilterAny, FaultFilterNone}, Faults()...) }

// Driver names the protocol the controller speaks to a node's BMC.
type Driver string

const (
	DriverRedfish Driver = "redfish"
	DriverIPMI    Driver = "ipmi"
)

// Drivers lists every driver.
func Drivers() []string { return []string{string(DriverRedfish), string(DriverIPMI)} }

// PowerState is a node's observed power state, or an instance's desired
// one (on or off; "" = no wish).
type PowerState string

const (
	PowerOn      PowerState = "on"
	PowerOff     PowerState = "off"
	PowerUnknown PowerState = "unknown"
)

// PowerStates lists the observed power states.
func PowerStates() []string { return []string{string(PowerOn), string(PowerOff), string(PowerUnknown)} }

// DesiredPowerStates lists the power states an instance may ask for.
func DesiredPowerStates() []string { return []string{string(PowerOn), string(PowerOff)} }

// PowerAction is the target of POST /v1/nodes/{id}/power.
type PowerAction string

const (
	ActionOn      PowerAction = "on"
	ActionOff     PowerAction = "off"      // hard power off
	ActionSoftOff PowerAction = "soft_off" // graceful (ACPI) shutdown
	ActionReset   PowerAction = "reset"
)

// PowerActions lists every power action.
func PowerActions() []string {
	return []string{string(ActionOn), string(ActionOff), string(ActionSoftOff), string(ActionReset)}
}

// InstanceState is the user-visible state of an instance.
type InstanceState string

const (
	InstanceDeploying InstanceState = "deploying"
	InstanceActive    InstanceState = "active"
	InstanceError     InstanceState = "error"
)

// InstanceStates lists every instance state.
func InstanceStates() []string {
	return []string{string(InstanceDeploying), string(InstanceActive), string(InstanceError)}
}

// Role is what a token may do.
type Role string

const (
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
	// RoleMonitor may only list nodes and scrape per-node metrics.
	RoleMonitor Role = "monitor"
)

// Roles lists every role.
func Roles() []string { return []string{string(RoleAdmin), string(RoleMember), string(RoleMonitor)} }

// JobStates lists the states of a durable job (River's), the values of
// GET /v1/jobs?state= and of Job.State.
func JobStates() []string {
	return []string{"available", "cancelled", "completed", "discarded", "pending", "retryable", "running", "scheduled"}
}

// ProblemCode is the stable machine-readable code of an error response
// (Problem.Code, also the last path element of Problem.Type).
type ProblemCode string

const (
	CodeInvalid          ProblemCode = "invalid"             // 400: bad input; Problem.Field names the attribute
	CodeUnauthorized     ProblemCode = "unauthorized"        // 401: missing or bad token
	CodeForbidden        ProblemCode = "forbidden"           // 403: the token's role may not do this
	CodeNotFound         ProblemCode = "not_found"           // 404
	CodeMethodNotAllowed ProblemCode = "method_not_allowed"  // 405
	CodeConflict         ProblemCode = "conflict"            // 409: duplicate name, busy node
	CodePrecondition     ProblemCode = "precondition_failed" // 412: If-Match did not match
	CodeTooLarge         ProblemCode = "payload_too_large"   // 413
	CodeBadMediaType     ProblemCode = "unsupported_media_type"
	CodeInvalidState     ProblemCode = "invalid_state"  // 422: transition not allowed
	CodeQuotaExceeded    ProblemCode = "quota_exceeded" // 403
	CodeNoCapacity       ProblemCode = "no_capacity"    // 409: no node can take the instance; Problem.Capacity says why
	CodeUnavailable      ProblemCode = "unavailable"    // 503: the store is unreachable; retry
	CodeInternal         ProblemCode = "internal"       // 500: details are in the controller's log
)

// ProblemCodes lists every problem code.
func ProblemCodes() []string {
	return []string{string(CodeInvalid), string(CodeUnauthorized), string(CodeForbidden), string(CodeNotFound),
		string(CodeMethodNotAllowed), string(CodeConflict), string(CodePrecondition), string(CodeTooLarge),
		string(CodeBadMediaType), string(CodeInvalidState), string(CodeQuotaExceeded), string(CodeNoCapacity),
		string(CodeUnavailable), string(CodeInternal)}
}

// DeployMethod is how an instance's image reaches its node.
type DeployMethod string

const (
	DeployImage DeployMethod = "image"
	DeployLive  DeployMethod = "live"
)

// DeployMethods lists every deploy method.
func DeployMethods() []string { return []string{string(DeployImage), string(DeployLive)} }

// UnmetRequirements lists the requirements a no_capacity answer counts
// nodes failing (UnmetRequirement.Requirement).
func UnmetRequirements() []string {
	return []string{"resource_class", "owner", "required_trait", "forbidden_trait", "min_cpus", "min_memory_mb", "min_disk_gb", "cpu_arch"}
}

// RAIDLevels lists the RAID levels a declared volume may have.
func RAIDLevels() []string { return []string{"0", "1", "5", "6", "10"} }

// VolumeMediaTypes lists what a declared volume's media_type may be
// ("": any).
func VolumeMediaTypes() []string { return []string{"", "ssd", "hdd"} }

// HealthStates lists a node's hardware health states.
func HealthStates() []string { return []string{"ok", "warning", "critical", "unknown"} }

// RootDeviceHints lists the keys of an instance's root_device hints.
func RootDeviceHints() []string {
	return []string{"size_gb", "serial", "wwn", "model", "vendor", "name"}
}

// PropertyName names one of a node's hardware properties (a member of
// Properties), as Node.PropertyOverrides lists them.
type PropertyName string

const (
	PropertyCPUs     PropertyName = "cpus"
	PropertyMemoryMB PropertyName = "memory_mb"
	PropertyLocalGB  PropertyName = "local_gb"
	PropertyCPUArch  PropertyName = "cpu_arch"
)

// PropertyNames lists every property.
func PropertyNames() []string {
	return []string{string(PropertyCPUs), string(PropertyMemoryMB), string(PropertyLocalGB), string(PropertyCPUArch)}
}

// CleanErase is a node's own choice of how cleaning erases its disks;
// CleanEraseDefault ("") follows its resource class's setting, else the
// controller's.
type CleanErase string

const (
	CleanEraseDefault  CleanErase = ""
	CleanEraseMetadata CleanErase = "metadata" // partition tables and filesystem signatures
	CleanEraseFull     CleanErase = "full"     // every byte
	CleanEraseOff      CleanErase = "off"      // no erase, no agent boot
)

// CleanErases lists the erase modes a node may set (CleanEraseDefault
// aside).
func CleanErases() []string {
	return []string{string(CleanEraseMetadata), string(CleanEraseFull), string(CleanEraseOff)}
}
