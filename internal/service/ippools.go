package service

import (
	"context"
	"fmt"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Address pools: an admin creates and changes them; every caller reads
// them (a member's instance network names a pool). Allocation is not
// here: an instance's create and delete, and its node's cleanup, take and
// give back addresses in their own transactions (store.IPPools).

// CreateIPPool stores a new pool.
func (s *Service) CreateIPPool(ctx context.Context, c Caller, p baremetal.IPPool) (*baremetal.IPPool, error) {
	return s.CreateIPPoolOnce(ctx, c, p, Once{})
}

// CreateIPPoolOnce is CreateIPPool made idempotent by o (see Once).
func (s *Service) CreateIPPoolOnce(ctx context.Context, c Caller, p baremetal.IPPool, o Once) (*baremetal.IPPool, error) {
	if err := requireAdmin(c, "manage ip pools"); err != nil {
		return nil, err
	}
	p.ID, p.Version = "", 0
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out, replay *baremetal.IPPool
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		out, replay = nil, nil
		if id, err := replayed(ctx, tx, c, "ip_pool", o); err != nil || id != "" {
			if err != nil {
				return err
			}
			if replay, err = tx.GetIPPool(ctx, id); baremetal.IsCode(err, baremetal.CodeNotFound) {
				return goneSince("ip pool", id)
			}
			return err
		}
		// Look before inserting: after a failed statement PostgreSQL
		// aborts the transaction.
		if old, err := tx.GetIPPool(ctx, p.Name); err == nil {
			return &baremetal.Error{Code: baremetal.CodeConflict, Field: "name",
				Message: fmt.Sprintf("an ip pool named %q already exists (id %s)", p.Name, old.ID)}
		} else if !baremetal.IsCode(err, baremetal.CodeNotFound) {
			return err
		}
		np := p
		if err := tx.InsertIPPool(ctx, &np); err != nil {
			return err
		}
		out = &np
		return remember(ctx, tx, c, "ip_pool", o, np.ID)
	})
	if err != nil {
		return nil, err
	}
	if replay != nil {
		s.log.InfoContext(ctx, "ip pool create replayed (same Idempotency-Key and request)", "pool_id", replay.ID, "by", c.Actor())
		return replay, nil
	}
	s.log.InfoContext(ctx, "ip pool created", "pool_id", out.ID, "name", out.Name, "cidr", out.CIDR, "by", c.Actor())
	return out, nil
}

// GetIPPool returns a pool by id or name.
func (s *Service) GetIPPool(ctx context.Context, c Caller, idOrName string) (*baremetal.IPPool, error) {
	return s.store.GetIPPool(ctx, idOrName)
}

// ListIPPools returns a page of pools.
func (s *Service) ListIPPools(ctx context.Context, c Caller, p store.Page) ([]*baremetal.IPPool, string, error) {
	return s.store.ListIPPools(ctx, p)
}

// UpdateIPPool changes a pool: apply edits the current pool in place
// (its cidr, id and times are not the caller's to change). ifMatch, when
// non-zero, pins the version the client last saw. A change that would
// leave held addresses out of the pool is refused by the store, naming
// them.
func (s *Service) UpdateIPPool(ctx context.Context, c Caller, idOrName string, ifMatch int64,
	apply func(p *baremetal.IPPool) error) (*baremetal.IPPool, error) {
	if err := requireAdmin(c, "manage ip pools"); err != nil {
		return nil, err
	}
	var out *baremetal.IPPool
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		cur, err := tx.GetIPPool(ctx, idOrName)
		if err != nil {
			return err
		}
		if ifMatch != 0 && cur.Version != ifMatch {
			return preconditionFailed(ifMatch, cur.Version)
		}
		next := *cur
		if err := apply(&next); err != nil {
			return err
		}
		next.ID, next.CIDR, next.Version = cur.ID, cur.CIDR, cur.Version
		next.CreatedAt = cur.CreatedAt
		if err := tx.UpdateIPPool(ctx, &next); err != nil {
			return err
		}
		out = &next
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "ip pool updated", "pool_id", out.ID, "name", out.Name, "version", out.Version, "by", c.Actor())
	return out, nil
}

// DeleteIPPool removes a pool; one holding addresses is refused (409),
// saying how many.
func (s *Service) DeleteIPPool(ctx context.Context, c Caller, idOrName string, ifMatch int64) error {
	if err := requireAdmin(c, "manage ip pools"); err != nil {
		return err
	}
	p, err := s.store.GetIPPool(ctx, idOrName)
	if err != nil {
		return err
	}
	version := p.Version
	if ifMatch != 0 {
		if ifMatch != p.Version {
			return preconditionFailed(ifMatch, p.Version)
		}
		version = ifMatch
	}
	if err := s.store.DeleteIPPool(ctx, p.ID, version); err != nil {
		return err
	}
	s.log.InfoContext(ctx, "ip pool deleted", "pool_id", p.ID, "name", p.Name, "by", c.Actor())
	return nil
}

// ListIPAllocations returns a page of a pool's allocations, in address
// order. Admins only: they name instances and nodes of every project.
func (s *Service) ListIPAllocations(ctx context.Context, c Caller, poolIDOrName string, pg store.Page) ([]*baremetal.IPAllocation, string, error) {
	if err := requireAdmin(c, "list ip pool allocations"); err != nil {
		return nil, "", err
	}
	p, err := s.store.GetIPPool(ctx, poolIDOrName)
	if err != nil {
		return nil, "", err
	}
	return s.store.ListAllocations(ctx, store.AllocationFilter{Page: pg, PoolID: p.ID})
}
