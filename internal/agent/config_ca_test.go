package agent

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A controller or image server behind a private CA (one the initramfs's
// trust store does not hold) is reached only with the CA the controller
// passed in the boot's config.
func TestConfigTrustsItsCACerts(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))

	get := func(c Config) error {
		t.Helper()
		cl, err := c.HTTPClient(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
		res, err := cl.Do(req)
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	var unknown x509.UnknownAuthorityError
	if err := get(Config{}); !errors.As(err, &unknown) {
		t.Fatalf("without the CA: %v, want an unknown authority", err)
	}
	if err := get(Config{CACerts: caPEM}); err != nil {
		t.Fatalf("with the CA: %v", err)
	}

	bad := Config{API: "https://c.example", Token: "agt_x", CACerts: "not a certificate"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "ca_certs") {
		t.Fatalf("Validate of junk ca_certs: %v", err)
	}
	if _, err := bad.HTTPClient(0); err == nil {
		t.Fatal("HTTPClient took junk ca_certs")
	}
	if s := (Config{CACerts: caPEM}).String(); strings.Contains(s, "BEGIN") {
		t.Errorf("String shows the certificates: %s", s)
	}
}
