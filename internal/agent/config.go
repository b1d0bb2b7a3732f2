// Package agent is the deploy agent: the controller binary running as PID 1
// (/init) of a small in-memory image on a node being deployed. It mounts
// the kernel filesystems, loads the drivers the image carries, brings up
// the network with DHCP and then reports to the controller over the REST
// API with a per-boot token (pull model: the agent calls the controller,
// the controller never needs a route to the node).
//
// The heartbeat (Loop, the types of internal/api) carries the inventory
// and the state of the current command; its reply may hand out a command,
// which a Runner runs in the background with the disk work of
// internal/agent/disk: write_image (root disk by hints, image streamed
// and verified, config drive appended) or erase (metadata or full, every
// non-removable disk). One command at a time, each ID once per boot;
// heartbeats report it running with a percentage, then succeeded or
// failed, with Input set when the failure is the user's input, not the
// machine. A finished command is reported at once, not at the next
// interval.
//
// Configuration comes from two places, later overriding earlier:
//
//  1. ConfigPath (/etc/baremetal/agent.json) inside the initramfs. The
//     controller writes it per boot as a second cpio archive appended to
//     the image's initrd (Linux unpacks concatenated archives into one
//     root), so the token never appears on the kernel command line, in the
//     kernel log or on the console. This is how virtual media boots get
//     their settings: a CD cannot take per-boot kernel arguments.
//  2. The kernel command line (/proc/cmdline): baremetal.api=URL,
//     baremetal.token=TOKEN, baremetal.agent.poweroff_after_heartbeat=1,
//     baremetal.agent.lldp_wait=SECONDS.
//     Handy with PXE or qemu -append; note the kernel prints its command
//     line at log level notice, so pass "loglevel=4" (or "quiet") with a
//     token there.
package agent

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/disk"
)

// ConfigPath is where the per-boot config file sits in the agent's root.
const ConfigPath = "/etc/baremetal/agent.json"

// Config is what the agent needs to reach the controller.
type Config struct {
	// API is the controller's base URL as the node reaches it.
	API string `json:"api"`
	// Token authenticates this boot of the agent. It lives in memory only
	// and is never logged.
	Token string `json:"token"`
	// PowerOffAfterHeartbeat powers the node off after the first
	// heartbeat the controller accepts that leaves the agent nothing to
	// run or report: at once when no command comes, else once a
	// command's outcome was taken (a test switch: the VM test ends on its
	// own).
	PowerOffAfterHeartbeat bool `json:"poweroff_after_heartbeat,omitempty"`
	// CACerts are PEM certificates the agent trusts, besides the system's
	// (the trust store its initramfs carries, the build host's by
	// default), for the controller's API, config drives and image URLs:
	// an https controller or image server behind a private CA needs them
	// (--agent-ca-file).
	CACerts string `json:"ca_certs,omitempty"`
	// LLDPWaitSeconds, when above 0, has the agent listen that long for
	// the LLDP frames of the switches its NICs are cabled to, on every
	// NIC with a link at once, before its first report (a NIC stops at
	// its first frame; switches send one every 30 s by default). The
	// controller sets it for inspections only (--inspect-lldp-wait):
	// deploys and cleanups need no neighbours and should not wait.
	LLDPWaitSeconds int `json:"lldp_wait_seconds,omitempty"`
}

// LLDPWait is LLDPWaitSeconds as a duration.
func (c Config) LLDPWait() time.Duration { return time.Duration(c.LLDPWaitSeconds) * time.Second }

// HTTPClient is the agent's HTTP client for c: the given timeout (0:
// none, for image streams) and c's CA certificates trusted on top of the
// system's (the initramfs's /etc/ssl/certs/ca-certificates.crt, if any).
func (c Config) HTTPClient(timeout time.Duration) (*http.Client, error) {
	t, err := c.Transport()
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: t, Timeout: timeout}, nil
}

// ImageClient is the client images are fetched with: HTTPClient's
// transport, guarded by disk.NewClient (no cloud metadata service, no
// link-local address), without an overall timeout (an image streams for
// as long as it takes).
func (c Config) ImageClient() (*http.Client, error) {
	t, err := c.Transport()
	if err != nil {
		return nil, err
	}
	return disk.NewClient(t), nil
}

// Transport is HTTPClient's transport.
func (c Config) Transport() (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableCompression = true
	t.ResponseHeaderTimeout = time.Minute
	if c.CACerts != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(c.CACerts)) {
			return nil, errors.New("ca_certs holds no PEM certificate")
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return t, nil
}

// String never shows the token.
func (c Config) String() string {
	tok := "(none)"
	if c.Token != "" {
		tok = "(set)"
	}
	return fmt.Sprintf("api=%s token=%s poweroff_after_heartbeat=%t ca_certs=%d bytes lldp_wait=%ds", c.API, tok, c.PowerOffAfterHeartbeat, len(c.CACerts), c.LLDPWaitSeconds)
}

// Validate reports what is missing or malformed.
func (c Config) Validate() error {
	var errs []error
	if c.API == "" {
		errs = append(errs, errors.New("no controller URL (baremetal.api)"))
	} else if u, err := url.Parse(c.API); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("controller URL %q (baremetal.api) is not an http(s) URL", c.API))
	}
	if c.Token == "" {
		errs = append(errs, errors.New("no token (baremetal.token)"))
	}
	if c.LLDPWaitSeconds < 0 {
		errs = append(errs, fmt.Errorf("lldp_wait_seconds %d is negative", c.LLDPWaitSeconds))
	}
	if c.CACerts != "" && !x509.NewCertPool().AppendCertsFromPEM([]byte(c.CACerts)) {
		errs = append(errs, errors.New("ca_certs holds no PEM certificate"))
	}
	return errors.Join(errs...)
}

// ParseConfigFile reads the JSON config file. A missing file is no error:
// the command line may carry everything.
func ParseConfigFile(path string, into *Config) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		// The error text of encoding/json quotes no values, so the token
		// cannot leak through it.
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

// ApplyCmdline sets the fields the kernel command line names.
func ApplyCmdline(cmdline string, into *Config) {
	for _, f := range strings.Fields(cmdline) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "baremetal.api":
			into.API = v
		case "baremetal.token":
			into.Token = v
		case "baremetal.agent.poweroff_after_heartbeat":
			into.PowerOffAfterHeartbeat = v == "1" || v == "true"
		case "baremetal.agent.lldp_wait":
			// Seconds; a value that is not a number is ignored (the
			// file's, or none, holds).
			if n, err := strconv.Atoi(v); err == nil {
				into.LLDPWaitSeconds = n
			}
		}
	}
}

// MarshalConfigFile renders c as the per-boot config file the image
// builder appends to the initrd.
func MarshalConfigFile(c Config) ([]byte, error) {
	return json.MarshalIndent(c, "", "  ")
}
