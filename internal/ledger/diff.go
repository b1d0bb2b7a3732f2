package ledger

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// Diff derives the events of a change from before to after: one per
// changed field an operator sets (type "updated", maintenance its own
// type), then provision_state (c.Reason, c.Kind), fault and power_state,
// with old and new values. The password is told as rotated, never shown.
// Bookkeeping (failure counts, next check, last seen, version) is not
// news; instance_id moves with provision_state and is told in its reason.
func Diff(before, after *baremetal.Node, c *Change, now time.Time) []*baremetal.Event {
	var evs []*baremetal.Event
	add := func(typ, field, old, new, msg string) {
		if old == new {
			return
		}
		if msg == "" {
			msg = field + " changed"
		}
		evs = append(evs, &baremetal.Event{Type: typ, Field: field, Old: old, New: new, Message: msg})
	}
	updated := func(field, old, new string) { add("updated", field, old, new, "") }
	a, b := before, after
	updated("name", a.Name, b.Name)
	updated("driver", string(a.Driver), string(b.Driver))
	updated("bmc.address", a.BMC.Address, b.BMC.Address)
	updated("bmc.username", a.BMC.Username, b.BMC.Username)
	updated("bmc.insecure", strconv.FormatBool(a.BMC.Insecure), strconv.FormatBool(b.BMC.Insecure))
	updated("bmc.system_id", a.BMC.SystemID, b.BMC.SystemID)
	updated("bmc.cipher_suite", strconv.Itoa(a.BMC.CipherSuite), strconv.Itoa(b.BMC.CipherSuite))
	if a.BMC.Password != b.BMC.Password {
		evs = append(evs, &baremetal.Event{Type: "updated", Field: "bmc.password", Message: "BMC password rotated"})
	}
	updated("resource_class", a.ResourceClass, b.ResourceClass)
	updated("properties", properties(a.Properties), properties(b.Properties))
	add("updated", "property_overrides", overrides(a), overrides(b), "property overrides changed (inspection fills the others)")
	updated("traits", strings.Join(a.Traits, ","), strings.Join(b.Traits, ","))
	add("updated", "derived_traits", strings.Join(a.DerivedTraits, ","), strings.Join(b.DerivedTraits, ","), "derived traits changed (what inspection and the BMC show)")
	add("updated", "owner", a.Owner, b.Owner, "owner changed (empty: any project's instances may be placed on the node)")
	add("updated", "bios_settings", biosText(a.Settings.BIOS), biosText(b.Settings.BIOS), "declared BIOS settings changed")
	add("updated", "secure_boot", tristate(a.Settings.SecureBoot), tristate(b.Settings.SecureBoot), "declared Secure Boot changed (empty: not managed)")
	add("updated", "clean_erase", string(a.CleanErase), string(b.CleanErase), "clean_erase changed (empty: the resource class's or the controller's erase mode)")
	add("updated", "inspect_on_enroll", tristate(a.InspectOnEnroll), tristate(b.InspectOnEnroll), "inspect_on_enroll changed (empty: the controller's --inspect-on-enroll)")
	if a.Maintenance != b.Maintenance {
		msg := "maintenance cleared"
		if b.Maintenance {
			msg = "maintenance set: " + b.MaintenanceReason
		}
		add("maintenance", "maintenance", strconv.FormatBool(a.Maintenance), strconv.FormatBool(b.Maintenance), msg)
	} else {
		add("updated", "maintenance_reason", a.MaintenanceReason, b.MaintenanceReason, "maintenance reason changed")
	}

	if a.ProvisionState != b.ProvisionState {
		kind := c.Kind
		if kind == "" {
			kind = "provision_state"
		}
		msg := c.Reason
		if msg == "" {
			msg = fmt.Sprintf("provision state %s → %s", a.ProvisionState, b.ProvisionState)
		}
		add(kind, "provision_state", string(a.ProvisionState), string(b.ProvisionState), msg)
	}
	if a.Fault != b.Fault {
		add("fault", "fault", string(a.Fault), string(b.Fault), faultMessage(a, b, now))
	}
	if a.PowerState != b.PowerState {
		msg := "power state observed " + string(b.PowerState)
		if b.PowerState == baremetal.PowerUnknown {
			msg = "power state unknown while the BMC does not answer"
		}
		add("power_state", "power_state", string(a.PowerState), string(b.PowerState), msg)
	}
	for _, e := range evs {
		e.Time = now
	}
	return evs
}

// properties tells a node's known properties by their API names, in
// PropertyNames order: "cpus=32 memory_mb=65536 local_gb=100
// cpu_arch=x86_64"; "" when none is known.
func properties(p baremetal.Properties) string {
	var out []string
	add := func(name baremetal.PropertyName, v string, known bool) {
		if known {
			out = append(out, string(name)+"="+v)
		}
	}
	add(baremetal.PropertyCPUs, strconv.Itoa(p.CPUs), p.CPUs != 0)
	add(baremetal.PropertyMemoryMB, strconv.Itoa(p.MemoryMB), p.MemoryMB != 0)
	add(baremetal.PropertyLocalGB, strconv.Itoa(p.LocalGB), p.LocalGB != 0)
	add(baremetal.PropertyCPUArch, p.CPUArch, p.CPUArch != "")
	return strings.Join(out, " ")
}

// overrides lists the node's property overrides for an event: "cpus,local_gb".
func overrides(n *baremetal.Node) string {
	names := n.Overrides.Names()
	out := make([]string, len(names))
	for i, p := range names {
		out[i] = string(p)
	}
	return strings.Join(out, ",")
}

// biosText shows BIOS settings for an event: "A=x B=y", sorted.
func biosText(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + m[k]
	}
	return strings.Join(out, " ")
}

// tristate shows a setting that may defer to the controller's: "" when
// unset, else "true" or "false".
func tristate(b *bool) string {
	if b == nil {
		return ""
	}
	return strconv.FormatBool(*b)
}

// faultMessage tells a fault change: raised with its cause, cleared with
// how long it lasted.
func faultMessage(a, b *baremetal.Node, now time.Time) string {
	lasted := func(msg string) string {
		if a.FaultSince != nil {
			msg += " after " + baremetal.HumanDuration(now.Sub(*a.FaultSince))
		}
		return msg
	}
	switch {
	case b.Fault == baremetal.FaultNone && a.Fault.BMC():
		return lasted("BMC reachable again")
	case b.Fault == baremetal.FaultNone:
		return lasted("fault " + string(a.Fault) + " cleared")
	case a.Fault == baremetal.FaultNone:
		msg := "fault " + string(b.Fault)
		if b.BMCFailures > 0 && b.Fault.BMC() {
			msg += fmt.Sprintf(" after %d consecutive failed BMC calls", b.BMCFailures)
		}
		return msg + ": " + b.LastError
	default:
		return fmt.Sprintf("fault %s → %s: %s", a.Fault, b.Fault, b.LastError)
	}
}
