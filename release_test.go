package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/app"
)

// The release is checked in two places: `make release-dry-run` builds it
// with goreleaser and checks what comes out (scripts/check-release), and
// these tests check, without goreleaser, that .goreleaser.yml,
// terraform-registry-manifest.json and controller/Containerfile say what
// the registries and the image need and agree with each other and the code.

// goreleaserConfig is the part of .goreleaser.yml these tests read.
type goreleaserConfig struct {
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Ignore  []struct {
			Goos   string `yaml:"goos"`
			Goarch string `yaml:"goarch"`
		} `yaml:"ignore"`
	} `yaml:"builds"`
	Archives []struct {
		ID           string   `yaml:"id"`
		IDs          []string `yaml:"ids"`
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string      `yaml:"name_template"`
		Algorithm    string      `yaml:"algorithm"`
		ExtraFiles   []extraFile `yaml:"extra_files"`
	} `yaml:"checksum"`
	Signs []struct {
		Artifacts string   `yaml:"artifacts"`
		Args      []string `yaml:"args"`
	} `yaml:"signs"`
	DockersV2 []struct {
		IDs        []string `yaml:"ids"`
		Dockerfile string   `yaml:"dockerfile"`
		Platforms  []string `yaml:"platforms"`
	} `yaml:"dockers_v2"`
	Release struct {
		ExtraFiles []extraFile `yaml:"extra_files"`
	} `yaml:"release"`
}

type extraFile struct {
	Glob         string `yaml:"glob"`
	NameTemplate string `yaml:"name_template"`
}

const manifestFile = "terraform-registry-manifest.json"

func readGoreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	b, err := os.ReadFile(".goreleaser.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c goreleaserConfig
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf(".goreleaser.yml: %v", err)
	}
	return c
}

// targets is the set of os/arch pairs a build makes.
func targets(c goreleaserConfig, id string) (map[string]bool, int) {
	for i, b := range c.Builds {
		if b.ID != id {
			continue
		}
		out := map[string]bool{}
		for _, goos := range b.Goos {
			for _, arch := range b.Goarch {
				out[goos+"/"+arch] = true
			}
		}
		for _, ig := range b.Ignore {
			delete(out, ig.Goos+"/"+ig.Goarch)
		}
		return out, i
	}
	return nil, -1
}

// TestReleaseProvider checks what the Terraform and OpenTofu registries
// require of a provider release: zips named NAME_VERSION_OS_ARCH.zip of a
// binary named terraform-provider-NAME_vVERSION for the usual platforms, a
// SHA256SUMS file of them with a detached signature, and the manifest with
// the protocol the provider serves.
func TestReleaseProvider(t *testing.T) {
	c := readGoreleaser(t)
	if c.ProjectName != "terraform-provider-baremetal" {
		t.Errorf("project_name %q: the registries need terraform-provider-baremetal", c.ProjectName)
	}
	got, i := targets(c, "provider")
	if i < 0 {
		t.Fatal("no build with id provider")
	}
	for _, goos := range []string{"linux", "darwin", "windows", "freebsd"} {
		for _, arch := range []string{"amd64", "arm64"} {
			if !got[goos+"/"+arch] {
				t.Errorf("provider not built for %s/%s", goos, arch)
			}
		}
	}
	b := c.Builds[i]
	if b.Main != "." || b.Binary != "{{ .ProjectName }}_v{{ .Version }}" {
		t.Errorf("provider build main %q binary %q: want . and {{ .ProjectName }}_v{{ .Version }}", b.Main, b.Binary)
	}
	checkStaticAndVersioned(t, "provider", b.Env, b.Ldflags)

	var zip bool
	for _, a := range c.Archives {
		if slices.Contains(a.IDs, "provider") {
			zip = true
			if !slices.Equal(a.Formats, []string{"zip"}) || a.NameTemplate != "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}" {
				t.Errorf("provider archive %s: formats %v name %q", a.ID, a.Formats, a.NameTemplate)
			}
		}
	}
	if !zip {
		t.Error("no archive of the provider build")
	}

	if c.Checksum.NameTemplate != "{{ .ProjectName }}_{{ .Version }}_SHA256SUMS" || c.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum %q %q", c.Checksum.NameTemplate, c.Checksum.Algorithm)
	}
	manifest := extraFile{Glob: manifestFile, NameTemplate: "{{ .ProjectName }}_{{ .Version }}_manifest.json"}
	if !slices.Contains(c.Checksum.ExtraFiles, manifest) || !slices.Contains(c.Release.ExtraFiles, manifest) {
		t.Errorf("the manifest must be in SHA256SUMS and in the release as %s", manifest.NameTemplate)
	}
	signed := false
	for _, s := range c.Signs {
		signed = signed || (s.Artifacts == "checksum" && slices.Contains(s.Args, "--detach-sign"))
	}
	if !signed {
		t.Error("no detached signature of the checksum file")
	}

	raw, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version  int `json:"version"`
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", manifestFile, err)
	}
	want := []string{fmt.Sprintf("%d.0", protocolVersion)}
	if m.Version != 1 || !slices.Equal(m.Metadata.ProtocolVersions, want) {
		t.Errorf("%s: version %d protocol_versions %v, want 1 and %v (main.go serves protocol %d)",
			manifestFile, m.Version, m.Metadata.ProtocolVersions, want, protocolVersion)
	}
}

