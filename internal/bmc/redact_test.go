package bmc

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	if Redact(nil, nil) != nil {
		t.Fatal("Redact(nil) is not nil")
	}
	inner := fmt.Errorf("login as root with s3cret-pw (Authorization: Basic cm9vdDpzM2NyZXQtcHc=) %s: %w", strings.Repeat("x", 1000), context.DeadlineExceeded)
	err := Redact(Wrap(KindAuth, "login", inner), redact.New("s3cret-pw"))
	var be *Error
	if !errors.As(err, &be) || be.Kind != KindAuth || be.Op != "login" {
		t.Fatalf("kind or op lost: %#v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("the chain is lost")
	}
	msg := be.Err.Error()
	if strings.Contains(msg, "s3cret-pw") || strings.Contains(msg, "cm9vdDpzM2NyZXQtcHc=") {
		t.Errorf("secret shown: %s", msg)
	}
	if !strings.HasPrefix(err.Error(), "bmc login: auth: login as root with [redacted] (Authorization: Basic [redacted]) xxx") || len(msg) > MaxMessage {
		t.Errorf("Redact = %q (%d bytes)", err.Error(), len(msg))
	}
	// Unclassified errors count as unreachable, as KindOf says.
	if got := Redact(errors.New("dial tcp: refused"), nil); KindOf(got) != KindUnreachable || got.Error() != "bmc : unreachable: dial tcp: refused" {
		t.Errorf("unclassified: %v", got)
	}
}

// A BMC that quotes the agent ISO's URL in its error (InsertMedia refused,
// or the fetch failed) must not hand out the boot key: it fetches the ISO,
// and the ISO carries the boot's agent token. Config drive keys were
// masked; agent boot keys were not (issue #26, item 25).
func TestRedactAgentBootKey(t *testing.T) {
	t.Parallel()
	token, _ := baremetal.NewAgentToken()
	key := baremetal.AgentBootKey(token)
	iso := "https://10.0.0.1:8443" + api.AgentBootPath("6f1c2d3e-0000-4000-8000-00000000abcd", key)
	for name, echo := range map[string]string{
		"plain":       iso,
		"url-encoded": url.QueryEscape(iso),
		"json":        strings.ReplaceAll(iso, "/", `\/`),
	} {
		err := Redact(Errorf(KindImage, "insert media", "Base.1.0.GeneralError: Failed fetching image from URL %s", echo), nil)
		if strings.Contains(err.Error(), key) {
			t.Errorf("%s: the agent boot key is in the error: %v", name, err)
		}
		if !strings.Contains(err.Error(), "REDACTED") || !strings.Contains(err.Error(), "Failed fetching image from URL") {
			t.Errorf("%s: the error lost its sense: %v", name, err)
		}
	}
}
