package disk

import (
	"crypto/md5"
	"crypto/sha256"
	"crypto/sha512"
	"hash"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/deployspec"
)

// Checksum is a parsed image.checksum (deployspec.ParseChecksum, the
// parser the API validates it with).
type Checksum = deployspec.Checksum

func newHash(c Checksum) hash.Hash {
	switch c.Algo {
	case "md5":
		return md5.New()
	case "sha512":
		return sha512.New()
	default:
		return sha256.New()
	}
}

// ParseChecksum reads the API's image.checksum with the API's own parser
// (deployspec.ParseChecksum), so the API never accepts a checksum the
// agent refuses; a refusal is the user's input (checksum_invalid).
func ParseChecksum(s string) (Checksum, error) {
	c, err := deployspec.ParseChecksum(s)
	if err != nil {
		return Checksum{}, inputErr(CodeChecksumInvalid, nil, "%v", err)
	}
	return c, nil
}
