// Package secret seals secrets (BMC passwords) before they reach the
// database, so a copied database file or a database dump reveals nothing
// without the key, which lives in its own file next to the data.
//
// Sealed values are "v1:" followed by the standard base64 of
// nonce|ciphertext|tag (AES-256-GCM, 12-byte random nonce). The version
// prefix leaves room for a later algorithm or key rotation without
// guessing what an old value is.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the length of a key in bytes (AES-256).
const KeySize = 32

const prefixV1 = "v1:"

// Box seals and opens secrets with one key. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box for a KeySize-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret: key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plain. Each call uses a fresh random nonce, so sealing the
// same value twice gives different results (equal passwords on two nodes
// are not visible as equal ciphertexts).
func (b *Box) Seal(plain string) (string, error) {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plain)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("secret: seal: %w", err)
	}
	out := b.aead.Seal(nonce, nonce, []byte(plain), nil)
	return prefixV1 + base64.StdEncoding.EncodeToString(out), nil
}

// Open decrypts a value made by Seal. A wrong key or a tampered value is
// an error; the error never contains the value itself.
func (b *Box) Open(sealed string) (string, error) {
	rest, ok := strings.CutPrefix(sealed, prefixV1)
	if !ok {
		return "", errors.New("secret: open: unknown sealed format (want v1:)")
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return "", errors.New("secret: open: sealed value is not valid base64")
	}
	ns := b.aead.NonceSize()
	if len(raw) < ns+b.aead.Overhead() {
		return "", errors.New("secret: open: sealed value too short")
	}
	// Open in place: raw is ours, and a node list opens one per node.
	plain, err := b.aead.Open(raw[ns:ns], raw[:ns], raw[ns:], nil)
	if err != nil {
		// GCM's error says only "message authentication failed"; keep it
		// that terse but say what it usually means.
		return "", errors.New("secret: open: authentication failed (wrong key or corrupted value)")
	}
	return string(plain), nil
}

// LoadOrCreateKey reads the key in the file at path, or creates the file
// with a new random key when it does not exist. The file holds either
// exactly KeySize raw bytes or their hex encoding (surrounding whitespace
// allowed); a new file is written in hex, mode 0600, and its directory is
// created with mode 0700 when missing.
//
// Losing this file makes every sealed password unreadable, so it is never
// replaced: two processes racing to create it end up with the same key.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := readKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secret: create key directory: %w", err)
	}
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("secret: generate key: %w", err)
	}

	// Write a complete temporary file, then hard-link it into place: the
	// link either appears whole or fails because another process won the
	// race, so nobody ever reads a half-written key and no key is clobbered.
	tmp, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return nil, fmt.Errorf("secret: create key file: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("secret: create key file: %w", err)
	}
	if _, err := tmp.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("secret: write key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("secret: write key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("secret: write key file: %w", err)
	}
	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readKey(path)
		}
		return nil, fmt.Errorf("secret: install key file: %w", err)
	}
	return key, nil
}

func readKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("secret: read key file: %w", err)
	}
	// Raw first: a random raw key may well start or end with bytes that
	// look like whitespace, so it must not be trimmed.
	if len(data) == KeySize {
		return data, nil
	}
	text := strings.TrimSpace(string(data))
	if len(text) == 2*KeySize {
		if key, err := hex.DecodeString(text); err == nil {
			return key, nil
		}
	}
	return nil, fmt.Errorf("secret: key file %s: want %d raw bytes or %d hex characters", path, KeySize, 2*KeySize)
}
