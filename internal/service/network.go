package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// An instance's network is checked twice: on its own when the request
// comes in (baremetal.Network.Validate, through Instance.Validate), and
// against the NICs its node's inspection found once the node is known
// (checkNetwork): an interface names a NIC by MAC or by port, and one the
// node does not have is refused, naming it. The config drive renders it
// with the node's inventory (a port's MAC) when the BMC or the agent
// fetches it (NetworkData).

// nodeNICs returns the NICs of the node's last inspection (none when it
// was never inspected).
func nodeNICs(ctx context.Context, q store.Queries, nodeID string) ([]api.AgentNIC, error) {
	inv, err := q.GetInventory(ctx, nodeID)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var data api.AgentInventory
	if err := json.Unmarshal([]byte(inv.Data), &data); err != nil {
		return nil, fmt.Errorf("inventory of node %s: %w", nodeID, err)
	}
	return data.NICs, nil
}

// checkNetwork checks inst's network against node n's inspected NICs.
func checkNetwork(ctx context.Context, q store.Queries, n *baremetal.Node, inst *baremetal.Instance) error {
	if !inst.HasNetwork() {
		return nil
	}
	nics, err := nodeNICs(ctx, q, n.ID)
	if err != nil {
		return err
	}
	if err := inst.Network.ValidateFor(nics); err != nil {
		if e, ok := err.(*baremetal.Error); ok {
			e.Message = fmt.Sprintf("node %s: %s", n.Name, e.Message)
		}
		return err
	}
	return nil
}

// NetworkData is inst's network_data.json for its config drive, nil when
// it configures no network: its network with the pool entries resolved to
// the addresses allocated for them.
func (s *Service) NetworkData(ctx context.Context, inst *baremetal.Instance) ([]byte, error) {
	if !inst.HasNetwork() {
		return nil, nil
	}
	nics, err := nodeNICs(ctx, s.store, inst.NodeID)
	if err != nil {
		return nil, err
	}
	return configdrive.NetworkData(inst.Network.Resolved(inst.Addresses), nics)
}

// assignAddresses gives inst, on node nodeID, the addresses its network
// asks for (inst.Addresses): its static ones, and for each pool entry an
// address of that pool. held are the pool addresses the instance holds
// already (a rebuild): an entry of the same pool gets one of them back, in
// order, so a rebuild keeps its addresses; drop disposes of the others
// (store.Queries' FreeInstanceAddress or ReleaseInstanceAddress). New
// addresses are the pools' lowest free ones (store.AllocateAddress), taken
// in pool id order: each allocation locks its pool until the transaction
// ends, and two creates locking two pools in opposite orders would
// deadlock on PostgreSQL. Called in the transaction that writes inst.
func assignAddresses(ctx context.Context, q store.Queries, inst *baremetal.Instance, nodeID string, held []baremetal.InstanceAddress, drop dropAddress) error {
	inst.Addresses = nil
	var kept []bool
	if inst.Network != nil {
		inst.Addresses = inst.Network.StaticAddresses()
		type want struct {
			index int
			pool  *baremetal.IPPool
		}
		var wants []want
		for i, a := range inst.Network.Addresses {
			if a.Pool == "" {
				continue
			}
			p, err := q.GetIPPool(ctx, a.Pool)
			if baremetal.IsCode(err, baremetal.CodeNotFound) {
				return baremetal.FieldErrorf(fmt.Sprintf("network.addresses[%d].pool", i), "network.addresses[%d].pool: there is no IP pool %q", i, a.Pool)
			}
			if err != nil {
				return err
			}
			wants = append(wants, want{i, p})
		}
		kept = make([]bool, len(held))
		var fresh []want
		for _, w := range wants {
			reused := false
			for k, h := range held {
				if !kept[k] && h.Pool == w.pool.ID {
					kept[k], reused = true, true
					addr, err := netip.ParseAddr(strings.Split(h.Address, "/")[0])
					if err != nil {
						return fmt.Errorf("instance %s: held address %q: %w", inst.ID, h.Address, err)
					}
					inst.Addresses = append(inst.Addresses, resolvedAddress(inst, w.index, w.pool, addr))
					break
				}
			}
			if !reused {
				fresh = append(fresh, w)
			}
		}
		slices.SortStableFunc(fresh, func(a, b want) int { return strings.Compare(a.pool.ID, b.pool.ID) })
		for _, w := range fresh {
			a, err := q.AllocateAddress(ctx, w.pool.ID, inst.ID, nodeID)
			if err != nil {
				var be *baremetal.Error
				if errors.As(err, &be) && be.Field == "pool" {
					be.Field = fmt.Sprintf("network.addresses[%d].pool", w.index)
				}
				return err
			}
			inst.Addresses = append(inst.Addresses, resolvedAddress(inst, w.index, w.pool, a.Address))
		}
		slices.SortStableFunc(inst.Addresses, func(a, b baremetal.InstanceAddress) int { return a.Index - b.Index })
		// Routes of a pool entry are checked against the pool's subnet
		// now that the address is known.
		resolved := inst.Network.Resolved(inst.Addresses)
		if err := resolved.Validate(); err != nil {
			return err
		}
	}
	for k, h := range held {
		if k < len(kept) && kept[k] {
			continue
		}
		addr, err := netip.ParseAddr(strings.Split(h.Address, "/")[0])
		if err != nil {
			return fmt.Errorf("instance %s: held address %q: %w", inst.ID, h.Address, err)
		}
		if _, err := drop(ctx, inst.ID, h.Pool, addr); err != nil {
			return err
		}
	}
	return nil
}

// dropAddress disposes of an address an instance holds and no longer asks
// for.
type dropAddress func(ctx context.Context, instanceID, poolID string, addr netip.Addr) (bool, error)

// resolvedAddress is the address allocated from pool p for inst's
// network entry i.
func resolvedAddress(inst *baremetal.Instance, i int, p *baremetal.IPPool, addr netip.Addr) baremetal.InstanceAddress {
	e := p.Resolve(inst.Network.Addresses[i], addr)
	return baremetal.InstanceAddress{Index: i, Interface: e.Interface, Address: e.Address, Gateway: e.Gateway,
		Pool: p.ID, PoolName: p.Name, DNSServers: e.DNSServers}
}

// poolAddresses are the addresses of addrs allocated from pools.
func poolAddresses(addrs []baremetal.InstanceAddress) []baremetal.InstanceAddress {
	var out []baremetal.InstanceAddress
	for _, a := range addrs {
		if a.Pool != "" {
			out = append(out, a)
		}
	}
	return out
}
