package console

import (
	"slices"
	"testing"
)

// TestCleanerCarriageReturn: a bare CR rewrites the line only once
// something is printed after it, wherever the reads cut the output: a
// progress bar whose CR ends one read keeps its last state, and CR CR LF
// (a terminal's ONLCR on a program's own CR LF) keeps its line.
func TestCleanerCarriageReturn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reads []string
		want  []string
	}{
		{"CR LF", []string{"hello\r\n"}, []string{"hello"}},
		{"CR LF across reads", []string{"hello\r", "\nnext\r\n"}, []string{"hello", "next"}},
		{"bare CR in one read", []string{"10%\r20%\r\n"}, []string{"20%"}},
		{"bare CR at a read's end", []string{"10%\r", "20%\r", "30%\r\n"}, []string{"30%"}},
		{"CR CR LF", []string{"hello\r\r\n"}, []string{"hello"}},
		{"CR CR LF across reads", []string{"hello\r", "\r\n"}, []string{"hello"}},
		{"CR then a colour", []string{"old\r", "\x1b[32mnew\x1b[0m\n"}, []string{"new"}},
	} {
		var c cleaner
		var got []string
		for _, r := range tc.reads {
			got = append(got, c.write([]byte(r))...)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
