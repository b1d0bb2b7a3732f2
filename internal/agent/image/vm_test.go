package image_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/qemu"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// heartbeat is one call the stand-in controller received.
type heartbeat struct {
	auth string
	body api.AgentHeartbeat
	at   time.Time
}

// standIn is the controller's side of the agent API as far as it exists:
// it records heartbeats and accepts them.
func standIn(t *testing.T) (port int, got <-chan heartbeat) {
	t.Helper()
	ch := make(chan heartbeat, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != agent.HeartbeatPath {
			http.NotFound(w, r)
			return
		}
		var hb api.AgentHeartbeat
		if err := json.NewDecoder(r.Body).Decode(&hb); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ch <- heartbeat{auth: r.Header.Get("Authorization"), body: hb, at: time.Now()}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"next_heartbeat_seconds": 5}`))
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port, ch
}

func token(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "agent-token-" + hex.EncodeToString(b)
}

// buildController builds the real controller binary the way make build
// does (static), since the image's /init is that binary.
func buildController(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "controller")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/baremetal-tf/terraform-provider-baremetal/controller")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build controller: %v\n%s", err, out)
	}
	return bin
}

const mac = "52:54:00:12:34:56"

// TestAgentBootsAndReportsInAVM boots the agent image in qemu three times:
// from the ISO through the BIOS and isolinux (the path a BMC's virtual
// media takes; settings in the per-boot config appended to the
// initramfs), from the same ISO through UEFI (OVMF) and GRUB, and with
// -kernel/-initrd (settings on the kernel command line). Each time the
// agent must load its drivers, get a DHCP lease, send a heartbeat that
// shows the 64 MiB virtio disk and the NIC's MAC, and power the VM off; the
// token must never reach the console.
func TestAgentBootsAndReportsInAVM(t *testing.T) {
	kernel := testvm.Require(t)
	for _, p := range []string{"/usr/lib/ISOLINUX/isolinux.bin", "/usr/lib/syslinux/modules/bios/ldlinux.c32"} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%v (apt-get install isolinux syslinux-common)", err)
			}
			t.Skipf("%v (apt-get install isolinux syslinux-common)", err)
		}
	}
	dir := t.TempDir()
	bin := buildController(t, dir)
	port, got := standIn(t)
	apiURL := fmt.Sprintf("http://%s:%d", testvm.HostAddr, port)

	isoToken := token(t)
	cfg, err := agent.MarshalConfigFile(agent.Config{API: apiURL, Token: isoToken, PowerOffAfterHeartbeat: true})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	iso, initrd := filepath.Join(dir, "agent.iso"), filepath.Join(dir, "agent.initrd")
	uefiErr := image.UEFIAvailable("", "")
	if _, _, ok := qemu.FindOVMF(); !ok && uefiErr == nil {
		uefiErr = errors.New("no OVMF UEFI firmware (apt-get install ovmf)")
	}
	if uefiErr != nil && os.Getenv("CI") == "true" {
		t.Fatal(uefiErr) // CI installs them (.ci/run)
	}
	uefi := "on"
	if uefiErr != nil {
		uefi = "off"
	}
	start := time.Now()
	build := exec.Command(bin, "agent-image", "--kernel", kernel, "--out", iso, "--initrd-out", initrd,
		"--agent-config", cfgPath, "--uefi", uefi,
		// Serial last: /dev/console, where the agent logs, is the
		// serial port the test reads.
		"--cmdline", "console=tty0 console=ttyS0,115200 loglevel=4")
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("agent-image: %v\n%s", err, out)
	}
	t.Logf("agent-image took %s: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))

	boot := func(t *testing.T, tok string, o testvm.Options) {
		disk := filepath.Join(t.TempDir(), "disk.img")
		if err := os.WriteFile(disk, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(disk, 64<<20); err != nil {
			t.Fatal(err)
		}
		o.Disks, o.MAC = []string{disk}, mac
		vm := testvm.Start(t, o)
		// Generous: TCG on a shared CI machine. Not an assertion on speed.
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		var hb heartbeat
		select {
		case hb = <-got:
		case <-ctx.Done():
			t.Fatal("no heartbeat from the agent")
		}
		t.Logf("qemu start to first heartbeat: %s (guest uptime %.1fs)", hb.at.Sub(vm.Started).Round(100*time.Millisecond), hb.body.UptimeSeconds)
		if hb.auth != "Bearer "+tok {
			t.Errorf("Authorization = %q, want the boot's token", hb.auth)
		}
		if hb.body.Inventory == nil {
			t.Fatal("heartbeat without an inventory")
		}
		inv := hb.body.Inventory
		var disks, nics []string
		foundDisk, foundNIC := false, false
		for _, d := range inv.Disks {
			disks = append(disks, fmt.Sprintf("%s:%d", d.Name, d.SizeBytes))
			if d.Name == "vda" && d.SizeBytes == 64<<20 && d.Path == "/dev/vda" {
				foundDisk = true
			}
		}
		for _, n := range inv.NICs {
			nics = append(nics, n.Name+":"+n.MAC+":"+strings.Join(n.IPv4, ","))
			if n.MAC == mac && len(n.IPv4) > 0 {
				foundNIC = true
			}
		}
		if !foundDisk {
			t.Errorf("heartbeat disks %v: no vda of 64 MiB", disks)
		}
		if !foundNIC {
			t.Errorf("heartbeat NICs %v: no %s with an address", nics, mac)
		}
		if inv.MemoryBytes <= 0 || inv.CPUs != 1 || hb.body.BootID == "" {
			t.Errorf("heartbeat memory %d, cpus %d, boot id %q", inv.MemoryBytes, inv.CPUs, hb.body.BootID)
		}
		reason, err := vm.ShutdownReason(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if reason != "guest-shutdown" {
			t.Errorf("VM stopped with %q, want guest-shutdown (the agent's power off)", reason)
		}
		if status, err := vm.Status(); err != nil || status != "shutdown" {
			t.Errorf("query-status = %q, %v; want shutdown", status, err)
		}
		serial := vm.Serial()
		if !strings.Contains(serial, "agent starting") {
			t.Errorf("serial console shows no agent start-up")
		}
		if strings.Contains(serial, tok) {
			t.Errorf("the token appears on the serial console")
		}
		if err := vm.Quit(); err != nil {
			t.Error(err)
		}
	}

	t.Run("iso", func(t *testing.T) {
		boot(t, isoToken, testvm.Options{CDROM: iso})
	})
	t.Run("iso_uefi", func(t *testing.T) {
		if uefiErr != nil {
			t.Skip(uefiErr)
		}
		boot(t, isoToken, testvm.Options{CDROM: iso, UEFI: true})
	})
	t.Run("kernel_initrd", func(t *testing.T) {
		tok := token(t)
		boot(t, tok, testvm.Options{Kernel: kernel, Initrd: initrd,
			Append: "console=ttyS0 loglevel=4 baremetal.api=" + apiURL + " baremetal.token=" + tok + " baremetal.agent.poweroff_after_heartbeat=1"})
	})
}
