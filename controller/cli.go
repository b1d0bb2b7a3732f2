package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// The operator CLI talks to a controller through its API, exactly as the
// Terraform provider does, with BAREMETAL_ENDPOINT and BAREMETAL_TOKEN.

// stdout is where commands print their results (tests read it).
var stdout io.Writer = os.Stdout

const cliCommonFlags = `Flags common to all: --endpoint (BAREMETAL_ENDPOINT), --token (BAREMETAL_TOKEN), -o json.
`

var nodeUsage = fmt.Sprintf(`usage: controller node <command> [flags]

  list [--fault any|none|NAME] [--maintenance true|false] [--state S] [--class C]
       [--include-deleting=false]     nodes being retired (deleting) are listed unless this is false
  show NODE
  maintenance NODE --reason "why"     set maintenance (operators only)
  maintenance NODE --off              clear it
  power NODE %-24s queue a power action
        [--wait [--timeout 10m]]      and follow it with a progress line until it is done
  events NODE                         what happened to the node, and who did it
  inspect NODE [--wait [--timeout 20m]]
                                      boot the deploy agent to report the node's hardware
                                      (the node must be available, without an instance);
                                      --wait follows it and prints the inventory
  inventory NODE                      the hardware the deploy agent last reported
  delete NODE [--force]               retire the node (power off, then remove); --force removes
                                      the record at once without touching the BMC

`+cliCommonFlags, strings.Join(api.PowerActions(), "|"))

// oneOf checks a value against one of the API's lists before it is sent,
// so a typo is answered with the valid values at once.
func oneOf(what, v string, valid []string) error {
	if slices.Contains(valid, v) {
		return nil
	}
	return fmt.Errorf("%s %q must be one of %s", what, v, strings.Join(valid, ", "))
}

const instanceUsage = `usage: controller instance <command> [flags]

  list                                instances the token may see (a member: its project's)
  show INSTANCE                       one instance, by id or name
  delete INSTANCE                     delete it now; the node's cleanup continues in the controller

` + cliCommonFlags

const tokenUsage = `usage: controller token <command> [flags]      (admin tokens only)

  list
  create --name WHO --role admin|member [--project P] [--expires 720h]
                                      prints the secret (shown this once) on stdout;
                                      --name says who or what uses it: events name it
  revoke TOKEN                        by id or name
  delete TOKEN                        the same as revoke

` + cliCommonFlags

type cliFlags struct {
	*flags
	endpoint, token, output *string
}

func newCLIFlags(name string) *cliFlags {
	f := &cliFlags{flags: newFlags(name)}
	f.endpoint = f.String("endpoint", "http://127.0.0.1:8080", "controller API URL")
	f.token = f.String("token", "", "API token")
	f.output = f.String("o", "table", "output: table or json")
	return f
}

// parseCLI parses flags that may come after positional arguments
// ("node maintenance rack1 --reason x").
func (f *cliFlags) parseCLI(args []string) ([]string, error) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			return nil, err
		}
		if f.NArg() == 0 {
			break
		}
		pos = append(pos, f.Arg(0))
		args = f.Args()[1:]
	}
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for name, ptr := range map[string]*string{"endpoint": f.endpoint, "token": f.token} {
		if v, ok := os.LookupEnv(envName(name)); ok && !set[name] {
			*ptr = v
		}
	}
	return pos, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

func (f *cliFlags) client() (*apiclient.Client, error) {
	if *f.token == "" {
		return nil, errors.New("no token: set BAREMETAL_TOKEN or --token (the first admin token is in <data-dir>/admin-token)")
	}
	return apiclient.New(*f.endpoint, apiclient.Options{Token: *f.token, UserAgent: "baremetal-controller-cli/" + version})
}

