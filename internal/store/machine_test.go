package store

import (
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

func TestSameMachine(t *testing.T) {
	others := []BMCHolder{
		{ID: "a", Name: "a", SystemID: "/redfish/v1/Systems/1/"},
		{ID: "b", Name: "b", SystemID: "/redfish/v1/Systems/2"},
		{ID: "c", Name: "c", SystemID: ""},
	}
	node := func(id, system string) *baremetal.Node {
		return &baremetal.Node{ID: id, Driver: baremetal.DriverRedfish, BMC: baremetal.BMC{Address: "https://10.0.0.5", SystemID: system}}
	}
	names := func(hs []BMCHolder) string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Name)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		what    string
		n       *baremetal.Node
		self    string
		members []string
		want    string
	}{
		{"another spelling of a's system; c may be the only system", node("", "1"), "", nil, "a,c"},
		{"the BMC lists several systems: c is none of them", node("", "Systems/1"), "", []string{"/redfish/v1/Systems/1/", "/redfish/v1/Systems/2"}, "a"},
		{"the BMC has one system: c is it", node("", "/redfish/v1/Systems/1"), "", []string{"/redfish/v1/Systems/1/"}, "a,c"},
		{"no system: every node on the BMC", node("", ""), "", nil, "a,b,c"},
		{"itself left out", node("a", "/redfish/v1/Systems/1/"), "a", nil, "c"},
		{"a system no one has, on a BMC with several", node("", "3"), "", []string{"1", "2", "3"}, ""},
	} {
		if got := names(SameMachine(c.n, c.self, others, c.members)); got != c.want {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}

	err := SameMachineConflict(node("", ""), &others[0])
	if baremetal.ErrorCode(err) != baremetal.CodeConflict || baremetal.ErrorField(err) != "bmc.system_id" ||
		!strings.Contains(baremetal.ErrorMessage(err), `node "a" (id a)`) {
		t.Fatalf("conflict: %v", err)
	}
}
