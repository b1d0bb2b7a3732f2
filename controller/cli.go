package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// The operator CLI talks to a controller through its API, exactly as the
// Terraform provider does, with BAREMETAL_ENDPOINT and BAREMETAL_TOKEN.

// stdout is where commands print their results (tests read it).
var stdout io.Writer = os.Stdout

// stdin is where node create reads a password given as
// --bmc-password-file -, and stdinTerminal whether it may ask for one
// there (tests replace both).
var (
	stdin         io.Reader = os.Stdin
	stdinTerminal           = func() bool { return term.IsTerminal(int(os.Stdin.Fd())) }
)

const cliCommonFlags = `Flags common to all: --endpoint (BAREMETAL_ENDPOINT), --token (BAREMETAL_TOKEN), -o json, --timeout.
`

// cliTimeout is how long a command may take unless --timeout (or --wait)
// says otherwise.
const cliTimeout = 2 * time.Minute

// oneOf checks a value against one of the API's lists before it is sent,
// so a typo is answered with the valid values at once.
func oneOf(what, v string, valid []string) error {
	if slices.Contains(valid, v) {
		return nil
	}
	return fmt.Errorf("%s %q must be one of %s", what, v, strings.Join(valid, ", "))
}

// cliFlags are one command's flags: its own (declared by the command),
// then the common ones (addCommon). A flag another command has is
// unknown here: node delete refuses --reason rather than drop it.
type cliFlags struct {
	*flag.FlagSet
	endpoint, token, output *string
	timeout                 *time.Duration
	// wait is the command's --wait, when it has one (waitFlag), and
	// waitLimit how long the command may then take without --timeout.
	wait      *bool
	waitLimit time.Duration
	// own names the command's own flags; the rest are common.
	own []string
}

func newCLIFlags(name string) *cliFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Mistakes are returned as errors and help is printed by the group,
	// both naming this command's flags only.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &cliFlags{FlagSet: fs}
}

// waitFlag declares --wait for a command that can follow its job; it may
// then take up to limit unless --timeout says otherwise.
func (f *cliFlags) waitFlag(what string, limit time.Duration) *bool {
	f.wait = f.Bool("wait", false, what)
	f.waitLimit = limit
	return f.wait
}

// addCommon declares the flags every command has, after the command's own.
func (f *cliFlags) addCommon() {
	f.VisitAll(func(fl *flag.Flag) { f.own = append(f.own, fl.Name) })
	f.endpoint = f.String("endpoint", "http://127.0.0.1:8080", "controller API URL (env BAREMETAL_ENDPOINT)")
	f.token = f.String("token", "", "API token (env BAREMETAL_TOKEN)")
	f.output = f.String("o", "table", "output: table or json")
	limit := fmt.Sprintf("give up after this long (default %s)", cliTimeout)
	if f.wait != nil {
		limit = fmt.Sprintf("give up after this long (default %s; with --wait %s)", cliTimeout, f.waitLimit)
	}
	f.timeout = f.Duration("timeout", 0, limit)
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

// limit is how long the command may take.
func (f *cliFlags) limit() (time.Duration, error) {
	switch {
	case flagSet(f.FlagSet, "timeout"):
		if *f.timeout <= 0 {
			return 0, fmt.Errorf("--timeout must be positive, got %s", *f.timeout)
		}
		return *f.timeout, nil
	case f.wait != nil && *f.wait:
		return f.waitLimit, nil
	}
	return cliTimeout, nil
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
	return apiclient.New(*f.endpoint, apiclient.Options{Token: *f.token, UserAgent: api.ClientCLI + "/" + version})
}

func (f *cliFlags) printJSON(v any) error {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// cliGroup is a group of the operator CLI (node, instance, token): its
// commands, each with its own flags.
type cliGroup struct {
	name string
	// about follows the usage line of the group's help.
	about    string
	commands []cliCommand
}

// cliCommand is one command: how many positional arguments it takes,
// its help, and what it does with them.
type cliCommand struct {
	name string
	args int
	// use is the command's synopses and what each does, as its help and
	// its group's list show them.
	use []cliUse
	// define declares the command's own flags on f and returns what the
	// command does, which reads them once f is parsed.
	define func(f *cliFlags) cliAction
	// session: the command lasts as long as its user wants (a console);
	// --timeout bounds only its start.
	session bool
}

type cliUse struct{ synopsis, what string }

type cliAction func(ctx context.Context, c *apiclient.Client, pos []string) error

// names lists the group's commands in the order its help shows them.
func (g cliGroup) names() []string {
	out := make([]string, len(g.commands))
	for i, c := range g.commands {
		out[i] = c.name
	}
	return out
}

func (g cliGroup) command(name string) (cliCommand, bool) {
	for _, c := range g.commands {
		if c.name == name {
			return c, true
		}
	}
	return cliCommand{}, false
}

// usage is the group's help: every command's synopses.
func (g cliGroup) usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: controller %s <command> [flags]%s\n\n", g.name, g.about)
	for _, c := range g.commands {
		writeUses(&b, c.use)
	}
	fmt.Fprintf(&b, "\nRun 'controller %s <command> --help' for a command's flags.\n%s", g.name, cliCommonFlags)
	return b.String()
}

// writeUses writes synopses and what they do in two columns.
func writeUses(w io.Writer, uses []cliUse) {
	const col = 34
	for _, u := range uses {
		lines := strings.Split(u.what, "\n")
		if len(u.synopsis) > col {
			fmt.Fprintf(w, "  %s\n", u.synopsis)
			fmt.Fprintf(w, "  %-*s  %s\n", col, "", lines[0])
		} else {
			fmt.Fprintf(w, "  %-*s  %s\n", col, u.synopsis, lines[0])
		}
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "  %-*s  %s\n", col, "", l)
		}
	}
}

