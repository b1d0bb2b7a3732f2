package bmc

import (
	"regexp"
)

// errorText finds the text of an *Error ("bmc <op>: <kind>: <cause>") in
// a longer message. The cause runs to the end: it is the %v of whatever
// the driver met.
var errorText = regexp.MustCompile(`bmc ([a-z][a-z0-9 _-]{0,40}): (unreachable|auth|unsupported|bmc_error): `)

// Summary rewrites a message that may quote a BMC error (an instance's
// last_error, say) for a reader who may not see the BMC: the BMC error's
// cause (addresses, URLs, socket errors, the BMC's own words) gives way to
// a sentence that says what kind of trouble the node's BMC had, and
// where. Text before the BMC error is kept; a message without one is
// returned as is, and so is one whose BMC lacks a capability
// (KindUnsupported): what it lacks ("one virtual media slot") is what the
// reader acts on, by choosing another node, and it names no address.
func Summary(msg string) string {
	m := errorText.FindStringSubmatchIndex(msg)
	if m == nil {
		return msg
	}
	op, kind := msg[m[2]:m[3]], Kind(msg[m[4]:m[5]])
	var what string
	switch kind {
	case KindUnreachable:
		what = "the node's BMC did not answer"
	case KindAuth:
		what = "the node's BMC refused the controller's credentials"
	case KindUnsupported:
		return msg
	default:
		what = "the node's BMC reported an error"
	}
	return msg[:m[0]] + what + " (" + op + "); an admin can see the details on the node"
}
