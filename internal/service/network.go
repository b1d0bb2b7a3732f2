package service

import (
	"context"
	"encoding/json"
	"fmt"

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
	for i, a := range inst.Network.Addresses {
		if a.Pool != "" {
			return baremetal.FieldErrorf(fmt.Sprintf("network.addresses[%d].pool", i),
				"network.addresses[%d] asks for an address from pool %q, but this controller has no IP pools yet: give a static address or dhcp", i, a.Pool)
		}
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
// it configures no network.
func (s *Service) NetworkData(ctx context.Context, inst *baremetal.Instance) ([]byte, error) {
	if !inst.HasNetwork() {
		return nil, nil
	}
	nics, err := nodeNICs(ctx, s.store, inst.NodeID)
	if err != nil {
		return nil, err
	}
	return configdrive.NetworkData(*inst.Network, nics)
}
