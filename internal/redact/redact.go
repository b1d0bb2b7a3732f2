// Package redact removes credentials from text that came back from a BMC
// (or quotes what we sent one) before the text is kept anywhere: an error,
// a node's last_error, an event, a job's error, a log line.
//
// BMCs echo requests in their error bodies, and a request carries its
// secrets in more than one spelling: the password as is in a session
// login and in URL userinfo, JSON-escaped in the login body (Go escapes
// < > & as \u003c \u003e \u0026), inside the base64 of "user:password" in
// an Authorization: Basic header; the session token in X-Auth-Token; a
// config drive key or an agent boot key in a virtual media URL. A BMC may then re-encode its
// echo once more (JSON inside a JSON message, a URL-encoded form), and the
// store JSON-escapes the result again. So a Secrets hides every value in
// each of those forms, and a few rules hide credentials by position (an
// Authorization or X-Auth-Token header, a password field, URL userinfo,
// config drive and agent boot keys) whatever their value.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/safetext"
)

// Mask replaces what is hidden.
const Mask = "[redacted]"

// MinLen is the shortest value looked for as such: shorter ones would
// shred the message (and are no secret anyway). Their Basic credentials
// are long enough, and the position rules hide them in headers and fields.
const MinLen = 4

// Secrets hides a set of values in every form they may take. It is
// immutable, so safe for concurrent use; a nil *Secrets applies the rules
// only. The forms and their replacer are made at the first String, not
// by New and With: most Secrets (one per BMC connection and session)
// never redact anything, and the forms of three values are ~150 strings.
type Secrets struct {
	values []string
	once   sync.Once
	r      *strings.Replacer // every form of every value -> Mask; nil for none
}

// New returns Secrets hiding values (empty and short ones are ignored).
func New(values ...string) *Secrets {
	return (*Secrets)(nil).With(values...)
}

// With returns Secrets that hide values as well as s's.
func (s *Secrets) With(values ...string) *Secrets {
	out := &Secrets{}
	if s != nil {
		out.values = append(out.values, s.values...)
	}
	for _, v := range values {
		if len(v) >= MinLen {
			out.values = append(out.values, v)
		}
	}
	return out
}

// replacer returns the replacer of every form of s's values, made once.
func (s *Secrets) replacer() *strings.Replacer {
	s.once.Do(func() {
		seen := map[string]bool{}
		var forms []string
		for _, v := range s.values {
			for _, f := range Forms(v) {
				if !seen[f] && len(f) >= MinLen {
					seen[f] = true
					forms = append(forms, f)
				}
			}
		}
		if len(forms) == 0 {
			return
		}
		// A Replacer tries its pairs in order at each position: longest
		// first, so a form that starts with another goes whole.
		sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
		pairs := make([]string, 0, 2*len(forms))
		for _, f := range forms {
			pairs = append(pairs, f, Mask)
		}
		s.r = strings.NewReplacer(pairs...)
	})
	return s.r
}