// help is one command's help: its synopses, then its own flags and the
// common ones.
func (g cliGroup) help(c cliCommand, f *cliFlags) string {
	var b strings.Builder
	for i, u := range c.use {
		lead := "usage: "
		if i > 0 {
			lead = "       "
		}
		fmt.Fprintf(&b, "%scontroller %s %s\n", lead, g.name, u.synopsis)
		for _, l := range strings.Split(u.what, "\n") {
			fmt.Fprintf(&b, "           %s\n", l)
		}
	}
	writeFlags := func(title string, own bool) {
		first := true
		f.VisitAll(func(fl *flag.Flag) {
			if slices.Contains(f.own, fl.Name) != own {
				return
			}
			if first {
				fmt.Fprintf(&b, "\n%s:\n", title)
				first = false
			}
			typ, usage := flag.UnquoteUsage(fl)
			fmt.Fprintf(&b, "  %s\n        %s", strings.TrimSpace(dashed(fl.Name)+" "+typ), usage)
			switch fl.DefValue {
			case "", "false", "0", "0s":
			default:
				fmt.Fprintf(&b, " (default %s)", fl.DefValue)
			}
			b.WriteString("\n")
		})
	}
	writeFlags("flags", true)
	writeFlags("common flags", false)
	return b.String()
}

// dashed is a flag as the help writes it: -o, --timeout.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagList names flags for an error: "--force, --wait".
func flagList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = dashed(n)
	}
	return strings.Join(out, ", ")
}

// run runs the group's command args[0] with the rest of args: help, or
// the command once its flags and number of arguments are checked (before
// a token is needed or anything is sent), under its timeout.
func (g cliGroup) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, g.usage())
		return fmt.Errorf("no %s command", g.name)
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 {
			// "node help power" is "node power --help".
			args = []string{args[1], "--help"}
			break
		}
		fmt.Fprint(stdout, g.usage())
		return nil
	}
	cmd, ok := g.command(args[0])
	if !ok {
		fmt.Fprint(os.Stderr, g.usage())
		return fmt.Errorf("unknown %s command %q", g.name, args[0])
	}
	name := g.name + " " + cmd.name
	f := newCLIFlags(name)
	do := cmd.define(f)
	f.addCommon()
	pos, err := f.parseCLI(args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, g.help(cmd, f))
		return nil
	}
	if err != nil {
		return f.usageError(name, err)
	}
	if len(pos) != cmd.args {
		return fmt.Errorf("%s: expected %d argument(s), got %d\n%s", name, cmd.args, len(pos), g.help(cmd, f))
	}
	if err := oneOf("-o", *f.output, []string{"table", "json"}); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	limit, err := f.limit()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	if cmd.session {
		ctx = withStartLimit(ctx, limit)
	}
	if !cmd.session {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	defer func(w io.Writer) { stdout = w }(stdout)
	stdout = terminalSafe(stdout) // what it prints quotes the server
	return do(ctx, c, pos)
}

