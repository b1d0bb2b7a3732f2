package api

import (
	"errors"
	"strings"
	"testing"
)

// Every spelling of one system has one key, and the path to request keeps
// what the operator (or the BMC) wrote where Redfish lets it differ.
func TestRedfishSystemSpellings(t *testing.T) {
	for _, c := range []struct{ in, path, key string }{
		{"/redfish/v1/Systems/1", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1"},
		{"/redfish/v1/Systems/1/", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1"}, // iLO
		{" /redfish/v1/Systems/1// ", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1"},
		{"1", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1"},
		{"Systems/1", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1"},
		{"/Systems/1/", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1"},
		{"redfish/v1/Systems/1", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1"},
		{"https://BMC-7.example:443/redfish/v1/Systems/1/", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1"},
		{"http://10.0.0.5/redfish/v1/Systems/1", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1"},
		{"/redfish/v1/systems/1", "/redfish/v1/systems/1", "/redfish/v1/Systems/1"},
		{"System.Embedded.1", "/redfish/v1/Systems/System.Embedded.1", "/redfish/v1/Systems/System.Embedded.1"}, // iDRAC
		{"/redfish/v1/Systems/Self/", "/redfish/v1/Systems/Self", "/redfish/v1/Systems/Self"},                   // AMI
		{"/redfish/v1/Systems/System%2EEmbedded.1", "/redfish/v1/Systems/System.Embedded.1", "/redfish/v1/Systems/System.Embedded.1"},
		{"node 1", "/redfish/v1/Systems/node%201", "/redfish/v1/Systems/node%201"},
		{"/redfish/v1/Systems/node 1", "/redfish/v1/Systems/node%201", "/redfish/v1/Systems/node%201"},
		{"", "", ""},
		{"  ", "", ""},
	} {
		p, err := RedfishSystemPath(c.in)
		if err != nil || p != c.path {
			t.Errorf("RedfishSystemPath(%q) = %q, %v; want %q", c.in, p, err, c.path)
		}
		k, err := RedfishSystemKey(c.in)
		if err != nil || k != c.key {
			t.Errorf("RedfishSystemKey(%q) = %q, %v; want %q", c.in, k, err, c.key)
		}
		// Normalizing a normalized path changes nothing.
		if again, err := RedfishSystemPath(p); err != nil || again != p {
			t.Errorf("RedfishSystemPath(%q) = %q, %v: not idempotent", p, again, err)
		}
	}
}

func TestSameRedfishSystem(t *testing.T) {
	same := [][2]string{
		{"/redfish/v1/Systems/1", "/redfish/v1/Systems/1/"},
		{"1", "/redfish/v1/Systems/1"},
		{"Systems/1", "https://bmc/redfish/v1/Systems/1/"},
		{"", ""},
	}
	for _, c := range same {
		if !SameRedfishSystem(c[0], c[1]) || !SameRedfishSystem(c[1], c[0]) {
			t.Errorf("SameRedfishSystem(%q, %q) = false", c[0], c[1])
		}
	}
	differ := [][2]string{
		{"/redfish/v1/Systems/A", "/redfish/v1/Systems/a"}, // ids are case-sensitive
		{"/redfish/v1/Systems/1", "/redfish/v1/Systems/2"},
		{"", "/redfish/v1/Systems/1"}, // only the BMC knows its only system
		{"/redfish/v1/Managers/1", "/redfish/v1/Managers/1/"},
	}
	for _, c := range differ {
		if SameRedfishSystem(c[0], c[1]) || SameRedfishSystem(c[1], c[0]) {
			t.Errorf("SameRedfishSystem(%q, %q) = true", c[0], c[1])
		}
	}
}

func TestRedfishSystemPathRejects(t *testing.T) {
	for _, in := range []string{
		"/redfish/v1/Systems",
		"/redfish/v1/Systems/",
		"/redfish/v1/Managers/1",
		"/redfish/v1/Systems/1/Bios",
		"/1",
		".",
		"..",
		"/redfish/v1/Systems/..",
		"1?x=1",
		"/redfish/v1/Systems/1#frag",
		"https://bmc/redfish/v1/Systems/1?x",
		"ftp://bmc/redfish/v1/Systems/1",
		"https:///redfish/v1/Systems/1",
		"https://admin:secret@bmc/redfish/v1/Systems/1",
		"ftp://admin:secret@bmc/redfish/v1/Systems/1",
		"/redfish/v1/Systems/%zz",
	} {
		p, err := RedfishSystemPath(in)
		if err == nil {
			t.Errorf("RedfishSystemPath(%q) = %q, want an error", in, p)
			continue
		}
		if !errors.Is(err, ErrSystemIDSpelling) {
			t.Errorf("RedfishSystemPath(%q): %v does not wrap ErrSystemIDSpelling", in, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("RedfishSystemPath(%q): the error shows the password: %v", in, err)
		}
	}
}
