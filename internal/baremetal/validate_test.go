package baremetal

import (
	"strings"
	"testing"
)

func validNode() Node {
	return Node{Name: "rack1-u12", Driver: DriverRedfish, ResourceClass: "gpu",
		BMC: BMC{Address: "https://10.0.0.5", Username: "admin", Password: "s3cret-pw"}}
}

func TestNodeValidate(t *testing.T) {
	ok := validNode()
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid node: %v", err)
	}
	cases := []struct {
		field string
		mut   func(*Node)
	}{
		{"name", func(n *Node) { n.Name = "" }},
		{"name", func(n *Node) { n.Name = "Bad_Name" }},
		{"name", func(n *Node) { n.Name = "6f1c1b2e-8d3a-4c1e-9f57-0d9b2f0e1a11" }},
		{"driver", func(n *Node) { n.Driver = "ilo" }},
		{"bmc.address", func(n *Node) { n.BMC.Address = "" }},
		{"bmc.address", func(n *Node) { n.BMC.Address = "not a url" }},
		{"bmc.address", func(n *Node) { n.BMC.Address = "ipmi://10.0.0.5" }},
		{"bmc.address", func(n *Node) { n.BMC.Address = "https://admin:s3cret-pw@10.0.0.5" }},
		{"bmc.address", func(n *Node) { n.BMC.Address = "https://10.0.0.5:99999" }},
		{"bmc.username", func(n *Node) { n.BMC.Username = "" }},
		{"bmc.password", func(n *Node) { n.BMC.Password = "" }},
		{"bmc.system_id", func(n *Node) { n.BMC.SystemID = "Systems/1" }},
		{"bmc.cipher_suite", func(n *Node) { n.BMC.CipherSuite = 3 }},
		{"resource_class", func(n *Node) { n.ResourceClass = "" }},
		{"properties.cpus", func(n *Node) { n.Properties.CPUs = -1 }},
		{"maintenance_reason", func(n *Node) { n.Maintenance = true }},
		{"maintenance_reason", func(n *Node) { n.MaintenanceReason = "why" }},
	}
	for _, c := range cases {
		n := validNode()
		c.mut(&n)
		err := n.Validate()
		if ErrorCode(err) != CodeInvalid || ErrorField(err) != c.field {
			t.Errorf("%s: got %v (field %q), want invalid %s", c.field, err, ErrorField(err), c.field)
			continue
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("%s: error leaks the password: %v", c.field, err)
		}
	}
	ipmi := validNode()
	ipmi.Driver, ipmi.BMC.Address, ipmi.BMC.CipherSuite = DriverIPMI, "ipmi://10.0.0.5:623", 3
	if err := ipmi.Validate(); err != nil {
		t.Fatalf("valid ipmi node: %v", err)
	}
}

func TestInstanceValidate(t *testing.T) {
	valid := func() Instance {
		return Instance{Name: "web-1", Project: "p1", ResourceClass: "gpu", Image: Image{URL: "https://images.example/ubuntu.iso"}}
	}
	ok := valid()
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid: %v", err)
	}
	cases := []struct {
		field string
		mut   func(*Instance)
	}{
		{"resource_class", func(i *Instance) { i.NodeID = "abc" }},
		{"resource_class", func(i *Instance) { i.ResourceClass = "" }},
		{"image.url", func(i *Instance) { i.Image.URL = "" }},
		{"image.url", func(i *Instance) { i.Image.URL = "ftp://x/y" }},
		{"image.checksum", func(i *Instance) { i.Image.Checksum = "zz" }},
		{"power_state", func(i *Instance) { i.PowerState = "reboot" }},
		{"user_data", func(i *Instance) { i.UserData = strings.Repeat("x", MaxUserData+1) }},
	}
	for _, c := range cases {
		i := valid()
		c.mut(&i)
		if err := i.Validate(); ErrorField(err) != c.field {
			t.Errorf("%s: got %v", c.field, err)
		}
	}
}
