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
// one, else none; "none" none; anything else a PEM file that must hold at
// least one certificate.
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
	return choice, nil
}

// readCABundle reads a PEM trust store and counts its certificates: a
// file without any (a key, a DER file, the wrong path) would leave the
// agent trusting nothing while the operator thinks otherwise.
func readCABundle(path string) ([]byte, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("CA bundle: %w", err)
	}
	n, rest := 0, b
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return nil, 0, fmt.Errorf("CA bundle %s: certificate %d: %w", path, n+1, err)
		}
		n++
	}
	if n == 0 {
		return nil, 0, errors.New("CA bundle " + path + " holds no PEM certificate")
	}
	return b, n, nil
}

// CABundleCount is the number of certificates in a PEM trust store.
func CABundleCount(path string) (int, error) {
	_, n, err := readCABundle(path)
	return n, err
}