func checkStaticAndVersioned(t *testing.T, id string, env, ldflags []string) {
	t.Helper()
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("%s build: not CGO_ENABLED=0 (env %v)", id, env)
	}
	if !strings.Contains(strings.Join(ldflags, " "), "-X main.version={{ .Version }}") {
		t.Errorf("%s build: ldflags %v do not set main.version", id, ldflags)
	}
}

// instruction is one Containerfile instruction, continuation lines joined.
type instruction struct {
	cmd, args string
}

var knownInstructions = []string{"FROM", "ARG", "COPY", "ADD", "RUN", "USER", "WORKDIR", "VOLUME",
	"ENV", "EXPOSE", "ENTRYPOINT", "CMD", "LABEL", "HEALTHCHECK", "STOPSIGNAL", "SHELL", "ONBUILD"}

// parseContainerfile splits a Containerfile into instructions as BuildKit
// reads them (comments, blank lines, backslash continuations) and refuses
// an unknown instruction or a JSON form that is not a list of strings.
func parseContainerfile(text string) ([]instruction, error) {
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		cmd = strings.ToUpper(cmd)
		if !slices.Contains(knownInstructions, cmd) {
			return nil, fmt.Errorf("line %d: unknown instruction %q", n, cmd)
		}
		args = strings.Join(strings.Fields(args), " ")
		if strings.HasPrefix(args, "[") {
			var l []string
			if err := json.Unmarshal([]byte(args), &l); err != nil {
				return nil, fmt.Errorf("line %d: %s %s: %w", n, cmd, args, err)
			}
		}
		out = append(out, instruction{cmd, args})
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("continuation at the end of the file")
	}
	return out, sc.Err()
}

