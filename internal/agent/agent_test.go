package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

func TestCmdlineOverridesTheConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.json")
	if err := os.WriteFile(path, []byte(`{"api":"http://file:1","token":"file-token"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var c Config
	if err := ParseConfigFile(path, &c); err != nil {
		t.Fatal(err)
	}
	ApplyCmdline("console=ttyS0 baremetal.api=http://cmd:2 baremetal.agent.poweroff_after_heartbeat=1 baremetal.agent.lldp_wait=7 quiet", &c)
	want := Config{API: "http://cmd:2", Token: "file-token", PowerOffAfterHeartbeat: true, LLDPWaitSeconds: 7}
	if c != want {
		t.Fatalf("config %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := ParseConfigFile(filepath.Join(t.TempDir(), "none.json"), &c); err != nil {
		t.Fatalf("a missing file must not be an error: %v", err)
	}
}

func TestConfigNeverShowsTheToken(t *testing.T) {
	c := Config{API: "http://x:1", Token: "s3cr3t-token"}
	if s := c.String(); strings.Contains(s, "s3cr3t") {
		t.Fatalf("String() = %q shows the token", s)
	}
	if s := slogText(func(l *slog.Logger) { l.Info("cfg", "config", c.String()) }); strings.Contains(s, "s3cr3t") {
		t.Fatalf("log line %q shows the token", s)
	}
	path := filepath.Join(t.TempDir(), "agent.json")
	if err := os.WriteFile(path, []byte(`{"api":"http://x","token": s3cr3t}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ParseConfigFile(path, &c); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("parse error %v: want an error without the token", err)
	}
}

func TestValidateNamesWhatIsMissing(t *testing.T) {
	err := Config{API: "10.0.0.1:8080", LLDPWaitSeconds: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "not an http(s) URL") || !strings.Contains(err.Error(), "no token") ||
		!strings.Contains(err.Error(), "lldp_wait_seconds -1 is negative") {
		t.Fatalf("Validate() = %v", err)
	}
	var c Config
	ApplyCmdline("baremetal.agent.lldp_wait=soon", &c)
	if c.LLDPWaitSeconds != 0 {
		t.Errorf("lldp_wait=soon gave %d seconds; want it ignored", c.LLDPWaitSeconds)
	}
}

func slogText(f func(*slog.Logger)) string {
	var b strings.Builder
	f(slog.New(slog.NewTextHandler(&b, nil)))
	return b.String()
}

