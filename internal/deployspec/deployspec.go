// Package deployspec reads the deploy inputs that the API accepts and the
// deploy agent acts on: an image's checksum and the size_gb root device
// hint. The API's validation and the agent call the same parsers, so an
// input the agent would refuse is refused when the instance is created,
// with a problem naming the field, instead of failing the deploy after an
// agent boot (minutes of a machine's time).
//
// The package imports only the standard library: the agent is built from
// it into a small static /init.
package deployspec

import (
	"fmt"
	"strconv"
	"strings"
)

// The fields, as the API names them in its errors.
const (
	ChecksumField = "image.checksum"
	SizeHintField = "root_device.size_gb"
)

// Checksum is a parsed image.checksum.
type Checksum struct {
	Algo string // "md5", "sha256" or "sha512"
	Hex  string // lower case
}

func (c Checksum) String() string { return c.Algo + ":" + c.Hex }

// DigestLen is the number of hex digits of each algorithm's digest.
var DigestLen = map[string]int{"md5": 32, "sha256": 64, "sha512": 128}

// ParseChecksum reads image.checksum: a whole hex digest, optionally
// prefixed by "md5:", "sha256:" or "sha512:" (in any case). Without a
// prefix the algorithm follows from the length (32 md5, 64 sha256, 128
// sha512), as Ironic does; with one, the length must be the algorithm's.
// A length no algorithm has (40, 33) is refused rather than guessed at.
// Errors name the field and never quote more than its length.
func ParseChecksum(s string) (Checksum, error) {
	algo, digest, prefixed := strings.Cut(s, ":")
	if !prefixed {
		algo, digest = "", s
	}
	algo = strings.ToLower(algo)
	if prefixed {
		if _, known := DigestLen[algo]; !known {
			return Checksum{}, fmt.Errorf("%s algorithm %q is not md5, sha256 or sha512", ChecksumField, clip(algo))
		}
	}
	if digest == "" {
		return Checksum{}, fmt.Errorf("%s has no hex digest", ChecksumField)
	}
	if !isHex(digest) {
		return Checksum{}, fmt.Errorf("%s is not a hex digest (only the digits 0-9 and a-f, optionally prefixed by md5:, sha256: or sha512:)", ChecksumField)
	}
	if !prefixed {
		for a, n := range DigestLen {
			if n == len(digest) {
				algo = a
			}
		}
		if algo == "" {
			return Checksum{}, fmt.Errorf("%s has %d hex digits; without an md5:, sha256: or sha512: prefix it must have 32 (md5), 64 (sha256) or 128 (sha512)", ChecksumField, len(digest))
		}
	}
	if n := DigestLen[algo]; n != len(digest) {
		return Checksum{}, fmt.Errorf("%s: a %s digest has %d hex digits, not %d", ChecksumField, algo, n, len(digest))
	}
	return Checksum{Algo: algo, Hex: strings.ToLower(digest)}, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// SizeHint is size_gb: an exact size in GiB, or a least one (">= N").
type SizeHint struct {
	GiB     int64
	AtLeast bool
}

func (h SizeHint) String() string {
	if h.AtLeast {
		return fmt.Sprintf(">= %d GiB", h.GiB)
	}
	return fmt.Sprintf("%d GiB", h.GiB)
}

// MaxSizeGiB bounds size_gb: 2^33 GiB is 8 EiB, the most a byte count of
// a disk (int64) can say.
const MaxSizeGiB = 1 << 33

// ParseSizeHint reads size_gb: "100", ">= 100" or ">=100", a whole
// number of GiB from 1 to MaxSizeGiB.
func ParseSizeHint(s string) (SizeHint, error) {
	t := strings.TrimSpace(s)
	var h SizeHint
	if rest, ok := strings.CutPrefix(t, ">="); ok {
		h.AtLeast, t = true, strings.TrimSpace(rest)
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > MaxSizeGiB || strings.HasPrefix(t, "+") {
		return SizeHint{}, fmt.Errorf("%s %q is not a whole number of GiB from 1 to %d, alone (exactly that size) or after >= (at least that size)", SizeHintField, clip(s), int64(MaxSizeGiB))
	}
	h.GiB = n
	return h, nil
}

// clip shortens a value quoted in an error.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return strings.ToValidUTF8(s[:40], "") + "…"
}
