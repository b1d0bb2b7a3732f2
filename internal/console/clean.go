package console

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// lineMax cuts a line that never ends (a progress bar redrawn with \r,
// binary noise) so that one line cannot take the whole log.
const lineMax = 1024

// cleaner turns a serial console's raw bytes into lines of text: terminal
// escape sequences (colours, cursor moves, titles) removed, carriage
// returns and backspaces applied as a terminal would, other control
// characters dropped, invalid UTF-8 replaced. It keeps the state of a
// sequence or a line cut between two reads.
type cleaner struct {
	esc     int // 0 none, 1 after ESC, 2 in CSI, 3 in OSC/DCS (to BEL or ST), 4 ESC seen in OSC
	line    []rune
	cr      bool   // a CR since the line's last character: the next one rewrites it
	pending []byte // an incomplete UTF-8 sequence
}

// write feeds p and returns the lines it completed.
func (c *cleaner) write(p []byte) []string {
	var out []string
	if len(c.pending) > 0 {
		p = append(append([]byte(nil), c.pending...), p...)
		c.pending = nil
	}
	for len(p) > 0 {
		b := p[0]
		if b >= 0x80 && c.esc == 0 {
			if !utf8.FullRune(p) {
				c.pending = append(c.pending[:0], p...)
				return out
			}
			r, size := utf8.DecodeRune(p)
			p = p[size:]
			c.put(r)
			continue
		}
		p = p[1:]
		switch c.esc {
		case 1:
			switch b {
			case '[':
				c.esc = 2
			case ']', 'P', '_', '^':
				c.esc = 3
			default:
				c.esc = 0 // a two-byte sequence (ESC c, ESC 7, ...)
			}
			continue
		case 2:
			if b >= 0x40 && b <= 0x7e {
				c.esc = 0
			}
			continue
		case 3:
			switch b {
			case 0x07:
				c.esc = 0
			case 0x1b:
				c.esc = 4
			}
			continue
		case 4:
			c.esc = 0 // ESC \ (ST) ends it; anything else too
			continue
		}
		switch b {
		case 0x1b:
			c.esc = 1
		case '\n':
			out = append(out, string(c.line))
			c.line = c.line[:0]
			c.cr = false
		case '\r':
			// A bare CR rewrites the line (progress bars) when something
			// is printed after it; CR LF (CR CR LF too) ends it as it is.
			// The character after it may be in the next read.
			c.cr = true
		case '\b', 0x7f:
			if len(c.line) > 0 {
				c.line = c.line[:len(c.line)-1]
			}
		case '\t':
			c.put('\t')
		default:
			if b >= 0x20 {
				c.put(rune(b))
			}
		}
		if len(c.line) >= lineMax {
			out = append(out, string(c.line))
			c.line = c.line[:0]
		}
	}
	return out
}

func (c *cleaner) put(r rune) {
	if c.cr {
		c.line = c.line[:0]
		c.cr = false
	}
	c.line = append(c.line, r)
}

// reset forgets the line printed so far (it was taken as partial).
func (c *cleaner) reset() {
	c.line = c.line[:0]
	c.cr = false
}

// partial is the line printed so far and not ended.
func (c *cleaner) partial() string { return string(c.line) }

// agentToken finds deploy agent tokens, which the agent never prints but
// a kernel command line or a person at the console might.
var agentToken = regexp.MustCompile(regexp.QuoteMeta(baremetal.AgentTokenPrefix) + `[A-Za-z0-9_-]{16,}`)

// scrub hides credentials in a console line: the BMC's password in every
// form, the redact rules (agent boot and config drive keys in URLs the
// firmware or iPXE prints, Authorization headers, URL userinfo) and agent
// tokens.
func scrub(s *redact.Secrets, line string) string {
	line = s.String(line)
	return agentToken.ReplaceAllString(line, redact.Mask)
}

// ring is the last lines of a console, at most max bytes with their
// newlines.
type ring struct {
	lines []string
	size  int
	max   int
}

func newRing(max int, text string) *ring {
	r := &ring{max: max}
	text = strings.TrimSuffix(text, "\n")
	if text != "" {
		for _, l := range strings.Split(text, "\n") {
			r.add(l)
		}
	}
	return r
}

func (r *ring) add(line string) {
	r.lines = append(r.lines, line)
	r.size += len(line) + 1
	drop := 0
	for r.size > r.max && drop < len(r.lines)-1 {
		r.size -= len(r.lines[drop]) + 1
		drop++
	}
	if drop > 0 {
		r.lines = append(r.lines[:0:0], r.lines[drop:]...)
	}
}

// text is the ring as stored: lines ended by newlines, then partial (a
// line not ended yet, already scrubbed) if any.
func (r *ring) text(partial string) string {
	var b strings.Builder
	b.Grow(r.size + len(partial))
	for _, l := range r.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString(partial)
	return b.String()
}

// Tail returns the last n non-empty lines of a stored console log.
func Tail(log string, n int) []string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			out = append(out, lines[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
