package safetext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// The payload of issue #26, item 20: it retitles and clears the terminal
// of whoever prints it raw.
const payload = "\x1b]0;owned\a\x1b[2J"

func TestLine(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"image URL http://i/x: HTTP 404 " + payload: `image URL http://i/x: HTTP 404 \u001b]0;owned\u0007\u001b[2J`,
		"plain text, é and 日本":                      "plain text, é and 日本",
		"two\nlines\tand\r a return":                "two lines and  a return",
		"nul\x00 del\x7f":                           `nul\u0000 del\u007f`,
		"c1 csi \u009b31m":                          `c1 csi \u009b31m`,
		"bidi \u202eevil\u202c":                     `bidi \u202eevil\u202c`,
		"bad \xff\xfe utf-8 \xc2":                   "bad \uFFFD utf-8 \uFFFD",
		"a real \uFFFD stays":                       "a real \uFFFD stays",
		"":                                          "",
	} {
		got := Line(in)
		if got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
		if !utf8.ValidString(got) || strings.ContainsAny(got, "\x00\x1b\x07\n\r\t\x7f\u009b") {
			t.Errorf("Line(%q) = %q: still unsafe", in, got)
		}
		if Line(got) != got || !Safe(got) {
			t.Errorf("Line is not idempotent on %q", got)
		}
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	in := "NAME\tMESSAGE\nn1\t" + payload + "\rfake\n"
	want := "NAME\tMESSAGE\nn1\t" + `\u001b]0;owned\u0007\u001b[2J\u000dfake` + "\n"
	if got := Text(in); got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	// JSON output stays valid JSON with the same value: the encoder
	// leaves DEL and C1 raw, Text writes them as JSON escapes.
	b, _ := json.Marshal(map[string]string{"m": "del\x7f csi\u009b"})
	var back map[string]string
	if err := json.Unmarshal([]byte(Text(string(b))), &back); err != nil || back["m"] != "del\x7f csi\u009b" {
		t.Errorf("Text of JSON: %q → %v %q", Text(string(b)), err, back["m"])
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	if got := Clip(strings.Repeat("é", 10), 9); got != "ééé..." {
		t.Errorf("Clip = %q", got)
	}
	if got := Clip("short", 9); got != "short" {
		t.Errorf("Clip = %q", got)
	}
}
