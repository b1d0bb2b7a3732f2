// Package ui serves the operator dashboard at /ui/: a few static files
// (HTML, CSS, JavaScript modules) embedded in the controller binary. The
// page is a client of the public REST API like the CLI and the provider:
// it sends the user's bearer token (kept in the browser tab's session
// storage) to /v1/..., so an admin and a member see exactly what the API
// shows each of them, and the dashboard has no authorization of its own
// to get wrong.
//
// Nothing is loaded from anywhere but the controller: the Content-Security-
// Policy allows scripts, styles, images and fetches from the same origin
// only, no inline script or style, and DOM sinks that parse HTML are
// blocked by Trusted Types (the scripts build the page with
// createElement and textContent, so API data is never parsed as markup).
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is where the dashboard is mounted.
const Prefix = "/ui/"

// CSP is the Content-Security-Policy of every dashboard response.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

// ConsoleCSP is console.html's: CSP with inline styles allowed, as
// xterm.js, the console's terminal widget, sizes and colours itself with
// <style> elements and style attributes it writes. Scripts stay the
// controller's own, and Trusted Types still block HTML sinks (xterm.js
// uses none); the page shows the console's bytes through the widget,
// which writes them as text.
var ConsoleCSP = strings.Replace(CSP, "style-src 'self';", "style-src 'self' 'unsafe-inline';", 1)

// cspOf is each page's policy.
func cspOf(name string) string {
	if name == "console.html" {
		return ConsoleCSP
	}
	return CSP
}

//go:embed static
var static embed.FS

type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the dashboard's files under Prefix; /ui/ is index.html.
// The files are read once: they are part of the binary.
func Handler() http.Handler {
	files := map[string]asset{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		files[strings.TrimPrefix(p, "static/")] = asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		// The files are compiled in; failing to read them is a build bug.
		panic("ui: read embedded files: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name == "" {
			name = "index.html"
		}
		h.Set("Content-Security-Policy", cspOf(name))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		a, ok := files[name]
		if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		// Revalidated on every load (cheap: a 304 by ETag), so a
		// controller upgrade is seen at once and no tab mixes old and
		// new modules.
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Type", a.contentType)
		h.Set("ETag", a.etag)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
	})
}
