package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

func get(t *testing.T, h http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandlerServesEmbeddedFilesWithCSP(t *testing.T) {
	h := Handler()
	cases := map[string]string{
		"/ui/":            "text/html",
		"/ui/index.html":  "text/html",
		"/ui/app.js":      "javascript",
		"/ui/style.css":   "text/css",
		"/ui/favicon.svg": "image/svg+xml",
	}
	for path, ct := range cases {
		w := get(t, h, path)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, w.Code)
		}
		if got := w.Header().Get("Content-Type"); !strings.Contains(got, ct) {
			t.Errorf("GET %s: Content-Type %q, want %s", path, got, ct)
		}
		if got := w.Header().Get("Content-Security-Policy"); got != CSP {
			t.Errorf("GET %s: CSP %q", path, got)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: missing nosniff/frame headers: %v", path, w.Header())
		}
		// Revalidation by ETag: a reload costs a 304.
		etag := w.Header().Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s: no ETag", path)
		}
		if again := get(t, h, path, "If-None-Match", etag); again.Code != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match: %d, want 304", path, again.Code)
		}
	}
	for _, path := range []string{"/ui/nope.js", "/ui/static/app.js", "/ui/../ui.go"} {
		if w := get(t, h, path); w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, w.Code)
		}
	}
}

// The CSP allows nothing from elsewhere; this keeps it meaningful: no
// inline script, style or handler, and no absolute URL in any file, so
// the page works under it and loads nothing from outside the binary.
func TestFilesNeedNothingTheCSPForbids(t *testing.T) {
	inline := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]|<style|\sstyle=|\son[a-z]+=|javascript:`)
	absolute := regexp.MustCompile(`(?i)(?:src|href)=["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//|import\s*\(?\s*["'](?:https?:)?//|from\s+["'](?:https?:)?//`)
	html := regexp.MustCompile(`\.(?:innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write`)
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := static.ReadFile(p)
		s := string(b)
		if strings.HasSuffix(p, ".html") && inline.MatchString(s) {
			t.Errorf("%s has inline script, style or handler: %q", p, inline.FindString(s))
		}
		if m := absolute.FindString(s); m != "" {
			t.Errorf("%s loads from another origin: %q", p, m)
		}
		if strings.HasSuffix(p, ".js") && html.MatchString(s) {
			t.Errorf("%s parses HTML (%q): build nodes instead", p, html.FindString(s))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every module a module imports, and every file index.html names, is
// embedded: a missing one would only show in a browser.
func TestReferencedFilesExist(t *testing.T) {
	ref := regexp.MustCompile(`(?:from\s+|import\s*\(\s*)'\./([^']+)'|(?:src|href)="([^"#:]+)"`)
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := static.ReadFile(p)
		for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
			name := m[1] + m[2]
			if _, err := fs.Stat(static, "static/"+name); err != nil {
				t.Errorf("%s refers to %s, which is not embedded", p, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEveryAPIStateHasAColour: every provision state of the API has a
// colour of its own in style.css (tile, count, legend), distinct from
// every other state's and from fault and maintenance; every power,
// instance and job state has its rule. The dashboard reads the states
// from the API's document, so a state the API gains is counted and
// listed at once; this fails until it has its colour too.
func TestEveryAPIStateHasAColour(t *testing.T) {
	b, err := static.ReadFile("static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	css := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(string(b), "")
	rules := map[string]string{} // selector → declarations (of every rule naming it)
	for _, m := range regexp.MustCompile(`([^{}]+)\{([^{}]*)\}`).FindAllStringSubmatch(css, -1) {
		for _, sel := range strings.Split(m[1], ",") {
			rules[strings.TrimSpace(sel)] += m[2] + ";"
		}
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(--[\w-]+)\s*:\s*([^;]+);`).FindAllStringSubmatch(rules[":root"], -1) {
		vars[m[1]] = strings.ToLower(strings.TrimSpace(m[2]))
	}
	colourOf := func(class string) string {
		m := regexp.MustCompile(`--c\s*:\s*var\((--[\w-]+)\)`).FindStringSubmatch(rules["."+class])
		if m == nil {
			return ""
		}
		return vars[m[1]]
	}
	seen := map[string]string{colourOf("faulted"): "faulted", colourOf("maintenance"): "maintenance"}
	if len(seen) != 2 || seen[""] != "" {
		t.Fatalf("faulted and maintenance have no colours of their own: %v", seen)
	}
	for _, s := range api.ProvisionStates() {
		c := colourOf("state-" + s)
		switch {
		case c == "":
			t.Errorf("provision state %s has no colour: style.css needs .state-%s { --c: var(--%s); } and --%s in :root", s, s, s, s)
		case seen[c] != "":
			t.Errorf("provision state %s has the colour of %s (%s)", s, seen[c], c)
		default:
			seen[c] = s
		}
	}
	for _, p := range api.PowerStates() {
		if colourOf("power-"+p) == "" {
			t.Errorf("power state %s has no colour: style.css needs .power-%s { --c: var(--power-%s); }", p, p, p)
		}
	}
	for prefix, states := range map[string][]string{"inst-": api.InstanceStates(), "job-": api.JobStates()} {
		for _, s := range states {
			if !strings.Contains(rules["."+prefix+s], "background") {
				t.Errorf("state %s has no .%s%s rule with a background in style.css", s, prefix, s)
			}
		}
	}
}
