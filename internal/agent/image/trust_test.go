package image

import (
	"bytes"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The initramfs carries the trust store where Go's crypto/x509 reads the
// system's on Linux; a file that holds no certificate is refused rather
// than leave the agent trusting nothing.
func TestInitrdCarriesTheTrustStore(t *testing.T) {
	srv := httptest.NewTLSServer(nil)
	srv.Close()
	dir := t.TempDir()
	bundle := filepath.Join(dir, "ca.pem")
	pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(bundle, append([]byte("# a comment line, as in Debian's bundle\n"), pemCert...), 0o644); err != nil {
		t.Fatal(err)
	}
	const ver = "6.1.0-99-amd64"
	kernel, modDir, agentBin := fakeKernel(t, ver), fakeModules(t, ver), staticBinary(t)
	var buf bytes.Buffer
	if _, err := BuildInitrd(&buf, InitrdOptions{Agent: agentBin, Kernel: kernel, ModulesDir: modDir, CABundle: bundle}); err != nil {
		t.Fatal(err)
	}
	files, _ := readInitrd(t, buf.Bytes())
	if got := files["etc/ssl/certs/ca-certificates.crt"]; !strings.Contains(got, string(pemCert)) {
		t.Fatalf("trust store in the initramfs: %q", got)
	}
	if n, err := CABundleCount(bundle); n != 1 || err != nil {
		t.Errorf("CABundleCount = %d, %v; want 1", n, err)
	}

	buf.Reset()
	if _, err := BuildInitrd(&buf, InitrdOptions{Agent: agentBin, Kernel: kernel, ModulesDir: modDir}); err != nil {
		t.Fatal(err)
	}
	if files, _ := readInitrd(t, buf.Bytes()); files["etc/ssl/certs/ca-certificates.crt"] != "" {
		t.Error("a trust store in an initramfs built without one")
	}

	junk := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(junk, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{junk, filepath.Join(dir, "missing.pem")} {
		if _, err := BuildInitrd(&buf, InitrdOptions{Agent: agentBin, Kernel: kernel, ModulesDir: modDir, CABundle: bad}); err == nil {
			t.Errorf("BuildInitrd with CA bundle %s: no error", bad)
		}
		if _, err := ResolveCABundle(bad); err == nil || !strings.Contains(err.Error(), "CA bundle") {
			t.Errorf("ResolveCABundle(%s) = %v, want an error about the CA bundle", bad, err)
		}
	}
	// A certificate Go refuses, beside a good one: the host's bundle
	// still serves (the good one counts), an operator's file is refused
	// with the culprit named.
	mixed := filepath.Join(dir, "mixed.pem")
	if err := os.WriteFile(mixed, append(pemCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildInitrd(&buf, InitrdOptions{Agent: agentBin, Kernel: kernel, ModulesDir: modDir, CABundle: mixed}); err != nil {
		t.Errorf("BuildInitrd with one bad certificate among good ones: %v", err)
	}
	if n, err := CABundleCount(mixed); n != 1 || err != nil {
		t.Errorf("CABundleCount(mixed) = %d, %v; want 1", n, err)
	}
	if _, err := ResolveCABundle(mixed); err == nil || !strings.Contains(err.Error(), "certificate 2") {
		t.Errorf("ResolveCABundle(mixed) = %v, want certificate 2 named", err)
	}
	if got, err := ResolveCABundle("none"); got != "" || err != nil {
		t.Errorf(`ResolveCABundle("none") = %q, %v`, got, err)
	}
	_, statErr := os.Stat(DefaultCABundle)
	if got, err := ResolveCABundle("auto"); err != nil || (got == DefaultCABundle) != (statErr == nil) {
		t.Errorf(`ResolveCABundle("auto") = %q, %v (the host's bundle: %v)`, got, err, statErr)
	}
	if got, err := ResolveCABundle(bundle); got != bundle || err != nil {
		t.Errorf("ResolveCABundle(file) = %q, %v", got, err)
	}
}

// Debian's kernels are signed (shim checks that under Secure Boot); a
// kernel that is not, or is not even a PE image, gets a warning.
func TestKernelSigned(t *testing.T) {
	if w := SecureBootKernelWarning(fakeKernel(t, "6.1.0-99-amd64")); !strings.Contains(w, "not an EFI (PE) image") {
		t.Errorf("warning for a bzImage without a PE header: %q", w)
	}
	kernels, _ := filepath.Glob("/boot/vmlinuz-*")
	if len(kernels) == 0 {
		require(t, errors.New("no /boot/vmlinuz-* (apt-get install linux-image-amd64)"))
	}
	signed, err := KernelSigned(kernels[0])
	if err != nil || !signed {
		t.Fatalf("KernelSigned(%s) = %v, %v; Debian signs its kernels", kernels[0], signed, err)
	}
	if w := SecureBootKernelWarning(kernels[0]); w != "" {
		t.Errorf("warning for Debian's signed kernel: %q", w)
	}
	// The same kernel with its certificate table cut off is unsigned.
	b, err := os.ReadFile(kernels[0])
	if err != nil {
		t.Fatal(err)
	}
	peOff := int(binary.LittleEndian.Uint32(b[0x3c:]))
	// PE32+: the signature, the 20-byte file header, then the optional
	// header, whose data directories start 112 bytes in; security is
	// entry 4, 8 bytes each.
	sec := peOff + 4 + 20 + 112 + 4*8
	unsigned := slices.Clone(b)
	binary.LittleEndian.PutUint64(unsigned[sec:], 0)
	p := filepath.Join(t.TempDir(), "vmlinuz-unsigned")
	if err := os.WriteFile(p, unsigned, 0o644); err != nil {
		t.Fatal(err)
	}
	if w := SecureBootKernelWarning(p); !strings.Contains(w, "is not signed") {
		t.Errorf("warning for an unsigned kernel: %q", w)
	}
}
