package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// The ip-pool commands: address pools are written in Terraform
// (baremetal_ip_pool) or through the API; the CLI shows them and what
// they hold, and deletes one that holds nothing.
var ipPoolCLI = cliGroup{name: "ip-pool", commands: []cliCommand{
	{name: "list", args: 0, define: ipPoolList, use: []cliUse{{"list", "address pools by name: cidr, gateway, ranges"}}},
	{name: "show", args: 1, define: ipPoolShow, use: []cliUse{{"show POOL", "one pool, by name or id (-o json: as the API has it)"}}},
	{name: "allocations", args: 1, define: ipPoolAllocations, use: []cliUse{{"allocations POOL",
		"the addresses the pool holds (admins), in address order:\n" +
			"for an instance, or for a node still being cleaned"}}},
	{name: "delete", args: 1, define: ipPoolDelete, use: []cliUse{{"delete POOL", "delete a pool that holds no address (admins)"}}},
}}

func runIPPool(ctx context.Context, args []string) error { return ipPoolCLI.run(ctx, args) }

// rangesText is a pool's ranges for people ("all" for none).
func rangesText(p api.IPPool) string {
	if len(p.Ranges) == 0 {
		return "all"
	}
	var s []string
	for _, r := range p.Ranges {
		if r.Start == r.End {
			s = append(s, r.Start)
		} else {
			s = append(s, r.Start+"-"+r.End)
		}
	}
	return strings.Join(s, ", ")
}

func ipPoolList(f *cliFlags) cliAction {
	return func(ctx context.Context, c *apiclient.Client, _ []string) error {
		pools, err := c.ListIPPools(ctx)
		if err != nil {
			return err
		}
		return printList(f, pools, []string{"NAME", "CIDR", "GATEWAY", "RANGES", "ID"}, func(p api.IPPool) []string {
			return []string{p.Name, p.CIDR, dash(p.Gateway), clip(rangesText(p), 60), p.ID}
		})
	}
}

func ipPoolShow(f *cliFlags) cliAction {
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		p, err := c.GetIPPool(ctx, pos[0])
		if err != nil {
			return err
		}
		if *f.output == "json" {
			return f.printJSON(p)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
		row("ip pool", p.Name+" (id "+p.ID+")")
		row("cidr", p.CIDR)
		row("gateway", dash(p.Gateway))
		row("ranges", rangesText(*p))
		row("dns servers", dash(strings.Join(p.DNSServers, ", ")))
		row("search domains", dash(strings.Join(p.SearchDomains, ", ")))
		row("description", dash(p.Description))
		row("updated", p.UpdatedAt.Format(time.RFC3339)+fmt.Sprintf(" (version %d)", p.Version))
		return tw.Flush()
	}
}

func ipPoolAllocations(f *cliFlags) cliAction {
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		var list []api.IPAllocation
		for a, err := range c.IPAllocations(ctx, pos[0], 0) {
			if err != nil {
				return err
			}
			list = append(list, a)
		}
		if list == nil {
			list = []api.IPAllocation{}
		}
		return printList(f, list, []string{"ADDRESS", "INSTANCE", "NODE", "SINCE"}, func(a api.IPAllocation) []string {
			inst := a.InstanceID
			if inst == "" {
				inst = "(deleted; node cleaning)"
			}
			return []string{a.Address, inst, dash(a.NodeID), a.CreatedAt.Format(time.RFC3339)}
		})
	}
}

func ipPoolDelete(*cliFlags) cliAction {
	return func(ctx context.Context, c *apiclient.Client, pos []string) error {
		if err := c.DeleteIPPool(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "ip pool %s deleted\n", pos[0])
		return nil
	}
}
