package redfish

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// Client is one node's Redfish system. It is cheap: the connection pool and
// session belong to the Opener's per-BMC cache.
type Client struct {
	c      *conn
	system string // normalized path; "" = the BMC's only system
}

var (
	_ bmc.Client           = (*Client)(nil)
	_ bmc.PowerGetter      = (*Client)(nil)
	_ bmc.PowerSetter      = (*Client)(nil)
	_ bmc.BootDeviceSetter = (*Client)(nil)
	_ bmc.VirtualMedia     = (*Client)(nil)
	_ bmc.ConfigDriveMedia = (*Client)(nil)
	_ bmc.InventoryGetter  = (*Client)(nil)
)

// run calls fn with a logged-in client and the system path, re-logging in
// once when a cached session is refused, and classifies the outcome.
func (cl *Client) run(ctx context.Context, op string, fn func(api *gofish.APIClient, sys string) error) error {
	if err := ctx.Err(); err != nil {
		return classify(op, err, cl.c.redactor())
	}
	cl.c.touch()
	attempt := func(api *gofish.APIClient) error {
		sys := cl.system
		if sys == "" {
			var err error
			if sys, err = cl.c.resolveSystem(api); err != nil {
				return err
			}
		}
		err := fn(api, sys)
		if cl.system == "" && errors.Is(err, ErrSystemNotFound) {
			cl.c.forgetSystem(sys)
		}
		return err
	}
	api, gen, err := cl.c.client(ctx)
	if err == nil {
		err = attempt(api)
		if statusOf(err) == http.StatusUnauthorized {
			switch api2, rerr := cl.c.relogin(ctx, gen); {
			case rerr == nil:
				err = attempt(api2)
			case !errors.Is(rerr, errNoRelogin):
				err = rerr
			}
		}
	}
	return classify(op, err, cl.c.redactor())
}

// PowerState reads the system's power state: in steady state exactly one
// HTTP request (GET of the system).
func (cl *Client) PowerState(ctx context.Context) (bmc.PowerState, error) {
	st := bmc.PowerUnknown
	err := cl.run(ctx, "power state", func(api *gofish.APIClient, sys string) error {
		s, err := getSystem(api, sys)
		if err != nil {
			return err
		}
		st = power(s.PowerState)
		return nil
	})
	if err != nil {
		return bmc.PowerUnknown, err
	}
	return st, nil
}

// SetPower asks for a power change with the ResetType the system
// advertises. It returns once the BMC accepted it; a request for the state
// the system is already in sends nothing.
func (cl *Client) SetPower(ctx context.Context, action bmc.PowerAction) error {
	const op = "set power"
	switch action {
	case bmc.ActionOn, bmc.ActionOff, bmc.ActionSoftOff, bmc.ActionReset:
	default:
		return bmc.Errorf(bmc.KindUnsupported, op, "unknown power action %q", action)
	}
	return cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		s, err := getSystem(api, sys)
		if err != nil {
			return err
		}
		if s.ResetTarget == "" {
			return bmc.Errorf(bmc.KindUnsupported, op, "system %s has no ComputerSystem.Reset action", s.Path)
		}
		cur := power(s.PowerState)
		if (action == bmc.ActionOn && cur == bmc.PowerOn) ||
			((action == bmc.ActionOff || action == bmc.ActionSoftOff) && cur == bmc.PowerOff) {
			return nil
		}
		allowed := s.ResetTypes
		if len(allowed) == 0 && s.ResetActionInfo != "" {
			allowed = actionInfoValues(api, s.ResetActionInfo, "ResetType")
		}
		rt, ok := chooseReset(action, cur, allowed)
		if !ok {
			return bmc.Errorf(bmc.KindUnsupported, op, "system %s allows reset types %s; none does %q",
				s.Path, strings.Join(allowed, ", "), action)
		}
		if rt != preferredReset(action, cur) {
			cl.c.o.log.Info("power action mapped to a fallback reset type", "bmc", cl.c.endpoint, "system", s.Path, "action", action, "reset_type", rt)
		}
		resp, err := api.Post(s.ResetTarget, map[string]string{"ResetType": rt})
		schemas.DeferredCleanupHTTPResponse(resp)
		return err
	})
}

