package deployspec

import (
	"strings"
	"testing"
)

func TestParseChecksum(t *testing.T) {
	h := func(n int) string { return strings.Repeat("aB", n)[:n] }
	for in, want := range map[string]Checksum{
		"sha256:" + h(64):  {"sha256", strings.ToLower(h(64))},
		"SHA512:" + h(128): {"sha512", strings.ToLower(h(128))},
		h(32):              {"md5", strings.ToLower(h(32))},
		h(64):              {"sha256", strings.ToLower(h(64))},
		h(128):             {"sha512", strings.ToLower(h(128))},
		"md5:" + h(32):     {"md5", strings.ToLower(h(32))},
	} {
		if got, err := ParseChecksum(in); err != nil || got != want {
			t.Errorf("ParseChecksum(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	// Issue #26 item 24's examples, and their kin: each refused, naming
	// the field and saying why.
	for in, why := range map[string]string{
		"sha256:" + h(40):  "a sha256 digest has 64 hex digits, not 40",
		h(40):              "has 40 hex digits; without an md5:, sha256: or sha512: prefix",
		"md5:" + h(64):     "a md5 digest has 32 hex digits, not 64",
		h(33):              "has 33 hex digits",
		"":                 "has no hex digest",
		"sha256:":          "has no hex digest",
		"sha1:" + h(40):    `algorithm "sha1"`,
		":" + h(64):        `algorithm ""`,
		"sha256:" + "zz":   "is not a hex digest",
		h(63) + "g":        "is not a hex digest",
		"sha256: " + h(64): "is not a hex digest",
	} {
		_, err := ParseChecksum(in)
		if err == nil || !strings.Contains(err.Error(), why) || !strings.HasPrefix(err.Error(), ChecksumField) {
			t.Errorf("ParseChecksum(%q) = %v; want an error on %s saying %q", in, err, ChecksumField, why)
		}
	}
}

func TestParseSizeHint(t *testing.T) {
	for in, want := range map[string]SizeHint{
		"100": {GiB: 100}, " >= 100 ": {GiB: 100, AtLeast: true}, ">=8": {GiB: 8, AtLeast: true}, "8589934592": {GiB: MaxSizeGiB},
	} {
		got, err := ParseSizeHint(in)
		if err != nil || got != want {
			t.Errorf("ParseSizeHint(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"banana", "-1", "<= 5", "0", "", "1.5", "> 10", ">= 0", "+5", "8589934593", "99999999999999999999", "0x10"} {
		_, err := ParseSizeHint(in)
		if err == nil || !strings.HasPrefix(err.Error(), SizeHintField+" ") {
			t.Errorf("ParseSizeHint(%q) = %v; want an error on %s", in, err, SizeHintField)
		}
	}
}