// Basic returns what an Authorization: Basic header carries for user and
// password: the base64 of "user:password". Hide it with the password.
func Basic(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// Forms returns the spellings of v that text may contain: v, URL query
// and path escaped, JSON-escaped (HTML-safe as Go writes it, plain, ASCII
// only as Python writes it, with escaped slashes as PHP writes it), each
// of those escaped once more, and each with its hex escapes in the other
// case (%2f, \u003C).
func Forms(v string) []string {
	one := func(s string) []string {
		return []string{url.QueryEscape(s), url.PathEscape(s),
			jsonString(s, true), jsonString(s, false), jsonASCII(s, true), jsonASCII(s, false),
			strings.ReplaceAll(jsonString(s, false), "/", `\/`)}
	}
	out := []string{v}
	first := one(v)
	out = append(out, first...)
	for _, f := range first {
		out = append(out, one(f)...)
	}
	for _, f := range out {
		lo := pctHex.ReplaceAllStringFunc(f, strings.ToLower)
		up := uHex.ReplaceAllStringFunc(f, upperHex)
		both := uHex.ReplaceAllStringFunc(lo, upperHex)
		for _, x := range []string{lo, up, both} {
			if x != f {
				out = append(out, x)
			}
		}
	}
	return out
}

var (
	pctHex = regexp.MustCompile(`%[0-9A-F]{2}`)
	uHex   = regexp.MustCompile(`\\u[0-9a-f]{4}`)
)

// upperHex turns \u003c into \u003C (the u stays: \U is no JSON escape).
func upperHex(m string) string { return `\u` + strings.ToUpper(m[2:]) }

// jsonString is s JSON-escaped, without the quotes.
func jsonString(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s) // a string always encodes
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

// jsonASCII is s JSON-escaped with every non-ASCII rune as \uXXXX.
func jsonASCII(s string, html bool) string {
	var b strings.Builder
	for _, r := range jsonString(s, html) {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// The position rules. A credential token ends at a space, a quote, a
// backslash (an escaped quote) or a separator.
const tokenChars = `[^\s"'\\,;&<>()\[\]{}]+`

var rules = []struct {
	re   *regexp.Regexp
	repl string
}{
	// Authorization: Basic xxx / "Authorization":"Bearer xxx" / escaped.
	{regexp.MustCompile(`(?i)((?:proxy-)?authorization[\\"']*\s*[:=]\s*[\\"']*\s*(?:(?:basic|bearer|negotiate|token)\s+)?)` + tokenChars), "${1}" + Mask},
	// Redfish session tokens, in a header dump or a JSON document.
	{regexp.MustCompile(`(?i)(x-auth-token[\\"']*\s*[:=]\s*[\\"']*\s*)` + tokenChars), "${1}" + Mask},
	// "Password": "...", with JSON escapes inside the value.
	{regexp.MustCompile(`(?i)("[\w-]*(?:password|passwd)"\s*:\s*")(?:[^"\\]|\\.)*"`), "${1}" + Mask + `"`},
	// The same field inside a JSON string: \"Password\":\"...\".
	{regexp.MustCompile(`(?i)(\\+"[\w-]*(?:password|passwd)\\+"\s*:\s*\\+")(?:[^"\\]|\\[^"])*\\+"`), "${1}" + Mask + `\"`},
	// password=... in a form or a query.
	{regexp.MustCompile(`(?i)(\b[\w-]*(?:password|passwd)=)[^\s&"'\\]*`), "${1}" + Mask},
	{configDriveKey, "${1}REDACTED"},
	{agentBootKey, "${1}REDACTED"},
}

// slash is a URL path's slash as is, URL-encoded (once or more) or
// JSON-escaped (once or more), as BMCs quote the URLs they were given.
const slash = `(?:/|%(?:25)*2f|\\+/|\\+u002f)`

// configDriveKey is a config drive key in its URL (see api.ConfigDrivePath).
// The key fetches the drive, which holds the instance's ready token and
// user data.
var configDriveKey = regexp.MustCompile(`(?i)(config-drive` + slash + `)[0-9a-f]{16,}`)

// agentBootKey is an agent boot key in its URL (see api.AgentBootPath:
// agent/boot/<node id>/<key>/agent.iso). The key fetches the agent's ISO
// or initramfs, which carry that boot's agent token.
var agentBootKey = regexp.MustCompile(`(?i)(agent` + slash + `boot` + slash + `[0-9a-f-]{1,64}` + slash + `)[0-9a-f]{16,}`)

// String returns text with every form of s's values, and every credential
// the rules find (config drive and agent boot keys among them), replaced
// by Mask or REDACTED; URL userinfo becomes Mask too.
func (s *Secrets) String(text string) string {
	if s != nil {
		if r := s.replacer(); r != nil {
			text = r.Replace(text)
		}
	}
	for _, r := range rules {
		text = r.re.ReplaceAllString(text, r.repl)
	}
	return Userinfo(text)
}

// Text applies the rules only (no known values).
func Text(text string) string { return (*Secrets)(nil).String(text) }

// ConfigDriveKeys hides config drive keys in text, in every spelling of
// their URL.
func ConfigDriveKeys(text string) string {
	return configDriveKey.ReplaceAllString(text, "${1}REDACTED")
}

// Userinfo rewrites scheme://user:pass@host to scheme://[redacted]@host
// anywhere in s.
func Userinfo(s string) string {
	out := s
	for i := 0; ; {
		j := strings.Index(out[i:], "://")
		if j < 0 {
			return out
		}
		start := i + j + 3
		end := start
		for end < len(out) && !strings.ContainsRune("/?# \t\r\n\"'\\", rune(out[end])) {
			end++
		}
		if at := strings.LastIndexByte(out[start:end], '@'); at >= 0 {
			out = out[:start] + Mask + out[start+at:]
			end = start + len(Mask) + (end - start - at)
		}
		i = end
	}
}

// Excerpt returns s on one line (runs of white space become one space),
// cut to at most n bytes on a rune boundary, "..." marking a cut. Redact
// before cutting: a cut secret is no longer found.
func Excerpt(s string, n int) string {
	// What a BMC says is stored as text and shown on terminals: invalid
	// UTF-8 becomes U+FFFD and control characters (NUL, which PostgreSQL
	// refuses in text; a terminal's escape sequences) are escaped
	// visibly, safetext's policy for all text from outside, so a garbled
	// or hostile answer can neither make the node's write fail nor take
	// over the terminal of whoever reads it.
	s = strings.Join(strings.Fields(safetext.Line(s)), " ")
	if len(s) <= n {
		return s
	}
	cut := max(n-3, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
