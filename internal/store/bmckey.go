package store

// One physical server, one node: both stores keep each node's
// baremetal.BMCKey in nodes.bmc_key under a unique index (migration 0003),
// so that two nodes on one BMC endpoint cannot be written, however the
// writes race. What follows is shared by both, so they store the same key
// and explain a clash in the same words.

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// BMCKeyArg is the bmc_key a write stores for n: its BMCKey, or nil (SQL
// NULL, claiming nothing) when the address cannot be normalized. Validate
// refuses such nodes, so only rows older than the rule get NULL, and the
// controller's own writes to them (power sync) keep working.
func BMCKeyArg(n *baremetal.Node) any {
	k, err := baremetal.BMCKey(n.Driver, n.BMC)
	if err != nil {
		return nil
	}
	return k
}

// BMCHolder is the node that holds a BMC key.
type BMCHolder struct {
	ID, Name, Address, SystemID string
	State                       baremetal.ProvisionState
}

// DuplicateBMC is the conflict of a write whose BMC endpoint node h
// already holds. It names h (admins alone write nodes, and they see them
// all); with a nil h (the holder was written in the same transaction and
// then not found) it says what it can.
func DuplicateBMC(h *BMCHolder, cause error) error {
	if h == nil {
		return Duplicate("bmc.address", "another node already uses this BMC endpoint (bmc.address and bmc.system_id); a physical server can be enrolled only once", cause)
	}
	where := "bmc.address " + h.Address
	if h.SystemID != "" {
		where += ", bmc.system_id " + h.SystemID
	}
	msg := fmt.Sprintf("node %q (id %s, %s) already manages this BMC endpoint; a physical server can be enrolled only once", h.Name, h.ID, where)
	if h.State == baremetal.StateDeleting {
		msg += "; that node is still being deleted: wait for its retire job to finish or delete it with force=true"
	}
	return Duplicate("bmc.address", msg, cause)
}

// UnkeyedNode is a node row without a bmc_key.
type UnkeyedNode struct {
	ID, Name, Address, SystemID string
	Driver                      baremetal.Driver
}

// BMCKeyBackfill is what BackfillBMCKeys needs from a dialect, all inside
// one transaction.
type BMCKeyBackfill interface {
	// UnkeyedNodes lists the rows whose bmc_key is NULL, oldest first.
	UnkeyedNodes(ctx context.Context) ([]UnkeyedNode, error)
	// BMCHolder returns the node holding key, nil when none does.
	BMCHolder(ctx context.Context, key string) (*BMCHolder, error)
	SetBMCKey(ctx context.Context, id, key string) error
}

// BackfillBMCKeys gives every node without a bmc_key its key, oldest node
// first. Databases from before migration 0003 may hold several nodes on one
// endpoint: the oldest gets the key, each later one keeps NULL and is
// logged as a warning, at every start until an operator deletes or moves
// one (the API refuses any new duplicate, but cannot pick which of two
// existing nodes is the wrong one). Rows whose address cannot be
// normalized are logged too. Run at every Open, after the migrations; it
// reads only the NULL rows, so it costs nothing on a clean database.
func BackfillBMCKeys(ctx context.Context, q BMCKeyBackfill, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	nodes, err := q.UnkeyedNodes(ctx)
	if err != nil {
		return fmt.Errorf("bmc key backfill: %w", err)
	}
	for _, n := range nodes {
		key, err := baremetal.BMCKey(n.Driver, baremetal.BMC{Address: n.Address, SystemID: n.SystemID})
		if err != nil {
			log.WarnContext(ctx, "node has a BMC address that cannot be normalized; it is not protected against being enrolled twice: fix its bmc.address",
				"node_id", n.ID, "name", n.Name, "reason", baremetal.ErrorMessage(err))
			continue
		}
		h, err := q.BMCHolder(ctx, key)
		if err != nil {
			return fmt.Errorf("bmc key backfill: %w", err)
		}
		if h != nil {
			log.WarnContext(ctx, "two nodes manage the same BMC endpoint (enrolled before duplicates were refused): one physical server must be one node, delete one of them or change its bmc.address/system_id",
				"node_id", n.ID, "name", n.Name, "same_as_node_id", h.ID, "same_as_name", h.Name, "bmc_key", key)
			continue
		}
		if err := q.SetBMCKey(ctx, n.ID, key); err != nil {
			return fmt.Errorf("bmc key backfill: %w", err)
		}
	}
	return nil
}
