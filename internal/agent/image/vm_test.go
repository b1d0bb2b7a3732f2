package image_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diskfs/go-diskfs/partition/mbr"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/qemu"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// heartbeat is one call the stand-in controller received.
type heartbeat struct {
	auth string
	body api.AgentHeartbeat
	at   time.Time
}

// standIn is the controller's side of the agent API: it records
// heartbeats by token, answers each token's with what its reply function
// says (by default nothing to do), and serves files (images, config
// drives) to the agent.
type standIn struct {
	port  int
	srv   *httptest.Server
	first chan heartbeat // each boot's first heartbeat

	mu    sync.Mutex
	beats map[string][]heartbeat
	boots map[string]bool // token and boot id seen
	reply map[string]func(api.AgentHeartbeat) api.AgentReply
	files map[string][]byte
}

func newStandIn(t *testing.T) *standIn {
	t.Helper()
	s := &standIn{
		first: make(chan heartbeat, 16),
		beats: map[string][]heartbeat{},
		boots: map[string]bool{},
		reply: map[string]func(api.AgentHeartbeat) api.AgentReply{},
		files: map[string][]byte{},
	}
	modTime := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			s.mu.Lock()
			b, ok := s.files[r.URL.Path]
			s.mu.Unlock()
			if !ok {
				http.NotFound(w, r)
				return
			}
			http.ServeContent(w, r, path.Base(r.URL.Path), modTime, bytes.NewReader(b))
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != agent.HeartbeatPath {
			http.NotFound(w, r)
			return
		}
		// Strictly: the agent must send exactly the API's JSON.
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		var body api.AgentHeartbeat
		if err := dec.Decode(&body); err != nil {
			t.Errorf("heartbeat body: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		auth := r.Header.Get("Authorization")
		tok := strings.TrimPrefix(auth, "Bearer ")
		hb := heartbeat{auth: auth, body: body, at: time.Now()}
		s.mu.Lock()
		s.beats[tok] = append(s.beats[tok], hb)
		boot := tok + " " + body.BootID
		firstOfBoot := !s.boots[boot]
		s.boots[boot] = true
		reply := api.AgentReply{NextHeartbeatSeconds: 5}
		if f := s.reply[tok]; f != nil {
			reply = f(body)
		}
		s.mu.Unlock()
		if firstOfBoot {
			select {
			case s.first <- hb:
			default:
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply)
	}))
	t.Cleanup(srv.Close)
	s.port, s.srv = srv.Listener.Addr().(*net.TCPAddr).Port, srv
	return s
}

// handOut gives tok's agent cmd until it reports the outcome.
func (s *standIn) handOut(tok string, cmd api.AgentCommand) {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := false
	s.reply[tok] = func(hb api.AgentHeartbeat) api.AgentReply {
		if st := hb.Command; st != nil && st.ID == cmd.ID && st.State != api.AgentCommandRunning {
			done = true
		}
		if done {
			return api.AgentReply{}
		}
		return api.AgentReply{Command: &cmd}
	}
}

// outcome is the first report of tok's agent that command id finished,
// if any, and when it came.
func (s *standIn) outcome(tok, id string) (*api.AgentCommandStatus, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, hb := range s.beats[tok] {
		if st := hb.body.Command; st != nil && st.ID == id && st.State != api.AgentCommandRunning {
			return st, hb.at
		}
	}
	return nil, time.Time{}
}