func (f *cliFlags) printJSON(v any) error {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// cliGroup is a group of the operator CLI (node, instance, token): its
// usage and its commands, which share the group's flags.
type cliGroup struct {
	name, usage string
	// commands declares the group's flags on f and returns its commands,
	// which read them once f is parsed.
	commands func(f *cliFlags) cliCommands
}

// cliCommands is a group's commands, by name, and how long each may take.
type cliCommands struct {
	byName map[string]cliCommand
	// timeout is how long command name may take; nil: two minutes.
	timeout func(name string) time.Duration
}

// cliCommand is one command: how many positional arguments it takes and
// what it does with them.
type cliCommand struct {
	args int
	run  func(ctx context.Context, c *apiclient.Client, pos []string) error
}

// run runs the group's command args[0] with the rest of args: help, or
// the command once its flags and number of arguments are checked (before
// a token is needed or anything is sent), under its timeout.
func (g cliGroup) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, g.usage)
		return fmt.Errorf("no %s command", g.name)
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, g.usage)
		return nil
	}
	name := g.name + " " + args[0]
	f := newCLIFlags(name)
	cmds := g.commands(f)
	cmd, ok := cmds.byName[args[0]]
	if !ok {
		fmt.Fprint(os.Stderr, g.usage)
		return fmt.Errorf("unknown %s command %q", g.name, args[0])
	}
	pos, err := f.parseCLI(args[1:])
	if err != nil {
		return err
	}
	if len(pos) != cmd.args {
		return fmt.Errorf("%s: expected %d argument(s), got %d\n%s", name, cmd.args, len(pos), g.usage)
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	limit := 2 * time.Minute
	if cmds.timeout != nil {
		limit = cmds.timeout(args[0])
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return cmd.run(ctx, c, pos)
}

// printList prints items as JSON with -o json, else as a table: the
// header's columns, then row's for each item.
func printList[T any](f *cliFlags, items []T, header []string, row func(T) []string) error {
	if *f.output == "json" {
		return f.printJSON(items)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, it := range items {
		fmt.Fprintln(tw, strings.Join(row(it), "\t"))
	}
	return tw.Flush()
}

func dash[S ~string](s S) string {
	if s == "" {
		return "-"
	}
	return string(s)
}

var (
	nodeCLI     = cliGroup{name: "node", usage: nodeUsage, commands: nodeCommands}
	instanceCLI = cliGroup{name: "instance", usage: instanceUsage, commands: instanceCommands}
	tokenCLI    = cliGroup{name: "token", usage: tokenUsage, commands: tokenCommands}
)

func runNode(ctx context.Context, args []string) error     { return nodeCLI.run(ctx, args) }
func runInstance(ctx context.Context, args []string) error { return instanceCLI.run(ctx, args) }
func runToken(ctx context.Context, args []string) error    { return tokenCLI.run(ctx, args) }

func nodeCommands(f *cliFlags) cliCommands {
	fault := f.String("fault", "", "filter: "+strings.Join(api.FaultFilters(), ", "))
	maint := f.String("maintenance", "", "filter: true or false")
	state := f.String("state", "", "filter: provision state ("+strings.Join(api.ProvisionStates(), ", ")+")")
	class := f.String("class", "", "filter: resource class")
	reason := f.String("reason", "", "maintenance reason (required to set maintenance)")
	off := f.Bool("off", false, "clear maintenance")
	includeDeleting := f.Bool("include-deleting", true, "list nodes being retired (provision state deleting) too")
	force := f.Bool("force", false, "delete: remove the record at once, without touching the BMC")
	wait := f.Bool("wait", false, "power, inspect: wait until the job is done, showing its progress")
	timeout := f.Duration("timeout", 2*time.Minute, "give up after this long (with --wait: default 10m, inspect 20m)")
	list := func(ctx context.Context, c *apiclient.Client, _ []string) error {
		if *fault != "" {
			if err := oneOf("--fault", *fault, api.FaultFilters()); err != nil {
				return err
			}
		}
		if *state != "" {
			if err := oneOf("--state", *state, api.ProvisionStates()); err != nil {
				return err
			}
		}
		// Nodes being retired are listed unless --include-deleting=false:
		// an operator looking for faulted nodes must see one whose retire
		// waits for its BMC.
		filter := apiclient.NodeFilter{Fault: *fault, ProvisionState: api.ProvisionState(*state), ResourceClass: *class, IncludeDeleting: *includeDeleting}
		if *maint != "" {
			b, err := strconv.ParseBool(*maint)
			if err != nil {
				return fmt.Errorf("--maintenance: %w", err)
			}
			filter.Maintenance = &b
		}
		nodes, err := c.ListNodes(ctx, filter)
		if err != nil {
			return err
		}
		return printList(f, nodes, []string{"NAME", "STATE", "POWER", "MAINTENANCE", "FAULT", "CLASS", "ID"}, func(n api.Node) []string {
			m := "-"
			if n.Maintenance {
				m = n.MaintenanceReason
			}
			return []string{n.Name, string(n.ProvisionState), string(n.PowerState), m, dash(n.Fault), n.ResourceClass, n.ID}
		})
	}
	maintenance := func(ctx context.Context, c *apiclient.Client, pos []string) error {
		on := !*off
		patch := api.NodePatch{Maintenance: &on}
		if on {
			if *reason == "" {
				return errors.New("--reason is required to set maintenance (or --off to clear it)")
			}
			patch.MaintenanceReason = reason
		}
		n, err := c.PatchNode(ctx, pos[0], patch, "")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "node %s: maintenance=%v %s\n", n.Name, n.Maintenance, n.MaintenanceReason)
		return nil
	}
	power := func(ctx context.Context, c *apiclient.Client, pos []string) error {
		if err := oneOf("power action", pos[1], api.PowerActions()); err != nil {
			return err
		}
		acc, err := c.NodePower(ctx, pos[0], api.PowerAction(pos[1]))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "queued power %s as job %d\n", pos[1], acc.JobID)
		if !*wait {
			return nil
		}
		n, err := c.GetNode(ctx, pos[0])
		if err != nil {
			return err
		}
		return waitJob(ctx, c, stdout, n.ID, acc.JobID, "power "+pos[1]+" "+n.Name)
	}
	events := func(ctx context.Context, c *apiclient.Client, pos []string) error {
		evs, err := c.ListNodeEvents(ctx, pos[0])
		if err != nil {
			return err
		}
		return printList(f, evs, []string{"TIME", "ACTOR", "TYPE", "CHANGE", "MESSAGE"}, func(e api.Event) []string {
			change := ""
			if e.Field != "" && (e.Old != "" || e.New != "") {
				change = fmt.Sprintf("%s: %s → %s", e.Field, e.Old, e.New)
			}
			return []string{e.Time.Format(time.RFC3339), e.Actor, e.Type, change, e.Message}
		})
	}
	inventory := func(ctx context.Context, c *apiclient.Client, pos []string) error {
		n, err := c.GetNode(ctx, pos[0])
		if err != nil {
			return err
		}
		inv, err := c.GetNodeInventory(ctx, n.ID)
		if errors.Is(err, apiclient.ErrNotFound) {
			return fmt.Errorf("node %s has no inventory: it has not been inspected (controller node inspect %s)", n.Name, n.Name)
		}
		if err != nil {
			return err
		}
		if *f.output == "json" {
			return f.printJSON(inv)
		}
		return printInventory(stdout, n.Name, inv)
	}
	return cliCommands{
		byName: map[string]cliCommand{
			"list": {0, list},
			"show": {1, func(ctx context.Context, c *apiclient.Client, pos []string) error {
				return f.show(c.GetNode(ctx, pos[0]))
			}},
			"maintenance": {1, maintenance},
			"power":       {2, power},
			"events":      {1, events},
			"inspect": {1, func(ctx context.Context, c *apiclient.Client, pos []string) error {
				return inspectNode(ctx, f, c, pos[0], *wait)
			}},
			"inventory": {1, inventory},
			"delete": {1, func(ctx context.Context, c *apiclient.Client, pos []string) error {
				return f.accepted(c.DeleteNode(ctx, pos[0], *force))
			}},
		},
		timeout: func(name string) time.Duration {
			if !*wait || flagSet(f.FlagSet, "timeout") {
				return *timeout
			}
			if name == "inspect" {
				// A boot of the agent, under the controller's
				// --agent-timeout (15m by default) before it gives up.
				return 20 * time.Minute
			}
			return 10 * time.Minute // a BMC may take minutes; the fault backoff too
		},
	}
}

