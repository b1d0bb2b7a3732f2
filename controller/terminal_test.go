package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// termPayload is issue #26's: it retitles and clears the terminal of
// whoever prints it raw.
const termPayload = "\x1b]0;owned\a\x1b[2J"

// TestCLIPrintsNoTerminalEscapes: whatever the controller answers, the
// CLI prints no control character but its own layout: an event message
// carrying a terminal escape (here stored raw, as a controller that does
// not escape at entry would keep it) is shown escaped in node events'
// table and JSON, and C1 controls and DEL, which JSON encoders leave raw,
// are escaped too with the JSON still valid (issue #26, item 20).
func TestCLIPrintsNoTerminalEscapes(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Systems: 1})
	nodes := env.EnrollNodes(t, 1, "cli", "gpu")
	t.Setenv("BAREMETAL_ENDPOINT", env.URL)
	t.Setenv("BAREMETAL_TOKEN", env.AdminToken)
	msg := "writing the image failed on the node: image URL http://i/x: HTTP 404 " + termPayload + " \u009b2J\x7f"
	if err := env.App.Store.InsertEvent(context.Background(), &baremetal.Event{NodeID: nodes[0].ID, Actor: baremetal.ActorController, Type: "deploy", Message: msg}); err != nil {
		t.Fatal(err)
	}
	unsafe := func(out string) bool {
		return strings.ContainsFunc(out, func(r rune) bool { return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) })
	}
	table := mustCLI(t, runNode, "events", "cli-0")
	if unsafe(table) || !strings.Contains(table, `HTTP 404 \u001b]0;owned\u0007\u001b[2J \u009b2J\u007f`) {
		t.Errorf("node events printed:\n%q", table)
	}
	out := mustCLI(t, runNode, "events", "cli-0", "-o", "json")
	var evs []api.Event
	if err := json.Unmarshal([]byte(out), &evs); err != nil {
		t.Fatalf("-o json is not JSON any more: %v\n%s", err, out)
	}
	if unsafe(out) || evs[len(evs)-1].Message != msg {
		t.Errorf("node events -o json: %q (last message %q)", out, evs[len(evs)-1].Message)
	}

	// The writer itself: layout kept, the rest escaped, written whole.
	var b bytes.Buffer
	w := terminalSafe(terminalSafe(&b))
	if n, err := w.Write([]byte("a\tb\n" + termPayload + "\r")); err != nil || n != 4+len(termPayload)+1 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got := b.String(); got != "a\tb\n"+`\u001b]0;owned\u0007\u001b[2J\u000d` {
		t.Errorf("terminalSafe wrote %q", got)
	}
	if rawWriter(w) != &b {
		t.Error("rawWriter does not unwrap")
	}
}
