package baremetal

import (
	"strings"
	"testing"
)

func TestBMCKeySameEndpoint(t *testing.T) {
	redfish := func(addr, sys string) BMC { return BMC{Address: addr, SystemID: sys} }
	groups := []struct {
		driver Driver
		same   []BMC
	}{
		{DriverRedfish, []BMC{
			redfish("https://10.0.0.5", ""),
			redfish("HTTPS://10.0.0.5", ""),
			redfish("https://10.0.0.5:443", ""),
			redfish("https://10.0.0.5/", ""),
			redfish("https://10.0.0.5//", ""),
			redfish("https://10.0.0.5/redfish/v1/?x=1#y", ""),
			redfish("https://10.0.0.5:", ""),
			redfish("https://10.0.0.5:0443", ""),
			redfish("http://10.0.0.5", ""), // scheme-insensitive: one web server
			redfish("http://10.0.0.5:80", ""),
			redfish("https://[::ffff:10.0.0.5]", ""),
		}},
		{DriverRedfish, []BMC{
			redfish("https://bmc-7.Rack1.example.", "/redfish/v1/Systems/1"),
			redfish("https://BMC-7.rack1.example:443/", "/redfish/v1/Systems/1/"),
			redfish("http://bmc-7.rack1.example", " /redfish/v1/Systems/1// "),
		}},
		// Issue #25: every spelling of one system, with no BMC asked: a
		// bare id, a path without /redfish/v1, trailing slashes (iLO), the
		// full URL in any host case and port spelling.
		{DriverRedfish, []BMC{
			redfish("https://10.0.0.7", "/redfish/v1/Systems/1"),
			redfish("https://10.0.0.7", "/redfish/v1/Systems/1/"),
			redfish("https://10.0.0.7", "1"),
			redfish("https://10.0.0.7", "Systems/1"),
			redfish("https://10.0.0.7", "/Systems/1/"),
			redfish("https://10.0.0.7", "https://10.0.0.7/redfish/v1/Systems/1/"),
			redfish("https://10.0.0.7", "/redfish/v1/systems/1"),
		}},
		{DriverRedfish, []BMC{
			redfish("https://bmc.example", "/redfish/v1/Systems/1"),
			redfish("https://BMC.example", "HTTPS://bmc.EXAMPLE:443/redfish/v1/Systems/1"),
		}},
		{DriverRedfish, []BMC{
			redfish("https://[2001:DB8:0::1]:8443", "/redfish/v1/Systems/a"),
			redfish("http://[2001:db8::1]:8443/", "/redfish/v1/Systems/a"),
		}},
		{DriverRedfish, []BMC{
			redfish("https://[fe80::1%25eth0]", ""),
			redfish("https://[FE80::1%25eth0]:443", ""),
		}},
		{DriverIPMI, []BMC{
			{Address: "ipmi://10.0.0.5"},
			{Address: "IPMI://10.0.0.5:623"},
			{Address: "ipmi://10.0.0.5:623/"},
		}},
	}
	seen := map[string]int{}
	for gi, g := range groups {
		want, err := BMCKey(g.driver, g.same[0])
		if err != nil {
			t.Fatalf("group %d: %v", gi, err)
		}
		for _, b := range g.same[1:] {
			if got, err := BMCKey(g.driver, b); err != nil || got != want {
				t.Errorf("BMCKey(%s, %q, %q) = %q, %v; want %q", g.driver, b.Address, b.SystemID, got, err, want)
			}
		}
		if other, dup := seen[want]; dup {
			t.Errorf("groups %d and %d share key %q", other, gi, want)
		}
		seen[want] = gi
	}
}

func TestBMCKeyDifferentEndpoints(t *testing.T) {
	cases := []struct {
		driver Driver
		b      BMC
	}{
		{DriverRedfish, BMC{Address: "https://10.0.0.5"}},
		{DriverRedfish, BMC{Address: "https://10.0.0.6"}},
		{DriverRedfish, BMC{Address: "https://10.0.0.5:8443"}},
		{DriverRedfish, BMC{Address: "https://10.0.0.5:8000"}},
		// One BMC, several systems: one node each.
		{DriverRedfish, BMC{Address: "https://10.0.0.5", SystemID: "/redfish/v1/Systems/1"}},
		{DriverRedfish, BMC{Address: "https://10.0.0.5", SystemID: "/redfish/v1/Systems/2"}},
		// Redfish paths are case-sensitive.
		{DriverRedfish, BMC{Address: "https://10.0.0.5", SystemID: "/redfish/v1/Systems/A"}},
		{DriverRedfish, BMC{Address: "https://10.0.0.5", SystemID: "/redfish/v1/Systems/a"}},
		// The same link-local address on two links.
		{DriverRedfish, BMC{Address: "https://[fe80::1%25eth0]"}},
		{DriverRedfish, BMC{Address: "https://[fe80::1%25eth1]"}},
		{DriverRedfish, BMC{Address: "https://[fe80::1]"}},
		{DriverRedfish, BMC{Address: "https://bmc.example"}},
		// IPMI is its own namespace, and its default port is 623.
		{DriverIPMI, BMC{Address: "ipmi://10.0.0.5"}},
		{DriverIPMI, BMC{Address: "ipmi://10.0.0.5:443"}},
	}
	seen := map[string]BMC{}
	for _, c := range cases {
		k, err := BMCKey(c.driver, c.b)
		if err != nil {
			t.Fatalf("%+v: %v", c.b, err)
		}
		if prev, dup := seen[k]; dup {
			t.Errorf("%+v and %+v share key %q", prev, c.b, k)
		}
		seen[k] = c.b
	}
}

