package store_test

import (
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// FuzzDecodeCursor: a cursor comes from the query string, so anything may
// arrive. Decoding never panics; a malformed cursor is an invalid-input
// error on "cursor"; a cursor that decodes names a non-empty key; and a
// key encoded by the store always decodes back to itself.
func FuzzDecodeCursor(f *testing.F) {
	for _, s := range []string{"", "YQ", "YQ==", "MGI2ZjlhMmUtN2MxZC00ZThmLTlhMGItMWMyZDNlNGY1YTZi", "!!", "w7wvKz0", "YR", "%00", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		key, err := store.DecodeCursor(cursor)
		switch {
		case err != nil:
			if baremetal.ErrorCode(err) != baremetal.CodeInvalid || baremetal.ErrorField(err) != "cursor" {
				t.Fatalf("DecodeCursor(%q): %v, want invalid on cursor", cursor, err)
			}
		case cursor != "" && key == "":
			t.Fatalf("DecodeCursor(%q) gave an empty key", cursor)
		}
		// Any non-empty string may be a sort key (the fuzzer's cursor
		// stands in for one here).
		if cursor != "" {
			back, err := store.DecodeCursor(store.EncodeCursor(cursor))
			if err != nil || back != cursor {
				t.Fatalf("round trip of key %q: %q, %v", cursor, back, err)
			}
		}
	})
}
