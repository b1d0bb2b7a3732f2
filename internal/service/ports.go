package service

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// NodePorts returns the ports of nodes (a page of a node list, or one
// node) by node id, from their last inventories, in one read; a node
// never inspected has none.
//
// Every caller who may read a node sees its ports: members schedule
// instances and write their networks by MAC or NIC name, and which
// switch port a NIC is on is how they tell bond members apart. What the
// ports leave out stays with the inventory, which is the admins'
// (NodeInventory): the addresses the agent had on the provisioning
// network and the switches' management addresses.
func (s *Service) NodePorts(ctx context.Context, nodes ...*baremetal.Node) (map[string][]api.NodePort, error) {
	var ids []string
	for _, n := range nodes {
		if n.InspectedAt != nil {
			ids = append(ids, n.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	invs, err := s.store.GetInventories(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]api.NodePort, len(invs))
	for _, inv := range invs {
		// Only the NICs: the rest of an inventory (disks, DMI, each NIC's
		// addresses kept) is skipped, not built, on every page of a list.
		var data struct {
			NICs []api.AgentNIC `json:"nics"`
		}
		if err := json.Unmarshal([]byte(inv.Data), &data); err != nil {
			return nil, &baremetal.Error{Code: baremetal.CodeInternal, Message: "a stored inventory could not be read",
				Err: fmt.Errorf("node %s: inventory: %w", inv.NodeID, err)}
		}
		out[inv.NodeID] = PortsOf(api.AgentInventory{NICs: data.NICs})
	}
	return out, nil
}

// PortsOf is the ports an inventory shows: its NICs, in its order (by
// name), each with the switch port it heard by LLDP.
func PortsOf(inv api.AgentInventory) []api.NodePort {
	ports := make([]api.NodePort, len(inv.NICs))
	for i, nic := range inv.NICs {
		p := api.NodePort{Name: nic.Name, MAC: nic.MAC, LinkUp: nic.LinkUp, SpeedMbps: nic.SpeedMbps}
		if l := nic.LLDP; l != nil {
			p.LLDP = &api.NodePortLLDP{SwitchChassisID: l.ChassisID, SwitchSystemName: l.SystemName,
				SwitchPortID: l.PortID, SwitchPortDescription: l.PortDescription, VLANID: l.VLANID}
		}
		ports[i] = p
	}
	return ports
}