func TestNormalizeBMCAddress(t *testing.T) {
	for in, want := range map[string]string{
		"HTTPS://BMC.example./redfish/v1/": "https://bmc.example:443",
		"http://10.0.0.5":                  "http://10.0.0.5:80",
		"https://[2001:DB8::0:1]:8443":     "https://[2001:db8::1]:8443",
		"https://[fe80::1%25eth0]":         "https://[fe80::1%25eth0]:443",
		"ipmi://10.0.0.5":                  "ipmi://10.0.0.5:623",
	} {
		driver := DriverRedfish
		if strings.HasPrefix(in, "ipmi") {
			driver = DriverIPMI
		}
		got, err := NormalizeBMCAddress(driver, in)
		if err != nil || got != want {
			t.Errorf("NormalizeBMCAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestBMCKeyRejects(t *testing.T) {
	for _, c := range []struct {
		driver Driver
		addr   string
	}{
		{DriverRedfish, "ipmi://10.0.0.5"},
		{DriverIPMI, "https://10.0.0.5"},
		{DriverRedfish, "https://10.0.0.05"}, // leading zero: octal to some resolvers
		{DriverRedfish, "https://10.5"},
		{DriverRedfish, "https://bmc%20one"},
		{DriverRedfish, "https://b%C3%A9mc"},
		{DriverRedfish, "https://a..b"},
		{DriverRedfish, "https://[fe80::1%25eth%2F0]"},
		{DriverRedfish, "https://10.0.0.5:0"},
		{DriverRedfish, "https://"},
		{DriverRedfish, "10.0.0.5"},
		{"ilo", "https://10.0.0.5"},
	} {
		if k, err := BMCKey(c.driver, BMC{Address: c.addr}); err == nil {
			t.Errorf("BMCKey(%s, %q) = %q, want an error", c.driver, c.addr, k)
		} else if ErrorCode(err) != CodeInvalid {
			t.Errorf("BMCKey(%s, %q): %v, want an invalid-input error", c.driver, c.addr, err)
		}
	}
	// Validate refuses what has no key, so every stored node has one.
	n := validNode()
	n.BMC.Address = "https://10.0.0.05"
	if err := n.Validate(); ErrorField(err) != "bmc.address" {
		t.Fatalf("Validate with an unkeyable address: %v", err)
	}
}

// FuzzBMCKey checks the normalization on any input: it never panics,
// never puts credentials in a key, is idempotent, and keys the normalized
// address like the original. Everything Validate accepts has a key.
func FuzzBMCKey(f *testing.F) {
	for _, s := range []string{
		"https://10.0.0.5", "http://BMC.example.:80/redfish/v1/", "https://[fe80::1%25eth0]:443",
		"https://[::ffff:10.0.0.5]", "ipmi://10.0.0.5:623", "https://user:pw@10.0.0.5",
		"https://10.0.0.05", "https://[2001:db8::1]:8443/", "ipmi://[::1]", "https://%41:1",
	} {
		f.Add(s, "/redfish/v1/Systems/1", false)
		f.Add(s, "", true)
	}
	f.Fuzz(func(t *testing.T, address, systemID string, ipmi bool) {
		driver := DriverRedfish
		if ipmi {
			driver, systemID = DriverIPMI, ""
		}
		b := BMC{Address: address, SystemID: systemID, Username: "admin", Password: "pw"}
		key, err := BMCKey(driver, b)
		n := Node{Name: "n", Driver: driver, BMC: b, ResourceClass: "rc"}
		if verr := n.Validate(); verr == nil && err != nil {
			t.Fatalf("Validate accepts %q but BMCKey fails: %v", address, err)
		}
		if err != nil {
			if ErrorCode(err) != CodeInvalid {
				t.Fatalf("BMCKey(%q): %v, want an invalid-input error", address, err)
			}
			return
		}
		norm, err := NormalizeBMCAddress(driver, address)
		if err != nil {
			t.Fatalf("BMCKey accepts %q but NormalizeBMCAddress fails: %v", address, err)
		}
		again, err := NormalizeBMCAddress(driver, norm)
		if err != nil || again != norm {
			t.Fatalf("not idempotent: %q → %q → %q, %v", address, norm, again, err)
		}
		b.Address = norm
		if k2, err := BMCKey(driver, b); err != nil || k2 != key {
			t.Fatalf("key of %q is %q, of its normal form %q is %q, %v", address, key, norm, k2, err)
		}
		endpoint, err := BMCEndpointKey(driver, address)
		if err != nil || !strings.HasPrefix(key, endpoint) {
			t.Fatalf("key %q does not start with its endpoint key %q, %v", key, endpoint, err)
		}
		if strings.Contains(endpoint, "@") || strings.Contains(norm, "@") {
			t.Fatalf("credentials kept: key %q, normal form %q", key, norm)
		}
	})
}
