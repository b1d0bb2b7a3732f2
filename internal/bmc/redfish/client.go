package redfish

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/stmcginnis/gofish"

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
	_ bmc.SystemUUIDGetter = (*Client)(nil)
	_ bmc.BootModeGetter   = (*Client)(nil)
)

// run calls fn with a logged-in client and the system path (the BMC's
// only system when the endpoint names none), re-logging in once when a
// cached session is refused, and classifies the outcome.
func (cl *Client) run(ctx context.Context, op string, fn func(api *gofish.APIClient, sys string) error) error {
	return cl.call(ctx, op, func(api *gofish.APIClient) error {
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
	})
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
		allowed := allowableValues(api, s.ResetAction, "ResetType", allResetTypes)
		rt, ok := chooseReset(action, cur, allowed)
		if !ok {
			return bmc.Errorf(bmc.KindUnsupported, op, "system %s allows reset types %s; none does %q",
				s.Path, strings.Join(allowed, ", "), action)
		}
		if rt != preferredReset(action, cur) {
			cl.c.o.log.Info("power action mapped to a fallback reset type", "bmc", cl.c.endpoint, "system", s.Path, "action", action, "reset_type", rt)
		}
		return postAccepted(ctx, api, s.ResetTarget, map[string]string{"ResetType": rt}, func(msg string) {
			cl.c.o.log.Info(msg, "bmc", cl.c.endpoint, "system", s.Path, "reset_type", rt)
		})
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

var bootTargets = map[bmc.BootDevice]string{
	bmc.BootPXE:  "Pxe",
	bmc.BootCD:   "Cd",
	bmc.BootDisk: "Hdd",
}

// SetBootDevice sets the boot override by PATCH: once, or continuous when
// persistent; BootNone clears it (see clearOverride: how differs between
// BMCs). The override is read back (from the @Redfish.Settings object when
// the BMC takes it only there: it applies at the next reset): a BMC that
// accepted it and does not show it (one-time boot on some iDRAC firmware)
// gets it once more, then the call fails saying what the BMC shows.
//
// The boot mode is left out of the PATCH: HPE iLO and Dell 13G refuse a
// BootSourceOverrideMode even of the value it has. A BMC that changes the
// mode when it is left out (Supermicro) is found by the read-back and
// given its mode back, so the machine boots in the mode it was in.
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
			return clearOverride(ctx, api, s, cl.c.redactor())
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
		want := bootForm{enabled: enabled, target: target}
		if overrideShows(s, want) {
			return nil
		}
		mode := s.BootMode
		for try := 1; ; try++ {
			where, err := patchBoot(ctx, api, s, want.payload())
			if err != nil {
				return err
			}
			now, err := readOverride(api, s, where)
			if err != nil {
				return err
			}
			if overrideShows(now, want) {
				if try > 1 {
					cl.c.o.log.Info("boot override took on the second PATCH", "bmc", cl.c.endpoint, "system", s.Path)
				}
				if mode != "" && now.BootMode != "" && !strings.EqualFold(now.BootMode, mode) {
					return restoreMode(ctx, api, s, where, want, mode, now.BootMode)
				}
				return nil
			}
			if try == 2 {
				return &bmc.Error{Kind: bmc.KindRefused, Op: op, Err: fmt.Errorf("%w: %s was sent %s twice and shows %s",
					errNotApplied, now.Path, want, showOverride(now))}
			}
		}
	})
}

// restoreMode gives the system back the boot mode it was in (was) after a
// boot override the BMC took with a change of mode (to now): the override
// again, with the mode.
func restoreMode(ctx context.Context, api *gofish.APIClient, s *system, where string, want bootForm, was, now string) error {
	want.mode = was
	if _, err := patchBoot(ctx, api, s, want.payload()); err != nil {
		return fmt.Errorf("the BMC switched the boot mode from %s to %s with the boot override, and refused %s back: %w", was, now, was, reduce(err))
	}
	after, err := readOverride(api, s, where)
	if err != nil {
		return err
	}
	if !strings.EqualFold(after.BootMode, was) || !overrideShows(after, bootForm{enabled: want.enabled, target: want.target}) {
		return &bmc.Error{Kind: bmc.KindRefused, Op: "set boot device", Err: fmt.Errorf("%w: the BMC switched the boot mode from %s to %s with the boot override and, sent %s, shows %s",
			errNotApplied, was, now, want, showOverride(after))}
	}
	return nil
}

