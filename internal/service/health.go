package service

import (
	"context"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// NodeHealth is what the per-node metrics export of one node: its name
// and the health last read from its BMC (never a BMC call of its own).
type NodeHealth struct {
	Name   string
	Health baremetal.Health
}

// EachNodeHealth calls fn with every node's last-read health (nodes being
// deleted left out), read from the store a page at a time so a large
// fleet is never all in memory as nodes. Admins and monitors only: these
// name every node of the fleet, which a member may not list.
func (s *Service) EachNodeHealth(ctx context.Context, c Caller, fn func(NodeHealth)) error {
	if !c.Admin() && !c.Monitor() {
		return forbidden("only an admin or a monitor may read the per-node metrics")
	}
	f := store.NodeFilter{Page: store.Page{Limit: store.MaxPageLimit}}
	for {
		nodes, next, err := s.store.ListNodes(ctx, f)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			fn(NodeHealth{Name: n.Name, Health: n.Health})
		}
		if next == "" {
			return nil
		}
		f.After = next
	}
}
