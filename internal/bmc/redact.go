package bmc

import (
	"errors"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// MaxMessage bounds the message of a BMC error as callers keep it: BMCs
// answer with whole HTML pages and request dumps, and an error is kept
// per failed attempt (last_error, events, every job attempt).
const MaxMessage = 400

// Redact is the last step of every BMC call (Drivers applies it to every
// call of the clients it opens): it returns err as an *Error
// (same Kind and Op) whose message has every form of secrets and every
// credential the redact rules find hidden (config drive and agent boot
// keys included), on one line of at most MaxMessage bytes. The drivers
// redact what they know (a Redfish session token, say) before; this pass
// catches what they do not, whatever the driver.
//
// The original error stays in the chain for errors.Is and errors.As;
// print only the returned error, never one unwrapped from it.
func Redact(err error, secrets *redact.Secrets) error {
	if err == nil {
		return nil
	}
	var be *Error
	if !errors.As(err, &be) {
		be = &Error{Kind: KindUnreachable, Err: err}
	}
	msg := ""
	if be.Err != nil {
		msg = be.Err.Error()
	}
	return &Error{Kind: be.Kind, Op: be.Op, Err: &redactedError{msg: redact.Excerpt(secrets.String(msg), MaxMessage), err: be.Err}}
}

// redactedError is a redacted message over the error it came from.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