// show prints the result of a read as JSON, as the API has it.
func (f *cliFlags) show(v any, err error) error {
	if err != nil {
		return err
	}
	return f.printJSON(v)
}

// accepted prints a 202: the job that finishes the work and what the
// controller said about it.
func (f *cliFlags) accepted(acc *api.Accepted, err error) error {
	if err != nil {
		return err
	}
	if *f.output == "json" {
		return f.printJSON(acc)
	}
	if acc.JobID != 0 {
		fmt.Fprintf(stdout, "%s (job %d)\n", acc.Message, acc.JobID)
		return nil
	}
	fmt.Fprintln(stdout, acc.Message)
	return nil
}

func instanceCommands(f *cliFlags) cliCommands {
	return cliCommands{byName: map[string]cliCommand{
		"list": {0, func(ctx context.Context, c *apiclient.Client, _ []string) error {
			insts, err := c.ListInstances(ctx)
			if err != nil {
				return err
			}
			return printList(f, insts, []string{"NAME", "PROJECT", "STATE", "POWER", "NODE", "LAST ERROR", "ID"}, func(in api.Instance) []string {
				return []string{in.Name, in.Project, string(in.State), dash(in.ObservedPowerState), dash(in.NodeID), dash(in.LastError), in.ID}
			})
		}},
		"show": {1, func(ctx context.Context, c *apiclient.Client, pos []string) error {
			return f.show(c.GetInstance(ctx, pos[0]))
		}},
		"delete": {1, func(ctx context.Context, c *apiclient.Client, pos []string) error {
			return f.accepted(c.DeleteInstance(ctx, pos[0]))
		}},
	}}
}

