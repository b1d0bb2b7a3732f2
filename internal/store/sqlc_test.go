package store_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestGeneratedCodeIsFresh regenerates the dialects' query code from
// sqlc.yaml, the migrations and the queries (the shared queries/*.sql and
// each dialect's own) into a temporary directory and fails when the
// committed code differs from it, file for file: a
// query or a migration was changed without `make generate`. It needs the
// pinned sqlc, which `make tools` (a prerequisite of `make test`) builds
// into .tools/bin; without it the test is skipped, except in CI.
func TestGeneratedCodeIsFresh(t *testing.T) {
	t.Parallel()
	var cfg struct {
		SQL []struct {
			Schema  string   `yaml:"schema"`
			Queries []string `yaml:"queries"`
			Gen     struct {
				Go struct {
					Out string `yaml:"out"`
				} `yaml:"go"`
			} `yaml:"gen"`
		} `yaml:"sql"`
	}
	conf, err := os.ReadFile("sqlc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(conf, &cfg); err != nil || len(cfg.SQL) == 0 {
		t.Fatalf("sqlc.yaml: %v (%d sql entries)", err, len(cfg.SQL))
	}
	sqlc := sqlcBinary(t, generatedBy(t, cfg.SQL[0].Gen.Go.Out))

	tmp := t.TempDir()
	must(t, os.WriteFile(filepath.Join(tmp, "sqlc.yaml"), conf, 0o600))
	for _, s := range cfg.SQL {
		copyDir(t, s.Schema, filepath.Join(tmp, s.Schema))
		for _, q := range s.Queries {
			copyDir(t, q, filepath.Join(tmp, q))
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sqlc, "generate", "-f", "sqlc.yaml")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sqlc generate: %v\n%s", err, out)
	}

	for _, s := range cfg.SQL {
		want, got := goFiles(t, filepath.Join(tmp, s.Gen.Go.Out)), goFiles(t, s.Gen.Go.Out)
		for name, w := range want {
			switch g, ok := got[name]; {
			case !ok:
				t.Errorf("%s is missing: run make generate", filepath.Join(s.Gen.Go.Out, name))
			case !bytes.Equal(g, w):
				t.Errorf("%s is stale: run make generate", filepath.Join(s.Gen.Go.Out, name))
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("%s is not generated from the queries any more: delete it (and run make generate)", filepath.Join(s.Gen.Go.Out, name))
			}
		}
	}
}

// generatedBy returns the sqlc version the committed code in dir says it
// was generated with ("v1.31.1").
func generatedBy(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "db.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^//\s+sqlc (v\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s/db.go does not say which sqlc generated it", dir)
	}
	return string(m[1])
}

// sqlcBinary finds sqlc of the given version: the one `make tools`
// builds, else one on the PATH.
func sqlcBinary(t *testing.T, version string) string {
	t.Helper()
	bin := filepath.Join("..", "..", ".tools", "bin", "sqlc")
	if _, err := os.Stat(bin); err != nil {
		p, lookErr := exec.LookPath("sqlc")
		if lookErr != nil {
			msg := "sqlc " + version + " is not in .tools/bin nor on the PATH: `make tools` builds it; the generated query code is not checked"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		bin = p
	}
	out, err := exec.CommandContext(t.Context(), bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	if v := strings.TrimSpace(string(out)); v != version {
		t.Fatalf("%s is sqlc %s, but the committed code is %s's: remove it and run make tools (the GNUmakefile pins the version)", bin, v, version)
	}
	abs, err := filepath.Abs(bin) // it runs in another directory
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	must(t, os.MkdirAll(to, 0o700))
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		must(t, os.WriteFile(filepath.Join(to, e.Name()), b, 0o600))
	}
}

// goFiles reads the .go files of dir by name (none when dir is missing).
func goFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return files
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	if len(files) == 0 {
		t.Fatalf("%s holds no Go files", dir)
	}
	return files
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
