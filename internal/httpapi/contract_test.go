package httpapi

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// openAPIEnums returns every enum of openapi.json by where it is: a
// schema's property ("Node.driver") or an operation's parameter
// ("GET /v1/nodes ?fault").
func openAPIEnums(t *testing.T) map[string][]string {
	t.Helper()
	type schema struct {
		Enum       []string          `json:"enum"`
		Properties map[string]schema `json:"properties"`
		Items      *schema           `json:"items"`
	}
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string `json:"name"`
				Schema schema `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	enums := map[string][]string{}
	for name, s := range doc.Components.Schemas {
		if s.Enum != nil {
			enums[name] = s.Enum
		}
		for prop, p := range s.Properties {
			if p.Enum != nil {
				enums[name+"."+prop] = p.Enum
			}
			if p.Items != nil && p.Items.Enum != nil { // a list of enum values
				enums[name+"."+prop+"[]"] = p.Items.Enum
			}
		}
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			for _, p := range op.Parameters {
				if p.Schema.Enum != nil {
					enums[strings.ToUpper(method)+" "+path+" ?"+p.Name] = p.Schema.Enum
				}
			}
		}
	}
	return enums
}

// TestOpenAPIEnumsAreTheAPIs: every enumeration openapi.json documents is
// one of internal/api's lists, value for value, and every list is
// documented where the API uses it. A value added on one side only fails
// here.
func TestOpenAPIEnumsAreTheAPIs(t *testing.T) {
	orNone := func(vs []string) []string { return append(vs, "") }
	want := map[string][]string{
		"Node.driver":                                api.Drivers(),
		"NodeCreate.driver":                          api.Drivers(),
		"NodePatch.driver":                           api.Drivers(),
		"Node.provision_state":                       api.ProvisionStates(),
		"GET /v1/nodes ?provision_state":             api.ProvisionStates(),
		"Node.fault":                                 orNone(api.Faults()),
		"GET /v1/nodes ?fault":                       api.FaultFilters(),
		"Node.power_state":                           api.PowerStates(),
		"Instance.observed_power_state":              api.PowerStates(),
		"Instance.power_state":                       orNone(api.DesiredPowerStates()),
		"InstanceCreate.power_state":                 api.DesiredPowerStates(),
		"InstanceUpdate.power_state":                 orNone(api.DesiredPowerStates()),
		"Instance.state":                             api.InstanceStates(),
		"PowerRequest.target":                        api.PowerActions(),
		"TokenCreate.role":                           api.Roles(),
		"Token.role":                                 api.Roles(),
		"TokenCreated.role":                          api.Roles(),
		"Job.state":                                  api.JobStates(),
		"GET /v1/jobs ?state":                        api.JobStates(),
		"Problem.code":                               api.ProblemCodes(),
		"AgentCommand.kind":                          api.AgentCommandKinds(),
		"Instance.deploy_method":                     api.DeployMethods(),
		"InstanceCreate.deploy_method":               api.DeployMethods(),
		"GET /v1/capacity ?deploy_method":            api.DeployMethods(),
		"Volume.raid_level":                          api.RAIDLevels(),
		"NodeHealth.state":                           api.HealthStates(),
		"Volume.media_type":                          api.VolumeMediaTypes(),
		"UnmetRequirement.requirement":               api.UnmetRequirements(),
		"AgentCommand.erase":                         api.AgentEraseMethods(),
		"AgentCommandStatus.state":                   api.AgentCommandStates(),
		"GET /v1/agent/boot/{id}/{key}/{file} ?file": api.AgentBootFiles(),
		"Node.property_overrides[]":                  api.PropertyNames(),
		"Node.clean_erase":                           orNone(api.CleanErases()),
		"Bond.mode":                                  api.BondModes(),
		"Bond.lacp_rate":                             api.LACPRates(),
		"NetAddress.dhcp":                            api.DHCPModes(),
		"NodeCreate.clean_erase":                     orNone(api.CleanErases()),
		"NodePatch.clean_erase":                      orNone(api.CleanErases()),
		"AgentSystem.boot_mode":                      api.BootModes(),
		"AgentActivity.purpose":                      api.AgentPurposes(),
		"AgentActivity.command":                      api.AgentCommandKinds(),
		"AgentActivity.state":                        api.AgentCommandStates(),
	}
	got := openAPIEnums(t)
	for where, vs := range want {
		doc, ok := got[where]
		if !ok {
			t.Errorf("openapi.json has no enum at %s; want %q", where, vs)
			continue
		}
		if !sameSet(doc, vs) {
			t.Errorf("openapi.json %s lists %q; internal/api lists %q", where, doc, vs)
		}
	}
	for where, doc := range got {
		if _, ok := want[where]; !ok {
			t.Errorf("openapi.json has an enum at %s (%q) that no internal/api list backs", where, doc)
		}
	}
}

// TestOpenAPISchemasAreTheAPITypes: each schema of openapi.json has
// exactly the JSON members of the internal/api type of that name, so a
// field added to the wire (Problem.capacity, say) is documented.
func TestOpenAPISchemasAreTheAPITypes(t *testing.T) {
	types := map[string]any{
		"Problem": api.Problem{}, "Capacity": api.Capacity{}, "UnmetRequirement": api.UnmetRequirement{},
		"Requirements": api.Requirements{}, "CapacityReport": api.CapacityReport{}, "NodeHardware": api.NodeHardware{}, "NodeHealth": api.NodeHealth{},
		"Volume": api.Volume{}, "ObservedVolume": api.ObservedVolume{}, "Firmware": api.Firmware{}, "Properties": api.Properties{},
		"PropertiesPatch": api.PropertiesPatch{},
		"BMC":             api.BMC{}, "BMCInput": api.BMCInput{}, "BMCPatch": api.BMCPatch{},
		"Node": api.Node{}, "NodeCreate": api.NodeCreate{}, "NodePatch": api.NodePatch{}, "NodeList": api.NodeList{},
		"Event": api.Event{}, "EventList": api.EventList{}, "Image": api.Image{},
		"Instance": api.Instance{}, "InstanceCreate": api.InstanceCreate{}, "InstanceUpdate": api.InstanceUpdate{}, "InstanceRebuild": api.InstanceRebuild{},
		"Network": api.Network{}, "NetInterface": api.NetInterface{}, "Bond": api.Bond{}, "VLAN": api.VLAN{}, "NetAddress": api.NetAddress{}, "Route": api.Route{}, "InstanceAddress": api.InstanceAddress{},
		"InstanceList": api.InstanceList{}, "Accepted": api.Accepted{}, "PowerRequest": api.PowerRequest{},
		"TokenCreate": api.TokenCreate{}, "Token": api.Token{}, "TokenCreated": api.TokenCreated{},
		"TokenList": api.TokenList{}, "Quota": api.Quota{}, "Job": api.Job{}, "JobList": api.JobList{},
		"InspectAccepted": api.InspectAccepted{}, "NodeInventory": api.NodeInventory{}, "NodeConsoleLog": api.NodeConsoleLog{}, "ConsoleHello": api.ConsoleHello{},
		"AgentInventory": api.AgentInventory{}, "AgentSystem": api.AgentSystem{}, "AgentDisk": api.AgentDisk{},
		"AgentNIC": api.AgentNIC{}, "AgentHeartbeat": api.AgentHeartbeat{}, "AgentReply": api.AgentReply{},
		"AgentCommand": api.AgentCommand{}, "AgentCommandStatus": api.AgentCommandStatus{}, "AgentErasedDisk": api.AgentErasedDisk{},
		"AgentActivity": api.AgentActivity{}, "NodeFlow": api.NodeFlow{},
		"AgentLLDP": api.AgentLLDP{}, "NodePort": api.NodePort{}, "NodePortLLDP": api.NodePortLLDP{},
		"IPRange": api.IPRange{}, "IPPool": api.IPPool{}, "IPPoolCreate": api.IPPoolCreate{},
		"IPPoolUpdate": api.IPPoolUpdate{}, "IPPoolList": api.IPPoolList{},
		"IPAllocation": api.IPAllocation{}, "IPAllocationList": api.IPAllocationList{},
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	for name, s := range doc.Components.Schemas {
		v, ok := types[name]
		if !ok {
			t.Errorf("openapi.json schema %s has no internal/api type", name)
			continue
		}
		var props []string
		for p := range s.Properties {
			props = append(props, p)
		}
		var fields []string
		for f := range jsonFields(reflect.TypeOf(v)) { // the strict decoder's view of the type
			fields = append(fields, f)
		}
		if !sameSet(props, fields) {
			t.Errorf("openapi.json schema %s has members %q; api.%s has %q", name, sorted(props), name, sorted(fields))
		}
		delete(types, name)
	}
	for name := range types {
		t.Errorf("api.%s has no schema in openapi.json", name)
	}
}

// TestDomainValuesAreTheAPIs: the domain's values (internal/baremetal,
// and internal/bmc for power actions) are the API's, and the error codes
// the server maps to a status are the API's problem codes.
func TestDomainValuesAreTheAPIs(t *testing.T) {
	var codes []string
	for c := range statusOf {
		codes = append(codes, string(c))
	}
	for what, c := range map[string]struct{ domain, wire []string }{
		"provision states":   {strs(baremetal.ProvisionStates), api.ProvisionStates()},
		"faults":             {strs(baremetal.Faults), api.Faults()},
		"drivers":            {strs(baremetal.Drivers), api.Drivers()},
		"power states":       {strs(baremetal.PowerStates), api.PowerStates()},
		"bmc power states":   {strs([]bmc.PowerState{bmc.PowerOn, bmc.PowerOff, bmc.PowerUnknown}), api.PowerStates()},
		"power actions":      {strs(bmc.PowerActions), api.PowerActions()},
		"instance states":    {strs(baremetal.InstanceStates), api.InstanceStates()},
		"roles":              {strs(baremetal.Roles), api.Roles()},
		"problem codes":      {codes, api.ProblemCodes()},
		"deploy methods":     {strs(baremetal.DeployMethods), api.DeployMethods()},
		"root device hints":  {baremetal.RootDeviceHints, api.RootDeviceHints()},
		"property names":     {strs(baremetal.PropertyNames), api.PropertyNames()},
		"clean erases":       {strs(baremetal.CleanErases), api.CleanErases()},
		"agent purposes":     {strs(baremetal.AgentPurposes), api.AgentPurposes()},
		"unmet requirements": {baremetal.UnmetKinds, api.UnmetRequirements()},
		"raid levels":        {slices.Sorted(maps.Keys(baremetal.RAIDLevels)), api.RAIDLevels()},
		"health states":      {baremetal.HealthStates, api.HealthStates()},
	} {
		if !sameSet(c.domain, c.wire) {
			t.Errorf("%s: the domain has %q, the API %q", what, sorted(c.domain), sorted(c.wire))
		}
	}
	for c := range statusOf {
		if titleOf[c] == "" {
			t.Errorf("problem code %s has no title", c)
		}
	}
	// The typed constants mean the same on both sides (a value renamed on
	// one side only would still be caught above; this catches two
	// constants swapped).
	pairs := [][2]string{
		{string(baremetal.StateEnroll), string(api.StateEnroll)}, {string(baremetal.StateAvailable), string(api.StateAvailable)},
		{string(baremetal.StateDeploying), string(api.StateDeploying)}, {string(baremetal.StateActive), string(api.StateActive)},
		{string(baremetal.StateDeployFailed), string(api.StateDeployFailed)}, {string(baremetal.StateCleaning), string(api.StateCleaning)},
		{string(baremetal.StateDeleting), string(api.StateDeleting)},
		{string(baremetal.PropertyCPUs), string(api.PropertyCPUs)}, {string(baremetal.PropertyMemoryMB), string(api.PropertyMemoryMB)},
		{string(baremetal.PropertyLocalGB), string(api.PropertyLocalGB)}, {string(baremetal.PropertyCPUArch), string(api.PropertyCPUArch)},
		{string(baremetal.CleanEraseDefault), string(api.CleanEraseDefault)}, {string(baremetal.CleanEraseMetadata), string(api.CleanEraseMetadata)},
		{string(baremetal.CleanEraseFull), string(api.CleanEraseFull)}, {string(baremetal.CleanEraseOff), string(api.CleanEraseOff)},
		{string(baremetal.FaultNone), string(api.FaultNone)}, {string(baremetal.FaultBMCUnreachable), string(api.FaultBMCUnreachable)},
		{string(baremetal.FaultBMCAuthFailed), string(api.FaultBMCAuthFailed)}, {string(baremetal.FaultBMCError), string(api.FaultBMCError)},
		{string(baremetal.FaultBMCRefused), string(api.FaultBMCRefused)}, {string(baremetal.FaultPowerMismatch), string(api.FaultPowerMismatch)},
		{string(baremetal.FaultDeployTimeout), string(api.FaultDeployTimeout)}, {string(baremetal.FaultCleanFailed), string(api.FaultCleanFailed)},
		{string(baremetal.DriverRedfish), string(api.DriverRedfish)}, {string(baremetal.DriverIPMI), string(api.DriverIPMI)},
		{string(baremetal.PowerOn), string(api.PowerOn)}, {string(baremetal.PowerOff), string(api.PowerOff)},
		{string(baremetal.PowerUnknown), string(api.PowerUnknown)},
		{string(bmc.ActionOn), string(api.ActionOn)}, {string(bmc.ActionOff), string(api.ActionOff)},
		{string(bmc.ActionSoftOff), string(api.ActionSoftOff)}, {string(bmc.ActionReset), string(api.ActionReset)},
		{string(baremetal.InstanceDeploying), string(api.InstanceDeploying)}, {string(baremetal.InstanceActive), string(api.InstanceActive)},
		{string(baremetal.InstanceError), string(api.InstanceError)},
		{string(baremetal.RoleAdmin), string(api.RoleAdmin)}, {string(baremetal.RoleMember), string(api.RoleMember)},
		{string(baremetal.RoleMonitor), string(api.RoleMonitor)},
		{string(baremetal.AgentInspect), string(api.AgentPurposeInspect)}, {string(baremetal.AgentDeploy), string(api.AgentPurposeDeploy)},
		{string(baremetal.AgentClean), string(api.AgentPurposeClean)},
		{string(baremetal.CodeInvalid), string(api.CodeInvalid)}, {string(baremetal.CodeUnauthorized), string(api.CodeUnauthorized)},
		{string(baremetal.CodeForbidden), string(api.CodeForbidden)}, {string(baremetal.CodeNotFound), string(api.CodeNotFound)},
		{string(baremetal.CodeMethodNotAllowed), string(api.CodeMethodNotAllowed)}, {string(baremetal.CodeConflict), string(api.CodeConflict)},
		{string(baremetal.CodePrecondition), string(api.CodePrecondition)}, {string(baremetal.CodeTooLarge), string(api.CodeTooLarge)},
		{string(baremetal.CodeBadMediaType), string(api.CodeBadMediaType)}, {string(baremetal.CodeInvalidState), string(api.CodeInvalidState)},
		{string(baremetal.CodeQuotaExceeded), string(api.CodeQuotaExceeded)}, {string(baremetal.CodeNoCapacity), string(api.CodeNoCapacity)},
		{string(baremetal.CodeUnavailable), string(api.CodeUnavailable)}, {string(baremetal.CodeInternal), string(api.CodeInternal)},
	}
	for _, p := range pairs {
		if p[0] != p[1] {
			t.Errorf("domain %q is API %q", p[0], p[1])
		}
	}
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

func sorted(vs []string) []string { return slices.Sorted(slices.Values(vs)) }

// sameSet reports whether a and b hold the same values, each once.
func sameSet(a, b []string) bool {
	sa := sorted(a)
	return slices.Equal(sa, sorted(b)) && len(slices.Compact(slices.Clone(sa))) == len(sa)
}