func tokenCommands(f *cliFlags) cliCommands {
	name := f.String("name", "", "create: who or what uses the token (required; events name it)")
	role := f.String("role", "", "create: admin or member (required)")
	project := f.String("project", "", "create: the member's project")
	expires := f.Duration("expires", 0, "create: lifetime, e.g. 720h (default: does not expire)")
	create := func(ctx context.Context, c *apiclient.Client, _ []string) error {
		// Checked here too so the mistake costs no round trip; the
		// controller is the authority and checks again.
		if *name == "" {
			return errors.New("--name is required: say who or what uses the token (e.g. alice, ci-deploy); events name it")
		}
		if *role == "" {
			return fmt.Errorf("--role %s is required", strings.Join(api.Roles(), "|"))
		}
		if err := oneOf("--role", *role, api.Roles()); err != nil {
			return err
		}
		in := api.TokenCreate{Name: *name, Role: api.Role(*role), Project: *project}
		if *expires < 0 {
			return errors.New("--expires must be positive")
		}
		if *expires > 0 {
			at := time.Now().Add(*expires).UTC()
			in.ExpiresAt = &at
		}
		tc, err := c.CreateToken(ctx, in)
		if err != nil {
			return err
		}
		if *f.output == "json" {
			return f.printJSON(tc)
		}
		// Only the secret on stdout, so TOKEN=$(controller token create ...)
		// captures it; the rest is for the operator's eyes.
		fmt.Fprintf(os.Stderr, "created token %s (%s, role %s); its secret is shown this once:\n", tc.ID, tc.Name, tc.Role)
		fmt.Fprintln(stdout, tc.Secret)
		return nil
	}
	revoke := func(ctx context.Context, c *apiclient.Client, pos []string) error {
		id, err := tokenID(ctx, c, pos[0])
		if err != nil {
			return err
		}
		if err := c.DeleteToken(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "token %s revoked\n", id)
		return nil
	}
	return cliCommands{byName: map[string]cliCommand{
		"list": {0, func(ctx context.Context, c *apiclient.Client, _ []string) error {
			toks, err := c.ListTokens(ctx)
			if err != nil {
				return err
			}
			return printList(f, toks, []string{"NAME", "ROLE", "PROJECT", "EXPIRES", "CREATED", "ID"}, func(t api.Token) []string {
				exp := "-"
				if t.ExpiresAt != nil {
					exp = t.ExpiresAt.Format(time.RFC3339)
				}
				return []string{dash(t.Name), string(t.Role), dash(t.Project), exp, t.CreatedAt.Format(time.RFC3339), t.ID}
			})
		}},
		"create": {0, create},
		"revoke": {1, revoke},
		"delete": {1, revoke},
	}}
}

// tokenID resolves a token's id or name (names are unique) to its id:
// the API revokes by id, operators remember names.
func tokenID(ctx context.Context, c *apiclient.Client, idOrName string) (string, error) {
	toks, err := c.ListTokens(ctx)
	if err != nil {
		return "", err
	}
	for _, t := range toks {
		if t.ID == idOrName || t.Name == idOrName {
			return t.ID, nil
		}
	}
	return "", fmt.Errorf("no token with id or name %q", idOrName)
}