// TestReleaseControllerImage checks controller/Containerfile against the
// build that fills its context: it copies the static controller binary that
// goreleaser (and `make image-context`) put under $TARGETPLATFORM, runs it
// as a non-root user on a base without libc, and keeps the data directory
// in a volume owned by that user.
func TestReleaseControllerImage(t *testing.T) {
	c := readGoreleaser(t)
	plats, i := targets(c, "controller")
	if i < 0 {
		t.Fatal("no build with id controller")
	}
	b := c.Builds[i]
	if b.Main != "./controller" {
		t.Errorf("controller build main %q", b.Main)
	}
	checkStaticAndVersioned(t, "controller", b.Env, b.Ldflags)
	var dockerfile string
	for _, d := range c.DockersV2 {
		if !slices.Contains(d.IDs, "controller") {
			continue
		}
		dockerfile = d.Dockerfile
		for _, p := range d.Platforms {
			if !strings.HasPrefix(p, "linux/") || !plats[p] {
				t.Errorf("image platform %s: not a linux platform the controller build makes", p)
			}
		}
	}
	if dockerfile != "controller/Containerfile" {
		t.Fatalf("dockers_v2 of the controller build: dockerfile %q, want controller/Containerfile", dockerfile)
	}

	text, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := parseContainerfile(string(text))
	if err != nil {
		t.Fatalf("%s: %v", dockerfile, err)
	}
	var (
		from, copyDst, user, workdir, volume, entrypoint string
		env                                              = map[string]string{}
		argAfterFrom                                     bool
	)
	for _, in := range ins {
		switch in.cmd {
		case "FROM":
			if from != "" {
				t.Errorf("more than one FROM: the image has no build stage")
			}
			from = in.args
		case "ARG":
			argAfterFrom = argAfterFrom || (from != "" && in.args == "TARGETPLATFORM")
		case "COPY":
			src, dst, _ := strings.Cut(in.args, " ")
			if want := "$TARGETPLATFORM/" + b.Binary; src != want {
				t.Errorf("COPY %s: want %s (where goreleaser puts the %s binary)", src, want, b.ID)
			}
			if !argAfterFrom {
				t.Error("COPY before ARG TARGETPLATFORM in the stage: $TARGETPLATFORM would be empty")
			}
			copyDst = dst
		case "USER":
			user = in.args
		case "WORKDIR":
			if user == "" {
				t.Error("WORKDIR before USER: the data directory would belong to root")
			}
			workdir = in.args
		case "VOLUME":
			var l []string
			if err := json.Unmarshal([]byte(in.args), &l); err != nil || len(l) != 1 {
				t.Fatalf("VOLUME %s: want one directory in JSON form", in.args)
			}
			volume = l[0]
		case "ENV":
			for kv := range strings.FieldsSeq(in.args) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					t.Fatalf("ENV %s: want KEY=VALUE pairs", in.args)
				}
				env[k] = v
			}
		case "ENTRYPOINT":
			var l []string
			if err := json.Unmarshal([]byte(in.args), &l); err != nil || len(l) == 0 {
				t.Fatalf("ENTRYPOINT %s: want JSON form (no shell in the image)", in.args)
			}
			entrypoint = l[0]
		}
	}
	if from != "scratch" && !strings.HasPrefix(from, "gcr.io/distroless/static") {
		t.Errorf("FROM %s: want scratch or a distroless static base (the binary is static)", from)
	}
	if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("USER %q: the controller must not run as root", user)
	}
	if copyDst == "" || entrypoint != copyDst {
		t.Errorf("ENTRYPOINT %q is not the copied binary %q", entrypoint, copyDst)
	}
	if workdir == "" || volume != workdir || !strings.HasPrefix(env["BAREMETAL_DATA_DIR"], workdir+"/") {
		t.Errorf("data directory: WORKDIR %q and VOLUME %q must be one, holding BAREMETAL_DATA_DIR %q",
			workdir, volume, env["BAREMETAL_DATA_DIR"])
	}
	// Every BAREMETAL_ variable must be a flag the controller reads: a
	// row of its settings table, or one controller/main.go adds (the
	// simulated fleet's, logging's).
	known := map[string]bool{}
	cfg := app.Defaults()
	for _, st := range cfg.Settings() {
		known[st.Name] = true
	}
	src, err := os.ReadFile("controller/main.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?:Name:\s*|Var\([^,]+,\s*)"([a-z0-9-]+)"`).FindAllSubmatch(src, -1) {
		known[string(m[1])] = true
	}
	for k := range env {
		flag := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "BAREMETAL_")), "_", "-")
		if !known[flag] {
			t.Errorf("ENV %s: the controller has no --%s flag", k, flag)
		}
	}
}

func TestParseContainerfileRefuses(t *testing.T) {
	for _, bad := range []string{
		"FROM scratch\nCOPPY a b\n",
		"FROM scratch\nENTRYPOINT [\"/a\",]\n",
		"FROM scratch\nCOPY a \\\n",
	} {
		if _, err := parseContainerfile(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