// usageError says what was wrong with a flag and which flags the command
// takes.
func (f *cliFlags) usageError(name string, err error) error {
	const undefined = "flag provided but not defined: -"
	if flagName, ok := strings.CutPrefix(err.Error(), undefined); ok {
		takes := "only the common flags"
		if len(f.own) > 0 {
			takes = flagList(f.own) + " and the common flags"
		}
		return fmt.Errorf("%s: unknown flag %s; %s takes %s --endpoint, --token, -o, --timeout (controller %s --help)",
			name, dashed(flagName), name, takes, name)
	}
	return fmt.Errorf("%s: %w", name, err)
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

// clip shortens s to n runes for a table's column, which the whole text
// would stretch past the screen (show and -o json have it all).
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// cliHints rewrites the hints the controller gives API users ("PATCH
// maintenance=false", "force=true") into the commands a CLI user types
// about node: the API's texts serve curl and the dashboard, and the
// provider has its own words.
func cliHints(msg, node string) string {
	return strings.NewReplacer(
		"(PATCH maintenance=false)", "(controller node maintenance "+node+" --off)",
		"with force=true", "with controller node delete "+node+" --force",
	).Replace(msg)
}

// hintedError is err with cliHints applied to its text.
func hintedError(err error, node string) error {
	if err == nil {
		return nil
	}
	if msg := cliHints(err.Error(), node); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

var (
	nodeCLI = cliGroup{name: "node", commands: []cliCommand{
		{name: "list", args: 0, define: nodeList, use: []cliUse{{"list [filters]",
			"nodes by name: state, power, maintenance, fault, last error;\n" +
				"filters: --fault any|none|NAME, --maintenance true|false,\n" +
				"--state S, --class C, --owner P, --schedulable true|false,\n" +
				"--trait T and --not-trait T (repeat), --min-cpus N,\n" +
				"--min-memory-mb N, --min-disk-gb N, --cpu-arch A; nodes\n" +
				"being retired (deleting) are listed unless\n" +
				"--include-deleting=false"}}},
		{name: "show", args: 1, define: nodeShow, use: []cliUse{{"show NODE", "one node, by name or id (-o json: as the API has it)"}}},
		{name: "create", args: 0, define: nodeCreate, use: []cliUse{{"create --name N --class C --bmc-address URL --bmc-username U",
			"enroll a node (admins); its BMC password is read from\n" +
				"--bmc-password-file FILE (- for stdin), else from\n" +
				bmcPasswordEnv + ", else asked for on the terminal;\n" +
				"never from a flag (shell history, ps); --trait T\n" +
				"(repeat) sets its traits, --owner P the project whose\n" +
				"instances alone are placed on it"}}},
		{name: "capacity", args: 0, define: nodeCapacity, use: []cliUse{{"capacity [--class C] [--trait T] [--min-memory-mb N] ...",
			"how many instances of that shape could be placed now\n" +
				"(--project P for an admin; a member's is its own), and\n" +
				"why no more: per requirement, the nodes that fail it"}}},
		{name: "maintenance", args: 1, define: nodeMaintenance, use: []cliUse{
			{`maintenance NODE --reason "why"`, "set maintenance (admins)"},
			{"maintenance NODE --off", "clear it"}}},
		{name: "power", args: 2, define: nodePower, use: []cliUse{{"power NODE " + strings.Join(api.PowerActions(), "|") + " [--wait]",
			"queue a power action; --wait follows it with a progress\nline until it is done"}}},
		{name: "events", args: 1, define: nodeEvents, use: []cliUse{{"events NODE", "what happened to the node, and who did it"}}},
		{name: "inspect", args: 1, define: nodeInspect, use: []cliUse{{"inspect NODE [--wait]",
			"boot the deploy agent to report the node's hardware\n" +
				"(the node must be available, without an instance);\n" +
				"--wait follows it and prints the inventory"}}},
		{name: "inventory", args: 1, define: nodeInventory, use: []cliUse{{"inventory NODE", "the hardware the deploy agent last reported"}}},
		{name: "console-log", args: 1, define: nodeConsoleLog, use: []cliUse{{"console-log NODE [--lines N]", "what the node's serial console printed while the\n" +
			"controller recorded it (booting the agent or an image)"}}},
		{name: "console", args: 1, define: nodeConsole, session: true, use: []cliUse{{"console NODE [--watch]",
			"the node's serial console, interactive (admins; IPMI\n" +
				"Serial-over-LAN): the first session has the keyboard,\n" +
				"others watch; --watch only watches; ~. at the start of\n" +
				"a line quits (~~ types a ~)"}}},
		{name: "delete", args: 1, define: nodeDelete, use: []cliUse{{"delete NODE [--force]",
			"retire the node (power off, then remove); --force removes\nthe record at once without touching the BMC"}}},
	}}
	instanceCLI = cliGroup{name: "instance", commands: []cliCommand{
		{name: "list", args: 0, define: instanceList, use: []cliUse{{"list", "instances the token may see (a member: its project's), by name"}}},
		{name: "show", args: 1, define: instanceShow, use: []cliUse{{"show INSTANCE [--show-user-data]",
			"one instance, by name or id; its user_data is sensitive\nand shown only with --show-user-data"}}},
		{name: "delete", args: 1, define: instanceDelete, use: []cliUse{{"delete INSTANCE", "delete it now; the node's cleanup continues in the controller"}}},
	}}
	tokenCLI = cliGroup{name: "token", about: "      (admin tokens only)", commands: []cliCommand{
		{name: "list", args: 0, define: tokenList, use: []cliUse{{"list", "every token (never its secret)"}}},
		{name: "create", args: 0, define: tokenCreate, use: []cliUse{
			{"create --name WHO --role admin", "an admin token"},
			{"create --name WHO --role monitor", "a read-only token for monitoring: lists nodes and\n" +
				"scrapes the per-node metrics (GET /v1/metrics/nodes)"},
			{"create --name WHO --role member --project P", "a member token, for project P's instances;\n" +
				"prints the secret (shown this once) on stdout; --name\n" +
				"says who or what uses it: events name it; --expires 720h\n" +
				"limits its life"}}},
		{name: "revoke", args: 1, define: tokenRevoke, use: []cliUse{{"revoke TOKEN", "by id or name"}}},
		{name: "delete", args: 1, define: tokenRevoke, use: []cliUse{{"delete TOKEN", "the same as revoke"}}},
	}}
)

func runNode(ctx context.Context, args []string) error     { return nodeCLI.run(ctx, args) }
func runInstance(ctx context.Context, args []string) error { return instanceCLI.run(ctx, args) }
func runToken(ctx context.Context, args []string) error    { return tokenCLI.run(ctx, args) }

func byName[T any](name func(T) string) func(a, b T) int {
	return func(a, b T) int { return strings.Compare(name(a), name(b)) }
}

func nodeList(f *cliFlags) cliAction {
	fault := f.String("fault", "", "filter: "+strings.Join(api.FaultFilters(), ", "))
	maint := f.String("maintenance", "", "filter: true or false")
	state := f.String("state", "", "filter: provision state ("+strings.Join(api.ProvisionStates(), ", ")+")")
	class := f.String("class", "", "filter: resource class")
	includeDeleting := f.Bool("include-deleting", true, "list nodes being retired (provision state deleting) too")
	owner := f.String("owner", "", "filter: the nodes this project owns")
	sched := f.String("schedulable", "", "filter: true (can take an instance now) or false")
	req := requirementFlags(f)
	return func(ctx context.Context, c *apiclient.Client, _ []string) error {
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
		filter := apiclient.NodeFilter{Fault: *fault, ProvisionState: api.ProvisionState(*state), ResourceClass: *class,
			IncludeDeleting: *includeDeleting, Owner: *owner, Requirements: req()}
		if *sched != "" {
			b, err := strconv.ParseBool(*sched)
			if err != nil {
				return fmt.Errorf("--schedulable: %w", err)
			}
			filter.Schedulable = &b
		}
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
		// The API pages by id; people look for names.
		slices.SortStableFunc(nodes, byName(func(n api.Node) string { return n.Name }))
		return printList(f, nodes, []string{"NAME", "STATE", "POWER", "MAINTENANCE", "FAULT", "CLASS", "LAST ERROR", "ID"}, func(n api.Node) []string {
			m := "-"
			if n.Maintenance {
				m = n.MaintenanceReason
			}
			return []string{n.Name, string(n.ProvisionState), string(n.PowerState), m, dash(n.Fault), dash(n.ResourceClass), dash(clip(n.LastError, 60)), n.ID}
		})
	}
}

func nodeShow(f *cliFlags) cliAction {
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		n, err := c.GetNode(ctx, pos[0])
		if err != nil {
			return err
		}
		if *f.output == "json" {
			return f.printJSON(n)
		}
		return printNode(stdout, n)
	}
}

// listFlag is a flag that may be repeated, each value a list separated
// by commas.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// requirementFlags defines the flags of an instance's requirements and
// returns what they say once parsed.
func requirementFlags(f *cliFlags) func() api.Requirements {
	var required, forbidden listFlag
	f.Var(&required, "trait", "requirement: a trait the node must have (repeat, or separate with commas)")
	f.Var(&forbidden, "not-trait", "requirement: a trait the node must not have (repeat, or separate with commas)")
	cpus := f.Int("min-cpus", 0, "requirement: at least this many CPUs")
	mem := f.Int("min-memory-mb", 0, "requirement: at least this much memory, in MiB")
	disk := f.Int("min-disk-gb", 0, "requirement: at least this much disk, in GiB")
	arch := f.String("cpu-arch", "", "requirement: the CPU architecture (x86_64, aarch64)")
	return func() api.Requirements {
		return api.Requirements{RequiredTraits: required, ForbiddenTraits: forbidden, MinCPUs: *cpus, MinMemoryMB: *mem,
			MinDiskGB: *disk, CPUArch: *arch}
	}
}

func nodeCapacity(f *cliFlags) cliAction {
	project := f.String("project", "", "the project the instances would be in (admins; a member's is its own)")
	class := f.String("class", "", "resource class (default: any)")
	method := f.String("deploy-method", "", "image (default) or live")
	req := requirementFlags(f)
	return func(ctx context.Context, c *apiclient.Client, _ []string) error {
		rep, err := c.GetCapacity(ctx, apiclient.CapacityQuery{Project: *project, ResourceClass: *class, Requirements: req(),
			DeployMethod: api.DeployMethod(*method)})
		if err != nil {
			return err
		}
		if *f.output == "json" {
			return f.printJSON(rep)
		}
		quota := "unlimited"
		if rep.QuotaRemaining != nil {
			quota = strconv.Itoa(*rep.QuotaRemaining) + " more"
		}
		fmt.Fprintf(stdout, "%d instances can be placed now for project %s (%d nodes free that fit; quota: %s)\n%s\n",
			rep.Placeable, rep.Project, rep.Capacity.Available, quota, rep.Message)
		return nil
	}
}

// bmcPasswordEnv is where node create finds a BMC password when no file
// is given. A flag would leave it in the shell's history and in ps.
const bmcPasswordEnv = "BAREMETAL_BMC_PASSWORD"

func nodeCreate(f *cliFlags) cliAction {
	name := f.String("name", "", "the node's name (required)")
	driver := f.String("driver", string(api.DriverRedfish), "BMC protocol: "+strings.Join(api.Drivers(), " or "))
	class := f.String("class", "", "resource class, which instances ask for (required)")
	address := f.String("bmc-address", "", "the BMC's URL (required): https://10.0.0.5 (redfish), ipmi://10.0.0.6:623 (ipmi)")
	username := f.String("bmc-username", "", "BMC user (required)")
	passwordFile := f.String("bmc-password-file", "", "read the BMC password from this file (- for standard input); without it, from "+bmcPasswordEnv+", else from the terminal")
	systemID := f.String("bmc-system-id", "", "redfish: the system's path, when the BMC hosts several (/redfish/v1/Systems/1)")
	insecure := f.Bool("bmc-insecure", false, "redfish: accept a self-signed BMC certificate")
	cipher := f.Int("bmc-cipher-suite", 0, "ipmi: pin this lanplus cipher suite, 3 or 17 (default: the controller finds one that works)")
	var traits listFlag
	f.Var(&traits, "trait", "a trait of the node (repeat, or separate with commas): CUSTOM_GPU_A100, rack:r12")
	owner := f.String("owner", "", "the project whose instances alone are placed on the node (default: any)")
	return func(ctx context.Context, c *apiclient.Client, _ []string) error {
		// Checked before the password is asked for.
		for _, req := range []struct{ flag, v string }{{"--name", *name}, {"--class", *class}, {"--bmc-address", *address}, {"--bmc-username", *username}} {
			if req.v == "" {
				return fmt.Errorf("%s is required", req.flag)
			}
		}
		if err := oneOf("--driver", *driver, api.Drivers()); err != nil {
			return err
		}
		password, err := bmcPassword(*passwordFile, *name)
		if err != nil {
			return err
		}
		n, err := c.CreateNode(ctx, api.NodeCreate{Name: *name, Driver: api.Driver(*driver), ResourceClass: *class, Traits: traits, Owner: *owner,
			BMC: api.BMCInput{Address: *address, Username: *username, Password: password, SystemID: *systemID, Insecure: *insecure, CipherSuite: *cipher}})
		if err != nil {
			return hintedError(err, *name)
		}
		if *f.output == "json" {
			return f.printJSON(n)
		}
		fmt.Fprintf(stdout, "node %s created (id %s), %s: the controller verifies its BMC, then makes it available; see controller node show %s\n",
			n.Name, n.ID, n.ProvisionState, n.Name)
		return nil
	}
}

// bmcPassword reads node create's BMC password from file ("-": standard
// input), else from BAREMETAL_BMC_PASSWORD, else from the terminal
// without echo. A trailing newline is not part of it.
func bmcPassword(file, node string) (string, error) {
	var pw string
	switch env, inEnv := os.LookupEnv(bmcPasswordEnv); {
	case file != "":
		var data []byte
		var err error
		if file == "-" {
			data, err = io.ReadAll(io.LimitReader(stdin, 4096))
		} else {
			data, err = os.ReadFile(file)
		}
		if err != nil {
			return "", fmt.Errorf("--bmc-password-file: %w", err)
		}
		pw = strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	case inEnv:
		pw = env
	case stdinTerminal():
		fmt.Fprintf(os.Stderr, "BMC password of node %s: ", node)
		data, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return "", fmt.Errorf("read the BMC password: %w", err)
		}
		pw = string(data)
	default:
		return "", fmt.Errorf("no BMC password: give --bmc-password-file FILE (- for standard input) or set %s, or run on a terminal to be asked", bmcPasswordEnv)
	}
	if pw == "" {
		return "", errors.New("the BMC password is empty")
	}
	return pw, nil
}

