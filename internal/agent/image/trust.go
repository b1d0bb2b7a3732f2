package image

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// DefaultCABundle is Debian's system trust store (package ca-certificates):
// the public CAs a host trusts, one PEM file.
const DefaultCABundle = "/etc/ssl/certs/ca-certificates.crt"

// caBundlePath is where the agent's initramfs holds its trust store: the
// first file Go's crypto/x509 reads as the system's on Linux, so every
// https client of the agent (controller, image and config drive URLs)
// trusts it without configuration.
const caBundlePath = "etc/ssl/certs/ca-certificates.crt"

// ResolveCABundle turns an operator's choice into the trust store file an
// initramfs gets: "auto" (or "") the host's DefaultCABundle when there is
// one, else none; "none" none; anything else a PEM file whose every
// certificate must parse, and at least one.
func ResolveCABundle(choice string) (string, error) {
	switch choice {
	case "", "auto":
		if _, err := os.Stat(DefaultCABundle); err != nil {
			return "", nil
		}
		return DefaultCABundle, nil
	case "none":
		return "", nil
	}
	if _, _, err := readCABundle(choice); err != nil {
		return "", err
	}
	if bad := firstBadCert(choice); bad != nil {
		return "", bad
	}
	return choice, nil
}

// readCABundle reads a PEM trust store and counts the certificates Go
// accepts. One it cannot parse is passed over, as Go's own loader does
// (a host's bundle may hold a locally added CA that Go refuses: the
// host's bundle must not keep the agent from being served), but a file
// without any (a key, a DER file, the wrong path) is refused: it would
// leave the agent trusting nothing while the operator thinks otherwise.
func readCABundle(path string) ([]byte, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("CA bundle: %w", err)
	}
	n := 0
	for blk, rest := pem.Decode(b); blk != nil; blk, rest = pem.Decode(rest) {
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err == nil {
			n++
		}
	}
	if n == 0 {
		return nil, 0, errors.New("CA bundle " + path + " holds no PEM certificate")
	}
	return b, n, nil
}

// firstBadCert is the error of the first certificate of a PEM file that
// does not parse: an operator's own bundle is checked whole.
func firstBadCert(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("CA bundle: %w", err)
	}
	i := 0
	for blk, rest := pem.Decode(b); blk != nil; blk, rest = pem.Decode(rest) {
		if blk.Type != "CERTIFICATE" {
			continue
		}
		i++
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return fmt.Errorf("CA bundle %s: certificate %d: %w", path, i, err)
		}
	}
	return nil
}

// CABundleCount is the number of certificates in a PEM trust store that
// the agent will trust.
func CABundleCount(path string) (int, error) {
	_, n, err := readCABundle(path)
	return n, err
}
