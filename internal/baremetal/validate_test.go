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
		{"bmc.system_id", func(n *Node) { n.BMC.SystemID = "/redfish/v1/Managers/1" }},
		{"bmc.system_id", func(n *Node) { n.BMC.SystemID = "/redfish/v1/Systems/1/Bios" }},
		{"bmc.system_id", func(n *Node) { n.BMC.SystemID = "https://10.0.0.6/redfish/v1/Systems/1" }}, // another BMC
		{"bmc.system_id", func(n *Node) { n.BMC.SystemID = "https://admin:s3cret-pw@10.0.0.5/redfish/v1/Systems/1" }},
		{"bmc.cipher_suite", func(n *Node) { n.BMC.CipherSuite = 3 }},
		{"resource_class", func(n *Node) { n.ResourceClass = "" }},
		{"properties.cpus", func(n *Node) { n.Properties.CPUs = -1 }},
		{"properties.cpus", func(n *Node) { n.Properties.CPUs = MaxCPUs + 1 }},
		{"properties.memory_mb", func(n *Node) { n.Properties.MemoryMB = MaxMemoryMB + 1 }},
		{"properties.local_gb", func(n *Node) { n.Properties.LocalGB = 1 << 40 }},
		{"properties.cpu_arch", func(n *Node) { n.Properties.CPUArch = "x86\x0064" }},
		{"bmc.username", func(n *Node) { n.BMC.Username = "ad\x00min" }},
		{"bmc.username", func(n *Node) { n.BMC.Username = "admin\n" }},
		{"bmc.password", func(n *Node) { n.BMC.Password = "s3cret-pw\x00" }},
		{"bmc.address", func(n *Node) { n.BMC.Address = "https://10.0.0.5/\u0085" }},
		{"bmc.system_id", func(n *Node) { n.BMC.SystemID = "/redfish/v1/Systems/1\x00" }},
		{"maintenance_reason", func(n *Node) { n.Maintenance, n.MaintenanceReason = true, "fan\x00" }},
		{"maintenance_reason", func(n *Node) { n.Maintenance, n.MaintenanceReason = true, "fan\xff" }},
		{"maintenance_reason", func(n *Node) { n.Maintenance = true }},
		{"maintenance_reason", func(n *Node) { n.MaintenanceReason = "why" }},
		{"clean_erase", func(n *Node) { n.CleanErase = "wipe" }},
		{"clean_erase", func(n *Node) { n.CleanErase = "Full" }},
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
	for _, mode := range append([]CleanErase{CleanEraseDefault}, CleanErases...) {
		n := validNode()
		n.CleanErase = mode
		if err := n.Validate(); err != nil {
			t.Errorf("clean_erase %q: %v", mode, err)
		}
	}
	// Every spelling of a system on this BMC (api.RedfishSystemPath),
	// its full URL in any case and port spelling of bmc.address's host.
	for _, id := range []string{"/redfish/v1/Systems/1", "/redfish/v1/Systems/1/", "1", "Systems/1", "/Systems/1",
		"System.Embedded.1", "https://10.0.0.5/redfish/v1/Systems/1/", "HTTPS://10.0.0.5:443/redfish/v1/Systems/1", "http://10.0.0.5/redfish/v1/Systems/1"} {
		n := validNode()
		n.BMC.SystemID = id
		if err := n.Validate(); err != nil {
			t.Errorf("system_id %q: %v", id, err)
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
		{"user_data", func(i *Instance) { i.UserData = "#!/bin/sh\n\x00" }},
		{"project", func(i *Instance) { i.Project = "../x" }},
		{"project", func(i *Instance) { i.Project = "P1" }},
		{"project", func(i *Instance) { i.Project = "p\x00" }},
		{"node_id", func(i *Instance) { i.ResourceClass, i.NodeID = "", "n\x00" }},
		{"image.url", func(i *Instance) { i.Image.URL = "https://images.example/\u009b" }},
		{"metadata", func(i *Instance) { i.Metadata = map[string]string{"a\x00": "v"} }},
		{"metadata.a", func(i *Instance) { i.Metadata = map[string]string{"a": "v\x00"} }},
	}
	for _, c := range cases {
		i := valid()
		c.mut(&i)
		if err := i.Validate(); ErrorField(err) != c.field {
			t.Errorf("%s: got %v", c.field, err)
		}
	}
}

func TestTextChecks(t *testing.T) {
	for _, s := range []string{"", "plain", "café ✓ 🚀", "\uFFFD is a real character"} {
		if err := ValidateLine("f", s, 0); err != nil {
			t.Errorf("ValidateLine(%q): %v", s, err)
		}
	}
	for _, s := range []string{"a\nb", "\t", "\r\n", "\x1b[1m", "\u0085"} {
		if err := ValidateText("f", s, 0); err != nil {
			t.Errorf("ValidateText(%q): %v", s, err)
		}
		if err := ValidateLine("f", s, 0); ErrorField(err) != "f" || !strings.Contains(err.Error(), "control characters") {
			t.Errorf("ValidateLine(%q) = %v, want a control-character error on f", s, err)
		}
	}
	for s, want := range map[string]string{"a\x00": "NUL", "\xff": "UTF-8", "ok\xc3": "UTF-8", "\xed\xa0\x80": "UTF-8"} {
		for _, check := range []func(string, string, int) error{ValidateLine, ValidateText} {
			if err := check("f", s, 0); ErrorField(err) != "f" || !strings.Contains(err.Error(), want) {
				t.Errorf("check(%q) = %v, want an error naming f and %s", s, err, want)
			}
		}
	}
	if err := ValidateLine("f", "abcd", 3); ErrorField(err) != "f" {
		t.Errorf("too long: %v", err)
	}
	// Values are never echoed: they may be credentials.
	if err := ValidateText("bmc.password", "hunter2\x00", 0); strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error echoes the value: %v", err)
	}
}

func TestQuotaValidate(t *testing.T) {
	for _, q := range []Quota{{"p1", -1}, {"p1", 0}, {"team-a", MaxQuotaInstances}} {
		if err := q.Validate(); err != nil {
			t.Errorf("%+v: %v", q, err)
		}
	}
	for q, field := range map[Quota]string{
		{"p1", -2}: "instances", {"p1", MaxQuotaInstances + 1}: "instances",
		{"", 1}: "project", {"../x", 1}: "project", {"a\x00", 1}: "project", {"Team_A", 1}: "project",
	} {
		if err := q.Validate(); ErrorField(err) != field {
			t.Errorf("%+v: %v, want an error on %s", q, err, field)
		}
	}
}