func nodeMaintenance(f *cliFlags) cliAction {
	reason := f.String("reason", "", "why the node is taken out of service (required to set maintenance)")
	off := f.Bool("off", false, "clear maintenance")
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		on := !*off
		patch := api.NodePatch{Maintenance: &on}
		switch {
		case on && *reason == "":
			return errors.New("--reason is required to set maintenance (or --off to clear it)")
		case !on && *reason != "":
			return errors.New("--off clears maintenance and its reason: give --reason only to set it")
		case on:
			patch.MaintenanceReason = reason
		}
		n, err := c.PatchNode(ctx, pos[0], patch, "")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "node %s: maintenance=%v %s\n", n.Name, n.Maintenance, n.MaintenanceReason)
		return nil
	}
}

func nodePower(f *cliFlags) cliAction {
	// A BMC may take minutes; the fault backoff too.
	wait := f.waitFlag("wait until the job is done, showing its progress", 10*time.Minute)
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
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
}

func nodeEvents(f *cliFlags) cliAction {
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		evs, err := c.ListNodeEvents(ctx, pos[0])
		if err != nil {
			return err
		}
		if *f.output == "json" {
			return f.printJSON(evs)
		}
		return printEvents(stdout, evs)
	}
}

// printEvents prints events as a table. A message of several lines (a
// failed step's event ends with the node's console) shows its first line
// in the table and the others below its row, indented, as the console
// printed them.
func printEvents(w io.Writer, evs []api.Event) error {
	header := "TIME\tACTOR\tTYPE\tCHANGE\tMESSAGE"
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, e := range evs {
		change := ""
		if e.Field != "" && (e.Old != "" || e.New != "") {
			change = fmt.Sprintf("%s: %s → %s", e.Field, e.Old, e.New)
		}
		first, more, multi := strings.Cut(e.Message, "\n")
		fmt.Fprintln(tw, strings.Join([]string{e.Time.Format(time.RFC3339), e.Actor, e.Type, change, first}, "\t"))
		if !multi {
			continue
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, l := range strings.Split(more, "\n") {
			if _, err := fmt.Fprintln(w, "    "+l); err != nil {
				return err
			}
		}
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	}
	return tw.Flush()
}

func nodeInspect(f *cliFlags) cliAction {
	// A boot of the agent, under the controller's --agent-timeout (15m by
	// default) before it gives up.
	wait := f.waitFlag("wait until the inspection is done, then print the inventory", 20*time.Minute)
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		return inspectNode(ctx, f, c, pos[0], *wait)
	}
}

