package main

import (
	"io"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/safetext"
)

// What the CLI prints quotes the controller: events, last errors, agent
// and BMC messages, firmware strings, problem details. The controller
// escapes control characters where such text enters it, but the CLI does
// not rely on the controller it talks to (an older one, or one that is
// not ours): everything it prints goes through terminalSafe, so no escape
// sequence from a server ever reaches the operator's terminal.

// terminalWriter writes what the CLI prints as safetext.Text makes it:
// tabs and newlines (the CLI's own layout) as they are, every other
// control character escaped visibly (\u001b), invalid UTF-8 as U+FFFD. The
// escapes are JSON's, so -o json output stays valid JSON with the same
// values. Each Write is taken whole: a rune split across two writes would
// show as U+FFFD (fmt, tabwriter and encoding/json write whole strings).
type terminalWriter struct{ w io.Writer }

func (t terminalWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, safetext.Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// terminalSafe wraps w in a terminalWriter (once).
func terminalSafe(w io.Writer) io.Writer {
	if _, ok := w.(terminalWriter); ok {
		return w
	}
	return terminalWriter{w}
}

// rawWriter is the writer under a terminalWriter: for the CLI's own
// escape sequences (the progress line's redraw), never for server text.
func rawWriter(w io.Writer) io.Writer {
	if t, ok := w.(terminalWriter); ok {
		return t.w
	}
	return w
}
