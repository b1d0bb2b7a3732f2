package bmc

import (
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`gave up after 5 attempts: deploy node n1: bmc set boot device: unreachable: Patch "https://10.0.0.5/redfish/v1/Systems/1": dial tcp 10.0.0.5:443: connect: connection refused`,
			"gave up after 5 attempts: deploy node n1: the node's BMC did not answer (set boot device); an admin can see the details on the node"},
		{"bmc login: auth: HTTP 401 Unauthorized: Base.1.8.NoValidSession",
			"the node's BMC refused the controller's credentials (login); an admin can see the details on the node"},
		// A missing capability is the reader's business: kept.
		{"the instance's user_data needs a config drive, which node n1's BMC cannot take: bmc insert config drive: unsupported: the system has one virtual media slot",
			"the instance's user_data needs a config drive, which node n1's BMC cannot take: bmc insert config drive: unsupported: the system has one virtual media slot"},
		{"bmc power state: bmc_error: HTTP 500 Internal Server Error: Base.1.8.InternalError: sensor 10.0.0.5 failed",
			"the node's BMC reported an error (power state); an admin can see the details on the node"},
		// No BMC error: the user's own problem, shown whole.
		{"image https://img.example/x.iso: checksum mismatch", "image https://img.example/x.iso: checksum mismatch"},
		{"power on not observed within 10s (last observed off)", "power on not observed within 10s (last observed off)"},
	} {
		got := Summary(tc.in)
		if got != tc.want {
			t.Errorf("Summary(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	// What an *Error prints is what Summary finds.
	err := Errorf(KindUnreachable, "power state", "dial tcp 10.0.0.5:443: i/o timeout")
	if got := Summary("deploy: " + err.Error()); strings.Contains(got, "10.0.0.5") || !strings.Contains(got, "did not answer (power state)") {
		t.Errorf("Summary of an *Error = %q", got)
	}
}
