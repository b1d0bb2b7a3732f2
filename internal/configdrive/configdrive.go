// Package configdrive builds and reads the config drive a deployed instance
// boots with: an ISO 9660 image labelled "config-2" in the OpenStack
// layout that cloud-init (ConfigDrive datasource), cloudbase-init and
// Ignition already understand, so a stock cloud image needs nothing from
// us to get its hostname, metadata and user data.
//
// Layout:
//
//	openstack/latest/meta_data.json    uuid, name, hostname, meta (user metadata)
//	openstack/latest/user_data         the instance's user_data, verbatim (if any)
//	openstack/latest/vendor_data.json  {"cloud-init": "<shell script>"}: the readiness callback
//	openstack/latest/network_data.json links, networks, services (if the instance has a network)
//	baremetal/ready.json               {"url": ..., "token": ...} for images without cloud-init
//
// The readiness callback is vendor data, not user data, so it runs in
// addition to whatever the user's own user data does (cloud-init runs
// vendor scripts in its final stage) and never rewrites the user's bytes.
package configdrive

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kdomanski/iso9660"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// Label is the volume label cloud-init looks for.
const Label = "config-2"

// Paths inside the drive.
const (
	MetaDataPath   = "openstack/latest/meta_data.json"
	UserDataPath   = "openstack/latest/user_data"
	VendorDataPath = "openstack/latest/vendor_data.json"
	// NetworkDataPath is the instance's network configuration, which
	// cloud-init (and Glean, and Ignition's OpenStack provider) apply
	// before the OS first reaches the network.
	NetworkDataPath = "openstack/latest/network_data.json"
	ReadyPath       = "baremetal/ready.json"
)

// Drive is what a config drive carries.
type Drive struct {
	UUID     string
	Name     string
	Hostname string
	// Meta is the instance's user metadata, as cloud-init's ds.meta_data.meta.
	Meta     map[string]string
	UserData []byte
	// ReadyURL and ReadyToken are where and how the booted OS says it is
	// up: POST ReadyURL with "Authorization: Bearer ReadyToken".
	ReadyURL   string
	ReadyToken string
	// NetworkData is network_data.json as NetworkData renders it; nil
	// for none (the OS configures its network itself).
	NetworkData []byte
}

type metaData struct {
	UUID             string            `json:"uuid"`
	Name             string            `json:"name"`
	Hostname         string            `json:"hostname"`
	LaunchIndex      int               `json:"launch_index"`
	AvailabilityZone string            `json:"availability_zone"`
	Meta             map[string]string `json:"meta,omitempty"`
}

type readyFile struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// Key is the capability in a config drive's URL. BMCs fetch virtual
// media without the API's bearer tokens, so the URL itself must be the
// credential; deriving it from the ready token (which the drive carries
// anyway) gives it exactly the same reach and needs no storage.
func Key(readyToken string) string {
	m := hmac.New(sha256.New, []byte(readyToken))
	m.Write([]byte("baremetal config drive v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// MaskKeys hides config drive keys in s. BMCs quote the media URL in
// their errors, as is, URL-encoded or JSON-escaped, and those errors reach
// logs, events, last_error and the jobs API, where a key (which fetches
// the drive, and so the ready token and user data) must not. Every BMC
// error is masked so on its way out of the driver call (bmc.Redact).
func MaskKeys(s string) string {
	return redact.ConfigDriveKeys(s)
}

// MaxUserData bounds user data as OpenStack does (64 KiB): a config drive
// is fetched by a BMC over its management network, often slowly.
const MaxUserData = 64 << 10

// Build writes d as an ISO 9660 image to w.
func Build(w io.Writer, d Drive) error {
	if len(d.UserData) > MaxUserData {
		return fmt.Errorf("configdrive: user data is %d bytes, more than %d", len(d.UserData), MaxUserData)
	}
	iw, err := iso9660.NewWriter()
	if err != nil {
		return fmt.Errorf("configdrive: %w", err)
	}
	// The writer stages files in a temporary directory.
	defer func() { _ = iw.Cleanup() }()

	add := func(path string, data []byte) error {
		if err := iw.AddFile(bytes.NewReader(data), path); err != nil {
			return fmt.Errorf("configdrive: add %s: %w", path, err)
		}
		return nil
	}
	md, err := json.Marshal(metaData{UUID: d.UUID, Name: d.Name, Hostname: d.Hostname, Meta: d.Meta})
	if err != nil {
		return fmt.Errorf("configdrive: meta data: %w", err)
	}
	if err := add(MetaDataPath, md); err != nil {
		return err
	}
	if len(d.UserData) > 0 {
		if err := add(UserDataPath, d.UserData); err != nil {
			return err
		}
	}
	if len(d.NetworkData) > 0 {
		if !json.Valid(d.NetworkData) {
			return errors.New("configdrive: network data is not JSON")
		}
		if err := add(NetworkDataPath, d.NetworkData); err != nil {
			return err
		}
	}
	if d.ReadyURL != "" {
		vd, err := json.Marshal(map[string]string{"cloud-init": callbackScript(d.ReadyURL, d.ReadyToken)})
		if err != nil {
			return fmt.Errorf("configdrive: vendor data: %w", err)
		}
		if err := add(VendorDataPath, vd); err != nil {
			return err
		}
		rf, err := json.Marshal(readyFile{URL: d.ReadyURL, Token: d.ReadyToken})
		if err != nil {
			return fmt.Errorf("configdrive: ready file: %w", err)
		}
		if err := add(ReadyPath, rf); err != nil {
			return err
		}
	}
	if err := iw.WriteTo(w, Label); err != nil {
		return fmt.Errorf("configdrive: write image: %w", err)
	}
	return nil
}

// callbackScript is the vendor-data script that tells the controller the
// OS is up. It tries curl, then wget, for about ten minutes: the network
// (or the controller) may come up after cloud-init's final stage starts.
// URL and token are single-quoted; neither can hold a quote (the URL is
// the controller's own, the token is base64url).
func callbackScript(url, token string) string {
	return `#!/bin/sh
# baremetal: tell the controller this instance has booted.
url='` + shellSafe(url) + `'
auth='Authorization: Bearer ` + shellSafe(token) + `'
i=0
while [ $i -lt 60 ]; do
  if command -v curl >/dev/null 2>&1; then
    curl -fsS -m 10 -X POST -H "$auth" "$url" && exit 0
  elif command -v wget >/dev/null 2>&1; then
    wget -q -T 10 -O /dev/null --header="$auth" --post-data='' "$url" && exit 0
  fi
  i=$((i+1))
  sleep 10
done
echo "baremetal: readiness callback to $url failed" >&2
exit 1
`
}

// shellSafe drops characters that could end a single-quoted shell string.
func shellSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\'' || r == '\n' || r == '\r' || r == 0 {
			return -1
		}
		return r
	}, s)
}

