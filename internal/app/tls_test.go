package app_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/app"
)

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, certPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "baremetal-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, certPEM
}

// TestServeTLS: with a certificate the API is HTTPS only; a client that
// trusts the CA works, one that does not is refused.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, certPEM := selfSigned(t, dir)
	cfg := app.Defaults()
	cfg.Listen, cfg.DataDir = "127.0.0.1:0", dir
	cfg.BootstrapToken = "bmt_tls-test-admin-token"
	cfg.TLSCertFile, cfg.TLSKeyFile = certFile, keyFile
	cfg.PowerSyncInterval = 0
	a, err := app.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop(context.Background()) })
	if !strings.HasPrefix(a.URL(), "https://") {
		t.Fatalf("URL %s, want https", a.URL())
	}
	ctx := context.Background()
	trusted, err := apiclient.New(a.URL(), apiclient.Options{Token: cfg.BootstrapToken, CAPEM: certPEM})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trusted.ListNodes(ctx, apiclient.NodeFilter{}); err != nil {
		t.Fatalf("client trusting the CA: %v", err)
	}
	untrusted, err := apiclient.New(a.URL(), apiclient.Options{Token: cfg.BootstrapToken, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusted.ListNodes(ctx, apiclient.NodeFilter{}); err == nil {
		t.Fatal("a client not trusting the certificate connected")
	}
	plain, err := apiclient.New(strings.Replace(a.URL(), "https://", "http://", 1), apiclient.Options{Token: cfg.BootstrapToken, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.ListNodes(ctx, apiclient.NodeFilter{}); err == nil {
		t.Fatal("plain HTTP was answered on the TLS port")
	}

	cfg2 := cfg
	cfg2.DataDir, cfg2.TLSKeyFile = t.TempDir(), ""
	if _, err := app.Start(ctx, cfg2); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Fatalf("cert without key: %v", errors.Unwrap(err))
	}
}