func nodeInventory(f *cliFlags) cliAction {
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
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
}

func nodeConsoleLog(f *cliFlags) cliAction {
	lines := f.Int("lines", 0, "only the last N lines")
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		log, err := c.GetNodeConsoleLog(ctx, pos[0], *lines)
		if errors.Is(err, apiclient.ErrNotFound) {
			if _, nerr := c.GetNode(ctx, pos[0]); nerr != nil {
				return nerr
			}
			return fmt.Errorf("nothing was recorded of node %s's console: it has not booted the agent or an image since it was enrolled, or its BMC has no Serial-over-LAN the controller uses (Redfish nodes: --redfish-console)", pos[0])
		}
		if err != nil {
			return err
		}
		if *f.output == "json" {
			return f.printJSON(log)
		}
		_, err = io.WriteString(stdout, log.Log)
		return err
	}
}

func nodeDelete(f *cliFlags) cliAction {
	force := f.Bool("force", false, "remove the record at once, without touching the BMC (for a machine that is gone)")
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		acc, err := c.DeleteNode(ctx, pos[0], *force)
		if acc != nil {
			acc.Message = cliHints(acc.Message, pos[0])
		}
		return f.accepted(acc, err)
	}
}

// printNode prints a node for people; -o json has all of it.
func printNode(w io.Writer, n *api.Node) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("node", n.Name+" (id "+n.ID+")")
	row("state", fmt.Sprintf("%s, power %s", n.ProvisionState, n.PowerState))
	row("flow", flowText(n))
	if n.Maintenance {
		row("maintenance", "yes: "+n.MaintenanceReason)
	} else {
		row("maintenance", "no")
	}
	fault := dash(n.Fault)
	if n.Fault != "" && n.FaultSince != nil {
		fault += " since " + n.FaultSince.Format(time.RFC3339)
	}
	row("fault", fault)
	health := n.Health.State
	if len(n.Health.Reasons) > 0 {
		health += ": " + strings.Join(n.Health.Reasons, "; ")
	}
	if n.Health.HottestC > 0 {
		health += fmt.Sprintf(" (hottest %.0f °C)", n.Health.HottestC)
	}
	row("health", dash(health))
	row("last error", dash(n.LastError))
	row("class", dash(n.ResourceClass))
	row("traits", dash(strings.Join(n.Traits, " ")))
	row("derived traits", dash(strings.Join(n.DerivedTraits, " ")))
	row("owner", dash(n.Owner))
	if hw := n.Hardware; hw != nil && (len(n.BIOSSettings) > 0 || n.SecureBoot != nil || n.RAID != nil || len(n.Firmware) > 0) {
		declared := []string{}
		for _, k := range slices.Sorted(maps.Keys(n.BIOSSettings)) {
			declared = append(declared, k+"="+n.BIOSSettings[k])
		}
		if n.SecureBoot != nil {
			declared = append(declared, "secure_boot="+strconv.FormatBool(*n.SecureBoot))
		}
		if n.RAID != nil {
			declared = append(declared, fmt.Sprintf("raid: %d volumes", len(*n.RAID)))
		}
		for _, fw := range n.Firmware {
			declared = append(declared, "firmware "+fw.Component+"="+fw.Version)
		}
		row("hardware settings", strings.Join(declared, ", "))
		state := "in effect"
		switch {
		case hw.Waiting:
			state = "waiting for the node to be free: " + strings.Join(hw.Unmet, "; ")
		case len(hw.Unmet) > 0:
			state = "not in effect: " + strings.Join(hw.Unmet, "; ")
		case hw.ReadAt == nil:
			state = "not read yet"
		}
		if hw.ReadAt != nil {
			state += " (read " + hw.ReadAt.Format(time.RFC3339) + ")"
		}
		row("settings state", state)
	}
	bmc := string(n.Driver)
	if b := n.BMC; b != nil {
		bmc += " " + b.Address + ", user " + b.Username
		if b.SystemID != "" {
			bmc += ", system " + b.SystemID
		}
		if b.CipherSuite != 0 {
			bmc += fmt.Sprintf(", cipher suite %d", b.CipherSuite)
		}
		if b.Insecure {
			bmc += ", insecure"
		}
		if !b.PasswordSet {
			bmc += ", no password"
		}
	}
	row("bmc", bmc)
	props := propertiesText(n.Properties)
	if len(n.PropertyOverrides) > 0 {
		names := make([]string, len(n.PropertyOverrides))
		for i, p := range n.PropertyOverrides {
			names[i] = string(p)
		}
		props += " (set by the operator: " + strings.Join(names, ", ") + ")"
	}
	row("properties", dash(strings.TrimSpace(props)))
	row("instance", dash(n.InstanceID))
	inspected := "never"
	if n.InspectedAt != nil {
		inspected = n.InspectedAt.Format(time.RFC3339) + " (controller node inventory " + n.Name + ")"
	}
	row("inspected", inspected)
	erase := "the resource class's or the controller's"
	if n.CleanErase != "" {
		erase = string(n.CleanErase)
	}
	row("clean erase", erase)
	onEnroll := "the controller's --inspect-on-enroll"
	if n.InspectOnEnroll != nil {
		onEnroll = strconv.FormatBool(*n.InspectOnEnroll)
	}
	row("inspect on enroll", onEnroll)
	row("created", n.CreatedAt.Format(time.RFC3339))
	row("updated", fmt.Sprintf("%s (version %d)", n.UpdatedAt.Format(time.RFC3339), n.Version))
	return tw.Flush()
}

