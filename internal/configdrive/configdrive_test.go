package configdrive_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdomanski/iso9660"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

func TestBuildParseRoundTrip(t *testing.T) {
	in := configdrive.Drive{
		UUID: "6f1c1a9e-2b7e-4a51-9f0e-0d4b8e3f5a10", Name: "web-1", Hostname: "web-1",
		Meta:       map[string]string{"role": "web", "team": "platform"},
		UserData:   []byte("#cloud-config\nruncmd:\n  - echo hi\n"),
		ReadyURL:   "http://10.0.0.5:8080/v1/instances/6f1c1a9e-2b7e-4a51-9f0e-0d4b8e3f5a10/ready",
		ReadyToken: "rdy_abc-DEF_123",
	}
	var buf bytes.Buffer
	if err := configdrive.Build(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := configdrive.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if out.UUID != in.UUID || out.Name != in.Name || out.Hostname != in.Hostname ||
		out.ReadyURL != in.ReadyURL || out.ReadyToken != in.ReadyToken ||
		!bytes.Equal(out.UserData, in.UserData) || out.Meta["role"] != "web" || out.Meta["team"] != "platform" {
		t.Fatalf("round trip changed the drive:\n in %+v\nout %+v", in, out)
	}

	// The vendor data is what cloud-init runs: a script that POSTs the
	// ready URL with the token.
	files := filesOf(t, buf.Bytes())
	var vd map[string]string
	if err := json.Unmarshal(files[configdrive.VendorDataPath], &vd); err != nil {
		t.Fatalf("vendor data: %v (files %v)", err, keys(files))
	}
	script := vd["cloud-init"]
	if !strings.HasPrefix(script, "#!/bin/sh\n") || !strings.Contains(script, in.ReadyURL) || !strings.Contains(script, "Bearer "+in.ReadyToken) {
		t.Fatalf("vendor data script does not call back:\n%s", script)
	}
}

func TestBuildWithoutUserDataOrCallback(t *testing.T) {
	var buf bytes.Buffer
	if err := configdrive.Build(&buf, configdrive.Drive{UUID: "u", Name: "n", Hostname: "n"}); err != nil {
		t.Fatal(err)
	}
	files := filesOf(t, buf.Bytes())
	if _, ok := files[configdrive.UserDataPath]; ok {
		t.Error("user_data present without user data")
	}
	if _, ok := files[configdrive.VendorDataPath]; ok {
		t.Error("vendor data present without a callback")
	}
	if _, ok := files[configdrive.MetaDataPath]; !ok {
		t.Errorf("no meta data; files %v", keys(files))
	}
}

func TestBuildRejectsHugeUserData(t *testing.T) {
	err := configdrive.Build(&bytes.Buffer{}, configdrive.Drive{UserData: make([]byte, configdrive.MaxUserData+1)})
	if err == nil || !strings.Contains(err.Error(), "user data") {
		t.Fatalf("err = %v", err)
	}
}

// TestLabelSeenByBlkid checks the image with util-linux's blkid, the same
// probe udev uses to give cloud-init /dev/disk/by-label/config-2.
func TestLabelSeenByBlkid(t *testing.T) {
	blkid, err := exec.LookPath("blkid")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("blkid (util-linux) not installed")
		}
		t.Skip("blkid not installed")
	}
	var buf bytes.Buffer
	if err := configdrive.Build(&buf, configdrive.Drive{UUID: "u", Name: "n", Hostname: "n", UserData: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cd.iso")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(blkid, "-p", "-o", "export", path).CombinedOutput()
	if err != nil {
		t.Fatalf("blkid: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "LABEL=config-2") || !strings.Contains(string(out), "TYPE=iso9660") {
		t.Fatalf("blkid does not see an iso9660 labelled config-2:\n%s", out)
	}
}

func filesOf(t *testing.T, iso []byte) map[string][]byte {
	t.Helper()
	img, err := iso9660.OpenImage(bytes.NewReader(iso))
	if err != nil {
		t.Fatal(err)
	}
	root, err := img.RootDir()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var walk func(f *iso9660.File, prefix string)
	walk = func(f *iso9660.File, prefix string) {
		children, err := f.GetChildren()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range children {
			name := strings.TrimSuffix(c.Name(), ";1")
			p := strings.TrimPrefix(prefix+"/"+name, "/")
			if c.IsDir() {
				walk(c, p)
				continue
			}
			var b bytes.Buffer
			if _, err := b.ReadFrom(c.Reader()); err != nil {
				t.Fatal(err)
			}
			files[p] = b.Bytes()
		}
	}
	walk(root, "")
	return files
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestMaskKeysEveryForm: BMCs quote the media URL as they got it, inside
// a URL-encoded form or a JSON document with escaped slashes.
func TestMaskKeysEveryForm(t *testing.T) {
	key := configdrive.Key("rdy_0123456789")
	u := "http://ctl:8080/v1/instances/6f1c/config-drive/" + key + "/config-2.iso"
	for name, form := range map[string]string{
		"plain":          u,
		"query":          url.QueryEscape(u),
		"query, twice":   url.QueryEscape(url.QueryEscape(u)),
		"json, \\/":      strings.ReplaceAll(u, "/", `\/`),
		"json, \\u002f":  strings.ReplaceAll(u, "/", `\u002f`),
		"json in json":   strings.ReplaceAll(u, "/", `\\\/`),
		"lower-case hex": strings.ToLower(url.QueryEscape(u)),
	} {
		got := configdrive.MaskKeys("Failed fetching image from URL " + form + ": 404")
		if strings.Contains(got, key) {
			t.Errorf("%s: key shown: %s", name, got)
		}
		if !strings.Contains(got, "REDACTED") || !strings.HasPrefix(got, "Failed fetching image from URL ") {
			t.Errorf("%s: message mangled: %s", name, got)
		}
	}
}
