package redact

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

const pw = `P4ss<w0rd>&"q\ 50%/+:é'x`

// jsonEsc is how Go's encoding/json writes s inside a string.
func jsonEsc(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestEveryForm(t *testing.T) {
	t.Parallel()
	s := New(pw, Basic("admin", pw), "tok-0123456789abcdef")
	for name, form := range map[string]string{
		"plain":             pw,
		"query":             url.QueryEscape(pw),
		"path":              url.PathEscape(pw),
		"query, lower hex":  pctHex.ReplaceAllStringFunc(url.QueryEscape(pw), strings.ToLower),
		"json (html-safe)":  jsonEsc(pw),
		"json (plain)":      strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(jsonEsc(pw)),
		"json (ascii)":      strings.ReplaceAll(jsonEsc(pw), "é", `\u00e9`),
		"json (python)":     `P4ss<w0rd>&\"q\\ 50%/+:\u00e9'x`,
		"json (upper hex)":  strings.NewReplacer(`\u003c`, `\u003C`, `\u003e`, `\u003E`).Replace(jsonEsc(pw)),
		"json in json":      jsonEsc(jsonEsc(pw)),
		"json, url-encoded": url.QueryEscape(jsonEsc(pw)),
		"basic":             base64.StdEncoding.EncodeToString([]byte("admin:" + pw)),
		"token":             "tok-0123456789abcdef",
	} {
		in := "HTTP 400 Bad Request: Base.1.8.PropertyValueFormatError: the value " + form + " of Password is wrong"
		got := s.String(in)
		if strings.Contains(got, form) {
			t.Errorf("%s: not hidden: %q", name, got)
		}
		if !strings.Contains(got, "HTTP 400 Bad Request: Base.1.8.PropertyValueFormatError: the value "+Mask+" of Password is wrong") {
			t.Errorf("%s: the useful part is lost: %q", name, got)
		}
	}
}

// bootKey is an agent boot key as baremetal.AgentBootKey makes them: 64
// hex digits.
const bootKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"Authorization: Basic Zm9vOmJhcg==\nConnection: close", "Authorization: Basic " + Mask + "\nConnection: close"},
		{`{"Authorization":"Bearer abc.def"}`, `{"Authorization":"Bearer ` + Mask + `"}`},
		{`X-Auth-Token: 1f2e3d4c5b6a`, `X-Auth-Token: ` + Mask},
		{`{\"X-Auth-Token\":\"1f2e3d4c\"}`, `{\"X-Auth-Token\":\"` + Mask + `\"}`},
		{`{"UserName":"root","Password":"x\"y\u003cz"}`, `{"UserName":"root","Password":"` + Mask + `"}`},
		{`message: {\"Password\":\"abc\\u003c\"} rejected`, `message: {\"Password\":\"` + Mask + `\"} rejected`},
		{"form UserName=root&Password=a%2Fb&x=1", "form UserName=root&Password=" + Mask + "&x=1"},
		{"GET https://root:calvin@10.0.0.5/redfish/v1 failed", "GET https://" + Mask + "@10.0.0.5/redfish/v1 failed"},
		{"cannot fetch http://c/v1/instances/i/config-drive/0123456789abcdef0123/config-2.iso", "cannot fetch http://c/v1/instances/i/config-drive/REDACTED/config-2.iso"},
		{"Image=http%3A%2F%2Fc%2Fconfig-drive%2F0123456789abcdef0123%2Fconfig-2.iso", "Image=http%3A%2F%2Fc%2Fconfig-drive%2FREDACTED%2Fconfig-2.iso"},
		{"Image=http%253A%252F%252Fc%252Fconfig-drive%252f0123456789abcdef0123", "Image=http%253A%252F%252Fc%252Fconfig-drive%252fREDACTED"},
		{`{"Image":"http:\/\/c\/config-drive\/0123456789abcdef0123\/config-2.iso"}`, `{"Image":"http:\/\/c\/config-drive\/REDACTED\/config-2.iso"}`},
		{`"http:\u002f\u002fc\u002fconfig-drive\u002f0123456789ABCDEF0123"`, `"http:\u002f\u002fc\u002fconfig-drive\u002fREDACTED"`},
		// Agent boot keys (api.AgentBootPath): the key fetches the agent
		// ISO, which carries the boot's agent token.
		{"InsertMedia failed: cannot fetch https://c:8443/v1/agent/boot/6f1c2d3e-0000-4000-8000-00000000abcd/" + bootKey + "/agent.iso: 404",
			"InsertMedia failed: cannot fetch https://c:8443/v1/agent/boot/6f1c2d3e-0000-4000-8000-00000000abcd/REDACTED/agent.iso: 404"},
		{"Image=https%3A%2F%2Fc%2Fv1%2Fagent%2Fboot%2F6f1c2d3e-0000-4000-8000-00000000abcd%2F" + bootKey + "%2Fagent.iso",
			"Image=https%3A%2F%2Fc%2Fv1%2Fagent%2Fboot%2F6f1c2d3e-0000-4000-8000-00000000abcd%2FREDACTED%2Fagent.iso"},
		{"Image=https%253A%252F%252Fc%252Fv1%252Fagent%252fboot%252f6f1c2d3e-0000-4000-8000-00000000abcd%252f" + bootKey,
			"Image=https%253A%252F%252Fc%252Fv1%252Fagent%252fboot%252f6f1c2d3e-0000-4000-8000-00000000abcd%252fREDACTED"},
		{`{"Image":"https:\/\/c\/v1\/agent\/boot\/6f1c2d3e-0000-4000-8000-00000000abcd\/` + bootKey + `\/agent.iso"}`,
			`{"Image":"https:\/\/c\/v1\/agent\/boot\/6f1c2d3e-0000-4000-8000-00000000abcd\/REDACTED\/agent.iso"}`},
		{`"https:\u002f\u002fc\u002fv1\u002fagent\u002fboot\u002f6f1c2d3e-0000-4000-8000-00000000abcd\u002f` + strings.ToUpper(bootKey) + `"`,
			`"https:\u002f\u002fc\u002fv1\u002fagent\u002fboot\u002f6f1c2d3e-0000-4000-8000-00000000abcd\u002fREDACTED"`},
		// Nothing to hide: unchanged.
		{"HTTP 503 Service Unavailable: Base.1.8.ServiceTemporarilyUnavailable", "HTTP 503 Service Unavailable: Base.1.8.ServiceTemporarilyUnavailable"},
		{"authorization failed for user root", "authorization failed for user root"},
	} {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	if got := ConfigDriveKeys("/config-drive%2F0123456789abcdef0123"); got != "/config-drive%2FREDACTED" {
		t.Errorf("ConfigDriveKeys = %q", got)
	}
}

