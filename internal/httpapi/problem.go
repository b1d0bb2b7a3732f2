package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// statusOf is the one table from error code to HTTP status.
var statusOf = map[baremetal.Code]int{
	baremetal.CodeInvalid:          http.StatusBadRequest,
	baremetal.CodeUnauthorized:     http.StatusUnauthorized,
	baremetal.CodeForbidden:        http.StatusForbidden,
	baremetal.CodeNotFound:         http.StatusNotFound,
	baremetal.CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	baremetal.CodeConflict:         http.StatusConflict,
	baremetal.CodePrecondition:     http.StatusPreconditionFailed,
	baremetal.CodeTooLarge:         http.StatusRequestEntityTooLarge,
	baremetal.CodeInvalidState:     http.StatusUnprocessableEntity,
	baremetal.CodeQuotaExceeded:    http.StatusForbidden,
	baremetal.CodeNoCapacity:       http.StatusConflict,
	baremetal.CodeUnavailable:      http.StatusServiceUnavailable,
	baremetal.CodeInternal:         http.StatusInternalServerError,

	baremetal.CodeBadMediaType: http.StatusUnsupportedMediaType,
}

var titleOf = map[baremetal.Code]string{
	baremetal.CodeInvalid:          "Invalid request",
	baremetal.CodeUnauthorized:     "Unauthorized",
	baremetal.CodeForbidden:        "Forbidden",
	baremetal.CodeNotFound:         "Not found",
	baremetal.CodeMethodNotAllowed: "Method not allowed",
	baremetal.CodeConflict:         "Conflict",
	baremetal.CodePrecondition:     "Precondition failed",
	baremetal.CodeTooLarge:         "Request body too large",
	baremetal.CodeInvalidState:     "Invalid state transition",
	baremetal.CodeQuotaExceeded:    "Quota exceeded",
	baremetal.CodeNoCapacity:       "No capacity",
	baremetal.CodeUnavailable:      "Service unavailable",
	baremetal.CodeInternal:         "Internal error",

	baremetal.CodeBadMediaType: "Unsupported media type",
}

// writeError answers with an RFC 9457 problem document. Internal errors are
// logged with their cause and shown only as "internal error". An
// unreachable database is a 503 with Retry-After: the request was fine and
// will succeed once the database is back.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := baremetal.ErrorCode(err)
	var be *baremetal.Error
	if !errors.As(err, &be) {
		if errors.Is(err, r.Context().Err()) && r.Context().Err() != nil {
			code = baremetal.CodeUnavailable
			err = &baremetal.Error{Code: code, Message: "request cancelled or timed out", Err: err}
		}
	}
	status, ok := statusOf[code]
	if !ok {
		status, code = http.StatusInternalServerError, baremetal.CodeInternal
	}
	p := api.Problem{
		Type:     api.ProblemTypeBase + string(code),
		Title:    titleOf[code],
		Status:   status,
		Code:     api.ProblemCode(code),
		Detail:   baremetal.ErrorMessage(err),
		Field:    baremetal.ErrorField(err),
		Instance: logPath(r),
	}
	if c := baremetal.ErrorCapacity(err); c != nil && code == baremetal.CodeNoCapacity {
		wire := capacityOut(*c)
		p.Capacity = &wire
	}
	switch {
	case store.IsUnavailable(err):
		// One line per outage, not one per request (see outage). A
		// client that hung up mid-query says nothing about the database.
		if r.Context().Err() == nil {
			s.outage.report(r.Context(), err)
		}
	case code == baremetal.CodeInternal:
		s.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", logPath(r), "err", err)
		p.Detail = "internal error; the controller log has the details"
	case status >= 500:
		s.log.WarnContext(r.Context(), "request failed", "method", r.Method, "path", logPath(r), "err", err)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="baremetal"`)
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	w.Header().Set("Content-Type", api.ProblemContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

// logAttrs never includes bodies: they may carry BMC passwords.
func logAttrs(r *http.Request, status int) []slog.Attr {
	return []slog.Attr{slog.String("method", r.Method), slog.String("path", logPath(r)), slog.Int("status", status)}
}
