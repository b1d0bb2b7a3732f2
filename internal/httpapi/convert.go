package httpapi

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// nodeOut renders a node. Members never see BMC details (nor, the
// service sees to it, other projects' instance ids); nobody ever sees the
// password.
func nodeOut(n *baremetal.Node, c service.Caller) api.Node {
	out := api.Node{
		ID: n.ID, Name: n.Name, Driver: api.Driver(n.Driver), ResourceClass: n.ResourceClass,
		Traits: traitsOut(n.Traits), DerivedTraits: traitsOut(n.DerivedTraits), Owner: n.Owner,
		Properties: api.Properties(n.Properties), PropertyOverrides: propertyNames(n.Overrides),
		Maintenance: n.Maintenance, MaintenanceReason: n.MaintenanceReason,
		CleanErase: api.CleanErase(n.CleanErase), InspectOnEnroll: n.InspectOnEnroll,
		PowerState: api.PowerState(n.PowerState), ProvisionState: api.ProvisionState(n.ProvisionState),
		Fault: api.Fault(n.Fault), LastError: n.LastError, FaultSince: n.FaultSince, BMCFailures: n.BMCFailures,
		InstanceID: n.InstanceID, InspectedAt: n.InspectedAt, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt, Version: n.Version,
		Flow: flowOut(n.Flow), Ports: []api.NodePort{},
		Health: api.NodeHealth{State: n.Health.StateOrUnknown(), Reasons: append([]string{}, n.Health.Reasons...), HottestC: n.Health.HottestC,
			FansFailed: n.Health.FansFailed, PSUsFailed: n.Health.PSUsFailed, ReadAt: n.Health.ReadAt},
	}
	out.BIOSSettings = map[string]string{}
	if c.Monitor() && n.Owner != "" {
		// A monitor watches the whole fleet, every project's nodes; which
		// project owns one is the projects' business (members are not
		// told either).
		out.Owner = "another project"
	}
	if !c.Admin() {
		// BMC errors name BMC addresses and URLs: infrastructure detail
		// for operators. Members see the fault, which is what scheduling
		// and their plans need.
		out.LastError = ""
	} else {
		if n.Settings.BIOS != nil {
			out.BIOSSettings = n.Settings.BIOS
		}
		out.SecureBoot = n.Settings.SecureBoot
		out.RAID = volumesOut(n.Settings.RAID)
		out.Firmware = firmwareOut(n.Settings.Firmware)
		out.Hardware = hardwareOut(n)
		out.BMC = &api.BMC{Address: n.BMC.Address, Username: n.BMC.Username, Insecure: n.BMC.Insecure,
			SystemID: n.BMC.SystemID, CipherSuite: n.BMC.CipherSuite, PasswordSet: n.BMC.Password != ""}
	}
	return out
}

// hardwareOut renders what was read of a node's declared settings.
func hardwareOut(n *baremetal.Node) *api.NodeHardware {
	o := n.Observed
	out := &api.NodeHardware{BIOS: map[string]string{}, SecureBoot: o.SecureBoot, ReadAt: o.ReadAt,
		Lacks: append([]string{}, o.Lacks...), Unmet: []string{}, Waiting: n.Settings.Waiting}
	for k := range n.Settings.BIOS {
		if v, ok := o.BIOS[k]; ok {
			out.BIOS[k] = v
		}
	}
	if !n.Settings.IsZero() {
		out.Unmet = append(out.Unmet, n.Settings.Unmet(o)...)
	}
	out.Volumes = []api.ObservedVolume{}
	if n.Settings.RAID != nil {
		for _, v := range o.Volumes {
			out.Volumes = append(out.Volumes, api.ObservedVolume(v))
		}
	}
	out.Firmware = map[string]string{}
	for _, fw := range n.Settings.Firmware {
		if v, ok := o.Firmware[fw.Component]; ok {
			out.Firmware[fw.Component] = v
		}
	}
	return out
}