// flowText says what the controller is doing on a node: its flow, the
// step it is at (of how many) and since when, its steps, and the deploy
// agent's progress where a step waits for it; "-" in no flow.
func flowText(n *api.Node) string {
	f := n.Flow
	if f == nil {
		return "-"
	}
	s := fmt.Sprintf("%s, step %d of %d: %s since %s (%s)", f.Name, f.StepIndex+1, len(f.Steps), f.Step,
		f.StepStartedAt.Format(time.RFC3339), strings.Join(f.Steps, " > "))
	if a := n.Agent; a != nil && a.Command != "" && a.State != "" {
		s += fmt.Sprintf("; agent: %s %s, %d%%", a.Command, a.State, a.Progress)
	}
	return s
}

// propertiesText is a node's known properties by their API names, as
// its events tell them: "cpus=32 memory_mb=65536".
func propertiesText(p api.Properties) string {
	var out []string
	if p.CPUs != 0 {
		out = append(out, "cpus="+strconv.Itoa(p.CPUs))
	}
	if p.MemoryMB != 0 {
		out = append(out, "memory_mb="+strconv.Itoa(p.MemoryMB))
	}
	if p.LocalGB != 0 {
		out = append(out, "local_gb="+strconv.Itoa(p.LocalGB))
	}
	if p.CPUArch != "" {
		out = append(out, "cpu_arch="+p.CPUArch)
	}
	return strings.Join(out, " ")
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

// shownInstance is an instance as the CLI prints it as JSON: user_data
// is null unless asked for, as Terraform keeps it out of plans.
type shownInstance struct {
	api.Instance
	UserData *string `json:"user_data"`
}

func showInstance(in api.Instance, userData bool) shownInstance {
	s := shownInstance{Instance: in}
	if userData || in.UserData == "" {
		s.UserData = &in.UserData
	}
	return s
}

func instanceList(f *cliFlags) cliAction {
	userData := f.Bool("show-user-data", false, "-o json: show each instance's user_data (null without it)")
	return func(ctx context.Context, c *apiclient.Client, _ []string) error {
		insts, err := c.ListInstances(ctx)
		if err != nil {
			return err
		}
		slices.SortStableFunc(insts, byName(func(in api.Instance) string { return in.Name }))
		if *f.output == "json" {
			out := make([]shownInstance, len(insts))
			for i, in := range insts {
				out[i] = showInstance(in, *userData)
			}
			return f.printJSON(out)
		}
		// One list of the nodes names them all, rather than a read per
		// instance.
		nodeNames := map[string]string{}
		if slices.ContainsFunc(insts, func(in api.Instance) bool { return in.NodeID != "" }) {
			nodes, err := c.ListNodes(ctx, apiclient.NodeFilter{IncludeDeleting: true})
			if err != nil {
				return err
			}
			for _, n := range nodes {
				nodeNames[n.ID] = n.Name
			}
		}
		return printList(f, insts, []string{"NAME", "PROJECT", "STATE", "POWER", "NODE", "LAST ERROR", "ID"}, func(in api.Instance) []string {
			node := in.NodeID
			if name, ok := nodeNames[node]; ok {
				node = name
			}
			return []string{in.Name, in.Project, string(in.State), dash(in.ObservedPowerState), dash(node), dash(clip(in.LastError, 60)), in.ID}
		})
	}
}

func instanceShow(f *cliFlags) cliAction {
	userData := f.Bool("show-user-data", false, "print the instance's user_data (sensitive: it may hold secrets)")
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		in, err := c.GetInstance(ctx, pos[0])
		if err != nil {
			return err
		}
		if *f.output == "json" {
			return f.printJSON(showInstance(*in, *userData))
		}
		node := ""
		if in.NodeID != "" {
			if n, err := c.GetNode(ctx, in.NodeID); err == nil {
				node = n.Name + " (id " + n.ID + ")"
			} else if errors.Is(err, apiclient.ErrNotFound) {
				node = in.NodeID
			} else {
				return err
			}
		}
		return printInstance(stdout, in, node, *userData)
	}
}

