// Package safetext is the one policy for text that comes from outside and
// is kept or shown: what a deploy agent reports (a failed command's
// message quotes an image server's answer), what a BMC answers, firmware
// strings. Such text may carry terminal escape sequences
// ("\x1b]0;owned\x07\x1b[2J" retitles and clears the terminal of whoever
// prints it), NUL (which PostgreSQL refuses in text) or invalid UTF-8.
//
// The policy: invalid UTF-8 becomes U+FFFD; every control character
// (C0, DEL, C1) and every bidirectional formatting character (which
// reorders what a terminal shows) is written visibly, in the notation
// JSON uses: ESC is the six characters \u001b. An escape is evidence an
// operator can read, where a stripped one would leave no trace, and the
// notation keeps JSON output valid JSON. Layout is the one exception:
// Line turns tab, newline and carriage return into a space (one-line
// text: messages, events, last_error), Text keeps tab and newline (a
// terminal's own layout: the CLI's output).
//
// It is applied where text enters (the agent's heartbeat, BMC errors
// through redact.Excerpt, the agent's own reports) and once more where
// the CLI prints. The package imports only the standard library: the
// agent uses it too.
package safetext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Line returns s as one line of text safe to store and to print: tab,
// newline and carriage return become spaces, other control and
// bidirectional formatting characters are escaped visibly (\u001b),
// invalid UTF-8 becomes U+FFFD.
func Line(s string) string { return clean(s, false) }

// Text is Line for text whose tabs and newlines are layout: it keeps them
// (a carriage return, which lets text overwrite what a terminal already
// shows, is still escaped).
func Text(s string) string { return clean(s, true) }

// Safe reports whether s is already what Line makes of it.
func Safe(s string) bool { return !needsWork(s, false) }

func clean(s string, layout bool) string {
	if !needsWork(s, layout) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			// A run of invalid bytes is one U+FFFD, as
			// strings.ToValidUTF8 makes it.
			b.WriteRune(utf8.RuneError)
			for i += size; i < len(s); i++ {
				if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size > 1 {
					break
				}
			}
			continue
		case r == '\t' || r == '\n':
			if layout {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case r == '\r' && !layout:
			b.WriteByte(' ')
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsWork reports whether clean would change s.
func needsWork(s string, layout bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				if !layout || (c != '\t' && c != '\n') {
					return true
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune: a control character (C0, DEL, C1) or a bidirectional
// formatting character (the marks, embeddings, overrides and isolates).
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Clip cuts s to at most n bytes on a rune boundary, "..." marking a cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-3, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
