package secret_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/secret"
)

func newBox(t testing.TB, fill byte) *secret.Box {
	t.Helper()
	b, err := secret.New(bytes.Repeat([]byte{fill}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	b := newBox(t, 1)
	for _, plain := range []string{"", "hunter2", strings.Repeat("ü", 500)} {
		sealed, err := b.Seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sealed, "v1:") {
			t.Errorf("sealed %q lacks the v1: prefix", sealed)
		}
		if plain != "" && strings.Contains(sealed, plain) {
			t.Errorf("sealed value contains the plaintext")
		}
		got, err := b.Open(sealed)
		if err != nil {
			t.Fatal(err)
		}
		if got != plain {
			t.Errorf("Open = %q, want %q", got, plain)
		}
	}
}

func TestSealIsRandomized(t *testing.T) {
	t.Parallel()
	b := newBox(t, 1)
	s1, _ := b.Seal("same")
	s2, _ := b.Seal("same")
	if s1 == s2 {
		t.Error("two seals of one value are equal; the nonce is not random")
	}
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	const plain = "s3cr3t-password"
	b := newBox(t, 1)
	sealed, err := b.Seal(plain)
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(sealed)
	raw[len(raw)-3] ^= 0x01 // still base64, different bytes
	tampered := string(raw)

	cases := map[string]struct {
		box    *secret.Box
		sealed string
	}{
		"wrong key":  {newBox(t, 2), sealed},
		"tampered":   {b, tampered},
		"no prefix":  {b, strings.TrimPrefix(sealed, "v1:")},
		"v2":         {b, "v2:" + strings.TrimPrefix(sealed, "v1:")},
		"not base64": {b, "v1:!!!"},
		"too short":  {b, "v1:AAAA"},
		"plaintext":  {b, plain},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := c.box.Open(c.sealed)
			if err == nil {
				t.Fatalf("Open succeeded with %q", got)
			}
			if strings.Contains(err.Error(), plain) {
				t.Errorf("error %q contains the plaintext", err)
			}
		})
	}
}

func TestNewRejectsBadKey(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 16, 31, 33} {
		if _, err := secret.New(make([]byte, n)); err == nil {
			t.Errorf("New accepted a %d-byte key", n)
		}
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "dir", "secret.key")

	k1, err := secret.LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) != secret.KeySize {
		t.Fatalf("key is %d bytes", len(k1))
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode %o, want 600", perm)
	}
	dst, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if perm := dst.Mode().Perm(); perm != 0o700 {
		t.Errorf("key directory mode %o, want 700", perm)
	}

	k2, err := secret.LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k1, k2) {
		t.Error("second load returned a different key")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("key directory holds %d entries, want only the key (temporary file left behind?)", len(entries))
	}
}

func TestLoadOrCreateKeyFormats(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := bytes.Repeat([]byte{' '}, secret.KeySize) // raw bytes that look like whitespace
	key[0] = 7

	rawPath := filepath.Join(dir, "raw.key")
	if err := os.WriteFile(rawPath, key, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := secret.LoadOrCreateKey(rawPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, key) {
		t.Error("raw key read back differently")
	}

	hexPath := filepath.Join(dir, "hex.key")
	if err := os.WriteFile(hexPath, []byte("  "+hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = secret.LoadOrCreateKey(hexPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, key) {
		t.Error("hex key read back differently")
	}

	badPath := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(badPath, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := secret.LoadOrCreateKey(badPath); err == nil {
		t.Error("a malformed key file was accepted")
	}
	if b, _ := os.ReadFile(badPath); string(b) != "short" {
		t.Error("a malformed key file was overwritten")
	}
}

// Controllers starting together on one data directory must agree on the key.
func TestLoadOrCreateKeyRace(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secret.key")
	const n = 8
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { keys[i], errs[i] = secret.LoadOrCreateKey(path) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatal("racing creators got different keys")
		}
	}
}

// BenchmarkOpen is the cost of opening one BMC password, which every
// node read pays (a page of 100 nodes opens 100).
func BenchmarkOpen(b *testing.B) {
	box := newBox(b, 7)
	sealed, err := box.Seal("a-bmc-password-of-24-chr")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := box.Open(sealed); err != nil {
			b.Fatal(err)
		}
	}
}