func TestHTTPControllerHeartbeat(t *testing.T) {
	var gotAuth, gotPath string
	var gotBody api.AgentHeartbeat
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPath = r.Header.Get("Authorization"), r.Method+" "+r.URL.Path
		_ = json.NewDecoder(r.Body).Decode(&gotBody)
		if gotAuth != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"code":"unauthorized"}`)
			return
		}
		_, _ = io.WriteString(w, `{"next_heartbeat_seconds":7}`)
	}))
	defer srv.Close()
	c := NewHTTPController(srv.URL+"/", "tok", nil)
	r, err := c.Heartbeat(context.Background(), api.AgentHeartbeat{AgentVersion: "v1", Inventory: &api.AgentInventory{CPUs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if gotPath != "POST /v1/agent/heartbeat" || gotBody.Inventory.CPUs != 2 || r.NextHeartbeatSeconds != 7 {
		t.Fatalf("path %q body %+v reply %+v", gotPath, gotBody, r)
	}
	_, err = NewHTTPController(srv.URL, "wrong", nil).Heartbeat(context.Background(), api.AgentHeartbeat{})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
		t.Fatalf("err = %v, want a 401 StatusError", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Fatalf("error %q shows the token", err)
	}
}

// flaky fails, panics, then succeeds.
type flaky struct {
	mu    sync.Mutex
	calls int
}

func (f *flaky) Heartbeat(context.Context, api.AgentHeartbeat) (api.AgentReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	switch f.calls {
	case 1:
		return api.AgentReply{}, errors.New("connection refused")
	case 2:
		panic("boom")
	}
	return api.AgentReply{}, nil
}

func TestLoopSurvivesErrorsAndPanics(t *testing.T) {
	f := &flaky{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	accepted := make(chan int, 10)
	var logs strings.Builder
	l := &Loop{
		Controller: f,
		Collect:    func() api.AgentInventory { return api.AgentInventory{CPUs: 1} },
		Interval:   time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
		Accepted: func(n int) {
			accepted <- n
			if n == 1 {
				panic("callback panics too")
			}
		},
		Log: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	for n := range accepted {
		if n == 2 {
			break
		}
	}
	cancel()
	<-done
	if !strings.Contains(logs.String(), "connection refused") || !strings.Contains(logs.String(), "panic: boom") {
		t.Fatalf("log does not show the failures:\n%s", logs.String())
	}
}

func TestCollectorReadsSysfs(t *testing.T) {
	sys, proc := t.TempDir(), t.TempDir()
	write := func(root, p, v string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(p string) {
		if err := os.MkdirAll(filepath.Join(sys, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(sys, "block/vda/size", "131072")
	write(sys, "block/vda/serial", "disk-1")
	write(sys, "block/vda/queue/rotational", "1")
	mkdir("block/vda/device")
	write(sys, "block/loop0/size", "100") // no device: skipped
	write(sys, "block/sr0/size", "100")
	mkdir("block/sr0/device") // a CD: skipped
	write(sys, "class/net/eth0/type", "1")
	write(sys, "class/net/eth0/address", "52:54:00:12:34:56")
	write(sys, "class/net/eth0/operstate", "up")
	write(sys, "class/net/eth0/speed", "25000")
	write(sys, "class/net/eth1/type", "1")
	write(sys, "class/net/eth1/address", "52:54:00:12:34:57")
	write(sys, "class/net/eth1/operstate", "down")
	write(sys, "class/net/eth1/speed", "-1")
	mkdir("class/net/eth1/device")
	mkdir("class/net/eth0/device")
	write(sys, "class/net/lo/type", "772")
	write(sys, "class/dmi/id/sys_vendor", "QEMU")
	write(proc, "meminfo", "MemTotal:        2048 kB\nMemFree: 1 kB")
	sw := api.AgentLLDP{ChassisID: "44:4c:a8:12:34:56", PortID: "Ethernet7", SystemName: "leaf-1", VLANID: 100}
	c := &Collector{Sys: sys, Proc: proc, Addrs: func(string) []string { return []string{"10.0.2.15/24"} },
		LLDP: map[string]api.AgentLLDP{"eth0": sw}}
	inv := c.Collect()
	if len(inv.Disks) != 1 || inv.Disks[0] != (api.AgentDisk{Name: "vda", Path: "/dev/vda", SizeBytes: 64 << 20, Serial: "disk-1", Rotational: true}) {
		t.Fatalf("disks %+v", inv.Disks)
	}
	if len(inv.NICs) != 2 || inv.NICs[0].MAC != "52:54:00:12:34:56" || !inv.NICs[0].LinkUp || inv.NICs[0].SpeedMbps != 25000 || inv.NICs[0].IPv4[0] != "10.0.2.15/24" ||
		inv.NICs[1].LinkUp || inv.NICs[1].SpeedMbps != 0 {
		t.Fatalf("nics %+v", inv.NICs)
	}
	if inv.NICs[0].LLDP == nil || *inv.NICs[0].LLDP != sw || inv.NICs[1].LLDP != nil {
		t.Fatalf("LLDP %+v, %+v; want eth0's neighbour only", inv.NICs[0].LLDP, inv.NICs[1].LLDP)
	}
	if inv.MemoryBytes != 2048*1024 || inv.System.Vendor != "QEMU" {
		t.Fatalf("memory %d system %+v", inv.MemoryBytes, inv.System)
	}
}

// The boot mode and Secure Boot state come from /sys/firmware/efi and its
// SecureBoot variable (4 bytes of attributes, then the value); with the
// variables unreadable the state is unknown, not off.
func TestCollectorReadsBootMode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		efi      bool
		mounted  bool
		variable []byte
		mode     string
		secure   string // "true", "false" or "unknown"
	}{
		{"bios", false, false, nil, api.BootModeBIOS, "false"},
		{"uefi, variables not mounted", true, false, nil, api.BootModeUEFI, "unknown"},
		{"uefi, no SecureBoot variable", true, true, nil, api.BootModeUEFI, "false"},
		{"uefi, secure boot off", true, true, []byte{6, 0, 0, 0, 0}, api.BootModeUEFI, "false"},
		{"uefi, secure boot on", true, true, []byte{6, 0, 0, 0, 1}, api.BootModeUEFI, "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := t.TempDir()
			if tc.efi {
				vars := filepath.Join(sys, "firmware/efi/efivars")
				if err := os.MkdirAll(vars, 0o755); err != nil {
					t.Fatal(err)
				}
				if tc.mounted {
					if err := os.WriteFile(filepath.Join(vars, "BootOrder-8be4df61-93ca-11d2-aa0d-00e098032b8c"), []byte{6, 0, 0, 0, 1, 0}, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if tc.variable != nil {
					if err := os.WriteFile(filepath.Join(vars, "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"), tc.variable, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			inv := (&Collector{Sys: sys, Proc: t.TempDir()}).Collect()
			secure := "unknown"
			if inv.System.SecureBoot != nil {
				secure = fmt.Sprint(*inv.System.SecureBoot)
			}
			if inv.System.BootMode != tc.mode || secure != tc.secure {
				t.Errorf("boot mode %q, secure boot %s; want %q, %s", inv.System.BootMode, secure, tc.mode, tc.secure)
			}
		})
	}
}

// The agent copies its log to every console but the last, which is
// /dev/console itself (where it logs).
func TestOtherConsoles(t *testing.T) {
	for active, want := range map[string][]string{
		"tty0 ttyS0\n":     {"/dev/tty0"},
		"ttyS0":            nil,
		"":                 nil,
		"ttyS1 tty0 ttyS0": {"/dev/ttyS1", "/dev/tty0"},
		"../x ttyS0":       nil,
	} {
		if got := OtherConsoles(active); !slices.Equal(got, want) {
			t.Errorf("OtherConsoles(%q) = %v, want %v", active, got, want)
		}
	}
}
