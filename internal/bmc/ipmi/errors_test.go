package ipmi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	ipmiclient "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// Errors shaped like go-ipmi v0.9.1's (texts copied from real runs against
// ipmi_sim), to pin the classification of each.
func TestClassify(t *testing.T) {
	t.Parallel()
	flattened := func(inner string) error { // Connect20 joins its loop's errors with %v
		return fmt.Errorf("connect20 failed after try all cipher suite ids ([3]), errs: \n%v", errors.New(inner))
	}
	refused := &net.OpError{Op: "read", Net: "udp", Err: os.NewSyscallError("read", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name    string
		err     error
		kind    bmc.Kind
		reason  string
		suspect bool
	}{
		{"wrong password", flattened("cmd: rakp1 failed with cipher suite id (3), err: validate rakp2 message failed, err: RAKP2 authentication code mismatch: RAKP authentication failed"),
			bmc.KindAuth, "wrong password", true},
		{"wrong password typed", fmt.Errorf("x: %w", ipmiclient.ErrRAKPAuthentication), bmc.KindAuth, "wrong password", true},
		{"unknown user", flattened("cmd: rakp1 failed with cipher suite id (3), err: validate rakp2 message failed, err: RMCP+ status 0x0d: Unauthorized name"),
			bmc.KindAuth, "does not know this user", true},
		{"role refused", flattened("err: RMCP+ status 0x09: Invalid role"), bmc.KindAuth, "credentials refused", true},
		{"cipher refused", flattened("err: RMCP+ status 0x11: No Cipher Suite match"), bmc.KindUnsupported, "cipher suite refused", true},
		{"cipher refused typed", types.NewRmcpStatusError(types.RmcpStatusCodeInvalidAuthAlg), bmc.KindUnsupported, "cipher suite refused", true},
		{"cipher refused sniffed", &dialError{err: errors.New("unpack session setup response failed"), openStatus: 0x04, hasStatus: true},
			bmc.KindUnsupported, "0x04", true},
		{"out of sessions sniffed", &dialError{err: errors.New("unpack session setup response failed"), openStatus: 0x01, hasStatus: true},
			bmc.KindBMCError, "0x01", true},
		{"invalid command", types.NewResponseError(0xC1, "x"), bmc.KindUnsupported, "0xc1", false},
		{"insufficient privilege", types.NewResponseError(0xD4, "x"), bmc.KindAuth, "0xd4", false},
		{"invalid data", fmt.Errorf("SetSystemBootOptions failed, err: %w", types.NewResponseError(0xCC, "x")), bmc.KindBMCError, "0xcc", false},
		{"refused", fmt.Errorf("IPMI LAN: UDP exchange error after 3 attempt(s): read from conn failed, err: %w", refused),
			bmc.KindUnreachable, "connection refused", true},
		{"timeout", errors.New("IPMI LAN: no matching IPMI response (expected rqSeq 0x01, command 0x38) before UDP read deadline after 3 attempt(s): udp exchange: no datagram matched before deadline"),
			bmc.KindUnreachable, "timed out", true},
		{"deadline", fmt.Errorf("canceled from caller: %w", context.DeadlineExceeded), bmc.KindUnreachable, "deadline", true},
		{"classified", bmc.Errorf(bmc.KindAuth, "open", "x"), bmc.KindAuth, "", true},
		{"unknown", errors.New("unpack rmcp failed"), bmc.KindUnreachable, "", true},
	} {
		if got := classify(tc.err); got != tc.kind {
			t.Errorf("%s: classify = %s, want %s", tc.name, got, tc.kind)
		}
		if got := reason(tc.err); !strings.Contains(got, tc.reason) {
			t.Errorf("%s: reason = %q, want it to contain %q", tc.name, got, tc.reason)
		}
		if got := sessionSuspect(tc.err); got != tc.suspect {
			t.Errorf("%s: sessionSuspect = %v, want %v", tc.name, got, tc.suspect)
		}
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	inner := errors.New("line one\n  line two with s3cr3t-pw inside")
	err := describe("connect to bmc:623", inner, "s3cr3t-pw")
	if got, want := err.Error(), "connect to bmc:623: line one line two with [redacted] inside"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	if !errors.Is(err, inner) {
		t.Error("describe loses the original error")
	}
	if got := redact("user abc", "abc"); got != "user abc" {
		t.Errorf("a 3-byte secret was redacted: %q", got)
	}
}

func TestPerTry(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	for _, tc := range []struct {
		timeout, want string
	}{
		{"10s", "500ms"}, {"2s", "200ms"}, {"1s", "100ms"}, {"100ms", "100ms"},
	} {
		d, _ := time.ParseDuration(tc.timeout)
		want, _ := time.ParseDuration(tc.want)
		if got := perTry(bg, d); got != want {
			t.Errorf("perTry(%s) = %v, want %v", tc.timeout, got, want)
		}
	}
}