// volumesOut and volumesIn convert declared volumes (nil: unmanaged).
func volumesOut(vs *[]baremetal.VolumeSettings) *[]api.Volume {
	if vs == nil {
		return nil
	}
	out := make([]api.Volume, len(*vs))
	for i, v := range *vs {
		out[i] = api.Volume(v)
	}
	return &out
}

func volumesIn(vs *[]api.Volume) *[]baremetal.VolumeSettings {
	if vs == nil {
		return nil
	}
	out := make([]baremetal.VolumeSettings, len(*vs))
	for i, v := range *vs {
		out[i] = baremetal.VolumeSettings(v)
	}
	return &out
}

// firmwareOut and firmwareIn convert declared firmware ([] for none).
func firmwareOut(fs []baremetal.FirmwareSettings) []api.Firmware {
	out := make([]api.Firmware, len(fs))
	for i, f := range fs {
		out[i] = api.Firmware(f)
	}
	return out
}

func firmwareIn(fs []api.Firmware) []baremetal.FirmwareSettings {
	if len(fs) == 0 {
		return nil
	}
	out := make([]baremetal.FirmwareSettings, len(fs))
	for i, f := range fs {
		out[i] = baremetal.FirmwareSettings(f)
	}
	return out
}

// traitsOut renders a node's traits, [] for none.
func traitsOut(ts []string) []string { return baremetal.SortedTraits(ts) }

// requirementsIn and requirementsOut convert an instance's requirements:
// the same fields, so a conversion (it stops compiling when they drift).
func requirementsIn(r *api.Requirements) baremetal.Requirements {
	if r == nil {
		return baremetal.Requirements{}
	}
	return baremetal.Requirements(*r)
}

func requirementsOut(r baremetal.Requirements) api.Requirements { return api.Requirements(r) }

// capacityOut renders the counts of a no_capacity answer or a capacity
// report.
func capacityOut(c baremetal.Capacity) api.Capacity {
	out := api.Capacity{Nodes: c.Nodes, Maintenance: c.Maintenance, Fault: c.Fault, UnsuitableDriver: c.UnsuitableDriver,
		Busy: c.Busy, Cleaning: c.Cleaning, Enroll: c.Enroll, Deleting: c.Deleting, Inspecting: c.Inspecting, Configuring: c.Configuring,
		Pending: c.Pending, Unsuited: c.Unsuited, Available: c.Available, Unmet: []api.UnmetRequirement{}}
	for _, u := range service.SortedUnmet(c.Unmet) {
		out.Unmet = append(out.Unmet, api.UnmetRequirement{Requirement: u.Kind, Value: u.Value, Nodes: u.Nodes,
			Message: fmt.Sprintf("%d %s %s", u.Nodes, nodesWord(u.Nodes), u.Phrase(u.Nodes))})
	}
	return out
}

func nodesWord(n int) string {
	if n == 1 {
		return "node"
	}
	return "nodes"
}

// portsOut renders a node's ports, [] for none (never inspected, or a
// node just enrolled).
func portsOut(p []api.NodePort) []api.NodePort {
	if p == nil {
		return []api.NodePort{}
	}
	return p
}

// flowOut renders a node's flow, nil for none; its notes are the
// controller's own.
func flowOut(f *baremetal.Flow) *api.NodeFlow {
	if f == nil {
		return nil
	}
	return &api.NodeFlow{Name: f.Name, Steps: f.Steps, Step: f.Step, StepIndex: f.StepIndex(), StepStartedAt: f.StepStartedAt}
}