func TestShortAndEmpty(t *testing.T) {
	t.Parallel()
	s := New("", "abc")
	if got := s.String("user abc"); got != "user abc" {
		t.Errorf("a 3-byte secret was hidden: %q", got)
	}
	// ... but not its Basic credentials.
	b := Basic("root", "abc")
	if got := New(b).String("Basic " + b); strings.Contains(got, b) {
		t.Errorf("Basic of a short password shown: %q", got)
	}
	var nilSecrets *Secrets
	if got := nilSecrets.With("secret").String("a secret b"); got != "a "+Mask+" b" {
		t.Errorf("With on nil = %q", got)
	}
	// With keeps the old values.
	if got := New("first-secret").With("second-secret").String("first-secret second-secret"); got != Mask+" "+Mask {
		t.Errorf("With = %q", got)
	}
}

func TestExcerpt(t *testing.T) {
	t.Parallel()
	if got := Excerpt("a\n  b\tc", 10); got != "a b c" {
		t.Errorf("Excerpt = %q", got)
	}
	// A garbled BMC answer must stay storable text (PostgreSQL refuses NUL
	// and invalid UTF-8 in text columns), and a hostile one must not take
	// over a terminal: control characters are escaped visibly.
	if got := Excerpt("err\x00or \xff\xfe\x1b[31mred", 100); got != "err\\u0000or \uFFFD\\u001b[31mred" || !utf8.ValidString(got) {
		t.Errorf("Excerpt of control characters and invalid UTF-8 = %q", got)
	}
	if got := Excerpt("HTTP 500: \x1b]0;owned\a\x1b[2J", 100); got != `HTTP 500: \u001b]0;owned\u0007\u001b[2J` {
		t.Errorf("Excerpt of a terminal escape = %q", got)
	}
	long := strings.Repeat("é", 100) // 200 bytes
	got := Excerpt(long, 50)
	if len(got) > 50 || !utf8.ValidString(got) || !strings.HasSuffix(got, "...") {
		t.Errorf("Excerpt(long, 50) = %q (%d bytes)", got, len(got))
	}
}
