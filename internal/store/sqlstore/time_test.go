package sqlstore

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Both forms of a stored time write UTC at microseconds (truncated, not
// rounded) and read back what they wrote; NULL reads as the zero Time.
func TestTimeForms(t *testing.T) {
	in := time.Date(2026, 12, 4, 15, 4, 5, 123456789, time.FixedZone("CET", 3600))
	want := time.Date(2026, 12, 4, 14, 4, 5, 123456000, time.UTC)

	v, err := Time(in).Value()
	if err != nil || v != "2026-12-04T14:04:05.123456Z" {
		t.Fatalf("SQLite form %v, %v", v, err)
	}
	var back Time
	if err := back.Scan(v); err != nil || !time.Time(back).Equal(want) || time.Time(back).Location() != time.UTC {
		t.Fatalf("SQLite form read back as %v, %v; want %v", time.Time(back), err, want)
	}
	if err := back.Scan([]byte("not a time")); err == nil {
		t.Error("Scan accepted text that is not a stored time")
	}
	if err := back.Scan(int64(1)); err == nil {
		t.Error("Scan accepted an integer")
	}

	tz, err := Time(in).TimestamptzValue()
	if err != nil || !tz.Valid || !tz.Time.Equal(want) {
		t.Fatalf("PostgreSQL form %+v, %v", tz, err)
	}
	back = Time{}
	if err := back.ScanTimestamptz(pgtype.Timestamptz{Time: in, Valid: true}); err != nil || time.Time(back).Location() != time.UTC {
		t.Fatalf("PostgreSQL form read back in %v, %v; want UTC", time.Time(back).Location(), err)
	}

	back = Time(in)
	if err := back.Scan(nil); err != nil || !time.Time(back).IsZero() {
		t.Errorf("NULL from SQLite: %v, %v; want the zero Time", time.Time(back), err)
	}
	back = Time(in)
	if err := back.ScanTimestamptz(pgtype.Timestamptz{}); err != nil || !time.Time(back).IsZero() {
		t.Errorf("NULL from PostgreSQL: %v, %v; want the zero Time", time.Time(back), err)
	}
}
