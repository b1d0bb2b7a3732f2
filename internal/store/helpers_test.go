package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

func TestPageLimit(t *testing.T) {
	for in, want := range map[int]int{-1: 100, 0: 100, 1: 1, 100: 100, 1000: 1000, 1001: 1000} {
		if got := store.PageLimit(in); got != want {
			t.Errorf("PageLimit(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestCursorRoundTrip(t *testing.T) {
	for _, key := range []string{"a", "0b6f9a2e-7c1d-4e8f-9a0b-1c2d3e4f5a6b", "42", "ü/+="} {
		c := store.EncodeCursor(key)
		got, err := store.DecodeCursor(c)
		if err != nil || got != key {
			t.Errorf("DecodeCursor(EncodeCursor(%q)) = %q, %v", key, got, err)
		}
	}
	if got, err := store.DecodeCursor(""); got != "" || err != nil {
		t.Errorf(`DecodeCursor("") = %q, %v`, got, err)
	}
	_, err := store.DecodeCursor("not base64!")
	if !baremetal.IsCode(err, baremetal.CodeInvalid) || baremetal.ErrorField(err) != "cursor" {
		t.Errorf("malformed cursor: %v", err)
	}
}

func TestTimestamp(t *testing.T) {
	in := time.Date(2030, 1, 1, 5, 0, 0, 999999999, time.FixedZone("X", 3600))
	got := store.Timestamp(in)
	if got.Location() != time.UTC || got.Nanosecond() != 999999000 || !got.Equal(in.Truncate(time.Microsecond)) {
		t.Errorf("Timestamp(%v) = %v", in, got)
	}
	if store.TimestampPtr(nil) != nil {
		t.Error("TimestampPtr(nil) != nil")
	}
}

func TestTrimPage(t *testing.T) {
	key := func(s string) string { return s }
	if got, next := store.TrimPage([]string{"a", "b"}, 2, key); len(got) != 2 || next != "" {
		t.Fatalf("last page: %v %q", got, next)
	}
	got, next := store.TrimPage([]string{"a", "b", "c"}, 2, key)
	if len(got) != 2 || next == "" {
		t.Fatalf("full page: %v %q", got, next)
	}
	if after, err := store.DecodeCursor(next); err != nil || after != "b" {
		t.Fatalf("cursor decodes to %q, %v; want b", after, err)
	}
}

func TestUnavailable(t *testing.T) {
	cause := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	err := fmt.Errorf("list jobs: %w", store.Unavailable("postgres: get token", cause))
	if !store.IsUnavailable(err) || !baremetal.IsCode(err, baremetal.CodeUnavailable) || !errors.Is(err, cause) {
		t.Fatalf("Unavailable: %v", err)
	}
	if msg := baremetal.ErrorMessage(err); strings.Contains(msg, "refused") {
		t.Errorf("the client-safe message shows the cause: %q", msg)
	}
	if got := store.UnavailableCause(err).Error(); got != "postgres: get token: database unreachable: "+cause.Error() {
		t.Errorf("UnavailableCause: %q", got)
	}
	if store.IsUnavailable(cause) || store.UnavailableCause(cause) != cause {
		t.Error("a plain error is not an outage")
	}
}