// printInstance prints an instance for people; its user data only when
// asked for.
func printInstance(w io.Writer, in *api.Instance, node string, userData bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("instance", in.Name+" (id "+in.ID+")")
	row("project", in.Project)
	ready := ""
	if in.Ready {
		ready = ", ready"
	}
	row("state", fmt.Sprintf("%s%s, power %s (wanted: %s)", in.State, ready, dash(in.ObservedPowerState), dash(in.PowerState)))
	row("last error", dash(in.LastError))
	row("node", dash(node))
	row("class", dash(in.ResourceClass))
	img := in.Image.URL
	if in.Image.Checksum != "" {
		img += " (checksum " + in.Image.Checksum + ")"
	}
	row("image", img)
	row("deploy", fmt.Sprintf("%s, timeout %s", dash(in.DeployMethod), dash(in.DeployTimeout)))
	if len(in.RootDevice) > 0 {
		row("root device", keyValues(in.RootDevice))
	}
	if len(in.Metadata) > 0 {
		row("metadata", keyValues(in.Metadata))
	}
	switch {
	case in.UserData == "":
		row("user data", "-")
	case userData:
		row("user data", fmt.Sprintf("%d bytes:", len(in.UserData)))
	default:
		row("user data", fmt.Sprintf("(sensitive, %d bytes: --show-user-data prints it)", len(in.UserData)))
	}
	if in.BootedAt != nil {
		row("booted", in.BootedAt.Format(time.RFC3339))
	}
	row("created", in.CreatedAt.Format(time.RFC3339))
	row("updated", fmt.Sprintf("%s (version %d)", in.UpdatedAt.Format(time.RFC3339), in.Version))
	if err := tw.Flush(); err != nil {
		return err
	}
	if userData && in.UserData != "" {
		_, err := fmt.Fprintln(w, strings.TrimSuffix(in.UserData, "\n"))
		return err
	}
	return nil
}