// resetPrefs lists ResetTypes for an action, best first. PushPowerButton
// toggles, so it is only offered when the current state is known.
func resetPrefs(action bmc.PowerAction, cur bmc.PowerState) []string {
	switch action {
	case bmc.ActionOn:
		p := []string{"On", "ForceOn"}
		if cur == bmc.PowerOff {
			p = append(p, "PushPowerButton")
		}
		return p
	case bmc.ActionOff:
		p := []string{"ForceOff", "GracefulShutdown"}
		if cur == bmc.PowerOn {
			p = append(p, "PushPowerButton")
		}
		return p
	case bmc.ActionSoftOff:
		p := []string{"GracefulShutdown"}
		if cur == bmc.PowerOn {
			p = append(p, "PushPowerButton")
		}
		return p
	case bmc.ActionReset:
		if cur == bmc.PowerOff {
			// Restarting a system that is off does nothing on many BMCs.
			return []string{"On", "ForceOn", "PowerCycle", "PushPowerButton"}
		}
		return []string{"ForceRestart", "PowerCycle", "GracefulRestart"}
	}
	return nil
}

func preferredReset(action bmc.PowerAction, cur bmc.PowerState) string {
	if p := resetPrefs(action, cur); len(p) > 0 {
		return p[0]
	}
	return ""
}

// chooseReset picks the first preference the system allows; a system that
// advertises nothing gets the standard first choice.
func chooseReset(action bmc.PowerAction, cur bmc.PowerState, allowed []string) (string, bool) {
	prefs := resetPrefs(action, cur)
	if len(prefs) == 0 {
		return "", false
	}
	if len(allowed) == 0 {
		return prefs[0], true
	}
	for _, p := range prefs {
		for _, a := range allowed {
			if strings.EqualFold(a, p) {
				return a, true
			}
		}
	}
	return "", false
}

// actionInfoValues reads a parameter's AllowableValues from an ActionInfo
// resource; failures leave it empty (then standard values are assumed).
func actionInfoValues(api *gofish.APIClient, path, param string) []string {
	d, _, err := getDoc(api, path)
	if err != nil {
		return nil
	}
	for _, p := range d.arr("Parameters") {
		pd, _ := p.(map[string]any)
		if strings.EqualFold(doc(pd).str("Name"), param) {
			return doc(pd).strs("AllowableValues")
		}
	}
	return nil
}

var bootTargets = map[bmc.BootDevice]string{
	bmc.BootPXE:  "Pxe",
	bmc.BootCD:   "Cd",
	bmc.BootDisk: "Hdd",
}

// SetBootDevice sets the boot override by PATCH: once, or continuous when
// persistent; BootNone clears it (see clearOverride: how differs between
// BMCs).
func (cl *Client) SetBootDevice(ctx context.Context, dev bmc.BootDevice, persistent bool) error {
	const op = "set boot device"
	target, known := bootTargets[dev]
	if !known && dev != bmc.BootNone {
		return bmc.Errorf(bmc.KindUnsupported, op, "unknown boot device %q", dev)
	}
	return cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		s, err := getSystem(api, sys)
		if err != nil {
			return err
		}
		if dev == bmc.BootNone {
			return clearOverride(api, s, cl.c.redactor())
		}
		enabled := "Once"
		if persistent {
			enabled = "Continuous"
		}
		if len(s.BootTargets) > 0 && !containsFold(s.BootTargets, target) {
			return bmc.Errorf(bmc.KindUnsupported, op, "system %s cannot boot from %s (allows %s)", s.Path, target, strings.Join(s.BootTargets, ", "))
		}
		if len(s.BootEnables) > 0 && !containsFold(s.BootEnables, enabled) {
			return bmc.Errorf(bmc.KindUnsupported, op, "system %s does not support a %s boot override", s.Path, enabled)
		}
		if strings.EqualFold(s.BootTarget, target) && strings.EqualFold(s.BootEnabled, enabled) {
			return nil
		}
		return patchBoot(api, s, map[string]any{"Boot": map[string]string{
			"BootSourceOverrideTarget":  target,
			"BootSourceOverrideEnabled": enabled,
		}})
	})
}

