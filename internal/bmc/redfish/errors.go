package redfish

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"syscall"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

var (
	// ErrSystemIDRequired: the BMC manages several systems and the endpoint
	// names none. Permanent until the node's system_id is set.
	ErrSystemIDRequired = bmc.ErrSystemIDRequired
	// ErrSystemNotFound: the endpoint's system does not exist on the BMC
	// (or the BMC has none).
	ErrSystemNotFound = bmc.ErrSystemNotFound
	// ErrClosed: the Opener was closed.
	ErrClosed = errors.New("redfish opener is closed")
)

// HTTPError is a non-success answer of the BMC, reduced to what is safe to
// show: the status and the Redfish message(s), never the raw body (a BMC may
// echo a request, credentials included).
type HTTPError struct {
	Status    int
	MessageID string // e.g. Base.1.8.InternalError
	Message   string
}

func (e *HTTPError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d", e.Status)
	if t := http.StatusText(e.Status); t != "" {
		b.WriteString(" " + t)
	}
	if e.MessageID != "" {
		b.WriteString(": " + e.MessageID)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// unsupportedMessages are Redfish Base registry messages that mean "this BMC
// cannot do that", as opposed to "it failed doing it".
var unsupportedMessages = []string{
	"ActionNotSupported", "ActionParameterNotSupported", "ActionParameterValueNotInList",
	"ActionParameterUnknown", "PropertyValueNotInList", "PropertyNotWritable", "PropertyUnknown",
	"OperationNotAllowed", "ResourceCannotBeCreated", "NotImplemented",
}

// What is kept of a BMC's error body: a few messages, each short. A BMC
// that echoes the request would otherwise fill last_error with it.
const (
	maxMessages   = 3
	maxMessageLen = 200
)

// httpErrorFrom reduces a gofish error to an HTTPError, hiding secrets
// in the BMC's text before cutting it (a cut secret is no longer found).
func httpErrorFrom(rf *schemas.Error, secrets *redact.Secrets) *HTTPError {
	e := &HTTPError{Status: rf.HTTPReturnedStatusCode, MessageID: redact.Excerpt(secrets.String(rf.Code), maxMessageLen)}
	var msgs []string
	add := func(m string) {
		m = redact.Excerpt(secrets.String(m), maxMessageLen)
		if m != "" && len(msgs) < maxMessages && !containsString(msgs, m) {
			msgs = append(msgs, m)
		}
	}
	for _, x := range rf.ExtendedInfos {
		if e.MessageID == "" || strings.HasSuffix(e.MessageID, "GeneralError") {
			if x.MessageID != "" {
				e.MessageID = redact.Excerpt(secrets.String(x.MessageID), maxMessageLen)
			}
		}
		add(x.Message)
	}
	if len(msgs) == 0 {
		// No Redfish error object: gofish put the raw body in Message. Keep
		// a short, single-line excerpt (HTML error pages are common).
		add(rf.Message)
	}
	e.Message = strings.Join(msgs, "; ")
	return e
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// classify turns any error met while talking to a BMC into a *bmc.Error
// with the right Kind and a message free of secrets (every form of them:
// see package redact).
func classify(op string, err error, secrets *redact.Secrets) error {
	if err == nil {
		return nil
	}
	var be *bmc.Error
	if errors.As(err, &be) {
		if secrets.String(be.Error()) == be.Error() {
			return err
		}
		return &bmc.Error{Kind: be.Kind, Op: be.Op, Err: &redactedError{msg: secrets.String(be.Err.Error()), cause: causeFor(be.Err, secrets)}}
	}
	kind, cause := kindOf(err, secrets)
	return &bmc.Error{Kind: kind, Op: op, Err: &redactedError{msg: secrets.String(cause.Error()), cause: causeFor(cause, secrets)}}
}

// kindOf classifies err and returns the error to report (gofish's raw
// errors are replaced by sanitized ones).
func kindOf(err error, secrets *redact.Secrets) (bmc.Kind, error) {
	var ce *schemas.CollectionError
	if errors.As(err, &ce) && len(ce.Failures) > 0 {
		links := make([]string, 0, len(ce.Failures))
		for l := range ce.Failures {
			links = append(links, l)
		}
		sort.Strings(links)
		kind, inner := kindOf(ce.Failures[links[0]], secrets)
		return kind, fmt.Errorf("%s: %w", links[0], inner)
	}
	switch {
	case errors.Is(err, ErrSystemIDRequired), errors.Is(err, ErrSystemNotFound):
		return bmc.KindBMCError, err
	case errors.Is(err, ErrClosed):
		return bmc.KindUnreachable, err
	}
	var he *HTTPError
	if !errors.As(err, &he) {
		var rf *schemas.Error
		if errors.As(err, &rf) {
			if rf.HTTPReturnedStatusCode == 0 {
				// gofish could not read the error body: the connection broke.
				return bmc.KindUnreachable, fmt.Errorf("reading BMC answer: %s", redact.Excerpt(secrets.String(rf.Message), maxMessageLen))
			}
			he = httpErrorFrom(rf, secrets)
			err = he
		}
	}
	if he != nil {
		switch {
		case he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden:
			return bmc.KindAuth, err
		case he.Status == http.StatusNotFound || he.Status == http.StatusMethodNotAllowed || he.Status == http.StatusNotImplemented:
			return bmc.KindUnsupported, err
		case he.Status == http.StatusBadRequest && isUnsupportedMessage(he.MessageID):
			return bmc.KindUnsupported, err
		default:
			return bmc.KindBMCError, err
		}
	}

	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return bmc.KindUnreachable, err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return bmc.KindUnreachable, err
	}
	var (
		ue   *url.Error
		ne   net.Error
		cve  *tls.CertificateVerificationError
		uae  x509.UnknownAuthorityError
		hne  x509.HostnameError
		rhe  tls.RecordHeaderError
		syn  *json.SyntaxError
		typ  *json.UnmarshalTypeError
		shap *shapeError
	)
	switch {
	case errors.As(err, &cve), errors.As(err, &uae), errors.As(err, &hne), errors.As(err, &rhe):
		return bmc.KindUnreachable, err
	case errors.As(err, &ue), errors.As(err, &ne):
		return bmc.KindUnreachable, err
	case errors.As(err, &syn), errors.As(err, &typ), errors.As(err, &shap):
		return bmc.KindBMCError, fmt.Errorf("BMC sent an unreadable answer: %w", err)
	}
	return bmc.KindBMCError, err
}

func isUnsupportedMessage(id string) bool {
	for _, m := range unsupportedMessages {
		if strings.HasSuffix(id, "."+m) || id == m {
			return true
		}
	}
	return false
}

// statusOf returns the HTTP status of a BMC answer inside err (0 if none).
func statusOf(err error) int {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Status
	}
	var rf *schemas.Error
	if errors.As(err, &rf) {
		return rf.HTTPReturnedStatusCode
	}
	return 0
}

// redactedError carries a sanitized message; its cause is kept only when it
// is known not to carry secrets (so errors.Is still sees context deadlines,
// the package's sentinels and HTTPError).
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// causeFor keeps the parts of an error chain that are safe to expose.
func causeFor(err error, secrets *redact.Secrets) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, ErrSystemIDRequired):
		return ErrSystemIDRequired
	case errors.Is(err, ErrSystemNotFound):
		return ErrSystemNotFound
	case errors.Is(err, ErrClosed):
		return ErrClosed
	case errors.Is(err, bmc.ErrNoVirtualMedia):
		return bmc.ErrNoVirtualMedia
	}
	var he *HTTPError
	if errors.As(err, &he) {
		c := *he
		c.Message = secrets.String(c.Message)
		c.MessageID = secrets.String(c.MessageID)
		return &c
	}
	return nil
}

// stripUserinfo rewrites scheme://user:pass@host to scheme://[redacted]@host
// anywhere in s.
func stripUserinfo(s string) string { return redact.Userinfo(s) }