func (s *standIn) serve(p string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[p] = b
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
// shows the 64 MiB virtio disk and the NIC's MAC, run the command the
// stand-in controller hands out on that disk (an erase in the BIOS boot, an
// image and config drive written with -kernel/-initrd), report its outcome
// and power the VM off; the token must never reach the console.
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
	si := newStandIn(t)
	apiURL := fmt.Sprintf("http://%s:%d", testvm.HostAddr, si.port)
	// An https image server whose CA is in the image's trust store
	// (--ca-bundle) and nowhere else: the agent must find it as its
	// system's, as it finds a public CA of the host's ca-certificates.
	caPEM, imageCert := testCA(t, net.ParseIP(testvm.HostAddr), net.IPv4(127, 0, 0, 1))
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	tlsImages := httptest.NewUnstartedServer(si.srv.Config.Handler)
	tlsImages.TLS = &tls.Config{Certificates: []tls.Certificate{imageCert}, MinVersion: tls.VersionTLS12}
	tlsImages.StartTLS()
	t.Cleanup(tlsImages.Close)
	imagesURL := fmt.Sprintf("https://%s:%d", testvm.HostAddr, tlsImages.Listener.Addr().(*net.TCPAddr).Port)

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
	// UEFI through Debian's signed shim and GRUB, which boot with Secure
	// Boot on and off alike.
	uefiErr := image.SecureBootAvailable("", "")
	if _, _, ok := qemu.FindOVMF(); !ok && uefiErr == nil {
		uefiErr = errors.New("no OVMF UEFI firmware (apt-get install ovmf)")
	}
	if _, _, ok := qemu.FindOVMFSecureBoot(); !ok && uefiErr == nil {
		uefiErr = errors.New("no OVMF Secure Boot firmware (apt-get install ovmf)")
	}
	if uefiErr != nil && os.Getenv("CI") == "true" {
		t.Fatal(uefiErr) // CI installs them (.ci/run)
	}
	uefi := string(image.UEFISecureBoot)
	if uefiErr != nil {
		uefi = "off"
	}
	start := time.Now()
	build := exec.Command(bin, "agent-image", "--kernel", kernel, "--out", iso, "--initrd-out", initrd,
		// The default command line, whose last console (/dev/console,
		// where the agent logs) must be the serial port the test reads.
		"--agent-config", cfgPath, "--uefi", uefi, "--ca-bundle", caFile)
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("agent-image: %v\n%s", err, out)
	}
	t.Logf("agent-image took %s: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))

	// boot boots the agent with a 64 MiB disk (prepare sets its
	// contents), hands it cmd if not nil, and checks the outcome and the
	// disk after the agent powered the VM off.
	boot := func(t *testing.T, tok string, o testvm.Options, cmd *api.AgentCommand, prepare func(t *testing.T, disk string), check func(t *testing.T, st *api.AgentCommandStatus, disk string, b []byte)) *api.AgentInventory {
		disk := filepath.Join(t.TempDir(), "disk.img")
		if err := os.WriteFile(disk, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(disk, 64<<20); err != nil {
			t.Fatal(err)
		}
		if prepare != nil {
			prepare(t, disk)
		}
		if cmd != nil {
			si.handOut(tok, *cmd)
		}
		o.Disks, o.MAC = []string{disk}, mac
		vm := testvm.Start(t, o)
		// Generous: TCG on a shared CI machine. Not an assertion on speed.
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		var hb heartbeat
		for hb.auth != "Bearer "+tok {
			select {
			case hb = <-si.first:
			case <-ctx.Done():
				t.Fatal("no heartbeat from the agent")
			}
		}
		t.Logf("qemu start to first heartbeat: %s (guest uptime %.1fs)", hb.at.Sub(vm.Started).Round(100*time.Millisecond), hb.body.UptimeSeconds)
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
		// Installed memory from the SMBIOS tables: qemu's -m (testvm's
		// 512 MiB), not the kernel's MemTotal.
		if inv.InstalledMemoryBytes != 512<<20 {
			t.Errorf("heartbeat installed memory %d MiB (MemTotal %d MiB), want the VM's 512", inv.InstalledMemoryBytes>>20, inv.MemoryBytes>>20)
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
		if cmd != nil && cmd.ConfigDriveURL != "" {
			// .../config-drive/{key}/config-2.iso
			if key := path.Base(path.Dir(cmd.ConfigDriveURL)); strings.Contains(serial, key) {
				t.Errorf("the config drive's key appears on the serial console")
			}
		}
		if err := vm.Quit(); err != nil {
			t.Error(err)
		}
		if cmd == nil {
			return inv
		}
		st, at := si.outcome(tok, cmd.ID)
		if st == nil {
			t.Fatalf("no outcome of command %s reported", cmd.ID)
		}
		t.Logf("%s: %s %q, reported %s after the first heartbeat", cmd.Kind, st.State, st.Message, at.Sub(hb.at).Round(100*time.Millisecond))
		if st.State != api.AgentCommandSucceeded {
			t.Fatalf("command %s: %+v", cmd.ID, st)
		}
		b, err := os.ReadFile(disk)
		if err != nil {
			t.Fatal(err)
		}
		check(t, st, disk, b)
		return inv
	}
	bootMode := func(t *testing.T, inv *api.AgentInventory, mode string, secure bool) {
		t.Helper()
		if sb := inv.System.SecureBoot; inv.System.BootMode != mode || sb == nil || *sb != secure {
			t.Errorf("the agent reports boot mode %q, Secure Boot %v; want %q, %v", inv.System.BootMode, sb, mode, secure)
		}
	}

	// From the ISO: erase the metadata of a disk full of old data.
	t.Run("iso", func(t *testing.T) {
		cmd := &api.AgentCommand{ID: "erase-1", Kind: api.AgentErase, Erase: "metadata"}
		inv := boot(t, isoToken, testvm.Options{CDROM: iso}, cmd,
			func(t *testing.T, disk string) {
				if err := os.WriteFile(disk, bytes.Repeat([]byte{0xab}, 64<<20), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T, st *api.AgentCommandStatus, disk string, b []byte) {
				if want := "wiped partition tables and signatures of 1 disk (/dev/vda 64.0 MiB)"; !strings.HasPrefix(st.Message, want) {
					t.Errorf("message %q, want %q", st.Message, want)
				}
				const region = 8 << 20 // disk.MetadataRegion
				zero := make([]byte, region)
				if !bytes.Equal(b[:region], zero) || !bytes.Equal(b[len(b)-region:], zero) {
					t.Error("the disk's ends are not zero")
				}
				if !bytes.Equal(b[region:len(b)-region], bytes.Repeat([]byte{0xab}, len(b)-2*region)) {
					t.Error("a metadata erase touched the middle of the disk")
				}
				// Read back past the page cache, and said so.
				if want := []api.AgentErasedDisk{{Path: "/dev/vda", SizeBytes: 64 << 20, Method: "metadata", VerifiedBytes: 2 * region}}; !slices.Equal(st.Erased, want) {
					t.Errorf("erase reported %+v, want %+v", st.Erased, want)
				}
			})
		bootMode(t, inv, api.BootModeBIOS, false)
	})
	// Through UEFI: a full erase of a virtio disk and of an NVMe drive,
	// which erases itself (Format NVM) and is then checked blank.
	t.Run("iso_uefi", func(t *testing.T) {
		if uefiErr != nil {
			t.Skip(uefiErr)
		}
		nvme := filepath.Join(t.TempDir(), "nvme.img")
		if err := os.WriteFile(nvme, bytes.Repeat([]byte{0xcd}, 64<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := &api.AgentCommand{ID: "erase-full", Kind: api.AgentErase, Erase: "full"}
		inv := boot(t, isoToken, testvm.Options{CDROM: iso, UEFI: true, NVMeDisks: []string{nvme}}, cmd,
			func(t *testing.T, disk string) {
				if err := os.WriteFile(disk, bytes.Repeat([]byte{0xab}, 64<<20), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T, st *api.AgentCommandStatus, disk string, b []byte) {
				for _, want := range []string{"erased every byte of 2 disks (", "/dev/nvme0n1 64.0 MiB: NVMe format, ", "/dev/vda 64.0 MiB: discarded, then zeroed"} {
					if !strings.Contains(st.Message, want) {
						t.Errorf("message %q does not say %q", st.Message, want)
					}
				}
				zero := make([]byte, 64<<20)
				if !bytes.Equal(b, zero) {
					t.Error("the virtio disk is not all zeros after a full erase")
				}
				// Both disks read back: their ends and sampled blocks.
				if len(st.Erased) != 2 {
					t.Errorf("erase reported %+v, want both disks", st.Erased)
				}
				for _, e := range st.Erased {
					if e.SampledBlocks == 0 || e.VerifiedBytes < 16<<20 {
						t.Errorf("disk %s: read back %d bytes, %d blocks sampled", e.Path, e.VerifiedBytes, e.SampledBlocks)
					}
				}
				if nb, err := os.ReadFile(nvme); err != nil || !bytes.Equal(nb, zero) {
					t.Errorf("the NVMe drive is not all zeros after its format (%v)", err)
				}
			})
		bootMode(t, inv, api.BootModeUEFI, false)
	})
	// With Secure Boot on, as servers ship: firmware with Microsoft's keys
	// starts Debian's shim, shim checks GRUB, GRUB checks the kernel, the
	// kernel (locked down) checks every module it loads. The agent comes
	// up, says Secure Boot is on, and erases a disk.
	t.Run("iso_secure_boot", func(t *testing.T) {
		if uefiErr != nil {
			t.Skip(uefiErr)
		}
		cmd := &api.AgentCommand{ID: "erase-sb", Kind: api.AgentErase, Erase: "metadata"}
		inv := boot(t, isoToken, testvm.Options{CDROM: iso, SecureBoot: true}, cmd, nil,
			func(t *testing.T, st *api.AgentCommandStatus, disk string, b []byte) {
				if !strings.HasPrefix(st.Message, "wiped partition tables and signatures of 1 disk") {
					t.Errorf("message %q", st.Message)
				}
			})
		bootMode(t, inv, api.BootModeUEFI, true)
	})
	// With -kernel/-initrd: write an image and a config drive.
	t.Run("kernel_initrd", func(t *testing.T) {
		tok := token(t)
		img, cd := mbrImage(t, 4<<20), configDriveISO(t)
		cdPath := "/v1/instances/i-1/config-drive/" + token(t) + "/config-2.iso"
		si.serve("/images/disk.raw", img)
		si.serve(cdPath, cd)
		sum := sha256.Sum256(img)
		cmd := &api.AgentCommand{
			ID: "write-1", Kind: api.AgentWriteImage,
			Image:           &api.Image{URL: imagesURL + "/images/disk.raw", Checksum: "sha256:" + hex.EncodeToString(sum[:])},
			RootDeviceHints: map[string]string{"name": "vda"},
			ConfigDriveURL:  apiURL + cdPath,
		}
		boot(t, tok, testvm.Options{Kernel: kernel, Initrd: initrd,
			Append: "console=ttyS0 loglevel=4 baremetal.api=" + apiURL + " baremetal.token=" + tok + " baremetal.agent.poweroff_after_heartbeat=1"},
			cmd, nil,
			func(t *testing.T, st *api.AgentCommandStatus, disk string, b []byte) {
				if st.Disk != "/dev/vda" || !strings.HasPrefix(st.Message, "wrote 4.0 MiB raw image to /dev/vda") ||
					!strings.Contains(st.Message, "sha256 verified") || !strings.Contains(st.Message, "config-2") {
					t.Errorf("status %+v", st)
				}
				// The image, except the MBR's second entry: the config drive.
				if !bytes.Equal(b[:446+16], img[:446+16]) || !bytes.Equal(b[512:len(img)], img[512:]) {
					t.Error("the disk does not hold the image")
				}
				f, err := os.Open(disk)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				tbl, err := mbr.Read(f, 512, 512)
				if err != nil {
					t.Fatal(err)
				}
				if len(tbl.Partitions) < 2 {
					t.Fatalf("partitions %+v: no config drive", tbl.Partitions)
				}
				start := int64(tbl.Partitions[1].Start) * 512
				if start < int64(len(img)) || !bytes.Equal(b[start:start+int64(len(cd))], cd) {
					t.Errorf("the config drive partition at %d does not hold the ISO", start)
				}
			})
	})
}

// mbrImage is a disk image of size bytes with an MBR (written by
// go-diskfs) holding one Linux partition from 1 MiB on, of random bytes.
func mbrImage(t *testing.T, size int64) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "image.raw")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	body := make([]byte, size-1<<20)
	if _, err := rand.Read(body); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(body, 1<<20); err != nil {
		t.Fatal(err)
	}
	tbl := &mbr.Table{LogicalSectorSize: 512, PhysicalSectorSize: 512, Partitions: []*mbr.Partition{
		{Type: mbr.Linux, Start: 2048, Size: uint32((size - 1<<20) / 512)},
	}}
	if err := tbl.Write(f, size); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func configDriveISO(t *testing.T) []byte {
	var b bytes.Buffer
	if err := configdrive.Build(&b, configdrive.Drive{UUID: "8f1d2b4e-0000-4000-8000-000000000002", Name: "vm-1", Hostname: "vm-1", UserData: []byte("#cloud-config\n")}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// testCA makes a CA and a server certificate it signs for ips, and
// returns the CA's PEM and the server's certificate.
func testCA(t *testing.T, ips ...net.IP) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agent test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "images"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: ips, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
