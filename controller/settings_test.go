package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/app"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's configuration table from the settings")

// The README's configuration table stands between these lines.
const (
	readmeTableBegin = "<!-- generated from the settings (internal/app/config.go, controller/main.go): go test ./controller -run TestReadmeConfigurationTable -update-readme -->"
	readmeTableEnd   = "<!-- end of the generated table -->"
)

// TestReadmeConfigurationTable: README.md's configuration table is
// controller serve's settings as the table says them (flag, environment
// variable, default, meaning), and every flag of serve is one of them.
// With -update-readme it rewrites the table instead.
func TestReadmeConfigurationTable(t *testing.T) {
	f := newServeFlags()
	settings := append(f.settings(), f.logSettings()...)
	var names []string
	for _, s := range settings {
		names = append(names, s.Name)
	}
	f.VisitAll(func(fl *flag.Flag) {
		if !slices.Contains(names, fl.Name) {
			t.Errorf("serve's --%s is not a setting: define it in app.Config.Settings or serveFlags.settings", fl.Name)
		}
	})

	path := filepath.Join("..", "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, readmeTableBegin+"\n"), strings.Index(readme, readmeTableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no lines %q and %q around its configuration table", readmeTableBegin, readmeTableEnd)
	}
	i += len(readmeTableBegin) + 1
	got, want := readme[i:j], "\n"+readmeTable(settings)+"\n" // blank lines around the table
	switch {
	case got == want:
	case *updateReadme:
		if err := os.WriteFile(path, []byte(readme[:i]+want+readme[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		t.Errorf("README.md's configuration table is not the settings'; regenerate it with: go test ./controller -run TestReadmeConfigurationTable -update-readme\n%s", lineDiff(got, want))
	}
}

// readmeTable is the Markdown table of settings.
func readmeTable(settings []app.Setting) string {
	var b strings.Builder
	b.WriteString("| flag | env | default | meaning |\n|---|---|---|---|\n")
	for _, s := range settings {
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s |\n", s.Name, envName(s.Name), defaultText(s), cmp.Or(s.Doc, s.Help))
	}
	return b.String()
}

// defaultText is a setting's default as the README says it: 5m, not 5m0s.
func defaultText(s app.Setting) string {
	if s.DefaultDoc != "" {
		return s.DefaultDoc
	}
	d := s.Default
	if d == nil {
		d = reflect.Zero(reflect.TypeOf(s.Value).Elem()).Interface()
	}
	switch d := d.(type) {
	case string:
		if d == "" {
			return "empty"
		}
	case time.Duration:
		v := d.String()
		if strings.HasSuffix(v, "m0s") {
			v = strings.TrimSuffix(v, "0s")
		}
		if strings.HasSuffix(v, "h0m") {
			v = strings.TrimSuffix(v, "0m")
		}
		return "`" + v + "`"
	}
	return fmt.Sprintf("`%v`", d)
}

// lineDiff lists the lines only one of got and want has.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var out []string
	for _, l := range g {
		if !slices.Contains(w, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range w {
		if !slices.Contains(g, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// A setting that could never work, from a flag or the environment, stops
// serve before the simulated fleet starts: nothing is written.
func TestServeRefusesBadSettingsFirst(t *testing.T) {
	t.Setenv("BAREMETAL_WORKERS", "0")
	dir := filepath.Join(t.TempDir(), "data")
	err := serve(t.Context(), []string{"--bmc-timeout", "0", "--sim-systems", "1", "--sim-listen", "127.0.0.1:0",
		"--listen", "127.0.0.1:0", "--data-dir", dir, "--log-level", "error"})
	for _, want := range []string{"--bmc-timeout must be positive, got 0s", "--workers must be at least 1, got 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve: %v, want %q", err, want)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("serve created %s", dir)
	}
}

// A flag given through its BAREMETAL_ variable is given, as on the
// command line: serve --sim-systems keeps the operator's
// BAREMETAL_REDFISH_MAX_CONNECTIONS instead of raising it to 64.
func TestFlagFromTheEnvironmentIsGiven(t *testing.T) {
	t.Setenv("BAREMETAL_REDFISH_MAX_CONNECTIONS", "5")
	f := newServeFlags()
	if err := f.parse([]string{"--sim-systems", "2"}); err != nil {
		t.Fatal(err)
	}
	if got := f.config().RedfishMaxConnections; got != 5 {
		t.Errorf("BAREMETAL_REDFISH_MAX_CONNECTIONS=5 with --sim-systems: %d connections per BMC, want 5", got)
	}
	t.Setenv("BAREMETAL_REDFISH_MAX_CONNECTIONS", "")
	_ = os.Unsetenv("BAREMETAL_REDFISH_MAX_CONNECTIONS") // t.Setenv restores it
	f = newServeFlags()
	if err := f.parse([]string{"--sim-systems", "2"}); err != nil {
		t.Fatal(err)
	}
	if got := f.config().RedfishMaxConnections; got != 64 {
		t.Errorf("--sim-systems alone: %d connections per BMC, want 64", got)
	}
}
