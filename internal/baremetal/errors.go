package baremetal

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code. The HTTP layer maps each
// code to one status in a single table; clients switch on it.
type Code string

const (
	CodeInvalid          Code = "invalid"             // 400: bad input, Field names the attribute
	CodeUnauthorized     Code = "unauthorized"        // 401: missing or bad token
	CodeForbidden        Code = "forbidden"           // 403: role may not do this
	CodeNotFound         Code = "not_found"           // 404
	CodeMethodNotAllowed Code = "method_not_allowed"  // 405: the path exists under other methods
	CodeConflict         Code = "conflict"            // 409: duplicate name, stale version, busy node
	CodePrecondition     Code = "precondition_failed" // 412: If-Match did not match
	CodeTooLarge         Code = "payload_too_large"   // 413
	CodeInvalidState     Code = "invalid_state"       // 422: transition not allowed
	CodeQuotaExceeded    Code = "quota_exceeded"      // 403
	CodeNoCapacity       Code = "no_capacity"         // 409: no schedulable node
	CodeUnavailable      Code = "unavailable"         // 503: store unreachable
	CodeInternal         Code = "internal"            // 500: details logged, never shown
)

// CodeBadMediaType is 415: a request body that is not JSON.
const CodeBadMediaType Code = "unsupported_media_type"

// Error is the one error type of the domain. Message is safe to show to the
// caller (it never holds secrets); Field names the offending attribute using
// the API's JSON path (e.g. "bmc.address") when there is one.
type Error struct {
	Code    Code
	Message string
	Field   string
	// Capacity, on a no_capacity error, counts why the nodes considered
	// cannot take the instance; the API sends it along with Message.
	Capacity *Capacity
	// Err is the wrapped cause; it is logged, never sent to clients.
	Err error
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf builds an invalid-input error naming field.
func FieldErrorf(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, CodeInternal for foreign errors and ""
// for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// IsCode reports whether err carries code.
func IsCode(err error, code Code) bool { return ErrorCode(err) == code }

// ErrorMessage returns the client-safe message of err.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// ErrorField returns the attribute that err names, if any.
func ErrorField(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}
