package bmc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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
