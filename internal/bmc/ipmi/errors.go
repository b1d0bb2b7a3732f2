package ipmi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	ipmiclient "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	hide "github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// Completion codes with a meaning of their own (IPMI v2.0 table 5-2).
const (
	ccInvalidCommand       = 0xC1 // the BMC does not implement the command
	ccInvalidCommandForLUN = 0xC2
	ccInsufficientPriv     = 0xD4 // the session's privilege is too low
	ccNotInPresentState    = 0xD5 // e.g. soft-off of a machine already off
)

// RMCP+ status codes in Open Session and RAKP replies (IPMI v2.0 table 13-15)
// that mean "this cipher suite is not offered": try the next one.
var cipherRejections = map[types.RmcpStatusCode]bool{
	types.RmcpStatusCodeInvalidAuthAlg:             true,
	types.RmcpStatusCodeInvalidIntegrityAlg:        true,
	types.RmcpStatusCodeNoMatchingAuthPayload:      true,
	types.RmcpStatusCodeNoMatchingIntegrityPayload: true,
	types.RmcpStatusCodeInvalidConfidentAlg:        true,
	types.RmcpStatusCodeNoCipherSuiteMatch:         true,
}

// RMCP+ status codes that mean the credentials (or the privilege they
// carry) were refused.
var authRejections = map[types.RmcpStatusCode]bool{
	types.RmcpStatusCodeInvalidRole:                true,
	types.RmcpStatusCodeUnauthorizedRoleOfPriLevel: true,
	types.RmcpStatusCodeInvalidNameLength:          true,
	types.RmcpStatusCodeUnauthorizedName:           true,
	types.RmcpStatusCodeUnauthorizedGUID:           true,
	types.RmcpStatusCodeInvalidIntegrityCheckValue: true,
}

// classify maps an error from go-ipmi (or the context) to a bmc.Kind.
// Anything it does not recognise is unreachable: the transient assumption
// that keeps a node retrying rather than failing it for good.
func classify(err error) bmc.Kind {
	var be *bmc.Error
	if errors.As(err, &be) {
		return be.Kind
	}
	if code, ok := rmcpStatus(err); ok {
		switch {
		case authRejections[code]:
			return bmc.KindAuth
		case cipherRejections[code]:
			return bmc.KindUnsupported
		default:
			return bmc.KindBMCError
		}
	}
	if isRAKPAuthFailure(err) {
		return bmc.KindAuth
	}
	if cc, ok := completionCode(err); ok {
		switch cc {
		case ccInvalidCommand, ccInvalidCommandForLUN:
			return bmc.KindUnsupported
		case ccInsufficientPriv:
			return bmc.KindAuth
		default:
			return bmc.KindBMCError
		}
	}
	return bmc.KindUnreachable
}

// go-ipmi v0.9.1's Connect20 joins the errors of its cipher-suite loop
// (Open Session, RAKP 1 and 3) into a message with %v, not %w: the typed
// errors are lost and only their text survives. These two helpers look
// for the type first, then for the text the type prints.
var rmcpStatusText = regexp.MustCompile(`RMCP\+ status 0x([0-9a-fA-F]{1,2})\b`)

// rmcpStatus returns the RMCP+ status code (Open Session or RAKP reply) in err.
func rmcpStatus(err error) (types.RmcpStatusCode, bool) {
	var rs *types.RmcpStatusError
	if errors.As(err, &rs) {
		return rs.StatusCode(), true
	}
	var de *dialError
	if errors.As(err, &de) && de.hasStatus && de.openStatus != types.RmcpStatusCodeNoErrors {
		return de.openStatus, true
	}
	if m := rmcpStatusText.FindStringSubmatch(err.Error()); m != nil {
		v, perr := strconv.ParseUint(m[1], 16, 8)
		if perr == nil {
			return types.RmcpStatusCode(v), true
		}
	}
	return 0, false
}

// isRAKPAuthFailure reports a RAKP 2 or 4 code mismatch: the BMC knows the
// user, but the password (the key) differs.
func isRAKPAuthFailure(err error) bool {
	return errors.Is(err, ipmiclient.ErrRAKPAuthentication) ||
		strings.Contains(err.Error(), ipmiclient.ErrRAKPAuthentication.Error())
}

// completionCode returns the IPMI completion code carried by err, if any.
func completionCode(err error) (uint8, bool) {
	var re *types.ResponseError
	if errors.As(err, &re) {
		return uint8(re.CompletionCode()), true
	}
	return 0, false
}

// sessionSuspect reports whether err leaves the session in doubt. A
// completion code is an answer inside a working session; anything else
// (no answer, garbage, a decryption failure) means the session may be
// gone on the BMC side, so it is dropped and re-established.
func sessionSuspect(err error) bool {
	_, ok := completionCode(err)
	return !ok
}

// reason says in a few words why a call failed, for the error message.
func reason(err error) string {
	code, isStatus := rmcpStatus(err)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer before the deadline"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, syscall.ECONNREFUSED), strings.Contains(err.Error(), "connection refused"):
		return "connection refused (nothing listening on that UDP port)"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	case isStatus && code == types.RmcpStatusCodeUnauthorizedName:
		return "the BMC does not know this user name"
	case isStatus && authRejections[code]:
		return fmt.Sprintf("credentials refused, RMCP+ status %#02x (%s)", uint8(code), code)
	case isStatus && cipherRejections[code]:
		return fmt.Sprintf("cipher suite refused, RMCP+ status %#02x (%s)", uint8(code), code)
	case isStatus:
		return fmt.Sprintf("RMCP+ status %#02x (%s)", uint8(code), code)
	case isRAKPAuthFailure(err):
		return "wrong password (RAKP authentication code mismatch)"
	}
	if isTimeout(err) {
		return "no answer (timed out)"
	}
	if cc, ok := completionCode(err); ok {
		return fmt.Sprintf("completion code %#02x", cc)
	}
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	// go-ipmi reports "nothing matched before the read deadline" with an
	// unexported sentinel; its text is the only handle on it.
	return strings.Contains(err.Error(), "no datagram matched") ||
		strings.Contains(err.Error(), "no matching IPMI response")
}

// detailError carries a one-line, secret-free message while keeping the
// original error in the chain for errors.Is/As.
type detailError struct {
	msg string
	err error
}

func (e *detailError) Error() string { return e.msg }
func (e *detailError) Unwrap() error { return e.err }

// describe builds the message of a classified error: what we did, why it
// failed in plain words, then go-ipmi's own text on one line. The
// password is scrubbed (in every encoding) as a last line of defence:
// go-ipmi v0.9 puts the host, port and user name in its errors, session
// ids and counts, but never the password (with lanplus it is only an HMAC
// key, never sent), and neither do we.
func describe(what string, err error, password string) error {
	var b strings.Builder
	b.WriteString(what)
	if r := reason(err); r != "" {
		b.WriteString(": ")
		b.WriteString(r)
	}
	b.WriteString(": ")
	b.WriteString(strings.Join(strings.Fields(err.Error()), " "))
	return &detailError{msg: redact(b.String(), password), err: err}
}

// redact removes secret from s in every form (see package redact). Very
// short secrets are left alone: they would shred the message and are no
// secret anyway.
func redact(s, secret string) string {
	return hide.New(secret).String(s)
}
