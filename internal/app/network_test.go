package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// TestSimMachineInstanceNetwork deploys an instance with a network (two
// inspected NICs bonded, by port name and by MAC, a tagged VLAN with a
// static address) on a simulated machine running the real agent: the
// config drive the agent wrote carries network_data.json with the node's
// MACs; a network naming a NIC the node does not have is refused at create
// (400 naming it) and changes nothing; a rebuild with another address
// writes a new drive.
func TestSimMachineInstanceNetwork(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Systems: 2, SimAgent: true, AgentTimeout: time.Minute})
	sys := env.Sim.SystemIDs()[0]
	logMachineOnFailure(t, env, sys)
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	node := enroll(admin, env, 0, "net-0", "net")
	fresh := enroll(admin, env, 1, "net-1", "net")
	desc, err := env.Sim.Machine(sys)
	if err != nil {
		t.Fatal(err)
	}
	admin.call("POST", "/v1/nodes/"+node.ID+"/inspect", "", 202, nil)
	admin.waitNode(node.ID, time.Minute, false, func(n api.Node) bool { return n.ProvisionState == api.StateAvailable && n.Flow == nil })
	eno1, eno2 := desc.NICs[0], desc.NICs[1]

	network := func(addr string) string {
		return fmt.Sprintf(`{"interfaces":[
			{"name":"nic0","port":%q,"mtu":9000},
			{"name":"nic1","mac":%q,"mtu":9000},
			{"name":"bond0","bond":{"interfaces":["nic0","nic1"],"mode":"802.3ad","miimon":100,"xmit_hash_policy":"layer3+4","lacp_rate":"fast"},"mtu":9000},
			{"name":"vlan100","vlan":{"interface":"bond0","id":100}}],
		  "addresses":[{"interface":"vlan100","address":%q,"gateway":"10.100.0.1","routes":[{"destination":"10.200.0.0/16","gateway":"10.100.0.254"}]}],
		  "dns_servers":["10.100.0.53"],"search_domains":["example.internal"]}`, eno1.Name, strings.ToUpper(eno2.MAC), addr)
	}
	image := testvm.DiskImage(4<<20, "BAREMETAL-NET-IMAGE")
	imageURL := serveImage(t, image)

	// Refusals: a NIC the node does not have; a node never inspected.
	var p map[string]any
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"bad","node_id":%q,"image":{"url":%q},"network":%s}`,
		node.ID, imageURL, strings.Replace(network("10.100.0.10/24"), strings.ToUpper(eno2.MAC), "02:00:00:00:00:99", 1)), 400, &p)
	if !strings.Contains(fmt.Sprint(p["detail"]), "02:00:00:00:00:99") || p["field"] != "network.interfaces[1].mac" {
		t.Errorf("unknown MAC: %v", p)
	}
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"bad","node_id":%q,"image":{"url":%q},"network":%s}`,
		fresh.ID, imageURL, network("10.100.0.10/24")), 400, &p)
	if !strings.Contains(fmt.Sprint(p["detail"]), "inspect the node first") {
		t.Errorf("node never inspected: %v", p)
	}
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"bad","node_id":%q,"image":{"url":%q},"network":%s}`,
		node.ID, imageURL, strings.Replace(network("10.100.0.10/24"), `"id":100`, `"id":4095`, 1)), 400, &p)
	if p["field"] != "network.interfaces[3].vlan.id" {
		t.Errorf("VLAN 4095: %v", p)
	}
	if n := admin.node(node.ID); n.InstanceID != "" || n.ProvisionState != api.StateAvailable {
		t.Fatalf("a refused create changed the node: %+v", n)
	}

	var inst api.Instance
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"net","node_id":%q,"image":{"url":%q},"network":%s}`,
		node.ID, imageURL, network("10.100.0.10/24")), 201, &inst)
	if inst.Network == nil || len(inst.Network.Interfaces) != 4 || inst.Network.Interfaces[1].MAC != strings.ToLower(eno2.MAC) {
		t.Fatalf("the instance's network as the API shows it: %+v", inst.Network)
	}
	inst = waitInstanceState(t, member, inst.ID, time.Minute, api.InstanceActive, api.InstanceError)
	if inst.State != api.InstanceActive {
		t.Fatalf("deploy: %+v", inst)
	}
	sda := desc.Disks[0]
	end := readAt(t, sda.File, sda.Bytes-64<<20, 64<<20)
	if !bytes.Contains(end, []byte("10.100.0.10")) || !bytes.Contains(end, []byte(strings.ToLower(eno1.MAC))) {
		t.Error("the config drive on the root disk does not carry the network (the address, eno1's MAC)")
	}
	nd := networkData(t, configDriveURL(t, env, inst.ID))
	links, _ := nd["links"].([]any)
	if len(links) != 4 {
		t.Fatalf("network_data.json links: %v", nd["links"])
	}
	var macs, kinds []string
	for _, l := range links {
		l := l.(map[string]any)
		kinds = append(kinds, fmt.Sprint(l["type"]))
		if l["type"] == "phy" {
			macs = append(macs, fmt.Sprint(l["ethernet_mac_address"]))
		}
	}
	if strings.Join(kinds, ",") != "phy,phy,bond,vlan" || strings.Join(macs, ",") != strings.ToLower(eno1.MAC+","+eno2.MAC) {
		t.Errorf("network_data.json links: kinds %v, NIC MACs %v; want phy,phy,bond,vlan with %s and %s", kinds, macs, eno1.MAC, eno2.MAC)
	}

	// A rebuild with another address writes a new drive.
	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", fmt.Sprintf(`{"network":%s}`, network("10.100.0.11/24")), 202, nil)
	inst = waitInstanceState(t, member, inst.ID, time.Minute, api.InstanceActive, api.InstanceError)
	if inst.State != api.InstanceActive || inst.Network.Addresses[0].Address != "10.100.0.11/24" {
		t.Fatalf("rebuild: %+v", inst)
	}
	end = readAt(t, sda.File, sda.Bytes-64<<20, 64<<20)
	if !bytes.Contains(end, []byte("10.100.0.11")) {
		t.Error("the config drive on the root disk does not carry the rebuilt network's address")
	}
	// Removing the network ({}): the drive has none.
	member.call("POST", "/v1/instances/"+inst.ID+"/rebuild", `{"network":{}}`, 202, nil)
	inst = waitInstanceState(t, member, inst.ID, time.Minute, api.InstanceActive, api.InstanceError)
	if inst.State != api.InstanceActive || inst.Network != nil {
		t.Fatalf("rebuild without a network: %+v", inst)
	}
}

// networkData fetches a config drive and returns its network_data.json.
func networkData(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET config drive: %d %v", resp.StatusCode, err)
	}
	d, err := configdrive.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(d.NetworkData, &out); err != nil {
		t.Fatalf("network_data.json: %v (%q)", err, d.NetworkData)
	}
	return out
}
