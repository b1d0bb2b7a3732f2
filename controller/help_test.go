package main

import (
	"os/exec"
	"strings"
	"testing"
)

// Help asked for is help given: exit 0, usage on stdout, no "unknown
// command" complaint; and version names the toolchain at least.
func TestHelpAndVersion(t *testing.T) {
	bin := controllerBinary(t)
	for _, args := range [][]string{{"--help"}, {"node", "--help"}, {"node", "help"}, {"node", "-h"}, {"instance", "--help"}, {"token", "-h"}} {
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