// Parse reads a config drive built by Build (or any OpenStack-layout
// ISO 9660 config drive). The simulated BMC uses it to play the booted OS.
func Parse(r io.ReaderAt) (*Drive, error) {
	img, err := iso9660.OpenImage(r)
	if err != nil {
		return nil, fmt.Errorf("configdrive: open image: %w", err)
	}
	label, err := img.Label()
	if err != nil {
		return nil, fmt.Errorf("configdrive: label: %w", err)
	}
	if !strings.EqualFold(label, Label) {
		return nil, fmt.Errorf("configdrive: volume label is %q, not %q", label, Label)
	}
	root, err := img.RootDir()
	if err != nil {
		return nil, fmt.Errorf("configdrive: root: %w", err)
	}
	files := map[string][]byte{}
	if err := walk(root, "", files); err != nil {
		return nil, err
	}
	raw, ok := files[MetaDataPath]
	if !ok {
		return nil, errors.New("configdrive: no " + MetaDataPath)
	}
	var md metaData
	if err := json.Unmarshal(raw, &md); err != nil {
		return nil, fmt.Errorf("configdrive: %s: %w", MetaDataPath, err)
	}
	d := &Drive{UUID: md.UUID, Name: md.Name, Hostname: md.Hostname, Meta: md.Meta, UserData: files[UserDataPath], NetworkData: files[NetworkDataPath]}
	if raw, ok := files[ReadyPath]; ok {
		var rf readyFile
		if err := json.Unmarshal(raw, &rf); err != nil {
			return nil, fmt.Errorf("configdrive: %s: %w", ReadyPath, err)
		}
		d.ReadyURL, d.ReadyToken = rf.URL, rf.Token
	}
	return d, nil
}

// walk collects every file under dir by its path, as Linux shows it
// (lower case, without the ";1" version suffix).
func walk(dir *iso9660.File, prefix string, out map[string][]byte) error {
	children, err := dir.GetChildren()
	if err != nil {
		return fmt.Errorf("configdrive: list %s: %w", prefix, err)
	}
	for _, c := range children {
		name := strings.ToLower(c.Name())
		if i := strings.IndexByte(name, ';'); i >= 0 {
			name = name[:i]
		}
		path := name
		if prefix != "" {
			path = prefix + "/" + name
		}
		if c.IsDir() {
			if err := walk(c, path, out); err != nil {
				return err
			}
			continue
		}
		data, err := io.ReadAll(c.Reader())
		if err != nil {
			return fmt.Errorf("configdrive: read %s: %w", path, err)
		}
		out[path] = data
	}
	return nil
}