// agentOut renders what a node's deploy agent is doing, nil for none.
// The command and the agent's report are the JSON the heartbeat stored;
// one that does not parse (this controller never writes such) leaves its
// part out rather than fail the node's read.
func agentOut(a *baremetal.AgentActivity) *api.AgentActivity {
	if a == nil {
		return nil
	}
	out := &api.AgentActivity{Purpose: api.AgentPurpose(a.Purpose), LastSeenAt: a.LastSeenAt}
	var cmd api.AgentCommand
	if a.Command == "" || json.Unmarshal([]byte(a.Command), &cmd) != nil {
		return out
	}
	out.Command = cmd.Kind
	var st api.AgentCommandStatus
	// A report on an earlier command is not this one's.
	if a.Status != "" && json.Unmarshal([]byte(a.Status), &st) == nil && st.ID == cmd.ID {
		out.State, out.Progress = st.State, min(max(st.Progress, 0), 100)
	}
	return out
}

// propertyNames lists the overridden properties ([] when none).
func propertyNames(o baremetal.PropertyOverrides) []api.PropertyName {
	names := o.Names()
	out := make([]api.PropertyName, len(names))
	for i, p := range names {
		out[i] = api.PropertyName(p)
	}
	return out
}

// instanceOut renders an instance; for a member the service has already
// reduced a BMC failure in last_error to a summary.
func instanceOut(i *baremetal.Instance, observed baremetal.PowerState) api.Instance {
	md := i.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return api.Instance{
		ID: i.ID, Name: i.Name, Project: i.Project, NodeID: i.NodeID, ResourceClass: i.ResourceClass,
		Image: api.Image(i.Image), UserData: i.UserData, Metadata: md, State: api.InstanceState(i.State),
		PowerState: api.PowerState(i.PowerState), ObservedPowerState: api.PowerState(observed), LastError: i.LastError,
		Ready: i.Ready, DeployTimeout: durationOut(i.DeployTimeout), BootedAt: i.BootedAt,
		DeployMethod: api.DeployMethod(cmp.Or(i.DeployMethod, baremetal.DeployLive)), RootDevice: i.RootDevice,
		Requirements: requirementsOut(i.Requirements),
		Rebuilds:     i.Rebuilds, Network: networkOut(i.Network), Addresses: addressesOut(i.Addresses), CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt, Version: i.Version,
	}
}

// networkIn and networkOut convert an instance's network between the API
// and the domain: the two types are the same JSON (the domain's is
// stored as JSON and its field paths name the API's fields), so the
// conversion is that JSON, which keeps them from drifting apart field by
// field.
func networkIn(n *api.Network) (*baremetal.Network, error) {
	if n == nil {
		return nil, nil
	}
	var out baremetal.Network
	if err := convertJSON(n, &out); err != nil {
		return nil, baremetal.FieldErrorf("network", "network: %v", err)
	}
	return &out, nil
}

func networkOut(n *baremetal.Network) *api.Network {
	if n == nil {
		return nil
	}
	var out api.Network
	if err := convertJSON(n, &out); err != nil {
		return nil // the same JSON both ways: cannot happen
	}
	return &out
}

func addressesOut(as []baremetal.InstanceAddress) []api.InstanceAddress {
	out := make([]api.InstanceAddress, 0, len(as))
	for _, a := range as {
		out = append(out, api.InstanceAddress(a))
	}
	return out
}