// inspectNode queues an inspection and, with wait, follows its job and
// prints what the agent reported. An inspection whose agent never
// reported still completes its job (the node is available again, with
// the reason in last_error), so the outcome is read from the inventory's
// time: one older than the job is the last inspection's, not this one's.
func inspectNode(ctx context.Context, f *cliFlags, c *apiclient.Client, idOrName string, wait bool) error {
	acc, err := c.InspectNode(ctx, idOrName)
	if err != nil {
		return err
	}
	if !wait {
		if *f.output == "json" {
			return f.printJSON(acc)
		}
		fmt.Fprintf(stdout, "%s (job %d)\n", acc.Message, acc.JobID)
		return nil
	}
	n, err := c.GetNode(ctx, idOrName)
	if err != nil {
		return err
	}
	progress := stdout
	if *f.output == "json" {
		progress = os.Stderr // stdout holds the inventory alone
	}
	fmt.Fprintf(progress, "queued inspection of node %s as job %d\n", n.Name, acc.JobID)
	if err := waitJob(ctx, c, progress, n.ID, acc.JobID, "inspect "+n.Name); err != nil {
		return err
	}
	job, n, err := readJob(ctx, c, n.ID, acc.JobID)
	if err != nil {
		return err
	}
	inv, err := c.GetNodeInventory(ctx, n.ID)
	if err != nil && !errors.Is(err, apiclient.ErrNotFound) {
		return err
	}
	if inv == nil || inspectedBefore(inv, job.CreatedAt) {
		return fmt.Errorf("inspection of node %s failed: %s", n.Name, orNone(n.LastError))
	}
	if *f.output == "json" {
		return f.printJSON(inv)
	}
	return printInventory(stdout, n.Name, inv)
}

// inspectedBefore reports whether the inventory is older than t (the
// inventory's time has whole seconds).
func inspectedBefore(inv *api.NodeInventory, t time.Time) bool {
	at, err := time.Parse(time.RFC3339, inv.InspectedAt)
	return err != nil || at.Before(t.Truncate(time.Second))
}

// printInventory prints a node's inventory for people: the machine, then
// one table of disks and one of NICs.
func printInventory(w io.Writer, name string, inv *api.NodeInventory) error {
	in := inv.Inventory
	sys := strings.TrimSpace(in.System.Vendor + " " + in.System.Product)
	fmt.Fprintf(w, "node %s, inspected %s\n", name, inv.InspectedAt)
	fmt.Fprintf(w, "system:  %s (serial %s, uuid %s)\n", dash(sys), dash(in.System.Serial), dash(in.System.UUID))
	switch in.System.BootMode {
	case api.BootModeUEFI:
		sb := "unknown"
		if s := in.System.SecureBoot; s != nil {
			sb = map[bool]string{true: "on", false: "off"}[*s]
		}
		fmt.Fprintf(w, "boot:    UEFI, Secure Boot %s\n", sb)
	case api.BootModeBIOS:
		fmt.Fprintln(w, "boot:    BIOS")
	}
	fmt.Fprintf(w, "cpus:    %d\n", in.CPUs)
	fmt.Fprintf(w, "memory:  %s\n", humanBytes(in.MemoryBytes))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nDISK\tSIZE\tMODEL\tSERIAL\tWWN\tROTATIONAL\tREMOVABLE\n")
	for _, d := range in.Disks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%v\n", d.Name, humanBytes(d.SizeBytes), dash(d.Model), dash(d.Serial), dash(d.WWN), d.Rotational, d.Removable)
	}
	if len(in.Disks) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	fmt.Fprintf(tw, "\nNIC\tMAC\tLINK\tIPV4\n")
	for _, nic := range in.NICs {
		link := "down"
		switch {
		case nic.LinkUp && nic.SpeedMbps > 0:
			link = fmt.Sprintf("up %d Mb/s", nic.SpeedMbps)
		case nic.LinkUp:
			link = "up"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", nic.Name, nic.MAC, link, dash(strings.Join(nic.IPv4, ",")))
	}
	if len(in.NICs) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	return tw.Flush()
}

// humanBytes is a size in binary units: "512 MiB", "64.0 GiB".
func humanBytes(b int64) string {
	switch {
	case b >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(b)/(1<<40))
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%d MiB", b>>20)
	default:
		return fmt.Sprintf("%d B", b)
	}
}
