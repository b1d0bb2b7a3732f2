package sqlstore

import (
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Time is the Go type of every timestamp column in both dialects'
// generated code (sqlc.yaml maps them to it), so that their rows are the
// same Go types. The dialects store it differently:
//
//   - SQLite keeps TEXT in TimeLayout (database/sql: Scan and Value), which
//     sorts and compares as text (next_check_at <= ?) and reads back exactly;
//   - PostgreSQL keeps timestamptz, sent and read in pgx's binary form
//     (ScanTimestamptz and TimestamptzValue, which pgx prefers to Scan and
//     Value for that type).
//
// A stored time is always UTC at store.TimePrecision: Value and
// TimestamptzValue normalize what they write, and reads come back in UTC
// (pgx would give the local zone).
type Time time.Time

// TimeLayout is the text form of a time in SQLite: fixed width, so that
// times compare as strings.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Scan reads SQLite's text form. NULL reads as the zero Time: only a
// column that may be missing from a row (a node's inspected_at, from its
// inventory) can be NULL and not be a *Time, and zero is what it means.
func (t *Time) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case nil:
		*t = Time{}
		return nil
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return fmt.Errorf("stored time: cannot scan %T", src)
	}
	p, err := time.Parse(TimeLayout, s)
	if err != nil {
		return fmt.Errorf("stored time %q: %w", s, err)
	}
	*t = Time(p)
	return nil
}

// Value writes SQLite's text form.
func (t Time) Value() (driver.Value, error) {
	return store.Timestamp(time.Time(t)).Format(TimeLayout), nil
}

// ScanTimestamptz reads PostgreSQL's timestamptz; NULL reads as the zero
// Time, as in Scan.
func (t *Time) ScanTimestamptz(v pgtype.Timestamptz) error {
	if !v.Valid {
		*t = Time{}
		return nil
	}
	*t = Time(v.Time.UTC())
	return nil
}

// TimestamptzValue writes PostgreSQL's timestamptz.
func (t Time) TimestamptzValue() (pgtype.Timestamptz, error) {
	return pgtype.Timestamptz{Time: store.Timestamp(time.Time(t)), Valid: true}, nil
}

var (
	_ pgtype.TimestamptzScanner = (*Time)(nil)
	_ pgtype.TimestamptzValuer  = Time{}
	_ driver.Valuer             = Time{}
)