// readOverride reads back the boot override written to where: the system
// itself, or its @Redfish.Settings object (pending until the next reset;
// a settings object that shows no Boot at all is taken at its word).
func readOverride(api *gofish.APIClient, s *system, where string) (*system, error) {
	if where == s.Path {
		now, err := getSystem(api, s.Path)
		if err != nil {
			return nil, fmt.Errorf("reading the boot override back: %w", reduce(err))
		}
		return now, nil
	}
	d, _, err := getDoc(api, where)
	if err != nil {
		return nil, fmt.Errorf("reading the pending boot override back from %s: %w", where, reduce(err))
	}
	boot := d.obj("Boot")
	pending := &system{Path: where, BootTarget: boot.str("BootSourceOverrideTarget"), BootEnabled: boot.str("BootSourceOverrideEnabled"),
		BootMode: boot.str("BootSourceOverrideMode")}
	if boot == nil {
		pending.BootTarget, pending.BootEnabled, pending.BootMode = s.BootTarget, s.BootEnabled, ""
		pending.unverified = true
	}
	return pending, nil
}

// overrideShows reports whether s shows the override f. A one-time
// override that reads back continuous counts (sushy-tools, libvirt: no
// one-time boot; the controller clears overrides when its work is done),
// and so does a mode the system does not report.
func overrideShows(s *system, f bootForm) bool {
	if s.unverified {
		return true
	}
	if !strings.EqualFold(s.BootTarget, f.target) {
		return false
	}
	if !strings.EqualFold(s.BootEnabled, f.enabled) &&
		(!strings.EqualFold(f.enabled, "Once") || !strings.EqualFold(s.BootEnabled, "Continuous")) {
		return false
	}
	return f.mode == "" || s.BootMode == "" || strings.EqualFold(s.BootMode, f.mode)
}

