package store

// Helpers shared by the sqlite and postgres implementations, so both give
// the same cursors, page sizes, timestamps and error messages.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// DefaultPageLimit is the page size when a Page has no Limit.
const DefaultPageLimit = 100

// PageLimit returns the effective page size for a requested limit: the
// default when limit <= 0, at most MaxPageLimit.
func PageLimit(limit int) int {
	switch {
	case limit <= 0:
		return DefaultPageLimit
	case limit > MaxPageLimit:
		return MaxPageLimit
	}
	return limit
}

// EncodeCursor makes an opaque cursor from the sort key of the last item
// of a page. Clients must not parse it: the encoding may change.
func EncodeCursor(key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(key))
}

// DecodeCursor returns the sort key in a cursor made by EncodeCursor; ""
// decodes to "" (the first page). A malformed cursor is CodeInvalid on
// field "cursor", and so is one whose key no store could hold (see
// Storable): it was not made by EncodeCursor from a stored key.
func DecodeCursor(cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	key, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(key) == 0 || !Storable(string(key)) {
		return "", errBadCursor
	}
	return string(key), nil
}

var errBadCursor = &baremetal.Error{Code: baremetal.CodeInvalid, Field: "cursor",
	Message: "malformed cursor; pass back the next_cursor of a previous page unchanged"}

// DecodeIDCursor is DecodeCursor for lists ordered by id: the key must be
// an id as the stores make them (a lowercase UUID). Without this check a
// made-up cursor would silently give an arbitrary, often empty, page.
func DecodeIDCursor(cursor string) (string, error) {
	key, err := DecodeCursor(cursor)
	if err != nil || key == "" {
		return key, err
	}
	if id, err := uuid.Parse(key); err != nil || id.String() != key {
		return "", errBadCursor
	}
	return key, nil
}

// Storable reports whether every s can be stored as text by both stores:
// valid UTF-8 without NUL. PostgreSQL refuses anything else with an
// error, where SQLite stores it. Lookups by such a key find nothing (no
// row can hold it), so the stores answer "not found" or an empty list
// without asking the database, and both stores give the same answer.
func Storable(s ...string) bool {
	for _, v := range s {
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return false
		}
	}
	return true
}

// TimePrecision is the resolution of every stored timestamp. PostgreSQL
// keeps microseconds, so the SQLite store truncates to the same: a value
// reads back identical from either database. All stored times are UTC.
const TimePrecision = time.Microsecond

// Timestamp normalizes t the way the stores store it: UTC, truncated to
// TimePrecision, monotonic clock reading stripped.
func Timestamp(t time.Time) time.Time {
	return t.UTC().Truncate(TimePrecision)
}

// Now is the current time as a store would save it.
func Now() time.Time { return Timestamp(time.Now()) }

// TimestampPtr normalizes *t, returning a new pointer (nil stays nil).
func TimestampPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := Timestamp(*t)
	return &v
}

// NotFound is the error for a missing row: kind "node", key as asked.
func NotFound(kind, key string) error {
	return &baremetal.Error{Code: baremetal.CodeNotFound, Message: fmt.Sprintf("%s %q not found", kind, key)}
}

// StaleVersion is the error for a write whose version is not the stored
// one, i.e. someone else wrote the row since the caller read it.
func StaleVersion(kind string, given, stored int64) error {
	return &baremetal.Error{
		Code:    baremetal.CodeConflict,
		Field:   "version",
		Message: fmt.Sprintf("%s was modified concurrently (version %d, stored %d)", kind, given, stored),
	}
}

// Duplicate is the error for a unique violation on field.
func Duplicate(field, message string, cause error) error {
	return &baremetal.Error{Code: baremetal.CodeConflict, Field: field, Message: message, Err: cause}
}

// TrimPage cuts a list fetched with limit+1 rows (the extra row tells
// whether another page exists) to limit, and returns the cursor of the
// next page ("" at the end).
func TrimPage[T any](list []T, limit int, key func(T) string) ([]T, string) {
	if len(list) <= limit {
		return list, ""
	}
	list = list[:limit]
	return list, EncodeCursor(key(list[limit-1]))
}

// ErrUnavailable is in the chain of every error that says the database
// could not be reached (see Unavailable): errors.Is(err, ErrUnavailable).
var ErrUnavailable = errors.New("database unreachable")

// Unavailable is the error for an operation that failed because the
// database could not be reached: the server is down, restarting, refusing
// connections, or the connection broke. It is CodeUnavailable (a 503 that
// tells the client to retry) rather than an internal error: nothing is
// wrong with the request, and the same request succeeds once the database
// is back. op names the operation ("postgres: get token"); cause is kept
// for the logs, never shown to clients.
func Unavailable(op string, cause error) error {
	return &baremetal.Error{
		Code:    baremetal.CodeUnavailable,
		Message: "the database is unreachable; retry later",
		Err:     &unavailableError{op: op, cause: cause},
	}
}

// IsUnavailable reports whether err says the database could not be
// reached.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// UnavailableCause returns the error in err's chain that says which
// operation found the database unreachable and why (for logs: the
// *baremetal.Error around it shows only the client-safe message), or err
// itself when there is none.
func UnavailableCause(err error) error {
	var u *unavailableError
	if errors.As(err, &u) {
		return u
	}
	return err
}

type unavailableError struct {
	op    string
	cause error
}

func (e *unavailableError) Error() string   { return e.op + ": database unreachable: " + e.cause.Error() }
func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.cause} }

// EncodeNetbootIDs is the stored form of an agent session's netboot ids:
// space-separated and space-framed (" a b "), so that NetbootIDPattern
// finds one with LIKE in either dialect. Ids are baremetal.NetbootIDs
// forms (no spaces, no LIKE wildcards); others are dropped.
func EncodeNetbootIDs(ids []string) string {
	var b strings.Builder
	for _, id := range ids {
		if baremetal.ValidNetbootID(id) {
			b.WriteString(" " + id)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return b.String() + " "
}

// DecodeNetbootIDs reverses EncodeNetbootIDs (none: nil).
func DecodeNetbootIDs(s string) []string {
	if ids := strings.Fields(s); len(ids) > 0 {
		return ids
	}
	return nil
}

// NetbootIDPattern is the LIKE pattern that finds id among encoded ids.
// An id not in a valid form matches nothing (a wildcard in it must not
// match other sessions).
func NetbootIDPattern(id string) string {
	if !baremetal.ValidNetbootID(id) {
		return " "
	}
	return "% " + id + " %"
}

// RiverRunningNodeIndex indexes River's running jobs by the node_id of
// their args: every mutating job, when it starts, looks for another
// running job of its node (jobs.busyNode, whose predicates it matches:
// state = 'running' and args ->> 'node_id'). Without it that look reads
// every running job's row, a cost that grows with the workers. It is
// ours on River's table, so both stores create it after River's
// migrations, at every start: a River migration that rebuilt the table
// would have dropped it. The same text serves SQLite (JSONB args) and
// PostgreSQL (jsonb args).
const RiverRunningNodeIndex = `CREATE INDEX IF NOT EXISTS baremetal_river_job_running_node
	ON river_job ((args ->> 'node_id')) WHERE state = 'running'`
