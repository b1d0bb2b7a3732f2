package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

func TestPoolAddresses(t *testing.T) {
	t.Parallel()
	poolAddresses(t, "")
}

func TestPoolAddressesPostgres(t *testing.T) {
	t.Parallel()
	poolAddresses(t, storetest.PostgresURL(t))
}

// poolAddresses: instances whose network asks for an address from an IP
// pool get the pool's lowest free addresses, shown in their addresses and
// written to their config drives; a rebuild keeps them; a deleted
// instance's address stays held while its node is still cleaning (here
// behind a dead BMC), so a new instance gets another one; once the node
// is clean the address is handed out again. A pool that holds addresses
// cannot be deleted; a full pool fails the create, naming the entry, and
// changes nothing.
func poolAddresses(t *testing.T, dbURL string) {
	env := testenv.Start(t, testenv.Options{Systems: 4, DatabaseURL: dbURL, PowerSyncInterval: time.Second})
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	var nodes []api.Node
	for i := range 4 {
		n := enroll(admin, env, i, fmt.Sprintf("pool-%d", i), "pool")
		// The inventory an inspection stores: one NIC.
		data, _ := json.Marshal(api.AgentInventory{CPUs: 2, NICs: []api.AgentNIC{{Name: "eno1", MAC: fmt.Sprintf("52:54:00:00:10:%02x", i), LinkUp: true}}})
		ctx := context.Background()
		if err := env.App.Store.InTx(ctx, func(tx store.Tx) error {
			return tx.SetInventory(ctx, &baremetal.Inventory{NodeID: n.ID, Data: string(data), InspectedAt: time.Now()})
		}); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	admin.call("POST", "/v1/ip-pools", `{"name":"tenant","cidr":"10.50.0.0/29","gateway":"10.50.0.1","ranges":[{"start":"10.50.0.2","end":"10.50.0.4"}],"dns_servers":["10.50.0.53"]}`, 201, nil)

	create := func(name string, node int, want int) api.Instance {
		t.Helper()
		var inst api.Instance
		member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":%q,"node_id":%q,"image":{"url":"https://images.example/%s.iso"},
			"network":{"interfaces":[{"name":"nic0","port":"eno1"}],"addresses":[{"interface":"nic0","pool":"tenant","routes":[{"destination":"10.60.0.0/16","gateway":"10.50.0.6"}]}]}}`,
			name, nodes[node].ID, name), want, &inst)
		return inst
	}
	i0 := create("a", 0, 201)
	i1 := create("b", 1, 201)
	for _, c := range []struct {
		inst api.Instance
		want string
	}{{i0, "10.50.0.2/29"}, {i1, "10.50.0.3/29"}} {
		if len(c.inst.Addresses) != 1 || c.inst.Addresses[0].Address != c.want || c.inst.Addresses[0].Gateway != "10.50.0.1" ||
			c.inst.Addresses[0].PoolName != "tenant" || c.inst.Addresses[0].Interface != "nic0" {
			t.Fatalf("instance %s addresses %+v; want %s from pool tenant", c.inst.Name, c.inst.Addresses, c.want)
		}
	}
	i0 = waitInstanceState(t, member, i0.ID, 30*time.Second, api.InstanceActive, api.InstanceError)
	if i0.State != api.InstanceActive {
		t.Fatalf("deploy: %+v", i0)
	}
	nd := networkData(t, configDriveURL(t, env, i0.ID))
	b, _ := json.Marshal(nd)
	if !strings.Contains(string(b), `"ip_address":"10.50.0.2"`) || !strings.Contains(string(b), "10.50.0.53") {
		t.Errorf("network_data.json of instance a does not give it 10.50.0.2 with the pool's DNS: %s", b)
	}

	// A rebuild keeps the address, also with a changed network that still
	// asks the same pool.
	member.call("POST", "/v1/instances/"+i0.ID+"/rebuild", `{"network":{"interfaces":[{"name":"nic0","port":"eno1","mtu":9000}],"addresses":[{"interface":"nic0","pool":"tenant"}]}}`, 202, nil)
	i0 = waitInstanceState(t, member, i0.ID, 30*time.Second, api.InstanceActive, api.InstanceError)
	if i0.State != api.InstanceActive || len(i0.Addresses) != 1 || i0.Addresses[0].Address != "10.50.0.2/29" {
		t.Fatalf("after the rebuild: %+v", i0)
	}

	// The pool is full (.2, .3 held, .4 left): one more, then a refusal.
	i2 := create("c", 2, 201)
	if i2.Addresses[0].Address != "10.50.0.4/29" {
		t.Fatalf("third address %+v", i2.Addresses)
	}
	var p map[string]any
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"d","node_id":%q,"image":{"url":"https://images.example/d.iso"},
		"network":{"interfaces":[{"name":"nic0","port":"eno1"}],"addresses":[{"interface":"nic0","pool":"tenant"}]}}`, nodes[3].ID), 409, &p)
	if p["field"] != "network.addresses[0].pool" || !strings.Contains(fmt.Sprint(p["detail"]), "no free address") {
		t.Errorf("full pool: %v", p)
	}
	if n := admin.node(nodes[3].ID); n.InstanceID != "" || n.ProvisionState != api.StateAvailable {
		t.Fatalf("a refused create changed node %s: %+v", n.Name, n)
	}
	admin.call("DELETE", "/v1/ip-pools/tenant", "", 409, nil)

	// Delete a while its node cannot be cleaned (BMC down): .2 stays held.
	sys0 := env.Sim.SystemIDs()[0]
	if err := env.Sim.SetFault(sys0, sim.FaultDown); err != nil {
		t.Fatal(err)
	}
	member.call("DELETE", "/v1/instances/"+i0.ID, "", 202, nil)
	var allocs api.IPAllocationList
	admin.call("GET", "/v1/ip-pools/tenant/allocations", "", 200, &allocs)
	if len(allocs.Items) != 3 || allocs.Items[0].Address != "10.50.0.2" || allocs.Items[0].InstanceID != "" || allocs.Items[0].NodeID != nodes[0].ID {
		t.Fatalf("allocations after deleting a: %+v; want 10.50.0.2 held by node pool-0, no instance", allocs.Items)
	}
	member.call("DELETE", "/v1/instances/"+i2.ID, "", 202, nil)
	admin.waitNode(nodes[2].ID, 30*time.Second, false, available)
	// .4 is free again (its node is clean), .2 is not (its node is not).
	i3 := create("e", 3, 201)
	if i3.Addresses[0].Address != "10.50.0.4/29" {
		t.Fatalf("while pool-0 still cleans, a new instance got %+v; want 10.50.0.4 (10.50.0.2 is held)", i3.Addresses)
	}
	if err := env.Sim.SetFault(sys0, sim.FaultNone); err != nil {
		t.Fatal(err)
	}
	admin.waitNode(nodes[0].ID, time.Minute, false, available)
	i4 := create("f", 2, 201)
	if i4.Addresses[0].Address != "10.50.0.2/29" {
		t.Fatalf("once pool-0 is clean, a new instance got %+v; want 10.50.0.2 again", i4.Addresses)
	}
	// A rebuild whose network no longer asks the pool: the address stays
	// the node's while the old OS may run, and is free once the rebuilt
	// one booted.
	member.call("DELETE", "/v1/instances/"+i1.ID, "", 202, nil)
	admin.waitNode(nodes[1].ID, time.Minute, false, available)
	i5 := create("g", 1, 201)
	i5 = waitInstanceState(t, member, i5.ID, 30*time.Second, api.InstanceActive, api.InstanceError)
	dropped := strings.Split(i5.Addresses[0].Address, "/")[0]
	member.call("POST", "/v1/instances/"+i5.ID+"/rebuild", `{"network":{"interfaces":[{"name":"nic0","port":"eno1"}],"addresses":[{"interface":"nic0","address":"192.168.7.5/24"}]}}`, 202, nil)
	i5 = waitInstanceState(t, member, i5.ID, 30*time.Second, api.InstanceActive, api.InstanceError)
	if i5.State != api.InstanceActive || len(i5.Addresses) != 1 || i5.Addresses[0].Address != "192.168.7.5/24" || i5.Addresses[0].Pool != "" {
		t.Fatalf("rebuilt without the pool: %+v", i5)
	}
	admin.call("GET", "/v1/ip-pools/tenant/allocations", "", 200, &allocs)
	for _, a := range allocs.Items {
		if a.Address == dropped {
			t.Errorf("the address the rebuild dropped (%s) is still allocated after the rebuilt OS booted: %+v", dropped, a)
		}
	}
	i1 = i5
	for _, id := range []string{i1.ID, i3.ID, i4.ID} {
		member.call("DELETE", "/v1/instances/"+id, "", 202, nil)
	}
	for _, n := range nodes {
		admin.waitNode(n.ID, time.Minute, false, available)
	}
	admin.call("GET", "/v1/ip-pools/tenant/allocations", "", 200, &allocs)
	if len(allocs.Items) != 0 {
		t.Fatalf("allocations after every instance is gone and every node clean: %+v", allocs.Items)
	}
	admin.call("DELETE", "/v1/ip-pools/tenant", "", 204, nil)
}
