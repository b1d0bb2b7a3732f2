package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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

var nodeUsage = fmt.Sprintf(`usage: controller node <command> [flags]

  list [--fault any|none|NAME] [--maintenance true|false] [--state S] [--class C]
  show NODE
  maintenance NODE --reason "why"     set maintenance (operators only)
  maintenance NODE --off              clear it
  power NODE %-24s queue a power action
        [--wait [--timeout 10m]]      and follow it with a progress line until it is done
  events NODE                         what happened to the node, and who did it

Flags common to all: --endpoint (BAREMETAL_ENDPOINT), --token (BAREMETAL_TOKEN), -o json.
`, strings.Join(api.PowerActions(), "|"))

// oneOf checks a value against one of the API's lists before it is sent,
// so a typo is answered with the valid values at once.
func oneOf(what, v string, valid []string) error {
	if slices.Contains(valid, v) {
		return nil
	}
	return fmt.Errorf("%s %q must be one of %s", what, v, strings.Join(valid, ", "))
}

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
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runNode(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, nodeUsage)
		return errors.New("no node command")
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Print(nodeUsage)
		return nil
	}
	f := newCLIFlags("node " + args[0])
	fault := f.String("fault", "", "filter: "+strings.Join(api.FaultFilters(), ", "))
	maint := f.String("maintenance", "", "filter: true or false")
	state := f.String("state", "", "filter: provision state ("+strings.Join(api.ProvisionStates(), ", ")+")")
	class := f.String("class", "", "filter: resource class")
	reason := f.String("reason", "", "maintenance reason (required to set maintenance)")
	off := f.Bool("off", false, "clear maintenance")
	wait := f.Bool("wait", false, "power: wait until the power job is done, showing its progress")
	timeout := f.Duration("timeout", 2*time.Minute, "give up after this long (with --wait: default 10m)")
	pos, err := f.parseCLI(args[1:])
	if err != nil {
		return err
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	limit := *timeout
	if *wait && !flagSet(f.FlagSet, "timeout") {
		limit = 10 * time.Minute // a BMC may take minutes; the fault backoff too
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	need := func(n int) error {
		if len(pos) != n {
			return fmt.Errorf("node %s: expected %d argument(s), got %d\n%s", args[0], n, len(pos), nodeUsage)
		}
		return nil
	}
	switch args[0] {
	case "list":
		if err := need(0); err != nil {
			return err
		}
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
		filter := apiclient.NodeFilter{Fault: *fault, ProvisionState: api.ProvisionState(*state), ResourceClass: *class}
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
		if *f.output == "json" {
			return f.printJSON(nodes)
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSTATE\tPOWER\tMAINTENANCE\tFAULT\tCLASS\tID")
		for _, n := range nodes {
			m := "-"
			if n.Maintenance {
				m = n.MaintenanceReason
			}
			fl := n.Fault
			if fl == "" {
				fl = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.ProvisionState, n.PowerState, m, fl, n.ResourceClass, n.ID)
		}
		return tw.Flush()
	case "show":
		if err := need(1); err != nil {
			return err
		}
		n, err := c.GetNode(ctx, pos[0])
		if err != nil {
			return err
		}
		return f.printJSON(n)
	case "maintenance":
		if err := need(1); err != nil {
			return err
		}
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
		fmt.Printf("node %s: maintenance=%v %s\n", n.Name, n.Maintenance, n.MaintenanceReason)
		return nil
	case "power":
		if err := need(2); err != nil {
			return err
		}
		if err := oneOf("power action", pos[1], api.PowerActions()); err != nil {
			return err
		}
		acc, err := c.NodePower(ctx, pos[0], api.PowerAction(pos[1]))
		if err != nil {
			return err
		}
		fmt.Printf("queued power %s as job %d\n", pos[1], acc.JobID)
		if !*wait {
			return nil
		}
		n, err := c.GetNode(ctx, pos[0])
		if err != nil {
			return err
		}
		return waitJob(ctx, c, os.Stdout, n.ID, acc.JobID, "power "+pos[1]+" "+n.Name)
	case "events":
		if err := need(1); err != nil {
			return err
		}
		evs, err := c.ListNodeEvents(ctx, pos[0])
		if err != nil {
			return err
		}
		if *f.output == "json" {
			return f.printJSON(evs)
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tACTOR\tTYPE\tCHANGE\tMESSAGE")
		for _, e := range evs {
			change := ""
			if e.Field != "" && (e.Old != "" || e.New != "") {
				change = fmt.Sprintf("%s: %s → %s", e.Field, e.Old, e.New)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Time.Format(time.RFC3339), e.Actor, e.Type, change, e.Message)
		}
		return tw.Flush()
	default:
		fmt.Fprint(os.Stderr, nodeUsage)
		return fmt.Errorf("unknown node command %q", args[0])
	}
}
