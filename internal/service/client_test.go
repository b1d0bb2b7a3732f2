package service_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
)

// TestClientOf: what events say a request came through. The products of
// this repository are named (Terraform, the CLI, the dashboard), anything
// else is "the API" with its User-Agent; the dashboard's header wins over
// the browser's User-Agent. A User-Agent is made one short plain line
// whatever it holds; a bad header of ours is refused.
func TestClientOf(t *testing.T) {
	long := strings.Repeat("é", api.MaxClientLen) // 2 bytes each
	for _, c := range []struct{ header, ua, want string }{
		{"", "terraform-provider-baremetal/0.4.0 terraform/1.5.7", "Terraform (terraform-provider-baremetal/0.4.0 terraform/1.5.7)"},
		{"", "baremetal-controller-cli/v0.4.0", "the CLI (baremetal-controller-cli/v0.4.0)"},
		{"baremetal-dashboard", "Mozilla/5.0 (X11; Linux x86_64)", "the dashboard (baremetal-dashboard)"},
		{"", "curl/8.5.0", "the API (curl/8.5.0)"},
		{"", "", "the API (no User-Agent)"},
		{"", " \t\x00\u202e ", "the API (no User-Agent)"},
		// Not fooled by a product name that only starts the same.
		{"", "terraform-provider-baremetal-fork/1", "the API (terraform-provider-baremetal-fork/1)"},
		// Controls, line breaks, a bidirectional override and invalid
		// UTF-8 are spaces; runs of them one space.
		{"", "tool/1\r\nX-Injected: 1\x1b[31m\u202eexe.\xff\xfeend", "the API (tool/1 X-Injected: 1 [31m exe. end)"},
		// Cut to MaxClientLen bytes on a character boundary.
		{"", "x/1 " + long, "the API (x/1 " + strings.Repeat("é", (api.MaxClientLen-4)/2) + ")"},
	} {
		got, err := service.ClientOf(c.header, c.ua)
		if err != nil || got != c.want {
			t.Errorf("ClientOf(%q, %q) = %q, %v; want %q", c.header, c.ua, got, err, c.want)
		}
	}
	for _, bad := range []string{strings.Repeat("a", api.MaxClientLen+1), "dash\tboard", "dash\u202eboard", "dash\xffboard"} {
		_, err := service.ClientOf(bad, "curl/8.5.0")
		var e *baremetal.Error
		if !baremetal.IsCode(err, baremetal.CodeInvalid) || !errors.As(err, &e) || e.Field != api.ClientHeader {
			t.Errorf("ClientOf(%q): %v; want an invalid error on %s", bad, err, api.ClientHeader)
		}
	}
}

// TestActorNamesTheClient: events name the token, then the client.
func TestActorNamesTheClient(t *testing.T) {
	c := service.Caller{TokenID: "t1", TokenName: "alice", Client: "the CLI (baremetal-controller-cli/v1)"}
	if got, want := string(c.Actor()), "token:alice (t1) via the CLI (baremetal-controller-cli/v1)"; got != want {
		t.Errorf("actor %q, want %q", got, want)
	}
	c.Client = ""
	if got, want := string(c.Actor()), "token:alice (t1)"; got != want {
		t.Errorf("actor without a client %q, want %q", got, want)
	}
}