// keyValues is a map as "k=v, k=v", sorted by key.
func keyValues(m map[string]string) string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func instanceDelete(f *cliFlags) cliAction {
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		return f.accepted(c.DeleteInstance(ctx, pos[0]))
	}
}

func tokenList(f *cliFlags) cliAction {
	return func(ctx context.Context, c *apiclient.Client, _ []string) error {
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
	}
}

func tokenCreate(f *cliFlags) cliAction {
	name := f.String("name", "", "who or what uses the token (required; events name it)")
	role := f.String("role", "", "admin, member, or monitor (read-only: lists nodes and reads the per-node metrics) (required)")
	project := f.String("project", "", "the project of a member token (required for members; admins have none)")
	expires := f.Duration("expires", 0, "lifetime, e.g. 720h (default: does not expire)")
	return func(ctx context.Context, c *apiclient.Client, _ []string) error {
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
		switch {
		case api.Role(*role) == api.RoleMember && *project == "":
			return errors.New("--project is required for a member token: the project whose instances it manages")
		case api.Role(*role) != api.RoleMember && *project != "":
			return errors.New("--project applies only to member tokens: an admin or monitor token sees every project")
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
		fmt.Fprintf(terminalSafe(os.Stderr), "created token %s (%s, role %s); its secret is shown this once:\n", tc.ID, tc.Name, tc.Role)
		fmt.Fprintln(stdout, tc.Secret)
		return nil
	}
}

func tokenRevoke(*cliFlags) cliAction {
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
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
		progress = terminalSafe(os.Stderr) // stdout holds the inventory alone
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
	if in.InstalledMemoryBytes > 0 {
		fmt.Fprintf(w, "memory:  %s installed, %s usable\n", humanBytes(in.InstalledMemoryBytes), humanBytes(in.MemoryBytes))
	} else {
		fmt.Fprintf(w, "memory:  %s usable\n", humanBytes(in.MemoryBytes))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nDISK\tSIZE\tMODEL\tSERIAL\tWWN\tROTATIONAL\tREMOVABLE\n")
	for _, d := range in.Disks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%v\n", d.Name, humanBytes(d.SizeBytes), dash(d.Model), dash(d.Serial), dash(d.WWN), d.Rotational, d.Removable)
	}
	if len(in.Disks) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	fmt.Fprintf(tw, "\nNIC\tMAC\tLINK\tIPV4\tSWITCH PORT (LLDP)\n")
	for _, nic := range in.NICs {
		link := "down"
		switch {
		case nic.LinkUp && nic.SpeedMbps > 0:
			link = fmt.Sprintf("up %d Mb/s", nic.SpeedMbps)
		case nic.LinkUp:
			link = "up"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", nic.Name, nic.MAC, link, dash(strings.Join(nic.IPv4, ",")), switchPort(nic.LLDP))
	}
	if len(in.NICs) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	return tw.Flush()
}

// switchPort says which switch port a NIC heard by LLDP: the switch (its
// name, else its chassis ID), the port and its untagged VLAN; "-" for
// none.
func switchPort(l *api.AgentLLDP) string {
	if l == nil {
		return "-"
	}
	s := cmp.Or(l.SystemName, l.ChassisID) + " " + l.PortID
	if l.VLANID > 0 {
		s += fmt.Sprintf(" vlan %d", l.VLANID)
	}
	return s
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