func convertJSON(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// durationOut writes a duration the way people write it ("30m", not
// "30m0s"); zero is "".
func durationOut(d time.Duration) string {
	if d == 0 {
		return ""
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func eventOut(e *baremetal.Event) api.Event {
	return api.Event{ID: e.ID, NodeID: e.NodeID, Time: e.Time, Actor: e.Actor, Type: e.Type,
		Field: e.Field, Old: e.Old, New: e.New, Message: e.Message}
}

func tokenOut(t *baremetal.Token) api.Token {
	return api.Token{ID: t.ID, Name: t.Name, Role: api.Role(t.Role), Project: t.Project, ExpiresAt: t.ExpiresAt, CreatedAt: t.CreatedAt}
}

// page reads ?limit= and ?cursor=.
func page(r *http.Request) (store.Page, error) {
	q := r.URL.Query()
	p := store.Page{Limit: 100, After: q.Get("cursor")}
	if n, ok, err := limitParam(r); err != nil || ok {
		p.Limit = n
		return p, err
	}
	return p, nil
}

func boolParam(r *http.Request, name string) (*bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return nil, &baremetal.Error{Code: baremetal.CodeInvalid, Field: name, Message: name + " must be true or false, got " + strconv.Quote(v)}
	}
	return &b, nil
}

func nodeFilter(r *http.Request) (store.NodeFilter, error) {
	p, err := page(r)
	if err != nil {
		return store.NodeFilter{}, err
	}
	q := r.URL.Query()
	f := store.NodeFilter{Page: p, ResourceClass: q.Get("resource_class"), Owner: q.Get("owner")}
	if f.Owner != "" {
		if err := baremetal.ValidateProject("owner", f.Owner); err != nil {
			return f, err
		}
	}
	if f.Schedulable, err = boolParam(r, "schedulable"); err != nil {
		return f, err
	}
	if f.Requirements, err = requirementsParams(r); err != nil {
		return f, err
	}
	if f.ResourceClass != "" {
		if err := baremetal.ValidateResourceClass("resource_class", f.ResourceClass); err != nil {
			return f, err
		}
	}
	if ps := q.Get("provision_state"); ps != "" {
		if !slices.Contains(baremetal.ProvisionStates, baremetal.ProvisionState(ps)) {
			return f, &baremetal.Error{Code: baremetal.CodeInvalid, Field: "provision_state", Message: "unknown provision_state " + strconv.Quote(ps)}
		}
		f.ProvisionState = baremetal.ProvisionState(ps)
	}
	if f.Maintenance, err = boolParam(r, "maintenance"); err != nil {
		return f, err
	}
	if fl := q.Get("fault"); fl != "" {
		if !slices.Contains(api.FaultFilters(), fl) {
			return f, &baremetal.Error{Code: baremetal.CodeInvalid, Field: "fault", Message: "fault must be any, none or a fault name, got " + strconv.Quote(fl)}
		}
		f.Fault = fl
	}
	// Nodes being retired are listed unless asked not to be: a node whose
	// retire waits for its BMC is still a node, faulted and holding its
	// name, and a list that hid it would show nothing wrong.
	inc, err := boolParam(r, "include_deleting")
	if err != nil {
		return f, err
	}
	f.IncludeDeleting = inc == nil || *inc
	if f.ProvisionState == baremetal.StateDeleting {
		f.IncludeDeleting = true
	}
	return f, nil
}

// requirementsParams reads requirements from a query: required_trait and
// forbidden_trait (repeated, or comma-separated), min_cpus,
// min_memory_mb, min_disk_gb and cpu_arch.
func requirementsParams(r *http.Request) (baremetal.Requirements, error) {
	q := r.URL.Query()
	traits := func(name string) []string {
		var out []string
		for _, v := range q[name] {
			for _, t := range strings.Split(v, ",") {
				if t = strings.TrimSpace(t); t != "" {
					out = append(out, t)
				}
			}
		}
		return out
	}
	req := baremetal.Requirements{RequiredTraits: traits("required_trait"), ForbiddenTraits: traits("forbidden_trait"),
		CPUArch: q.Get("cpu_arch")}
	for _, f := range []struct {
		name string
		to   *int
	}{{"min_cpus", &req.MinCPUs}, {"min_memory_mb", &req.MinMemoryMB}, {"min_disk_gb", &req.MinDiskGB}} {
		v := q.Get(f.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return req, &baremetal.Error{Code: baremetal.CodeInvalid, Field: f.name, Message: f.name + " must be a whole number, got " + strconv.Quote(v)}
		}
		*f.to = n
	}
	if err := req.Validate(); err != nil {
		// The query's names, not the body's.
		var e *baremetal.Error
		if errors.As(err, &e) {
			e.Field = strings.NewReplacer("required_traits", "required_trait", "forbidden_traits", "forbidden_trait").Replace(e.Field)
		}
		return req, err
	}
	return req, nil
}
