package apiclient

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// Sentinel errors for errors.Is. An *APIError matches the sentinel of its
// problem code, or of its HTTP status when the code is unknown.
var (
	ErrInvalid            = errors.New("invalid request")
	ErrUnauthorized       = errors.New("unauthorized")
	ErrForbidden          = errors.New("forbidden")
	ErrNotFound           = errors.New("not found")
	ErrConflict           = errors.New("conflict")
	ErrPreconditionFailed = errors.New("precondition failed")
	ErrInvalidState       = errors.New("invalid state")
	ErrQuotaExceeded      = errors.New("quota exceeded")
	ErrNoCapacity         = errors.New("no capacity")
	ErrUnavailable        = errors.New("service unavailable")
	ErrServer             = errors.New("server error")
)

// codeSentinels maps the API's stable problem codes to sentinels. Codes
// without one (method_not_allowed, unsupported_media_type) match by status.
var codeSentinels = map[api.ProblemCode]error{
	api.CodeInvalid:       ErrInvalid,
	api.CodeTooLarge:      ErrInvalid,
	api.CodeUnauthorized:  ErrUnauthorized,
	api.CodeForbidden:     ErrForbidden,
	api.CodeNotFound:      ErrNotFound,
	api.CodeConflict:      ErrConflict,
	api.CodePrecondition:  ErrPreconditionFailed,
	api.CodeInvalidState:  ErrInvalidState,
	api.CodeQuotaExceeded: ErrQuotaExceeded,
	api.CodeNoCapacity:    ErrNoCapacity,
	api.CodeUnavailable:   ErrUnavailable,
	api.CodeInternal:      ErrServer,
}

// statusSentinels is the fallback when a response carries no known code
// (a proxy's error page, say).
var statusSentinels = map[int]error{
	http.StatusBadRequest:            ErrInvalid,
	http.StatusUnauthorized:          ErrUnauthorized,
	http.StatusForbidden:             ErrForbidden,
	http.StatusNotFound:              ErrNotFound,
	http.StatusConflict:              ErrConflict,
	http.StatusPreconditionFailed:    ErrPreconditionFailed,
	http.StatusRequestEntityTooLarge: ErrInvalid,
	http.StatusUnprocessableEntity:   ErrInvalidState,
	http.StatusServiceUnavailable:    ErrUnavailable,
}

// APIError is an error response of the API. Problem holds the decoded RFC
// 9457 document; for a response that was not problem+json it is synthesised
// from the status line.
type APIError struct {
	Method  string
	Path    string
	Problem api.Problem
}

// StatusCode returns the HTTP status of the response.
func (e *APIError) StatusCode() int { return e.Problem.Status }

// Field returns the JSON path of the attribute the problem names, if any.
func (e *APIError) Field() string { return e.Problem.Field }

// Detail is the human-readable explanation, falling back to the title.
func (e *APIError) Detail() string {
	if e.Problem.Detail != "" {
		return e.Problem.Detail
	}
	if e.Problem.Title != "" {
		return e.Problem.Title
	}
	return http.StatusText(e.Problem.Status)
}

func (e *APIError) Error() string {
	code := string(e.Problem.Code)
	if code == "" {
		code = http.StatusText(e.Problem.Status)
	}
	msg := fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Problem.Status, code, e.Detail())
	if e.Problem.Field != "" {
		msg += " (field " + e.Problem.Field + ")"
	}
	return msg
}

// Capacity returns the counts a no_capacity answer carries: why the nodes
// it considered cannot take the instance, and whether any will be able to
// soon (Pending). It is nil for other errors, and from a controller too
// old to send them.
func (e *APIError) Capacity() *api.Capacity { return e.Problem.Capacity }

// Is lets errors.Is(err, ErrNotFound) and friends work. An error matches
// the sentinel of its code and that of its status: a 409 no_capacity is
// both ErrNoCapacity and ErrConflict.
func (e *APIError) Is(target error) bool {
	if s, ok := codeSentinels[e.Problem.Code]; ok && s == target {
		return true
	}
	if s, ok := statusSentinels[e.Problem.Status]; ok && s == target {
		return true
	}
	return target == ErrServer && e.Problem.Status >= 500
}

// AsAPIError returns the *APIError in err's chain, if there is one.
func AsAPIError(err error) (*APIError, bool) {
	var ae *APIError
	ok := errors.As(err, &ae)
	return ae, ok
}

// NoCapacity returns the counts of the no_capacity answer in err's chain;
// ok is false when err is no such answer or carries no counts.
func NoCapacity(err error) (c *api.Capacity, ok bool) {
	ae, isAPI := AsAPIError(err)
	if !isAPI || ae.Problem.Code != api.CodeNoCapacity || ae.Problem.Capacity == nil {
		return nil, false
	}
	return ae.Problem.Capacity, true
}