func showOverride(s *system) string {
	return bootForm{enabled: orNone(s.BootEnabled), target: orNone(s.BootTarget), mode: s.BootMode}.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// BootMode reads the system's boot mode (BootSourceOverrideMode): one
// request.
func (cl *Client) BootMode(ctx context.Context) (string, error) {
	var mode string
	err := cl.run(ctx, "read boot mode", func(api *gofish.APIClient, sys string) error {
		s, err := getSystem(api, sys)
		if err != nil {
			return err
		}
		mode = bootModeName(s.BootMode)
		return nil
	})
	return mode, err
}

// SystemUUID reads the system's UUID: one request, where Inventory walks
// the processors too.
func (cl *Client) SystemUUID(ctx context.Context) (string, error) {
	var id string
	err := cl.run(ctx, "read system UUID", func(api *gofish.APIClient, sys string) error {
		s, err := getSystem(api, sys)
		if err != nil {
			return err
		}
		id = s.UUID
		return nil
	})
	return id, err
}

// Inventory reads the system's hardware threads, sockets and cores,
// memory, UUID, serial, boot mode and power state. The CPU count is what
// operators and schedulers mean by cpus, the hardware threads: the sum of
// each processor's TotalThreads, else the summary's LogicalProcessorCount
// (threads too), else the processors' TotalCores. ProcessorSummary.Count is not used for it: it
// counts sockets on most BMCs (iLO 5, AMI, Intel), and cores on others
// (Supermicro X10, Cisco). Zeros are unknowns (an OpenBMC whose host is
// off reports 0 CPUs and 0 GiB), never facts.
func (cl *Client) Inventory(ctx context.Context) (bmc.Inventory, error) {
	var inv bmc.Inventory
	err := cl.run(ctx, "inventory", func(api *gofish.APIClient, sys string) error {
		s, err := getSystem(api, sys)
		if err != nil {
			return err
		}
		inv = bmc.Inventory{
			MemoryMB:   int(math.Round(s.MemoryGiB * 1024)),
			SystemUUID: s.UUID,
			Serial:     s.Serial,
			PowerState: power(s.PowerState),
			BootMode:   bootModeName(s.BootMode),
		}
		var cpus cpuCount
		if s.Processors != "" {
			if cpus, err = cl.c.processors(api, s.Processors); err != nil && ctx.Err() != nil {
				return err
			}
		}
		inv.CPUArch = cpus.arch
		inv.CPUSockets = cpus.sockets
		inv.CPUCores = cpus.cores
		inv.CPUs = firstPositive(cpus.threads, s.LogicalCPUs, cpus.cores)
		return nil
	})
	return inv, err
}

// bootModeName maps BootSourceOverrideMode to the names the agent reports.
func bootModeName(mode string) string {
	switch strings.ToLower(mode) {
	case "uefi":
		return "uefi"
	case "legacy":
		return "bios"
	}
	return ""
}

// cpuCount is what the Processors collection says: the populated CPU
// sockets, their cores and threads (0: not given), and the architecture.
type cpuCount struct {
	sockets, cores, threads int
	arch                    string
}

// processors reads the Processors collection (at most 64 members): the
// CPUs that are there (not GPUs or accelerators, nor the empty sockets
// some BMCs list: Cisco lists one with nothing but its Id), their cores
// and threads. Threads are counted only when every CPU gives them, cores
// likewise, so a count is never a mix of the two.
// The collection is read with its members inline where the BMC
// advertises $expand (one request instead of one per processor; a member
// it did not expand is read on its own).
func (c *conn) processors(api *gofish.APIClient, path string) (cpuCount, error) {
	var out cpuCount
	d, err := c.expanded(api, path)
	if err != nil {
		return out, err
	}
	members := d.arr("Members")
	if len(members) > 64 {
		members = members[:64]
	}
	allThreads, allCores := true, true
	for _, m := range members {
		p, ok := inlineMember(m)
		if !ok {
			link := linkOf(m)
			if link == "" {
				continue
			}
			if p, _, err = getDoc(api, strings.TrimSuffix(link, "/")); err != nil {
				return cpuCount{arch: out.arch}, err
			}
		}
		if t := p.str("ProcessorType"); t != "" && !strings.EqualFold(t, "CPU") {
			continue
		}
		threads, cores := p.int("TotalThreads"), p.int("TotalCores")
		if strings.EqualFold(p.obj("Status").str("State"), "Absent") ||
			(threads == 0 && cores == 0 && p.str("Model") == "" && p.str("InstructionSet") == "" && p.str("ProcessorArchitecture") == "") {
			continue
		}
		out.sockets++
		if out.arch == "" {
			out.arch = cpuArch(p.str("InstructionSet"), p.str("ProcessorArchitecture"))
		}
		out.threads += threads
		out.cores += cores
		allThreads = allThreads && threads > 0
		allCores = allCores && cores > 0
	}
	if !allThreads {
		out.threads = 0
	}
	if !allCores {
		out.cores = 0
	}
	return out, nil
}

// expanded reads the collection at path with its members inline where
// the BMC advertises $expand, else as it is. A BMC that answers the
// query with an HTTP error and the plain read without one does not take
// it (whatever it advertises): remembered for the BMC.
func (c *conn) expanded(api *gofish.APIClient, path string) (doc, error) {
	q := c.expandQuery()
	if q == "" {
		d, _, err := getDoc(api, path)
		return d, err
	}
	d, _, qerr := getDoc(api, path+"?"+q)
	if qerr == nil {
		return d, nil
	}
	if statusOf(qerr) == 0 {
		return nil, qerr // no answer: asking again without the query would not help
	}
	d, _, err := getDoc(api, path)
	if err == nil {
		c.refuseExpand(qerr)
	}
	return d, err
}

// inlineMember returns a collection member the BMC expanded: an object
// with more than its @odata.id (and annotations).
func inlineMember(m any) (doc, bool) {
	o, ok := m.(map[string]any)
	if !ok {
		return nil, false
	}
	for k := range o {
		if !strings.HasPrefix(k, "@") {
			return doc(o), true
		}
	}
	return nil, false
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