// patch PATCHes without If-Match and retries with it when the BMC demands
// one (428), which avoids spurious 412s from ETags that change with power.
func patch(api *gofish.APIClient, path string, payload any, etag string) error {
	resp, err := api.Patch(path, payload)
	schemas.DeferredCleanupHTTPResponse(resp)
	if err != nil && statusOf(err) == http.StatusPreconditionRequired && etag != "" {
		resp, err = api.PatchWithHeaders(path, payload, map[string]string{"If-Match": etag})
		schemas.DeferredCleanupHTTPResponse(resp)
	}
	return err
}

// Inventory reads CPUs (logical, as Ironic counts them), memory, UUID,
// serial and power state from the system, and the CPU architecture from
// its first processor when the BMC lists processors.
func (cl *Client) Inventory(ctx context.Context) (bmc.Inventory, error) {
	var inv bmc.Inventory
	err := cl.run(ctx, "inventory", func(api *gofish.APIClient, sys string) error {
		s, err := getSystem(api, sys)
		if err != nil {
			return err
		}
		inv = bmc.Inventory{
			CPUs:       firstPositive(s.LogicalCPUs, s.Cores, s.Count),
			MemoryMB:   int(math.Round(s.MemoryGiB * 1024)),
			SystemUUID: s.UUID,
			Serial:     s.Serial,
			PowerState: power(s.PowerState),
		}
		if s.Processors != "" {
			arch, cpus, err := processors(api, s.Processors, inv.CPUs == 0)
			if err != nil && ctx.Err() != nil {
				return err
			}
			inv.CPUArch = arch
			if inv.CPUs == 0 {
				inv.CPUs = cpus
			}
		}
		return nil
	})
	return inv, err
}

// processors returns the architecture of the first CPU and, when count is
// set, the logical CPUs summed over (at most 64) processors.
func processors(api *gofish.APIClient, path string, count bool) (arch string, cpus int, err error) {
	d, _, err := getDoc(api, path)
	if err != nil {
		return "", 0, err
	}
	members := d.members()
	if !count && len(members) > 1 {
		members = members[:1]
	}
	if len(members) > 64 {
		members = members[:64]
	}
	for _, m := range members {
		p, _, err := getDoc(api, m)
		if err != nil {
			return arch, cpus, err
		}
		if t := p.str("ProcessorType"); t != "" && !strings.EqualFold(t, "CPU") {
			continue
		}
		if arch == "" {
			arch = cpuArch(p.str("InstructionSet"), p.str("ProcessorArchitecture"))
		}
		cpus += firstPositive(p.int("TotalThreads"), p.int("TotalCores"), 1)
	}
	return arch, cpus, nil
}

// cpuArch maps Redfish's InstructionSet / ProcessorArchitecture to the
// names operators know (uname -m).
func cpuArch(instructionSet, architecture string) string {
	switch strings.ToLower(instructionSet) {
	case "x86-64":
		return "x86_64"
	case "x86":
		return "i686"
	case "ia-64":
		return "ia64"
	case "arm-a64":
		return "aarch64"
	case "arm-a32":
		return "armv7l"
	case "mips64":
		return "mips64"
	case "mips32":
		return "mips"
	case "powerisa":
		return "ppc64le"
	case "rv64":
		return "riscv64"
	case "rv32":
		return "riscv32"
	}
	switch strings.ToLower(architecture) {
	case "x86":
		return "x86_64"
	case "arm":
		return "aarch64"
	case "power":
		return "ppc64le"
	case "ia-64":
		return "ia64"
	case "mips":
		return "mips64"
	case "risc-v":
		return "riscv64"
	}
	return ""
}

func firstPositive(xs ...int) int {
	for _, x := range xs {
		if x > 0 {
			return x
		}
	}
	return 0
}

func containsFold(xs []string, s string) bool {
	for _, x := range xs {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
