package app

import (
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadAgentCA(t *testing.T) {
	srv := httptest.NewTLSServer(nil)
	srv.Close()
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := readAgentCA(""); got != "" || err != nil {
		t.Fatalf("no file: %q %v", got, err)
	}
	if got, err := readAgentCA(write("ca.pem", cert)); err != nil || got != string(cert) {
		t.Fatalf("a CA file: %q %v", got, err)
	}
	for name, c := range map[string]struct {
		body []byte
		want string
	}{
		"empty.pem": {nil, "no PEM certificate"},
		"key.pem":   {append(append([]byte{}, cert...), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})...), "never a private key"},
		"junk.pem":  {pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}), "certificate 1"},
	} {
		if _, err := readAgentCA(write(name, c.body)); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--agent-ca-file") {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if _, err := readAgentCA(filepath.Join(dir, "missing.pem")); err == nil || !strings.Contains(err.Error(), "--agent-ca-file") {
		t.Errorf("a missing file: %v", err)
	}
}
