package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Help asked for is help given: exit 0, usage on stdout, no "unknown
// command" complaint; and version names the toolchain at least.
func TestHelpAndVersion(t *testing.T) {
	bin := controllerBinary(t)
	for _, args := range [][]string{{"--help"}, {"node", "--help"}, {"node", "help"}, {"node", "-h"}, {"instance", "--help"}, {"token", "-h"},
		{"node", "delete", "--help"}, {"node", "help", "power"}, {"instance", "show", "-h"}, {"token", "create", "--help"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("controller %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if !strings.Contains(string(out), "usage: controller") || strings.Contains(string(out), "unknown") {
			t.Errorf("controller %s printed:\n%s", strings.Join(args, " "), out)
		}
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(out), "go1.") {
		t.Errorf("controller version: %v: %q", err, out)
	}
}

// --inspect-on-enroll without the agent would promise inspections that
// never happen: serve refuses to start, saying what is missing.
func TestServeRefusesInspectOnEnrollWithoutAgent(t *testing.T) {
	bin := controllerBinary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a serve that starts is killed
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--inspect-on-enroll", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--inspect-on-enroll needs --agent-kernel") {
		t.Errorf("serve --inspect-on-enroll without --agent-kernel: %v\n%s", err, out)
	}
}
