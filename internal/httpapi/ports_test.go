package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// A node's ports come from its last inventory, with the switch port each
// NIC heard by LLDP, in a read of the node and of the list; everyone who
// reads nodes sees them (members write networks by MAC), while the
// addresses of the inventory stay the admins'.
func TestNodePorts(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			inspected, bare := e.createNode("ports-1"), e.createNode("ports-2")
			if inspected.Ports == nil || len(inspected.Ports) != 0 {
				t.Fatalf("a node just enrolled has ports %#v; want []", inspected.Ports)
			}
			inv := api.AgentInventory{NICs: []api.AgentNIC{
				{Name: "eno1", MAC: "02:5a:00:00:00:01", LinkUp: true, SpeedMbps: 25000, IPv4: []string{"10.9.0.7/24"},
					LLDP: &api.AgentLLDP{ChassisID: "44:4c:a8:12:34:56", SystemName: "leaf-1", PortID: "Ethernet7",
						PortDescription: "rack 4 node 7", VLANID: 100, MgmtAddress: "10.255.0.1"}},
				{Name: "eno2", MAC: "02:5a:01:00:00:01"},
			}}
			data, err := json.Marshal(inv)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.st.SetInventory(context.Background(), &baremetal.Inventory{NodeID: inspected.ID, Data: string(data), InspectedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			want := []api.NodePort{
				{Name: "eno1", MAC: "02:5a:00:00:00:01", LinkUp: true, SpeedMbps: 25000, LLDP: &api.NodePortLLDP{
					SwitchChassisID: "44:4c:a8:12:34:56", SwitchSystemName: "leaf-1", SwitchPortID: "Ethernet7",
					SwitchPortDescription: "rack 4 node 7", VLANID: 100}},
				{Name: "eno2", MAC: "02:5a:01:00:00:01"},
			}
			check := func(what string, got []api.NodePort) {
				t.Helper()
				gotJSON, _ := json.Marshal(got)
				wantJSON, _ := json.Marshal(want)
				if string(gotJSON) != string(wantJSON) {
					t.Errorf("%s: ports %s\nwant %s", what, gotJSON, wantJSON)
				}
			}
			for who, token := range map[string]string{"admin": adminSecret, "member": e.member} {
				var n api.Node
				r := e.mustJSON("GET", "/v1/nodes/"+inspected.ID, token, "", 200, &n)
				check(who+" GET node", n.Ports)
				if strings.Contains(string(r.body), "10.9.0.7") || strings.Contains(string(r.body), "10.255.0.1") {
					t.Errorf("%s: the node shows the inventory's addresses: %s", who, r.body)
				}
				var list api.NodeList
				e.mustJSON("GET", "/v1/nodes", token, "", 200, &list)
				for _, item := range list.Items {
					switch item.ID {
					case inspected.ID:
						check(who+" list", item.Ports)
					case bare.ID:
						if item.Ports == nil || len(item.Ports) != 0 {
							t.Errorf("%s list: a node never inspected has ports %#v; want []", who, item.Ports)
						}
					}
				}
			}
			// The raw JSON says null for a NIC without a neighbour and []
			// for a node without an inventory, never absent.
			r := e.do("GET", "/v1/nodes/"+bare.ID, e.member, "")
			if !strings.Contains(string(r.body), `"ports":[]`) {
				t.Errorf("node never inspected: %s", r.body)
			}
			r = e.do("GET", "/v1/nodes/"+inspected.ID, e.member, "")
			if !strings.Contains(string(r.body), `"link_up":false,"speed_mbps":0,"lldp":null}`) {
				t.Errorf("a NIC without a neighbour: %s", r.body)
			}
		})
	}
}
